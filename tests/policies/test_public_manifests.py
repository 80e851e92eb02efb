"""The pack on other people's GPU serving YAML (shapes of public guides, written by us)
with an inventory of the hardware they target, and what it says it did not judge.

Every policy runs in-process on one small, consistent set (each object on its own node, so the
allocation is the one the authors meant): no mandatory finding but the real problems the set
carries on purpose. startup-probe-covers-cold-start (the cold-start annotation is a
house rule) is left out here and named in docs/policy-pack.md's "Someone else's cluster" table.
"""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from policylib.pack import policies, policy
from tests.policy_harness import FIXTURES, manifests, run_policy, use_stack_config
from tools.analyze import not_judged
from tools.offline.manifests import load_stack_file

PUBLIC = FIXTURES / "Pulumi.public.yaml"

#: A vLLM Deployment as cloud tutorials write it: shell wrapper, model from the env, /dev/shm,
#: no runtimeClassName, a release tag, default rollout; an LWS behind a leader Service; an SGLang
#: server; gpt-oss on one H200 with the entrypoint's positional model; a KServe model-form ISVC.
SET = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: llama, namespace: serving}
spec:
  replicas: 1
  selector: {matchLabels: {app: llama}}
  template:
    metadata: {labels: {app: llama}}
    spec:
      nodeSelector: {kubernetes.io/hostname: a100-0}
      containers:
      - name: server
        image: vllm/vllm-openai:v0.10.1.1
        command: [/bin/sh, -c]
        args: ['vllm serve "$MODEL" --tensor-parallel-size 2 --max-model-len 32768 --port 8000']
        env: [{name: MODEL, value: meta-llama/Llama-3.1-8B-Instruct}]
        ports: [{containerPort: 8000}]
        resources: {limits: {nvidia.com/gpu: 2, memory: 64Gi}}
        volumeMounts: [{name: shm, mountPath: /dev/shm}]
      volumes: [{name: shm, emptyDir: {medium: Memory, sizeLimit: 4Gi}}]
---
apiVersion: v1
kind: Service
metadata: {name: llama, namespace: serving}
spec:
  selector: {app: llama}
  ports: [{port: 80, targetPort: 8000}]
---
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: big, namespace: serving}
spec:
  replicas: 1
  leaderWorkerTemplate:
    size: 2
    leaderTemplate:
      metadata: {labels: {role: leader}}
      spec:
        nodeSelector: {kubernetes.io/hostname: a100-1}
        containers:
        - name: leader
          image: vllm/vllm-openai:v0.10.1.1
          command: [sh, -c, "ray start --head; vllm serve meta-llama/Llama-3.1-405B-Instruct --tensor-parallel-size 8 --pipeline-parallel-size 2"]
          ports: [{containerPort: 8000}]
          resources: {limits: {nvidia.com/gpu: 8}}
    workerTemplate:
      spec:
        nodeSelector: {kubernetes.io/hostname: h200-0}
        containers:
        - name: worker
          image: vllm/vllm-openai:v0.10.1.1
          command: [sh, -c, "ray start --block --address=$(LWS_LEADER_ADDRESS):6379"]
          resources: {limits: {nvidia.com/gpu: 8}}
---
apiVersion: v1
kind: Service
metadata: {name: big-leader, namespace: serving}
spec:
  selector: {leaderworkerset.sigs.k8s.io/name: big, role: leader}
  ports: [{port: 8000}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: sglang, namespace: serving}
spec:
  strategy: {type: Recreate}
  selector: {matchLabels: {app: sglang}}
  template:
    metadata: {labels: {app: sglang}}
    spec:
      nodeSelector: {kubernetes.io/hostname: l4-0}
      containers:
      - name: server
        image: lmsysorg/sglang:v0.4.9
        command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen2.5-7B-Instruct, --port, "30000"]
        resources: {limits: {nvidia.com/gpu: 1}}
"""


@pytest.fixture(autouse=True)
def public_inventory():
    use_stack_config(load_stack_file(PUBLIC))


def _mandatory(text: str) -> dict[str, list[str]]:
    out = {}
    for pack_policy in policies():
        if pack_policy.enforcement_level != EnforcementLevel.MANDATORY:
            continue
        found = [v.message for v in run_policy(pack_policy, manifests(text))]
        if found:
            out[pack_policy.name] = found
    return out


def test_no_false_mandatory_finding_on_the_public_set():
    assert _mandatory(SET) == {}


def test_the_real_problems_are_still_caught():
    # One card idle behind the shell wrapper, and a Service in front of an LWS that is not there.
    broken = SET.replace("--tensor-parallel-size 2 --max", "--tensor-parallel-size 1 --max").replace(
        "leaderworkerset.sigs.k8s.io/name: big,", "leaderworkerset.sigs.k8s.io/name: bigger,")
    found = _mandatory(broken)
    assert sorted(found) == ["service-selector-uniqueness", "vllm-parallelism"]
    assert "1 card(s) are held and idle" in found["vllm-parallelism"][0]
    assert found["service-selector-uniqueness"][0].startswith("Service big-leader: selects no workload")


def test_the_summary_says_what_was_not_judged():
    config = load_stack_file(PUBLIC)
    resources = manifests(SET)
    lines = not_judged(resources, config)
    assert lines[0].startswith("LeaderWorkerSet big: one server spans each group's leader and worker pods")
    assert any(line.startswith("Deployment sglang, container server: runs SGLang (python3 -m sglang.launch_server), "
                               "which the pack does not model") for line in lines)
    assert lines[-1].startswith("gpu-runtime-class did not run: llm-serving:cluster does not say whether GPU pods need a RuntimeClass")
    # The user's inventory states the fact: the policy runs, nothing to say about it.
    users = load_stack_file(FIXTURES / "Pulumi.fixture.yaml")
    assert not [line for line in not_judged(resources, users) if "gpu-runtime-class" in line]


def test_servers_of_a_stack_without_models_are_not_judged_and_said_so():
    config = dict(load_stack_file(PUBLIC))
    config.pop("llm-serving:models")
    use_stack_config({**config, "llm-serving:models": "{}"})
    assert _mandatory(SET) == {}
    lines = not_judged(manifests(SET), config)
    assert any("llm-serving:models lists no model" in line for line in lines)


MODEL_FORM = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: hf, namespace: serving}
spec:
  predictor:
    nodeSelector: {kubernetes.io/hostname: a100-0}
    model:
      modelFormat: {name: huggingface}
      args: [--model_name=hf, --model_id=meta-llama/Llama-3.1-8B-Instruct, --tensor-parallel-size=2]
      resources: {limits: {nvidia.com/gpu: "2", memory: 64Gi}}
"""


def test_kserve_model_form_counts_its_cards_and_leaves_the_runtime_alone():
    import core.k8s.manifests

    (r,) = manifests(MODEL_FORM)
    w = core.k8s.manifests.workload(r.type, r.props, r.urn)
    (c,) = w.containers
    assert (c.name, c.cards, c.from_runtime, w.cards_per_pod) == ("kserve-container", 2, True, 2)
    assert _mandatory(MODEL_FORM) == {}
    mode, form = [x for x in not_judged([r], load_stack_file(PUBLIC)) if x.startswith("InferenceService hf")]
    assert "predictor.model form (modelFormat huggingface)" in form
    assert "does not record kserve_deployment_mode" in mode and "KServe ships Serverless" in mode


RAY = """
apiVersion: ray.io/v1
kind: RayService
metadata: {name: llm, namespace: serving}
spec:
  rayClusterConfig:
    headGroupSpec:
      template:
        metadata: {labels: {app: ray-llm, role: head}}
        spec:
          containers: [{name: head, image: rayproject/ray-ml:2.40.0, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: v1
kind: Service
metadata: {name: llm-head, namespace: serving}
spec:
  selector: {app: ray-llm, role: head}
  ports: [{port: 8000}]
"""


def test_a_service_in_front_of_pods_the_pack_does_not_model_is_not_judged():
    assert _mandatory(RAY) == {}
    assert _mandatory(RAY.replace("role: head}\n  ports", "role: heads}\n  ports"))["service-selector-uniqueness"][0].startswith(
        "Service llm-head: selects no workload")
    assert any(line.startswith("RayService llm: asks for nvidia.com/gpu, but the pack does not model this kind")
               for line in not_judged(manifests(RAY), load_stack_file(PUBLIC)))


def test_a_target_port_the_server_listens_on_is_fine_without_a_declared_container_port():
    text = SET.replace("ports: [{containerPort: 8000}]", "ports: [{containerPort: 9090, name: metrics}]", 1)
    assert _mandatory(text) == {}
    wrong = text.replace("--port 8000", "--port 8001")
    assert "service-target-port" in _mandatory(wrong)


AMD = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: rocm, namespace: serving}
spec:
  strategy: {type: Recreate}
  selector: {matchLabels: {app: rocm}}
  template:
    metadata: {labels: {app: rocm}}
    spec:
      containers:
      - name: server
        image: rocm/vllm:latest
        command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, --tensor-parallel-size, "2"]
        resources: {limits: {amd.com/gpu: 2}}
"""


def test_a_server_on_another_vendors_cards_is_not_judged_on_nvidia_ones():
    assert _mandatory(AMD) == {}
    assert any(line.startswith("Deployment rocm: runs a model server on amd.com/gpu, not nvidia.com/gpu")
               for line in not_judged(manifests(AMD), load_stack_file(PUBLIC)))


def test_a_model_the_inventory_does_not_list_is_not_judged_there_but_is_on_the_users_cluster():
    text = SET.replace("meta-llama/Llama-3.1-8B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3")
    assert _mandatory(text) == {}
    assert any("model mistralai/Mistral-7B-Instruct-v0.3 is not in llm-serving:models" in line
               for line in not_judged(manifests(text), load_stack_file(PUBLIC)))
    # The user's cluster lists every model it runs: an unlisted one is still a violation there.
    use_stack_config(load_stack_file(FIXTURES / "Pulumi.fixture.yaml"))
    (message,) = [v.message for v in run_policy(policy("weights-fit-card"), manifests(text))]
    assert "model mistralai/Mistral-7B-Instruct-v0.3 (--model) is not in the stack's models" in message


TUTORIAL = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: llama, namespace: serving}
spec:
  replicas: 1
  selector: {matchLabels: {app: llama}}
  template:
    metadata: {labels: {app: llama}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct]
        args: [--max-model-len, "8192"]
        ports: [{containerPort: 8000}]
        PROBES
        resources: {limits: {nvidia.com/gpu: 1}}
---
apiVersion: v1
kind: Service
metadata: {name: vllm-svc, namespace: serving}
spec:
  selector: {app: llama}
  ports: [{port: 8000, targetPort: 8000}]
"""


@pytest.mark.parametrize("probes", [
    "",  # the GKE tutorial shape: no probes, nothing restarts the server while it loads
    "startupProbe: {httpGet: {path: /health, port: 8000}, periodSeconds: 10, failureThreshold: 60}",
    "readinessProbe: {httpGet: {path: /health, port: 8000}, periodSeconds: 5}",
    "livenessProbe: {httpGet: {path: /health, port: 8000}, initialDelaySeconds: 600, periodSeconds: 10}",
])
def test_an_ordinary_tutorial_deployment_has_no_mandatory_finding(probes):
    """A Llama-8B vLLM Deployment as tutorials write it, behind a Service named vllm-svc (service
    links inject VLLM_SVC_*, names vLLM does not read): its own probe sizing is not judged
    against this namespace's 600 s without a declared cold start."""
    assert _mandatory(TUTORIAL.replace("PROBES", probes)) == {}


def test_a_liveness_probe_that_kills_a_loading_server_is_still_caught():
    """No startup probe and a liveness probe whose grace (60 + 3 x 10 = 90 s) is far below the
    assumed cold start: the kubelet restarts the server while it loads its weights."""
    probes = "livenessProbe: {httpGet: {path: /health, port: 8000}, initialDelaySeconds: 60, periodSeconds: 10}"
    found = _mandatory(TUTORIAL.replace("PROBES", probes))
    assert list(found) == ["startup-probe-covers-cold-start"]
    assert "its livenessProbe runs from initialDelaySeconds 60" in found["startup-probe-covers-cold-start"][0]


def test_a_service_named_vllm_still_breaks_vllm():
    found = _mandatory(TUTORIAL.replace("PROBES", "").replace("name: vllm-svc", "name: vllm"))
    assert list(found) == ["service-link-env-collision"]


@pytest.mark.parametrize("tag, moving", [
    ("us-docker.pkg.dev/vertex-ai/vertex-vision-model-garden-dockers/pytorch-vllm-serve:20250312_0916_RC01", False),
    ("ghcr.io/acme/server:sha-3f2a1c9", False),
    ("vllm/vllm-openai:nightly", True),
    ("vllm/vllm-openai:stable", True),  # (:latest defaults to Always: no finding)
])
def test_on_a_registry_that_does_not_rebuild_tags_only_word_tags_move(tag, moving):
    """The public inventory says tags are not rebuilt: a tag naming a build (a date, a commit)
    is fixed; latest / nightly are moved by their registries and must be pulled Always."""
    found = _mandatory(TUTORIAL.replace("PROBES", "").replace("image: vllm/vllm-openai:v0.11.0", f"image: {tag}"))
    assert ("moving-tag-pull-always" in found) is moving, found


def _canary(second_model: str) -> str:
    base = TUTORIAL.replace("PROBES", "")
    canary = base.split("---")[0].replace("name: llama,", "name: llama-canary,").replace(
        "meta-llama/Llama-3.1-8B-Instruct", second_model)
    return base + "---" + canary


def test_a_canary_of_the_same_model_behind_one_service_is_a_deliberate_split():
    """Stable and canary Deployments answering the same model behind one Service: the split is
    the point on another team's cluster; two different models behind it (seed 002) still fail."""
    assert "service-selector-uniqueness" not in _mandatory(_canary("meta-llama/Llama-3.1-8B-Instruct"))
    found = _mandatory(_canary("Qwen/Qwen3-8B"))
    assert found["service-selector-uniqueness"][0].startswith("Service vllm-svc: selects 2 running workloads")
