"""An InferenceService's predictor as KServe builds it from a ServingRuntime of the manifest set
(core/k8s/manifests/kserve.py), on Open Data Hub's vLLM runtime with an InferenceService as the
OpenShift AI tutorials write it (tests/heldout/odh-vllm-runtime-isvc.yaml)."""

from __future__ import annotations

import copy

from core.k8s.manifests import kserve, stack_view
from tests.paths import ROOT
from tools.offline.manifests import load_manifest_dir

CASE = ROOT / "tests" / "heldout" / "odh-vllm-runtime-isvc.yaml"


def _resources():
    return load_manifest_dir(CASE)


class _R:  # what stack_view reads of a resource
    def __init__(self, r):
        self.resource_type, self.props, self.urn = r.type, r.props, r.urn


def _workload(resources):
    (w,) = stack_view([_R(r) for r in resources]).workloads
    return w


def test_the_predictor_is_built_from_the_runtime_the_model_format_selects():
    w = _workload(_resources())
    assert w.runtime == "ServingRuntime vllm-cuda-runtime"
    (c,) = w.containers
    assert (c.name, c.image, c.from_runtime) == ("kserve-container", "quay.io/modh/vllm:rhoai-2.25-cuda", False)
    assert c.argv.argv == ("python", "-m", "vllm.entrypoints.openai.api_server", "--port=8080", "--model=/mnt/models",
                           "--served-model-name=granite", "--max-model-len=8192")
    assert c.endpoint is not None and (c.endpoint.port, c.endpoint.served_model_names) == (8080, ("granite",))
    assert c.env == {"HF_HOME": "/tmp/hf_home"} and c.cards == 1 and c.memory_limit_mib == 16 * 1024
    assert [dict(m) for m in c.volume_mounts] == [{"name": "kserve-provision-location", "mountPath": "/mnt/models",
                                                  "readOnly": True}]
    (init,) = w.init_containers
    assert (init.name, init.args) == ("storage-initializer", ("s3://models/granite-3.1-8b-instruct", "/mnt/models"))
    assert w.volume("kserve-provision-location") == {"name": "kserve-provision-location", "emptyDir": {}}


def test_without_the_runtime_in_the_set_the_predictor_stays_the_model_form():
    w = _workload([r for r in _resources() if r.props["kind"] == "InferenceService"])
    assert w.runtime is None and w.containers[0].from_runtime


def _runtime(name, namespace="llm", auto=True, priority=None, fmt="vLLM", **spec):
    entry = {"name": fmt, "autoSelect": auto, **({"priority": priority} if priority is not None else {})}
    return kserve.Runtime(name, namespace, {"supportedModelFormats": [entry], "containers": [], **spec})


def test_runtime_selection_follows_kserves_rules():
    model = {"modelFormat": {"name": "vLLM"}}
    assert kserve.select_runtime(model, "llm", [_runtime("b"), _runtime("a")]).name == "a"  # ties by name
    assert kserve.select_runtime(model, "llm", [_runtime("a"), _runtime("z", priority=2)]).name == "z"
    assert kserve.select_runtime(model, "llm", [_runtime("c", namespace=None), _runtime("n")]).name == "n"
    assert kserve.select_runtime(model, "llm", [_runtime("off", auto=False)]) is None
    assert kserve.select_runtime({**model, "runtime": "off"}, "llm", [_runtime("off", auto=False)]).name == "off"
    assert kserve.select_runtime(model, "llm", [_runtime("x", disabled=True), _runtime("other", fmt="onnx")]) is None
    assert kserve.select_runtime(model, "elsewhere", [_runtime("a")]) is None
    assert kserve.select_runtime({**model, "protocolVersion": "v2"}, "llm", [_runtime("a")]) is None


def test_a_pvc_storage_uri_mounts_the_claim_with_its_path():
    resources = _resources()
    isvc = copy.deepcopy(next(r for r in resources if r.props["kind"] == "InferenceService").props)
    isvc["spec"]["predictor"]["model"]["storageUri"] = "pvc://models/granite"
    runtime = kserve.runtimes_of([_R(r) for r in resources])[0]
    pod = kserve.predictor_pod(isvc, runtime)
    assert pod["volumes"] == [{"name": "kserve-pvc-source", "persistentVolumeClaim": {"claimName": "models",
                                                                                       "readOnly": True}}]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "kserve-pvc-source", "mountPath": "/mnt/models",
                                                     "subPath": "granite", "readOnly": True}]
    assert "initContainers" not in pod


def test_the_merge_patches_env_by_name_and_resources_by_key():
    merged = kserve.merged_container(
        {"name": "kserve-container", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "resources": {"limits": {"cpu": "2"}}, "args": ["--port=8080"]},
        {"env": [{"name": "B", "value": "3"}], "resources": {"limits": {"nvidia.com/gpu": "1"}}, "args": ["--x=1"]},
        "m", "ns")
    assert merged["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]
    assert merged["resources"] == {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}
    assert merged["args"] == ["--port=8080", "--x=1"]
