"""How the pack reads the manifests for the policies :mod:`core.rulebook.allocation` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, StackValidationArgs

from core.capacity import allocation
from core.capacity.allocation import NodeUse
from core.k8s import manifests
from core.rulebook import allocation as rules
from policylib import declare, stack_helpers, views

# --- gpu-card-allocation: the cards asked of each node fit the cards it has.



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
        config_properties=rules.GPU_CARD_ALLOCATION_CONFIG,
        asking=gpu,
        capacity_of=lambda n: n.cards,
        per_pod=_cards,
        reserved_of=allocation.reservations,
        unknown_node_message=card_unknown_node_message,
        oversized_message=card_oversized_message,
        node_message=card_node_message,
    )


declare.validate("gpu-card-allocation", gpu_card_allocation)


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


declare.validate("gpu-rollout-recreate", gpu_rollout_recreate)


# --- node-memory-allocation: the memory requested of each node fits its allocatable memory.

HEADROOM_SHARE = "headroomMiB"
HEADROOM_REASON = "kept free by the policy parameter"



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
    headroom = float(stack_helpers.config_value(args, rules.NODE_MEMORY_ALLOCATION_CONFIG, "headroomMiB") or 0)

    def kept(inventory):
        return {n.name: [(HEADROOM_SHARE, headroom, HEADROOM_REASON)] for n in inventory.nodes} if headroom else None

    stack_helpers.report_allocation(
        args,
        report_violation,
        policy_name="node-memory-allocation",
        config_properties=rules.NODE_MEMORY_ALLOCATION_CONFIG,
        asking=asking,
        capacity_of=lambda n: float(n.allocatable_memory_mib),
        per_pod=lambda w: w.memory_request_mib,
        reserved_of=kept,
        unknown_node_message=memory_unknown_node_message,
        oversized_message=memory_oversized_message,
        node_message=memory_node_message,
    )


declare.validate("node-memory-allocation", node_memory_allocation)
