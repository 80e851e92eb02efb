"""The components' pure manifest functions and argument models, without the engine: each fact
of the spec's table is a default or a validation, with the values the seeds carry."""

from __future__ import annotations

import json

import pytest
import yaml

from components.network import NamespaceNetworkPolicyArgs, network_policy_manifest
from components.service import service_manifest, service_urls
from components.vllm import VllmArgs, inference_service_manifest, predictor_pod_labels, predictor_selector, vllm_argv
from components.workload import (
    CandleDeploymentArgs,
    candle_argv,
    candle_gpu_args,
    deployment_manifest,
    pull_policy,
)
from core.base import facts
from core.capacity.inventory import CardSpec
from core.k8s.placement import Parked, Placement
from stackfile import NetworkPolicyConfig, Resources, ServiceClient, StartupProbe, load_stack_config
from stackfile.build import candle_args, gpu_args, vllm_args
from tests.paths import PROD_STACK_FILE, ROOT
from tools.offline.manifests import load_stack_file

PROD = load_stack_config(load_stack_file(PROD_STACK_FILE))
AFTER_002 = load_stack_config(load_stack_file(ROOT / "tests" / "stacks" / "after-002.yaml"))
V100 = PROD.node("worker-1").card
A100 = CardSpec(product="A100-SXM4-80GB", memory_mib=81920, compute_capability="8.0", nvlink=True, hbm_bandwidth_gb_s=2039)


def changed(args, changes: dict):
    """``args`` with ``changes``, a placement field's change going to its ``placement``."""
    base = args.model_dump()
    base["placement"].update({k: changes.pop(k) for k in list(changes) if k in Placement.model_fields})
    return type(args)(**{**base, **changes})


def candle(**changes) -> CandleDeploymentArgs:
    return changed(candle_args("candle-vllm", PROD.workloads["candle-vllm"], PROD), changes)


def vllm(**changes) -> VllmArgs:
    return changed(vllm_args("coder", AFTER_002.workloads["coder"], AFTER_002), changes)


def container_of(manifest: dict) -> dict:
    if manifest["kind"] == "InferenceService":
        return manifest["spec"]["predictor"]["containers"][0]
    return manifest["spec"]["template"]["spec"]["containers"][0]


def pod_of(manifest: dict) -> dict:
    return manifest["spec"]["predictor"] if manifest["kind"] == "InferenceService" else manifest["spec"]["template"]["spec"]


# --- candle-vllm ---------------------------------------------------------------------------

def test_candle_argv_order_and_devices():
    """The references' order; cards become --d 0,1,... (001)."""
    assert candle_argv(candle()) == [
        "--w", "/mnt/models/coder-14b-fp16", "--d", "0,1", "--dtype", "f16", "--p", "8080",
        "--max-num-seqs", "32", "--kv-fraction", "0.85",
    ]
    clef = candle_args("clef-candle", PROD.workloads["clef-candle"], PROD)
    assert candle_argv(clef)[-4:] == ["--kv-fraction", "0.30", "--prefill-chunk-size", "1024"]
    assert candle_argv(candle(cards=4))[3] == "0,1,2,3"


def test_candle_deployment_carries_the_gpu_facts():
    m = deployment_manifest(candle_gpu_args(candle()), "CandleDeployment/candle-vllm")
    pod, c = pod_of(m), container_of(m)
    assert pod["runtimeClassName"] == "nvidia"  # 001, 003
    assert m["spec"]["strategy"] == {"type": "Recreate"}  # 001, 003, coder.yaml
    assert pod["nodeSelector"] == {"kubernetes.io/hostname": "worker-1"}
    assert c["command"] == ["/usr/local/bin/candle-vllm"]  # coder-14b-fp16.yaml
    assert c["resources"]["requests"]["nvidia.com/gpu"] == c["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert c["startupProbe"] == {"httpGet": {"path": "/v1/models", "port": 8080}, "failureThreshold": 60, "periodSeconds": 15}
    assert c["livenessProbe"]["httpGet"] == {"path": "/v1/models", "port": 8080}
    assert {"name": "models", "mountPath": "/mnt/models", "readOnly": True} in c["volumeMounts"]
    annotations = dict(m["metadata"]["annotations"])
    waived = {k: annotations.pop(k) for k in list(annotations) if k.startswith(facts.CHECKOV_SKIP_ANNOTATION)}
    assert annotations == {
        facts.COMPONENT_ANNOTATION: "CandleDeployment/candle-vllm",
        facts.COLD_START_ANNOTATION: "300",
        facts.SERVED_NAMES_ANNOTATION: '["coder-14b-fp16"]',
        facts.RUNS_AS_ROOT_ANNOTATION: facts.ROOT_REASONS["candle-vllm"],
        facts.AWAIT_TIMEOUT_ANNOTATION: "510",  # ceil(1.5 x 300) + 60 (core.rulebook.time_budgets.await_timeout_seconds)
    }
    assert sorted(v.split("=")[0] for v in waived.values()) == ["CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_40", "CKV_K8S_43"]


@pytest.mark.parametrize("image, policy", [
    ("forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70", "Always"),
    ("forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70-gptq-slim", "Always"),
    ("forgejo.riotpiao.com/riotpiao-poimen/candle-vllm@sha256:" + "a" * 64, None),
])
def test_moving_tags_are_pulled_always(image, policy):
    """003: a moving tag is otherwise never pulled again; a digest never moves."""
    assert pull_policy(image) == policy
    c = container_of(deployment_manifest(candle_gpu_args(candle(image=image)), "x"))
    assert c.get("imagePullPolicy") == policy


def test_shm_only_for_multi_card_pods():
    """coder.yaml: TP>1 needs a Memory-backed /dev/shm; one card does not."""
    two = deployment_manifest(candle_gpu_args(candle()), "x")
    one = deployment_manifest(candle_gpu_args(candle(cards=1)), "x")
    assert pod_of(two)["volumes"][1] == {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}
    assert {"name": "shm", "mountPath": "/dev/shm"} in container_of(two)["volumeMounts"]
    assert [v["name"] for v in pod_of(one)["volumes"]] == ["models"]


def test_candle_args_keep_their_types_and_render_what_they_are_given():
    """The args refuse what their types refuse (a prefill chunk candle-vllm asserts on); the rules
    of the card and the model (TP 3 on the 14B, bf16 on sm_70) are the pack's, judged once on the
    rendered Deployment (tests/stackfile/test_server_rules.py)."""
    with pytest.raises(ValueError, match="multiple of 1024"):
        candle(prefill_chunk_size=1000)
    assert candle_argv(candle(cards=3))[2:4] == ["--d", "0,1,2"]
    assert candle_argv(candle(dtype="bf16"))[4:6] == ["--dtype", "bf16"]


def test_startup_budget_defaults_to_three_cold_starts_and_renders_a_given_one():
    """coder.yaml: 120 x 15 s for about 10 minutes. A budget under the cold start renders as given:
    the pack's startup-probe-covers-cold-start refuses it (tests/stackfile/test_server_rules.py)."""
    args = gpu_args("clef-serve", PROD.workloads["clef-serve"], PROD)
    probe = container_of(deployment_manifest(args, "x"))["startupProbe"]
    assert probe == {"httpGet": {"path": "/health", "port": 8080}, "failureThreshold": 48, "periodSeconds": 15}
    short = changed(args, {"startup_probe": StartupProbe(period_seconds=10, failure_threshold=20)})
    probe = container_of(deployment_manifest(short, "x"))["startupProbe"]
    assert (probe["periodSeconds"], probe["failureThreshold"]) == (10, 20)


def test_parked_deployment_is_zero_replicas_with_its_reason():
    """000: clef-serve parked to free the card; the reason is on the object."""
    m = deployment_manifest(gpu_args("clef-serve", PROD.workloads["clef-serve"], PROD), "GpuDeployment/clef-serve")
    assert m["spec"]["replicas"] == 0
    assert m["metadata"]["annotations"][facts.PARKED_ANNOTATION].startswith("clef-candle serves clef-flash")
    assert container_of(m)["resources"]["limits"]["nvidia.com/gpu"] == "1"


# --- vLLM ----------------------------------------------------------------------------------

def test_vllm_argv_is_coder_yaml():
    """coder.yaml's order and forms; served names as separate items (002)."""
    argv = vllm_argv(vllm())
    assert argv[:4] == ["--model=ModelCloud/Qwen3-Coder-30B-A3B-Instruct-GPTQMODEL-W4A16-A",
                        "--served-model-name", "coder", "reasoning"]
    assert "--disable-custom-all-reduce" in argv
    assert argv[-2:] == ["--host=0.0.0.0", "--port=8080"]


def test_custom_all_reduce_is_disabled_only_for_tp2_without_nvlink():
    """coder.yaml: the custom all-reduce deadlocked on PCIe V100s."""
    assert "--disable-custom-all-reduce" in vllm_argv(vllm())
    assert "--disable-custom-all-reduce" not in vllm_argv(vllm(card=A100))
    assert "--disable-custom-all-reduce" not in vllm_argv(vllm(cards=1, tensor_parallel_size=1))


def test_volta_env_only_below_sm75():
    """coder.yaml: FlashInfer sampler off and Triton attention on sm_70."""
    env = container_of(inference_service_manifest(vllm(), "x"))["env"]
    assert env == [{"name": "VLLM_USE_FLASHINFER_SAMPLER", "value": "0"},
                   {"name": "VLLM_ATTENTION_BACKEND", "value": "TRITON_ATTN"},
                   {"name": "HF_HOME", "value": "/mnt/models"}, {"name": "HF_HUB_OFFLINE", "value": "1"}]
    env = container_of(inference_service_manifest(vllm(card=A100), "x"))["env"]
    assert env == [{"name": "HF_HOME", "value": "/mnt/models"}, {"name": "HF_HUB_OFFLINE", "value": "1"}]


def test_vllm_probes_and_shm():
    m = inference_service_manifest(vllm(), "x")
    c = container_of(m)
    assert c["readinessProbe"] == {"httpGet": {"path": "/health", "port": 8080}, "periodSeconds": 10}
    assert c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"] == 1800  # 3 x 600 s
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    assert pod_of(m)["volumes"][1]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}
    one = inference_service_manifest(vllm_args("reasoning", PROD.workloads["reasoning"], PROD), "x")
    assert [v["name"] for v in pod_of(one)["volumes"]] == ["models"]


def test_vllm_args_keep_their_types_and_render_what_they_are_given():
    """A served model name is one argv item (its type, 002); the card's and the engine's rules
    (fp8 on sm_70, TP x PP against the cards) are the pack's, judged once on the rendered
    InferenceService (tests/stackfile/test_server_rules.py)."""
    with pytest.raises(ValueError, match="contains a comma: vLLM serves ONE model"):
        vllm(served_model_names=["coder,reasoning"])
    assert "--quantization=fp8" in vllm_argv(vllm(quantization="fp8"))
    assert "--tensor-parallel-size=2" in vllm_argv(vllm(cards=1))


def test_parked_inference_service_has_zero_replica_bounds():
    """kustomization: an InferenceService at 0 still reports Ready, so the park is declared."""
    m = inference_service_manifest(vllm(parked=Parked(reason="replaced by candle-vllm (000)")), "x")
    assert (m["spec"]["predictor"]["minReplicas"], m["spec"]["predictor"]["maxReplicas"]) == (0, 0)
    assert m["metadata"]["annotations"][facts.PARKED_ANNOTATION] == "replaced by candle-vllm (000)"


def test_predictor_labels_are_what_kserve_gives_the_pods():
    """reasoning-long-service.yaml selects these three labels."""
    args = vllm_args("reasoning", PROD.workloads["reasoning"], PROD)
    assert predictor_selector(args) == {
        "app.kubernetes.io/name": "llm-reasoning", "component": "predictor",
        "serving.kserve.io/inferenceservice": "reasoning",
    }
    assert predictor_pod_labels(args)["app"] == "isvc.reasoning-predictor"


# --- Service and NetworkPolicy -------------------------------------------------------------

def test_service_manifest_ports_selector_and_clients():
    clients = [ServiceClient(name="poimen-memory", namespace="poimen", port=8080)]
    m = service_manifest("coder-predictor", "llm-serving", {"app": "candle-vllm"}, 8080, clients, None,
                         "StablePredictorService/coder-predictor")
    assert m["spec"] == {
        "type": "ClusterIP",
        "selector": {"app": "candle-vllm"},
        "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                  {"name": "http-8080", "protocol": "TCP", "port": 8080, "targetPort": 8080}],
    }
    assert json.loads(m["metadata"]["annotations"][facts.CLIENTS_ANNOTATION]) == [
        {"name": "poimen-memory", "namespace": "poimen", "port": 8080}]
    assert facts.PARKED_ANNOTATION not in m["metadata"]["annotations"]
    assert service_urls("coder-predictor", "llm-serving") == {
        "http": "http://coder-predictor.llm-serving.svc.cluster.local:80",
        "http-8080": "http://coder-predictor.llm-serving.svc.cluster.local:8080",
    }


SEED_002_POIMEN_RULE = yaml.safe_load("""
- from:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: poimen
  ports:
    - protocol: TCP
      port: 8080
""")[0]


def test_network_policy_reproduces_the_seed_002_rules():
    m = network_policy_manifest(NamespaceNetworkPolicyArgs(namespace="llm-serving", policy=PROD.network_policy), "x")
    assert m["metadata"]["name"] == "llm-serving-ingress"
    assert m["spec"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/part-of": "llm-serving"}}
    assert m["spec"]["policyTypes"] == ["Ingress"]
    gateway, poimen, same = m["spec"]["ingress"]
    assert poimen == SEED_002_POIMEN_RULE
    assert gateway["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gateway"}}}]
    assert [p["port"] for p in gateway["ports"]] == [80, 8000, 8080]
    assert same == {"from": [{"podSelector": {}}]}
    closed = NetworkPolicyConfig(name="only-gateway", same_namespace=False)
    assert network_policy_manifest(NamespaceNetworkPolicyArgs(namespace="llm-serving", policy=closed), "x")["spec"]["ingress"] == []


def test_resources_refuse_a_request_above_its_limit():
    with pytest.raises(ValueError, match="requests.cpu 16 exceeds limits.cpu 8"):
        Resources(requests={"cpu": "16"}, limits={"cpu": "8"})


def test_the_runtime_class_is_the_inventorys():
    """The GPU runtime class is a fact of the cluster's inventory. Prod's
    (nvidia, seeds 001, 003) is rendered; an inventory that names none (the GPU runtime is the
    default, as the GPU Operator makes it) renders no runtimeClassName rather than a wrong one."""
    import copy

    from stackfile import load_stack_config
    from stackfile.build import render_manifests
    from tests.paths import PROD_STACK_FILE
    from tools.offline.manifests import load_stack_file

    raw = load_stack_file(PROD_STACK_FILE)

    def classes(config):
        return {d["metadata"]["name"]: (d["spec"]["template"]["spec"] if d["kind"] == "Deployment"
                                         else d["spec"]["predictor"]).get("runtimeClassName")
                for d in render_manifests(load_stack_config(config))
                if d["kind"] in ("Deployment", "InferenceService")}

    assert set(classes(raw).values()) == {"nvidia"}
    bare = copy.deepcopy(raw)
    bare["llm-serving:cluster"].pop("gpu_runtime_class")
    assert set(classes(bare).values()) == {None}


def test_every_component_class_names_its_stack_file_section():
    """The pack names an object's stack-file key from its component annotation's class
    (core.base.facts.COMPONENT_SECTIONS): every ComponentResource that renders objects has a section,
    and the table names no class that does not exist."""
    import inspect

    import pulumi

    from components import network, service, vllm, workload
    from core.base import facts

    classes = {name for module in (network, service, vllm, workload)
               for name, cls in inspect.getmembers(module, inspect.isclass)
               if issubclass(cls, pulumi.ComponentResource) and cls.__module__ == module.__name__
               and not inspect.isabstract(cls) and name != "WorkloadComponent"}
    assert classes == set(facts.COMPONENT_SECTIONS)
    assert set(facts.COMPONENT_SECTIONS.values()) == {"workloads", "services", "network_policy"}
