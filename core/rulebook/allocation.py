"""Cards and memory asked of a node, and a GPU workload's rollout: judged once for the stack file
(``stackfile/checks.py``, one workload against its node) and the pack (gpu-card-allocation and
node-memory-allocation, every pod summed over a node by :func:`core.capacity.allocation.allocate`;
gpu-rollout-recreate). A node total's judge takes the :class:`core.capacity.allocation.NodeUse` the
allocation gives.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.base import facts
from core.capacity.allocation import NodeUse, amount
from core.engines.settings import S
from core.judging.registry import MANIFEST, STACK, Breach, Setting, declare_policy, only, rule
from core.k8s.quantity import QuantityError

#: The node a workload is pinned to.
NODE = Setting("node", "node", "nodeSelector kubernetes.io/hostname")
#: How a workload is parked, in each audience's terms.
PARK = (only(STACK, "parked: {reason: ...}")
        + only(MANIFEST, f"replicas 0 with annotation {facts.PARKED_ANNOTATION}: <reason>"))

CARDS_SOURCE = "seeds 001 and 003 (6 and 7 cards asked of worker-1's 4; a surge pod Pending for a card the old pod holds)"
MEMORY_SOURCE = "seed 000 (coder.yaml: a 24Gi memory request did not schedule)"
ROLLOUT_SOURCE = (
    "seeds 001 and 003 (every card allocated: the surge pod waited Pending for a card the old pod "
    "held); Kubernetes' deployment controller (maxSurge rounds up, maxUnavailable down)"
)
#: The fix for a RollingUpdate surge that tips a node over.
RECREATE = "set strategy type Recreate on the surging workload"
LESS_MEMORY = f"lower {S.memory_request} (model servers keep weights on the card and need little host memory)"


def _over(use: NodeUse, unit: str, what: str, overflow: str) -> str:
    """``6 of 4 cards requested: candle-vllm 2, coder 2 (unpinned: coder); the pods beyond 4 cards stay Pending``."""
    cap = amount(use.capacity)
    wrong = f"{amount(use.used)} of {use.capacity_text(what)} requested: {', '.join(s.text() for s in use.ordered())}"
    unpinned = use.unpinned_names()
    if unpinned:
        wrong += f" (unpinned: {', '.join(unpinned)})"
    return wrong + f"; the pods beyond {cap} {unit} stay Pending" + use.overflow_clause(overflow)


# --- one node's total -------------------------------------------------------------------------

@rule("gpu-card-allocation", "The cards asked of each node fit the cards it has.", CARDS_SOURCE,
      policy="gpu-card-allocation")
def card_allocation(use: NodeUse) -> Breach | None:
    """Cards of the running pods, surge and reservations on one node against its cards."""
    if use.used <= use.capacity:
        return None
    cap = amount(use.capacity)
    wrong = _over(use, "cards", "cards", "cards")
    if use.surge_is_the_cause:
        return Breach(wrong + f"; the RollingUpdate surge ({amount(use.surge)}) is the cause: without it "
                      f"{amount(use.used - use.surge)} of {cap} fit", RECREATE)
    return Breach(wrong, f"bring the cards to {cap} or fewer: park one workload ({PARK}), lower the cards of one "
                  f"({S.cards}, with its tensor parallel size), or pin one to another node ({NODE})")


@rule("node-memory-allocation", "The memory requested of each node fits its allocatable memory.", MEMORY_SOURCE,
      policy="node-memory-allocation")
def memory_allocation(use: NodeUse) -> Breach | None:
    """Memory requests (MiB) of the running pods, surge and headroom on one node against its allocatable memory."""
    if use.used <= use.capacity:
        return None
    wrong = _over(use, "MiB", "MiB of memory", "memory")
    if use.surge_is_the_cause:
        return Breach(wrong + f"; the RollingUpdate surge ({amount(use.surge)} MiB) is the cause", RECREATE)
    return Breach(wrong, f"{LESS_MEMORY}, or park a workload ({PARK})")


# --- one workload against its node ------------------------------------------------------------

@rule("node-in-inventory", "A workload is pinned to a node the inventory lists.",
      "spec, the cluster (worker-1 is the only GPU node)", policy="gpu-card-allocation")
def node_listed(node: str, known: Sequence[str], cards: int = 0) -> Breach | None:
    """``known``: the inventory's node names; ``cards``: a pod's cards (0: none held)."""
    if node in known:
        return None
    pods = f"its {cards}-card pods" if cards else "its pods"
    return Breach(f"pinned to node {node}, which is not in the inventory (llm-serving:cluster nodes: "
                  f"{', '.join(known)}); {pods} stay Pending",
                  f"set {NODE} to one of {', '.join(known) or '(none)'}" + only(STACK, " under {key}")
                  + ", or add the node to llm-serving:cluster")


@rule("node-is-one-host", "A stack-file workload is pinned to one node, not to a node pool that autoscales.",
      "components/workload.py and components/vllm.py pin pods by nodeSelector kubernetes.io/hostname: <node>")
def node_is_one_host(node: str, max_nodes: int | None) -> Breach | None:
    """``max_nodes``: the inventory entry's ``autoscaling.max_nodes`` (None: one fixed node). The program's
    components pin a workload by its node's hostname, which no node of a pool carries (stack file only)."""
    if max_nodes is None:
        return None
    return Breach(f"node {node} is a node pool of up to {max_nodes} nodes (autoscaling), and the components pin pods "
                  f"by {facts.HOSTNAME_LABEL}: {node}, which no node of the pool carries; its pods stay Pending",
                  f"set {NODE} to a fixed node of llm-serving:cluster (no autoscaling), or judge the pool's manifests "
                  "with the policy pack instead (python3 dev.py analyze)")


@rule("pod-cards-fit-node", "One pod asks no more cards than its node (or the largest node) has.",
      "seed 000 (coder.yaml: a pod that never reaches Ready occupies its cards)", policy="gpu-card-allocation")
def pod_cards_fit(cards: int, node_cards: float, node: str | None = None) -> Breach | None:
    """``node``: the pinned node (None: unpinned, ``node_cards`` the largest node's)."""
    if cards <= node_cards:
        return None
    where = f"its node {node} has {amount(node_cards)}" if node else f"the largest node has {amount(node_cards)}"
    return Breach(f"one pod asks {cards} cards and {where}; the pod never schedules",
                  f"lower its cards ({S.cards}, with its tensor parallel size), or pin it to a node with enough "
                  f"cards ({NODE})")


@rule("pod-memory-fits-node", "One pod's memory request fits its node's (or the largest node's) allocatable memory.",
      MEMORY_SOURCE, policy="node-memory-allocation")
def pod_memory_fits(request_mib: float | None, allocatable_mib: float, node: str | None = None) -> Breach | None:
    """MiB; ``node``: the pinned node (None: unpinned, ``allocatable_mib`` the largest node's)."""
    if request_mib is None or request_mib <= allocatable_mib:
        return None
    where = f"its node {node} has" if node else "the largest node has"
    return Breach(f"one pod requests {amount(request_mib)} MiB of memory and {where} {amount(allocatable_mib)} MiB "
                  "allocatable; the pod never schedules", LESS_MEMORY)


@rule("memory-quantity", "A memory request or limit is a Kubernetes quantity.",
      "Kubernetes API, resource.Quantity grammar", policy="node-memory-allocation")
def memory_quantity(path: str, value: Any) -> Breach | None:
    """``value`` found at ``path`` (``...resources.requests.memory``), refused by :mod:`core.k8s.quantity`."""
    err = QuantityError(value)
    return Breach(f"{path}: {err.rule}, so its memory cannot be counted", err.fix)


# --- rollout ----------------------------------------------------------------------------------

@rule("rollout-not-both-zero", "RollingUpdate does not set maxSurge and maxUnavailable both to 0.",
      "Kubernetes API validation of apps/v1 Deployment", policy="gpu-rollout-recreate")
def rollout_valid(strategy_at: str, both_zero: bool) -> Breach | None:
    """``strategy_at``: where the strategy is (``spec.strategy``); ``both_zero``: the two are 0."""
    if not both_zero:
        return None
    return Breach(f"{strategy_at} is RollingUpdate with maxSurge 0 and maxUnavailable 0, which the API server rejects",
                  f"set {strategy_at}.type: {facts.GPU_ROLLOUT_STRATEGY}, or maxUnavailable: 1")


@rule("gpu-rollout-recreate", "A GPU workload's RollingUpdate surge fits in free cards.", ROLLOUT_SOURCE,
      policy="gpu-rollout-recreate")
def rollout_room(strategy_at: str, written: str, cards_per_pod: int, surge_pods: int, use: NodeUse) -> Breach | None:
    """``written``: the strategy as written and what Kubernetes makes of it; ``surge_pods``: the
    pods that need room beside the running ones; ``use``: the node the surge is counted on."""
    if not surge_pods or use.used <= use.capacity:
        return None
    return Breach(
        f"pods hold {cards_per_pod} card(s) and {written}: no old pod goes first, so the surge asks "
        f"{surge_pods * cards_per_pod} more card(s) while the old pods hold theirs, and {use.node} has "
        f"{amount(use.used - use.surge)} of {amount(use.capacity)} cards in use without the surge "
        f"({amount(use.used)} with it): the surge pod waits Pending forever and the rollout never completes",
        f"set {strategy_at}.type: {facts.GPU_ROLLOUT_STRATEGY} (or rollingUpdate maxSurge: 0, or maxUnavailable: 1)",
    )


# --- the pack's policies: one record each ------------------------------------------------------------

GPU_CARD_ALLOCATION_CONFIG = {
    "countSurge": {
        "type": "boolean",
        "default": True,
        "description": "Count the extra pods a RollingUpdate starts beside the old ones (maxSurge x cards a pod, when maxUnavailable is 0). Source: 001, 003, coder.yaml.",
    },
}

NODE_MEMORY_ALLOCATION_CONFIG = {
    "countSurge": {
        "type": "boolean",
        "default": True,
        "description": "Count the extra pods a RollingUpdate starts beside the old ones (maxSurge x the pod's memory request, when maxUnavailable is 0).",
    },
    "headroomMiB": {
        "type": "integer",
        "minimum": 0,
        "default": 0,
        "description": "MiB of each node's allocatable memory kept free beyond the stack's requests.",
    },
}


declare_policy(
    "gpu-card-allocation",
    "Per node, the cards of running pods, RollingUpdate surge and reserved cards fit the node's nvidia.com/gpu cards.",
    (
        "Bring the node's total within its cards: park a workload (stack file: parked: {reason: ...} on it under "
        "llm-serving:workloads; plain YAML: replicas 0 with the llm-serving.riotpiao.com/parked annotation), stop managing one "
        "that never became Ready, lower a pod's cards (tensor parallel size), or set strategy Recreate so a rollout needs no "
        "surge card. Pin pods with nodeSelector kubernetes.io/hostname to a node the inventory (llm-serving:cluster) lists."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
    config=GPU_CARD_ALLOCATION_CONFIG,
    doc="""gpu-card-allocation: the cards asked of each node fit the cards it has.

Rule: per node, the nvidia.com/gpu cards of the running pods (replicas x cards a pod; an
InferenceService predictor by its replica bound, ``maxReplicas``), plus the surge a
RollingUpdate starts when no old pod goes first (``maxSurge`` pods x cards, counted only when
``maxUnavailable`` resolves to 0 pods; percentages as Kubernetes scales them, surge rounded up and
unavailability down: :func:`core.capacity.allocation.rollout`), plus the cards the inventory reserves for
workloads outside the stack (``Node.reserved``), must not exceed the node's cards.

Sources: spec "The history as test cases" (after 001: 6 of 4 on worker-1, after 003: 7 of 4);
seed 000 (coder.yaml "requests 2 V100s and never reaches Ready, so it permanently occupies
half the GPU pool"); seeds 001 / 003 / coder.yaml (a surge pod waits Pending forever for a card
the old pod holds).

Placement:
- Pods pinned to a node (``nodeName`` or the ``kubernetes.io/hostname`` nodeSelector) count
  there. A pod pinned to a node the inventory does not list is its own violation, and is
  not counted anywhere.
- Unpinned pods are packed worst-fit decreasing (largest first, each onto the node with the
  most free cards; :func:`core.capacity.allocation.allocate`, the function the preview summary and
  the stack output call too). An unpinned pod that fits on
  no node is counted on the node with the most free cards, so that node's message shows
  the shortfall, lists the workload after ``(unpinned: ...)`` and ends with ``unpinned
  candle-vllm fits on no node (counted on the node with the most free cards)``. With one
  node (prod: worker-1) that is exactly "the only place it can land".
- A pod asking more cards than its pinned node has, or (unpinned) than any node has, is its
  own violation; it never schedules, so it takes no cards from the node totals.
- Parked workloads (replicas 0) take no cards.

Message order: shares largest first, then by workload name, e.g.
``worker-1: 6 of 4 cards requested: candle-vllm 2, coder 2, clef-serve 1, reasoning 1
(unpinned: candle-vllm); the pods beyond 4 cards stay Pending; unpinned candle-vllm fits on
no node (counted on the node with the most free cards)``. A share with a surge reads
``coder 2 + 2 surge (RollingUpdate)``; when the surge alone tips the node over, the message
says so. A node total is a stack-level finding (the node is not a resource): it carries no URN.

Parameter: ``countSurge`` (boolean, default true): count RollingUpdate surge pods.

Node labels: a nodeSelector or required node affinity on labels the inventory records
(``nodes[].labels``) restricts the pods to the nodes (or pools) that carry them, packed among
those; keys no node records are not modelled. A node pool that autoscales (``autoscaling``)
counts at its most nodes, so a surge pod that fits a node the pool can add is no finding.

Does NOT check: taints and tolerations; fractional cards (time-sliced cards count as the
nvidia.com/gpu the node advertises); bare Pods, Jobs and DaemonSets;
joint placement with memory (node-memory-allocation packs memory on its own). Worst-fit is a
heuristic: a failed packing on several nodes may still be schedulable by a cleverer order.

""",
)

declare_policy(
    "gpu-rollout-recreate",
    "A GPU workload's RollingUpdate surge (no old pod removed first) fits in free cards; otherwise it rolls out with Recreate.",
    (
        "Set spec.strategy.type: Recreate on the Deployment, or spec.predictor.deploymentStrategy.type: Recreate on the "
        "InferenceService (RollingUpdate with rollingUpdate.maxSurge: 0, or maxUnavailable: 1 so an old pod goes first, also "
        "works)."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""gpu-rollout-recreate: a GPU workload's rollout never needs a card the node does not have.

Rule: a Deployment or InferenceService predictor whose pods hold cards and rolls out with
``RollingUpdate`` is reported when its surge pods need room beside every running pod
(``maxUnavailable`` resolves to 0 pods, so no old pod goes first) and that room is not there:
the node's cards with the surge counted exceed its cards, by the one allocation
(:func:`core.capacity.allocation.cards`, what gpu-card-allocation judges). When the strategy is
omitted, the API server (Deployment) and KServe (RawDeployment predictor,
``spec.predictor.deploymentStrategy``) use RollingUpdate with 25% / 25%: for one replica that
is 1 surge pod and 0 unavailable (Kubernetes rounds a surge percentage up and an
unavailability percentage down, :func:`core.capacity.allocation.rollout`). ``RollingUpdate`` with
``maxSurge`` and ``maxUnavailable`` both written as 0 is reported too: the API server rejects it.

Allowed: ``Recreate``; ``maxSurge: 0``; ``maxUnavailable`` of one pod or more (the old pod
goes first and the rollout completes on a full node, its surge pod Pending only until then);
a surge that fits in free cards.

Source: seed 001 and 003 comments ("Every GPU card is allocated, so a rolling update leaves
the new pod Pending forever waiting for a card the old pod still holds"), coder.yaml
(Recreate on the InferenceService "still matters for the later swap"); spec facts table.

Does not check: StatefulSets (their RollingUpdate replaces a pod in place, no surge); parked
workloads (no pods, no rollout; unparking is judged when it happens); a node the inventory
does not list (gpu-card-allocation reports it).

""",
)

declare_policy(
    "node-memory-allocation",
    "Per node, the memory requests of running pods and RollingUpdate surge fit the node's allocatable memory.",
    (
        "Lower resources.requests.memory (GPU servers keep weights on the card; coder.yaml keeps a 12Gi request with a higher "
        "limit for bursts; stack file: resources.requests.memory of the workload), park a workload (stack file: parked: {reason:"
        " ...} on it; plain YAML: replicas 0 with the llm-serving.riotpiao.com/parked annotation), or use strategy Recreate so a"
        " rollout needs no second pod's memory."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
    config=NODE_MEMORY_ALLOCATION_CONFIG,
    doc="""node-memory-allocation: the memory requested of each node fits its allocatable memory.

Rule: per node, the host-memory requests of the running pods (replicas x the pod's request,
MiB; a container's limit stands in for a missing request, as Kubernetes defaults it), plus
the RollingUpdate surge pods, plus ``headroomMiB``, must not exceed the node's
``allocatable_memory_mib`` from the inventory (worker-1: 63,495 MiB).

Source: coder.yaml ("worker-1 exposes only 63,495 MiB of allocatable memory, so a 24Gi
request never schedules"); spec "Facts each component must carry" (memory requests must fit
the node's allocatable memory; GPU servers keep weights on the card and need little host RAM).

Placement is the same as gpu-card-allocation's, in MiB: pinned pods count on their node;
unpinned pods are packed worst-fit decreasing by memory alone (each onto the node with the
most free MiB); an unpinned pod that fits nowhere is counted on the node with the most free
MiB, named after ``(unpinned: ...)`` and in ``unpinned X fits on no node (counted on the node
with the most free memory)``. A pod larger than its node's (or every node's)
allocatable memory is its own violation. Parked workloads (replicas 0) take nothing.
A workload pinned to a node the inventory does not list is reported here only when it
holds no cards (gpu-card-allocation reports GPU workloads), so one mistake is one finding.

Message: ``worker-1: 69,632 of 63,495 MiB of memory requested: clef-candle 16,384,
clef-serve 16,384, candle-vllm 12,288, coder 12,288, reasoning 12,288 (unpinned: ...);
the pods beyond 63,495 MiB stay Pending``: shares in MiB, largest first, then by name.

Parameters: ``countSurge`` (boolean, default true); ``headroomMiB`` (integer >= 0, default
0: MiB of each node kept free beyond the requests, e.g. for pods outside the stack; counted
like a reservation and shown as ``headroomMiB 4,096 (reserved outside the stack: ...)``).

A memory request or limit that is not a Kubernetes quantity (``lots``, ``1e3Mi``;
:mod:`core.k8s.quantity`, the parser the stack file uses too) is its own violation, naming its key
path, e.g. ``spec.template.spec.containers[0].resources.requests.memory``.

Does NOT check: memory limits (overcommit is allowed by Kubernetes), CPU, ephemeral storage,
Memory-backed emptyDir volumes (they count against the limit, not the request), joint
placement with cards (a pod packed onto one node by memory and another by cards is not
detected; with one node both land on worker-1), node affinity and taints.

""",
)
