"""The settings the rules name, each as the stack file names it and as a manifest does
(:class:`core.registry.Setting`). A rule family's own settings may live beside its judges;
the ones several families share are here.
"""

from __future__ import annotations

from types import SimpleNamespace

from core import facts
from core.registry import Setting

#: The settings the shared rules name, by their stack-file key and their manifest form.
S = SimpleNamespace(
    cards=Setting("cards", "cards", f"the container's {facts.GPU_RESOURCE} (requests = limits)"),
    model=Setting("model", "model", "--model", flag=True),
    image=Setting("image", "image", "image"),
    server=Setting("server", "server", "the container's server"),
    dtype=Setting("dtype", "dtype", "--dtype", flag=True),
    quantization=Setting("quantization", "quantization", "--quantization", flag=True),
    kv_cache_dtype=Setting("kv_cache_dtype", "kv_cache_dtype", "--kv-cache-dtype", flag=True),
    tp=Setting("tensor_parallel_size", "tensor_parallel_size", "--tensor-parallel-size", flag=True),
    pp=Setting("pipeline_parallel_size", "pipeline_parallel_size", "--pipeline-parallel-size", flag=True),
    disable_custom_all_reduce=Setting("disable_custom_all_reduce", "disable_custom_all_reduce",
                                      "--disable-custom-all-reduce", flag=True),
    gmu=Setting("gpu_memory_utilization", "gpu_memory_utilization", "--gpu-memory-utilization", flag=True),
    enforce_eager=Setting("enforce_eager", "enforce_eager", "--enforce-eager", flag=True),
    gmu_override=Setting("gpu_memory_utilization_override", "gpu_memory_utilization_override",
                         f"annotation {facts.GMU_OVERRIDE_ANNOTATION}"),
    max_model_len=Setting("max_model_len", "max_model_len", "--max-model-len", flag=True),
    # vLLM v0.11.0 reads --hf-overrides={"rope_scaling": ...}; --rope-scaling is deprecated there.
    rope_scaling=Setting("rope_scaling", "rope_scaling", "--hf-overrides", flag=True, wrap="rope_scaling"),
    memory_request=Setting("memory_request", "resources.requests.memory", "resources.requests.memory"),
    memory_limit=Setting("memory_limit", "resources.limits.memory", "resources.limits.memory"),
    failure_threshold=Setting("startup_failure_threshold", "startup_probe.failure_threshold",
                              "startupProbe.failureThreshold"),
    cold_start=Setting("cold_start_seconds", "cold_start_seconds", f"annotation {facts.COLD_START_ANNOTATION}"),
    name=Setting("name", "the workload's name", "metadata.name"),
)
