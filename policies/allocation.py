"""The pack's policies judged by :mod:`core.rulebook.allocation`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core.capacity import allocation
from core.capacity.allocation import NodeUse
from core.k8s import manifests
from core.rulebook import allocation as rules
from policylib import declare, stack_helpers, views

# --- gpu-card-allocation: the cards asked of each node fit the cards it has.

GPU_CARD_ALLOCATION_CONFIG = {
    "countSurge": {
        "type": "boolean",
        "default": True,
        "description": "Count the extra pods a RollingUpdate starts beside the old ones (maxSurge x cards a pod, when maxUnavailable is 0). Source: 001, 003, coder.yaml.",
    },
}


def _cards(w: manifests.Workload) -> float:
    return float(w.cards_per_pod)


def card_node_message(use: NodeUse) -> str:
    """The over-allocation message of one node (see the module docstring for the order)."""
    return stack_helpers.report_node(use, rules.card_allocation(use))


def card_unknown_node_message(w: manifests.Workload, known: list[str]) -> str | None:
    return stack_helpers.report(w, rules.node_listed(w.node or "", known, w.cards_per_pod))


def card_oversized_message(w: manifests.Workload, node: str | None, cap: float) -> str | None:
    return stack_helpers.report(w, rules.pod_cards_fit(w.cards_per_pod, cap, node))


def gpu_card_allocation(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    gpu = [w for w in stack.workloads if w.is_gpu]
    if not gpu:
        return
    stack_helpers.report_allocation(
        args,
        report_violation,
        policy_name="gpu-card-allocation",
        config_properties=GPU_CARD_ALLOCATION_CONFIG,
        asking=gpu,
        capacity_of=lambda n: n.cards,
        per_pod=_cards,
        reserved_of=allocation.reservations,
        unknown_node_message=card_unknown_node_message,
        oversized_message=card_oversized_message,
        node_message=card_node_message,
    )


declare.stack_policy(
    "gpu-card-allocation", gpu_card_allocation, EnforcementLevel.MANDATORY, Severity.HIGH,
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

The rule is judged and worded once, in :mod:`core.rulebook.allocation`; this module reads the manifests
and reports its breaches.
""",
)


# --- gpu-rollout-recreate: a GPU workload's rollout never needs a card the node does not have.


def written(w: manifests.Workload) -> str:
    """The strategy as written, with what Kubernetes makes of it: ``spec.strategy is omitted, so
    RollingUpdate with maxSurge 25% and maxUnavailable 25% (1 surge pod, 0 unavailable of 1 replica)``."""
    rolling = manifests.plain(w.strategy.get("rollingUpdate")) or {}
    surge = rolling.get("maxSurge", allocation.DEFAULT_MAX_SURGE)
    unavailable = rolling.get("maxUnavailable", allocation.DEFAULT_MAX_UNAVAILABLE)
    surge, unavailable = _shown(surge), _shown(unavailable)
    head = f"{w.strategy_at} is omitted, so RollingUpdate" if not w.strategy else f"{w.strategy_at} is {w.strategy_type}"
    r = w.rollout
    return (
        f"{head} with maxSurge {surge} and maxUnavailable {unavailable} ({r.surge_pods} surge pod(s), "
        f"{r.unavailable_pods} unavailable of {w.replicas} replica(s))"
    )


def _shown(value: object) -> object:
    """A value as the manifest wrote it: ``1`` for the ``1.0`` the analyzer protocol delivers."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def gpu_rollout_recreate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    gpu = [w for w in stack.workloads if w.is_gpu and w.kind != "StatefulSet"]
    rolling = [w for w in gpu if w.strategy_type == "RollingUpdate" and w.running]
    if not rolling:
        return
    surging = []
    for w in rolling:
        raw = manifests.plain(w.strategy.get("rollingUpdate")) or {}
        rejected = rules.rollout_valid(w.strategy_at, allocation.both_zero(raw.get("maxSurge"), raw.get("maxUnavailable")))
        if rejected is not None:
            report_violation(stack_helpers.report(w, rejected), w.urn)
        elif w.surge_needing_room:
            surging.append(w)
    if not surging:
        return
    inventory = stack_helpers.read_inventory(report_violation, "gpu-rollout-recreate")
    if inventory is None:
        return
    alloc = allocation.cards(allocation.demands(gpu, lambda w: float(w.cards_per_pod), inventory), inventory)
    for w in surging:
        for use in alloc.nodes.values():
            share = use.share_of(w.id)
            breach = rules.rollout_room(w.strategy_at, written(w), w.cards_per_pod, w.surge_needing_room,
                                        use) if share is not None and share.surge_pods else None
            if breach is not None:
                report_violation(stack_helpers.report(w, breach), w.urn)
                break


declare.stack_policy(
    "gpu-rollout-recreate", gpu_rollout_recreate, EnforcementLevel.MANDATORY, Severity.HIGH,
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

The rule is judged and worded once, in :mod:`core.rulebook.allocation`; this module reads the manifests
and reports its breaches.
""",
)


# --- node-memory-allocation: the memory requested of each node fits its allocatable memory.

HEADROOM_SHARE = "headroomMiB"
HEADROOM_REASON = "kept free by the policy parameter"

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


def memory_node_message(use: NodeUse) -> str:
    """The over-commitment message of one node, figures in MiB."""
    return stack_helpers.report_node(use, rules.memory_allocation(use))


def memory_unknown_node_message(w: manifests.Workload, known: list[str]) -> str | None:
    if w.is_gpu:
        return None  # gpu-card-allocation reports it
    return stack_helpers.report(w, rules.node_listed(w.node or "", known))


def memory_oversized_message(w: manifests.Workload, node: str | None, cap: float) -> str | None:
    return stack_helpers.report(w, rules.pod_memory_fits(w.memory_request_mib, cap, node))


def invalid_quantity_message(w: manifests.Workload, path: str, value: object) -> str | None:
    """``Deployment m: spec.template.spec.containers[0].resources.requests.memory: 'lots' is not a
    Kubernetes quantity ...``: the rule and the fix of :class:`core.k8s.quantity.QuantityError`."""
    return stack_helpers.report(w, rules.memory_quantity(path, value))


def node_memory_allocation(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    for w in stack.workloads:
        for path, value in w.invalid_quantities:
            message = invalid_quantity_message(w, path, value)
            if message is not None:  # always: a refused quantity is a breach
                report_violation(message, w.urn)
    asking = [w for w in stack.workloads if w.running and w.memory_request_mib > 0]
    if not asking:
        return
    headroom = float(stack_helpers.config_value(args, NODE_MEMORY_ALLOCATION_CONFIG, "headroomMiB") or 0)

    def kept(inventory):
        return {n.name: [(HEADROOM_SHARE, headroom, HEADROOM_REASON)] for n in inventory.nodes} if headroom else None

    stack_helpers.report_allocation(
        args,
        report_violation,
        policy_name="node-memory-allocation",
        config_properties=NODE_MEMORY_ALLOCATION_CONFIG,
        asking=asking,
        capacity_of=lambda n: float(n.allocatable_memory_mib),
        per_pod=lambda w: w.memory_request_mib,
        reserved_of=kept,
        unknown_node_message=memory_unknown_node_message,
        oversized_message=memory_oversized_message,
        node_message=memory_node_message,
    )


declare.stack_policy(
    "node-memory-allocation", node_memory_allocation, EnforcementLevel.MANDATORY, Severity.HIGH,
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

The rule is judged and worded once, in :mod:`core.rulebook.allocation`; this module reads the manifests
and reports its breaches.
""",
)
