"""The settings the rules name, each as the stack file names it and as a manifest does
(:class:`core.judging.registry.Setting`). A rule family's own settings may live beside its judges;
the ones several families share are here. A server flag's manifest form is the engine model's
flag (:mod:`core.engines.flags`, the tables ``VllmConfig.FLAGS`` / ``CandleConfig.FLAGS`` carry), never
spelt again here (:func:`flag_setting`).
"""

from __future__ import annotations

from core.base import facts
from core.engines import flags
from core.judging.registry import Setting


def flag_setting(field: str, table: dict[str, str] = flags.VLLM, *, id_: str = "", in_stack_file: bool = True) -> Setting:
    """The setting of engine field ``field``, rendered in a manifest as the engine's flag for it
    (``table``: :data:`core.engines.flags.VLLM`, default, or :data:`core.engines.flags.CANDLE`); its stack-file key
    is ``field`` (None when not ``in_stack_file``: the component writes the flag); ``id_``: the
    setting's id, default ``field``."""
    return Setting(id_ or field, field if in_stack_file else None, table[field], flag=True)


class S:
    """The settings the shared rules name, by their stack-file key and their manifest form (a class, so a
    misspelt ``S.<name>`` is a type error, and tests/core/test_registry.py walks every use)."""

    cards = Setting("cards", "cards", f"the container's {facts.GPU_RESOURCE} (requests = limits)")
    model = flag_setting("model")
    image = Setting("image", "image", "image")
    server = Setting("server", "server", "the container's server")
    dtype = flag_setting("dtype")
    quantization = flag_setting("quantization")
    kv_cache_dtype = flag_setting("kv_cache_dtype")
    tp = flag_setting("tensor_parallel_size")
    pp = flag_setting("pipeline_parallel_size")
    disable_custom_all_reduce = flag_setting("disable_custom_all_reduce")
    gmu = flag_setting("gpu_memory_utilization")
    enforce_eager = flag_setting("enforce_eager")
    gmu_override = Setting("gpu_memory_utilization_override", "gpu_memory_utilization_override",
                           f"annotation {facts.GMU_OVERRIDE_ANNOTATION}")
    max_model_len = flag_setting("max_model_len")
    served_model_names = flag_setting("served_model_names")
    # vLLM v0.11.0 reads --hf-overrides={"rope_scaling": ...}; --rope-scaling is deprecated there.
    rope_scaling = Setting("rope_scaling", "rope_scaling", flags.VLLM["hf_overrides"], flag=True, wrap="rope_scaling")
    memory_request = Setting("memory_request", "resources.requests.memory", "resources.requests.memory")
    memory_limit = Setting("memory_limit", "resources.limits.memory", "resources.limits.memory")
    failure_threshold = Setting("startup_failure_threshold", "startup_probe.failure_threshold",
                                "startupProbe.failureThreshold")
    cold_start = Setting("cold_start_seconds", "cold_start_seconds", f"annotation {facts.COLD_START_ANNOTATION}")
    name = Setting("name", "the workload's name", "metadata.name")
