"""node-offers-resources: pods request only extended resources their node offers.

Rule: every extended resource a container asks for (a name with a ``/``, other than ``nvidia.com/gpu``,
which the inventory's ``cards`` count) is in the ``extended_resources`` of the node the pods are pinned
to, else of some node of the inventory. A resource no node offers leaves the pod Pending forever; a
time-sliced ``nvidia.com/gpu.shared`` slice, even where offered, is a share of one card and cannot
back tensor parallel. Not judged where a candidate node does not record its extended resources.

Source: NVIDIA/k8s-device-plugin #929. Judged and worded once, in :mod:`core.rulebook.pods`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import facts, registry
from core.rulebook import pods as rules
from policylib import containers, declare, stackconfig, views

NAME = "node-offers-resources"
SOURCE = registry.RULES[NAME].source
#: Resource names that are not extended resources of a device plugin.
NATIVE_PREFIXES = ("hugepages-", "kubernetes.io/", "requests.")


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not w.running:
        return
    try:
        inv = stackconfig.inventory()
    except stackconfig.StackConfigError:
        return
    picked, narrowed = inv.placed_on(w.node_name, w.node_selector, w.node_affinity)
    pinned = picked[0] if w.node and picked else None
    nodes = picked if (pinned is not None or narrowed) and picked else [] if w.node else list(inv.nodes)
    if not nodes or any(n.extended_resources is None for n in nodes):
        return
    offered = sorted({r for n in nodes for r in (n.extended_resources or ())})
    where = (f"node {pinned.name}" if pinned is not None else f"the nodes its nodeSelector picks ({', '.join(n.name for n in nodes)})"
             if narrowed else "any node of the inventory")
    for c in (*w.init_containers, *w.containers):
        tp = c.server.tensor_parallel if c.server is not None else 1
        for name, amount in c.resource_amounts.items():
            if "/" in name and name != facts.GPU_RESOURCE and not name.startswith(NATIVE_PREFIXES):
                containers.report(args, report_violation, w, rules.node_offers(name, amount, where, offered, tp), c)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
