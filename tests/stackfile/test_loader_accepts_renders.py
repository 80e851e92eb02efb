"""Property: a stack file the loader accepts renders, whatever its engine, card and capacity settings.

Stack files are generated from prod by changing one workload's fields at a time over the
values each field can take (dtypes, quantizations, cards, tensor and pipeline parallel sizes,
max-model-len, kv-fraction, models, images, probes, memory quantities). The loader refuses only
shape and references; the engine, card and capacity rules are the pack's, judged once on the
rendered manifests (docs/architecture.md). So every stack file the loader accepts must render
manifests the pack can read: no component raises on a value the pack refuses, and the manifests
read back as resources. (Before, this property held the loader and the pack to the same verdict.)
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from core.base import facts
from core.k8s import manifests
from stackfile import ConfigError, load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tools.offline.manifests import load_stack_file, resources_from_documents

PROD = load_stack_file(PROD_STACK_FILE)
W = "llm-serving:workloads"
MODELS = sorted(PROD["llm-serving:models"])

MEMORY = st.sampled_from(["1Gi", "12Gi", "36Gi", "62Gi", "64Gi", "1Pi", "8192Mi", "0.5Gi", "lots", "1e3Mi"])
COMMON = {
    "cards": st.integers(1, 5),
    "cold_start_seconds": st.sampled_from([1, 60, 300, 600, 1800]),
    "startup_probe": st.fixed_dictionaries({}, optional={
        "period_seconds": st.sampled_from([1, 10, 15, 60]),
        "failure_threshold": st.sampled_from([1, 5, 20, 120]),
    }),
    "resources": st.fixed_dictionaries({
        "requests": st.fixed_dictionaries({}, optional={"memory": MEMORY}),
        "limits": st.fixed_dictionaries({}, optional={"memory": MEMORY}),
    }),
}
VLLM = {
    **COMMON,
    "model": st.sampled_from(MODELS),
    "dtype": st.sampled_from(["auto", "half", "float16", "bfloat16", "float", "float32"]),
    "quantization": st.sampled_from([None, "gptq", "awq", "fp8", "marlin", "gptq_marlin", "bitsandbytes"]),
    "kv_cache_dtype": st.sampled_from(["auto", "fp8", "fp8_e5m2"]),
    "tensor_parallel_size": st.sampled_from([None, 1, 2, 4]),
    "pipeline_parallel_size": st.sampled_from([1, 2]),
    "max_model_len": st.sampled_from([4096, 32768, 65536, 131072, 262144]),
    "gpu_memory_utilization": st.sampled_from([0.3, 0.9, 0.95, 0.98]),
    "enforce_eager": st.sampled_from([False, True]),
    "rope_scaling": st.sampled_from([
        None,
        {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32768},
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        {"rope_type": "yarn", "factor": 1.5, "original_max_position_embeddings": 32768},
    ]),
    "env": st.sampled_from([{}, {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}]),
    "disable_custom_all_reduce": st.sampled_from([None, True, False]),
    "image": st.sampled_from([facts.VLLM_IMAGE, "vllm/vllm-openai:v0.11.0"]),
    "served_model_names": st.sampled_from([["reasoning"], ["reasoning", "reasoning-long"], ["a,b"]]),
}
CANDLE = {
    **COMMON,
    "model": st.sampled_from(MODELS),
    "dtype": st.sampled_from(["f16", "bf16", "f32"]),
    "kv_fraction": st.sampled_from([0.01, 0.05, 0.3, 0.85, 1.0]),
    "max_num_seqs": st.sampled_from([1, 16, 64]),
    "prefill_chunk_size": st.sampled_from([1024, 8192]),
}


def _changes(fields: dict) -> st.SearchStrategy[dict]:
    """A few of ``fields`` set to generated values."""
    return st.fixed_dictionaries({}, optional=fields)


CASES = st.one_of(
    st.tuples(st.just("reasoning"), _changes(VLLM)),
    st.tuples(st.just("candle-vllm"), _changes(CANDLE)),
    st.tuples(st.just("clef-candle"), _changes(CANDLE)),
)


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(CASES)
def test_a_stack_file_the_loader_accepts_renders_manifests_the_pack_reads(case):
    name, fields = case
    raw = copy.deepcopy(PROD)
    workload = raw[W][name]
    for key, value in fields.items():
        if key == "resources":
            workload["resources"] = {part: {**workload["resources"][part], **value[part]} for part in ("requests", "limits")}
        elif value is None:
            workload.pop(key, None)
        else:
            workload[key] = value
    try:
        config = load_stack_config(raw)
    except ConfigError:
        event("refused by the loader")
        return
    event("accepted by the loader")
    docs = render_manifests(config)
    resources = resources_from_documents(docs, stack="prop")
    assert {r.name.split("/")[-1] for r in resources} >= set(config.workloads), (name, fields)
    (server,) = [d for d in docs if d["metadata"]["name"] == name and d["kind"] in ("Deployment", "InferenceService")]
    pod = server["spec"]["template"]["spec"] if server["kind"] == "Deployment" else server["spec"]["predictor"]
    (container,) = pod["containers"]
    engine = "vllm" if server["kind"] == "InferenceService" else "candle-vllm"
    read = manifests.parse_args(engine, container["args"])
    if "dtype" in fields:  # the value the pack will judge is the one the stack file gave
        assert read.get("--dtype") == fields["dtype"], (name, fields, container["args"])
