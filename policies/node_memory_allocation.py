"""node-memory-allocation: the memory requested of each node fits its allocatable memory.

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
:mod:`core.quantity`, the parser the stack file uses too) is its own violation, naming its key
path, e.g. ``spec.template.spec.containers[0].resources.requests.memory``.

Does NOT check: memory limits (overcommit is allowed by Kubernetes), CPU, ephemeral storage,
Memory-backed emptyDir volumes (they count against the limit, not the request), joint
placement with cards (a pod packed onto one node by memory and another by cards is not
detected; with one node both land on worker-1), node affinity and taints.

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

from core import manifests, registry
from core.allocation import NodeUse
from core.rulebook import allocation as rules
from policylib import declare, stack_helpers, views

NAME = "node-memory-allocation"
HEADROOM_SHARE = "headroomMiB"
HEADROOM_REASON = "kept free by the policy parameter"

CONFIG_PROPERTIES = {
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


SOURCE = registry.RULES[NAME].source


def node_message(use: NodeUse) -> str:
    """The over-commitment message of one node, figures in MiB."""
    return stack_helpers.report_node(use, rules.memory_allocation(use))


def unknown_node_message(w: manifests.Workload, known: list[str]) -> str | None:
    if w.is_gpu:
        return None  # gpu-card-allocation reports it
    return stack_helpers.report(w, rules.node_listed(w.node or "", known))


def oversized_message(w: manifests.Workload, node: str | None, cap: float) -> str | None:
    return stack_helpers.report(w, rules.pod_memory_fits(w.memory_request_mib, cap, node))


def invalid_quantity_message(w: manifests.Workload, path: str, value: object) -> str | None:
    """``Deployment m: spec.template.spec.containers[0].resources.requests.memory: 'lots' is not a
    Kubernetes quantity ...``: the rule and the fix of :class:`core.quantity.QuantityError`."""
    return stack_helpers.report(w, rules.memory_quantity(path, value))


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    for w in stack.workloads:
        for path, value in w.invalid_quantities:
            message = invalid_quantity_message(w, path, value)
            if message is not None:  # always: a refused quantity is a breach
                report_violation(message, w.urn)
    asking = [w for w in stack.workloads if w.running and w.memory_request_mib > 0]
    if not asking:
        return
    headroom = float(stack_helpers.config_value(args, CONFIG_PROPERTIES, "headroomMiB") or 0)

    def kept(inventory):
        return {n.name: [(HEADROOM_SHARE, headroom, HEADROOM_REASON)] for n in inventory.nodes} if headroom else None

    stack_helpers.report_allocation(
        args,
        report_violation,
        policy_name=NAME,
        config_properties=CONFIG_PROPERTIES,
        asking=asking,
        capacity_of=lambda n: float(n.allocatable_memory_mib),
        per_pod=lambda w: w.memory_request_mib,
        reserved_of=kept,
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
