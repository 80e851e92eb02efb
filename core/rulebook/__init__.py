"""Every rule of the policy pack and the stack file's cross-checks, one module a family, each
judge registered in :mod:`core.judging.registry` when its family is imported; this package
imports every family, so importing it registers every rule. ``from core import rulebook`` then
``rulebook.half_dtype(...)`` / ``rulebook.capacity.kv_cache_fits(...)``.

- :mod:`core.rulebook.servers`: a model server's rules (start-up, tensor parallel, the card's
  capabilities, memory, the context window, names);
- :mod:`core.rulebook.capacity`: weights and KV cache on the card (weights-fit-card,
  kv-cache-fits-max-model-len);
- :mod:`core.rulebook.allocation`: cards and memory asked of a node, a GPU workload's rollout
  (gpu-card-allocation, node-memory-allocation, gpu-rollout-recreate);
- :mod:`core.rulebook.pods`: whole cards, the GPU RuntimeClass (and a pod under it without cards), /dev/shm,
  a moving tag pulled Always, extended resources the node offers;
- :mod:`core.rulebook.kserve`: a parked InferenceService, KServe's predictor names, the deployment mode
  (the cluster's default; minReplicas 0 in RawDeployment);
- :mod:`core.rulebook.volta`: vLLM's environment below sm_75 (sampler, attention backend);
- :mod:`core.rulebook.contract`: a vLLM server against the contract of its image's release
  (flags, values, env names, the image build's compute capabilities, CPU offload);
- :mod:`core.rulebook.candle`: candle-vllm's ``--d`` device list;
- :mod:`core.engines.served_names`: vLLM's served model names;
- :mod:`core.rulebook.probes`: readiness and startup probes, the declared cold start, probes past an API
  key, the liveness probe's window;
- :mod:`core.rulebook.endpoints`: where a server listens;
- :mod:`core.rulebook.pod_security`: the Pod Security Standards' checks, one record a row, and
  the house's token and models-mount rules;
- :mod:`core.rulebook.services`: a Service against its workloads (one running workload behind it,
  its targetPort, service links) and one served model name a server;
- :mod:`core.rulebook.network`: the NetworkPolicies admit each declared client and each server's port,
  and let a server that fetches its model by hub id reach DNS and the hub;
- :mod:`core.rulebook.users`: the user a container runs as, against its image (the image catalog);
- :mod:`core.rulebook.model_cache`: the Hugging Face cache of a server that fetches by hub id.
- :mod:`core.rulebook.scaling`: autoscalers and disruption budgets against a server's cards, a
  LeaderWorkerSet group's cards against its ranks;
- :mod:`core.rulebook.limits`: ResourceQuota and LimitRange against the servers' pods;
- :mod:`core.rulebook.routes`: Ingress, Gateway API routes and InferencePools against the server's endpoint,
  and their timeouts against its longest request;
- :mod:`core.rulebook.paths`: the paths a server writes and reads at start, on its container's filesystem;
- :mod:`core.rulebook.time_budgets`: rollout deadlines against the cold start, the grace period against the drain;
- :mod:`core.rulebook.stack_config`: the pack can read the stack's inventory and models, and a
  server's model is one they list;
- :mod:`core.rulebook.waivers`: per-object waiver annotations (a policy of the pack, a reason).

The settings the rules name are :mod:`core.engines.settings`; :mod:`core.rulebook.capacity_view`
(a server's capacity read from its manifest, for the capacity policies and the preview's table)
is no family: it reads the families.
"""

from __future__ import annotations

from core.engines import served_names
from core.engines.settings import S
from core.judging.registry import RULES, Rule
from core.rulebook.servers import (
    context_window,
    custom_all_reduce,
    digest_pinned,
    gpu_memory_utilization,
    half_dtype,
    hybrid_on_volta_vllm,
    hybrid_one_card,
    kserve_label,
    memory_declared,
    parallel_matches_cards,
    startup_budget,
    tp_divides,
    vllm_kernels,
)

# isort: split
# The servers' rules are filed first, then each family's in turn (docs/policies/ lists them so).
from core.rulebook import (
    allocation,
    candle,
    capacity,
    contract,
    endpoints,
    kserve,
    limits,
    model_cache,
    network,
    paths,
    pod_security,
    pods,
    probes,
    routes,
    scaling,
    servers,
    services,
    stack_config,
    time_budgets,
    users,
    volta,
    waivers,
)

#: Every rule family, each imported above (its rules registered): the one place that lists them,
#: as kube-score's ``RegisterAllChecks``. Nothing a family imports imports this package (the
#: engine models judge a served name with :mod:`core.engines.served_names`, below it), so no
#: family is imported lazily.
FAMILIES = (allocation, candle, capacity, contract, endpoints, kserve, limits, model_cache, network, paths,
            pod_security, pods, probes, routes, scaling, served_names, servers, services, stack_config,
            time_budgets, users, volta, waivers)

__all__ = [
    "FAMILIES", "S", "context_window", "custom_all_reduce", "digest_pinned",
    "gpu_memory_utilization", "half_dtype", "hybrid_on_volta_vllm", "hybrid_one_card", "kserve_label",
    "memory_declared", "parallel_matches_cards", "register_all", "startup_budget", "tp_divides",
    "vllm_kernels",
]


def register_all() -> dict[str, Rule]:
    """Every rule, registered by :data:`FAMILIES`' import: :data:`core.judging.registry.RULES`."""
    return RULES

