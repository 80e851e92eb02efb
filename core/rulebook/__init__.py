"""Every rule the stack file, the component args and the policy pack share, one module a family,
each judge registered in :mod:`core.registry` when its family is imported (this package imports
them all). ``from core import rulebook`` then ``rulebook.vllm_breaches(...)`` /
``rulebook.context_window(...)``.

- :mod:`core.rulebook.settings`: the settings the rules name (stack-file key and manifest form);
- :mod:`core.rulebook.servers`: a model server's rules (start-up, tensor parallel, the card's
  capabilities, memory, the context window, names) and the per-server bundles the stack file
  and the component args judge with;
- :mod:`core.rulebook.volta`: vLLM's environment below sm_75 (sampler, attention backend);
- :mod:`core.rulebook.candle`: candle-vllm's ``--d`` device list;
- :mod:`core.rulebook.served_names`: vLLM's served model names;
- :mod:`core.rulebook.probes`: readiness and startup probes, the declared cold start;
- :mod:`core.rulebook.endpoints`: where a server listens.
"""

from __future__ import annotations

from core.rulebook.servers import (
    Found,
    candle_breaches,
    context_window,
    custom_all_reduce,
    digest_pinned,
    first_error,
    gpu_memory_utilization,
    half_dtype,
    hybrid_on_volta_vllm,
    hybrid_one_card,
    kserve_label,
    memory_declared,
    parallel_matches_cards,
    startup_breaches,
    startup_budget,
    tp_divides,
    vllm_breaches,
    vllm_kernels,
)
from core.rulebook.settings import S
from core.rulebook import candle, endpoints, probes, served_names, volta  # noqa: E402,F401 - registers

__all__ = [
    "Found", "S", "candle_breaches", "context_window", "custom_all_reduce", "digest_pinned", "first_error",
    "gpu_memory_utilization", "half_dtype", "hybrid_on_volta_vllm", "hybrid_one_card", "kserve_label",
    "memory_declared", "parallel_matches_cards", "startup_breaches", "startup_budget", "tp_divides",
    "vllm_breaches", "vllm_kernels",
]
