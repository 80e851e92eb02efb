"""gpu-card-allocation: the cards asked of each node fit the cards it has.

Rule: per node, the nvidia.com/gpu cards of the running pods (replicas x cards a pod; an
InferenceService predictor by its replica bound, ``maxReplicas``), plus the surge a
RollingUpdate starts when no old pod goes first (``maxSurge`` pods x cards, counted only when
``maxUnavailable`` resolves to 0 pods; percentages as Kubernetes scales them, surge rounded up and
unavailability down: :func:`core.allocation.rollout`), plus the cards the inventory reserves for
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
  most free cards; :func:`core.allocation.allocate`, the function the preview summary and
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
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    Severity,
    StackValidationArgs,
)

from core import allocation, manifests, registry
from core.allocation import NodeUse
from core.rulebook import allocation as rules
from policylib import declare, stack_helpers, views

NAME = "gpu-card-allocation"

CONFIG_PROPERTIES = {
    "countSurge": {
        "type": "boolean",
        "default": True,
        "description": "Count the extra pods a RollingUpdate starts beside the old ones (maxSurge x cards a pod, when maxUnavailable is 0). Source: 001, 003, coder.yaml.",
    },
}


def _cards(w: manifests.Workload) -> float:
    return float(w.cards_per_pod)


SOURCE = registry.RULES[NAME].source


def node_message(use: NodeUse) -> str:
    """The over-allocation message of one node (see the module docstring for the order)."""
    return stack_helpers.report_node(use, rules.card_allocation(use))


def unknown_node_message(w: manifests.Workload, known: list[str]) -> str | None:
    return stack_helpers.report(w, rules.node_listed(w.node or "", known, w.cards_per_pod))


def oversized_message(w: manifests.Workload, node: str | None, cap: float) -> str | None:
    return stack_helpers.report(w, rules.pod_cards_fit(w.cards_per_pod, cap, node))


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    gpu = [w for w in stack.workloads if w.is_gpu]
    if not gpu:
        return
    stack_helpers.report_allocation(
        args,
        report_violation,
        policy_name=NAME,
        config_properties=CONFIG_PROPERTIES,
        asking=gpu,
        capacity_of=lambda n: n.cards,
        per_pod=_cards,
        reserved_of=allocation.reservations,
        unknown_node_message=unknown_node_message,
        oversized_message=oversized_message,
        node_message=node_message,
    )


POLICY = declare.stack_policy(
    NAME,
    validate,
    EnforcementLevel.MANDATORY,
    Severity.HIGH,
    config_schema=PolicyConfigSchema(properties=CONFIG_PROPERTIES),
)
