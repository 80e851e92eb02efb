"""Every rule the stack file, the component args and the policy pack share, one module a family,
each judge registered in :mod:`core.registry` when its family is imported (:func:`register_all`
imports them all). ``from core import rulebook`` then ``rulebook.vllm_breaches(...)`` /
``rulebook.capacity.kv_cache_fits(...)``.

- :mod:`core.rulebook.settings`: the settings the rules name (stack-file key and manifest form);
- :mod:`core.rulebook.servers`: a model server's rules (start-up, tensor parallel, the card's
  capabilities, memory, the context window, names) and the per-server bundles the stack file
  and the component args judge with;
- :mod:`core.rulebook.capacity`: weights and KV cache on the card (weights-fit-card,
  kv-cache-fits-max-model-len);
- :mod:`core.rulebook.allocation`: cards and memory asked of a node, a GPU workload's rollout
  (gpu-card-allocation, node-memory-allocation, gpu-rollout-recreate);
- :mod:`core.rulebook.pods`: whole cards, the GPU RuntimeClass, /dev/shm, a moving tag pulled Always;
- :mod:`core.rulebook.kserve`: a parked InferenceService, KServe's predictor names;
- :mod:`core.rulebook.volta`: vLLM's environment below sm_75 (sampler, attention backend);
- :mod:`core.rulebook.candle`: candle-vllm's ``--d`` device list;
- :mod:`core.rulebook.served_names`: vLLM's served model names;
- :mod:`core.rulebook.probes`: readiness and startup probes, the declared cold start;
- :mod:`core.rulebook.endpoints`: where a server listens;
- :mod:`core.rulebook.pod_security`: the Pod Security Standards' checks, one record a row, and
  the house's token and models-mount rules;
- :mod:`core.rulebook.services`: a Service against its workloads (one running workload behind it,
  its targetPort, service links) and one served model name a server;
- :mod:`core.rulebook.network`: the NetworkPolicies admit each declared client and each server's port;
- :mod:`core.rulebook.stack_config`: the pack can read the stack's inventory and models, and a
  server's model is one they list.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from core.registry import POLICY_TEXTS, RULES, PolicyText, Rule

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

#: The rule families beside :mod:`core.rulebook.servers`, imported on first use
#: (``rulebook.capacity``) or all at once by :func:`register_all`. Not imported here, so the
#: engine models (:mod:`core.engines`, which judge a served name) import no estimator through
#: this package: no import cycle.
FAMILIES = ("allocation", "candle", "capacity", "endpoints", "kserve", "network", "pod_security", "pods", "probes",
            "served_names", "services", "stack_config", "volta")

__all__ = [
    "FAMILIES", "Found", "S", "candle_breaches", "context_window", "custom_all_reduce", "digest_pinned", "first_error",
    "gpu_memory_utilization", "half_dtype", "hybrid_on_volta_vllm", "hybrid_one_card", "kserve_label",
    "memory_declared", "parallel_matches_cards", "policy_text", "register_all", "startup_breaches", "startup_budget", "tp_divides",
    "vllm_breaches", "vllm_kernels",
]


def __getattr__(name: str) -> ModuleType:
    """``rulebook.<family>``: the family module, imported (and its rules registered) on first use."""
    if name in FAMILIES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register_all() -> dict[str, Rule]:
    """Every rule family imported, so every rule is registered (idempotent): the one place that
    lists them, as kube-score's ``RegisterAllChecks``. Returns :data:`core.registry.RULES`."""
    for family in FAMILIES:
        importlib.import_module(f"{__name__}.{family}")
    return RULES


def policy_text(name: str) -> PolicyText:
    """The description and remediation of pack policy ``name``, as its rule family files them
    (:func:`core.registry.describe_policy`). KeyError: no family describes it."""
    register_all()
    return POLICY_TEXTS[name]
