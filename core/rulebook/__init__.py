"""Every rule the stack file, the component args and the policy pack share, one module a family,
each judge registered in :mod:`core.registry` when its family is imported (this package imports
them all). ``from core import rulebook`` then ``rulebook.vllm_breaches(...)`` /
``rulebook.context_window(...)``.

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
- :mod:`core.rulebook.network`: the NetworkPolicies admit each declared client and each server's port.
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
from core.rulebook import pod_security  # noqa: E402,F401 - registers the pod security rules
from core.rulebook import services  # noqa: E402,F401 - registers the Service rules
from core.rulebook import network  # noqa: E402,F401 - registers the NetworkPolicy rules

__all__ = [
    "Found", "S", "candle_breaches", "context_window", "custom_all_reduce", "digest_pinned", "first_error",
    "gpu_memory_utilization", "half_dtype", "hybrid_on_volta_vllm", "hybrid_one_card", "kserve_label",
    "memory_declared", "parallel_matches_cards", "startup_breaches", "startup_budget", "tp_divides",
    "vllm_breaches", "vllm_kernels",
]

from core.rulebook import capacity  # noqa: E402,F401 - registers weights-fit-card, kv-cache-fits-max-model-len
from core.rulebook import allocation  # noqa: E402,F401 - registers the node and rollout rules
from core.rulebook import pods  # noqa: E402,F401 - registers the GPU pod rules
from core.rulebook import kserve  # noqa: E402,F401 - registers the KServe rules
from core.rulebook import candle, endpoints, probes, served_names, volta  # noqa: E402,F401 - registers the model-server policies' rules
