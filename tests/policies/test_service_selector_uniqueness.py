"""service-selector-uniqueness: a Service selects exactly one running workload (001, 003)."""

from __future__ import annotations

import core.k8s.manifests
from policylib.pack import policy
from policylib.stack_helpers import PodIndex
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


def _deployment(name, labels, replicas=1, namespace="llm-serving"):
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  replicas: {replicas}
  template:
    metadata: {{labels: {labels}}}
    spec: {{containers: [{{name: a, image: x}}]}}
---"""


def _service(name, selector, namespace="llm-serving", annotations="{}"):
    return f"""
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: {namespace}, annotations: {annotations}}}
spec:
  selector: {selector}
  ports: [{{port: 80, targetPort: 8080}}]
---"""


def _run(text):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("service-selector-uniqueness"), manifests(text))


def test_exactly_one_running_match_passes_even_beside_parked_matches():
    text = _deployment("clef-candle", "{app: clef}") + _deployment("clef-serve", "{app: clef}", replicas=0)
    assert _run(text + _service("clef-serve", "{app: clef}")) == []


def test_three_matches_are_all_named_sorted_and_reported_on_the_service():
    text = "".join(_deployment(n, "{tier: llm}") for n in ("c", "a", "b")) + _service("svc", "{tier: llm}")
    (v,) = _run(text)
    assert v.message == (
        "Service svc: selects 3 running workloads: a (Deployment), b (Deployment), c (Deployment); "
        "its traffic splits across them (selector tier=llm). Fix: add a label that only one workload's pods carry "
        "(e.g. app.kubernetes.io/instance) to the selector. Source: seed 002 (a Service that could select two models)."
    )
    assert v.urn.endswith("kubernetes:core/v1:Service::llm-serving/svc")


def test_every_selector_pair_must_match():
    text = _deployment("a", "{app: x, tier: one}") + _deployment("b", "{app: x, tier: two}")
    assert _run(text + _service("svc", "{app: x, tier: one}")) == []


def test_selection_stays_in_the_service_namespace():
    text = _deployment("a", "{app: x}") + _deployment("b", "{app: x}", namespace="staging")
    assert _run(text + _service("svc", "{app: x}")) == []


def test_kserve_predictor_labels_are_selectable():
    """reasoning-long-service.yaml selects KServe's labels plus the InferenceService's own."""
    isvc = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: reasoning, namespace: llm-serving, labels: {app.kubernetes.io/name: llm-reasoning}}
spec: {predictor: {containers: [{name: kserve-container, image: x}]}}
---"""
    selector = "{app.kubernetes.io/name: llm-reasoning, component: predictor, serving.kserve.io/inferenceservice: reasoning}"
    assert _run(isvc + _service("reasoning-long-predictor", selector)) == []
    (v,) = _run(isvc + _service("wrong", "{app.kubernetes.io/name: llm-reasoning, component: transformer}"))
    assert v.message.startswith("Service wrong: selects no workload")


def test_none_running_is_allowed_only_when_the_service_is_declared_parked():
    text = _deployment("clef-serve", "{app: clef-serve}", replicas=0)
    (v,) = _run(text + _service("clef-serve", "{app: clef-serve}"))
    assert v.message.startswith("Service clef-serve: selects only parked clef-serve (Deployment) (selector app=clef-serve)")
    parked = '{llm-serving.riotpiao.com/parked: "clef-candle serves clef-flash (seed 000)"}'
    assert _run(text + _service("clef-serve", "{app: clef-serve}", annotations=parked)) == []


def test_service_without_selector_is_not_applicable():
    text = "apiVersion: v1\nkind: Service\nmetadata: {name: manual, namespace: llm-serving}\nspec: {ports: [{port: 80}]}\n"
    assert _run(text) == []


def test_index_answers_identical_selectors_once_and_matches_pairwise_filtering():
    docs = manifests("".join(_deployment(f"w{i}", f"{{app: w{i % 3}, shard: s{i % 2}}}") for i in range(12)))
    ws = [core.k8s.manifests.workload(r.type, r.props, r.urn) for r in docs]
    index = PodIndex(ws)
    for selector in ({"app": "w1"}, {"app": "w1", "shard": "s0"}, {"shard": "s1"}, {"app": "nope"}):
        brute = [w.name for w in ws if core.k8s.manifests.selector_matches(selector, w.pod_labels)]
        assert [w.name for w in index.select("llm-serving", selector)] == brute
    assert index.select("llm-serving", {"app": "w1"}) is index.select("llm-serving", {"app": "w1"})
    assert index.select("llm-serving", {}) == ()


# --- the labels controllers add to pods -----------------------------------------------------------

def _statefulset(name, labels, replicas=2, model="m"):
    return f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  replicas: {replicas}
  serviceName: {name}
  selector: {{matchLabels: {labels}}}
  template:
    metadata: {{labels: {labels}}}
    spec: {{containers: [{{name: a, image: vllm/vllm-openai:v0.11.0, args: [--model, {model}]}}]}}
---"""


def test_a_statefulset_pod_index_selector_selects_that_pod_not_nothing():
    """A Service in front of one StatefulSet pod (a leader) selects the label the StatefulSet
    controller adds (Kubernetes 1.28+, apps.kubernetes.io/pod-index): before, the template labels
    lacked it and the Service was blocked as selecting no workload."""
    text = _statefulset("vllm", "{app: vllm}")
    assert _run(text + _service("vllm-leader", '{app: vllm, apps.kubernetes.io/pod-index: "0"}')) == []
    assert _run(text + _service("vllm-0", "{statefulset.kubernetes.io/pod-name: vllm-0}")) == []
    (v,) = _run(text + _service("vllm-5", '{app: vllm, apps.kubernetes.io/pod-index: "5"}'))  # 2 replicas: 0 and 1
    assert v.message.startswith("Service vllm-5: selects no workload")


def test_two_models_behind_one_pod_index_selector_still_collide():
    text = _statefulset("llama", "{app: llm, model: llama}", model="meta-llama/Llama-3.1-8B-Instruct") \
        + _statefulset("qwen", "{app: llm, model: qwen}", model="Qwen/Qwen3-8B")
    (v,) = _run(text + _service("llm-leader", '{app: llm, apps.kubernetes.io/pod-index: "0"}'))
    assert v.message.startswith("Service llm-leader: selects 2 running workloads: llama (StatefulSet), qwen (StatefulSet)")
    (v,) = _run(text + _service("llm", "{app: llm}"))
    assert "selects 2 running workloads" in v.message


def test_a_pod_template_hash_selector_is_one_replicaset_not_a_collision():
    text = _deployment("a", "{app: x}") + _deployment("b", "{app: x}")
    assert _run(text + _service("svc", "{app: x, pod-template-hash: 7d9f8c6b5}")) == []
    assert len(_run(text + _service("svc", "{app: x}"))) == 1


def test_the_controller_labels_of_each_kind():
    ws = {r.props["metadata"]["name"]: core.k8s.manifests.workload(r.type, r.props, r.urn)
          for r in manifests(_statefulset("s", "{app: s}", replicas=3) + _deployment("d", "{app: d}"))}
    assert ws["s"].controller_labels == {
        "controller-revision-hash": None,
        "statefulset.kubernetes.io/pod-name": frozenset({"s-0", "s-1", "s-2"}),
        "apps.kubernetes.io/pod-index": frozenset({"0", "1", "2"}),
    }
    assert ws["d"].controller_labels == {"pod-template-hash": None}
    assert ws["s"].matched_by({"matchExpressions": [{"key": "apps.kubernetes.io/pod-index", "operator": "In",
                                                     "values": ["2"]}]})
    assert not ws["s"].matched_by({"matchLabels": {"apps.kubernetes.io/pod-index": "3"}})
    assert ws["s"].matched_by({}) and not ws["s"].selected_by({})


def test_a_service_on_a_jobs_job_name_label_selects_the_jobs_pods():
    job = """
apiVersion: batch/v1
kind: Job
metadata: {name: bench, namespace: llm-serving}
spec:
  template:
    metadata: {labels: {app: bench}}
    spec: {restartPolicy: Never, containers: [{name: a, image: x}]}
---"""
    assert _run(job + _service("bench", "{job-name: bench}")) == []
    (v,) = _run(job + _service("other", "{job-name: other}"))
    assert v.message.startswith("Service other: selects no workload")
