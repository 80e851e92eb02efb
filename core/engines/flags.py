"""The model servers' command-line flags, one table per engine: each setting's flag, declared once.

:class:`core.engines.config.VllmConfig` and :class:`core.engines.config.CandleConfig` carry these tables as their
``FLAGS`` (``argv()`` renders them, ``read()`` reads an argv back), and the rules' settings
(:mod:`core.engines.settings`) name a flag from the same table, so a flag is spelt in one place.
Plain Python, no import: the engine models import the rulebook, so the rulebook cannot import them.
"""

from __future__ import annotations

#: vLLM v0.11.0 (``vllm serve --help``): setting -> flag. ``block_size`` and ``data_parallel_size``
#: are read only (the stack file leaves vLLM's defaults, 16 and 1), and so is ``rope_scaling``
#: (deprecated in v0.11.0 for ``--hf-overrides``, which the stack file renders).
VLLM: dict[str, str] = {
    "model": "--model", "served_model_names": "--served-model-name", "quantization": "--quantization",
    "dtype": "--dtype", "kv_cache_dtype": "--kv-cache-dtype", "max_model_len": "--max-model-len",
    "hf_overrides": "--hf-overrides", "tensor_parallel_size": "--tensor-parallel-size",
    "pipeline_parallel_size": "--pipeline-parallel-size", "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_num_seqs": "--max-num-seqs", "max_num_batched_tokens": "--max-num-batched-tokens",
    "long_prefill_token_threshold": "--long-prefill-token-threshold",
    "enable_chunked_prefill": "--enable-chunked-prefill", "enable_prefix_caching": "--enable-prefix-caching",
    "disable_custom_all_reduce": "--disable-custom-all-reduce", "enforce_eager": "--enforce-eager",
    "reasoning_parser": "--reasoning-parser", "enable_auto_tool_choice": "--enable-auto-tool-choice",
    "tool_call_parser": "--tool-call-parser", "host": "--host", "port": "--port", "block_size": "--block-size",
    "data_parallel_size": "--data-parallel-size", "rope_scaling": "--rope-scaling",
}

#: vLLM's short spellings of the same settings (vllm/engine/arg_utils.py: ``-tp``, ``-pp``,
#: ``-dp``, ``-q``), read back, never rendered.
VLLM_SHORT: dict[str, str] = {
    "tensor_parallel_size": "-tp", "pipeline_parallel_size": "-pp", "data_parallel_size": "-dp", "quantization": "-q",
}

#: candle-vllm (src/main.rs): setting -> flag. ``mem_mib``, ``kv_cache_dtype``, ``fp8_kvcache``,
#: ``block_size``, ``mamba_fraction`` and ``model_id`` are read only (the stack file leaves
#: candle-vllm's defaults and names its weights by path, ``--w``; ``--m`` is a Hugging Face id).
CANDLE: dict[str, str] = {
    "weights_path": "--w", "devices": "--d", "dtype": "--dtype", "port": "--p", "max_num_seqs": "--max-num-seqs",
    "kv_fraction": "--kv-fraction", "prefill_chunk_size": "--prefill-chunk-size", "mem_mib": "--mem",
    "kv_cache_dtype": "--kvcache-dtype", "fp8_kvcache": "--fp8-kvcache", "block_size": "--block-size",
    "mamba_fraction": "--mamba-fraction", "model_id": "--m",
}


def spellings(name: str) -> tuple[str, ...]:
    """Every way vLLM's argv may spell setting ``name``: its flag, then its short form if any
    (``tensor_parallel_size`` -> ``("--tensor-parallel-size", "-tp")``)."""
    return (VLLM[name], VLLM_SHORT[name]) if name in VLLM_SHORT else (VLLM[name],)
