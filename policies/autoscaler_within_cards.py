"""autoscaler-within-cards: an autoscaler of a GPU workload scales it only to pods whose cards its node has.

Rule: for each autoscaler (a HorizontalPodAutoscaler, KEDA's ScaledObject, whose maxReplicaCount defaults
to 100, AIBrix's PodAutoscaler) whose scaleTargetRef is a running GPU workload of the manifests
pinned to a node of the inventory (or on the inventory's only node), ``maxReplicas`` x its cards a pod
fit the node's cards less the reserved ones and every other running GPU workload's on it (replicas x
cards a pod; an unpinned one counts on the inventory's only node). A pod past them stays Pending. A
LeaderWorkerSet scales by groups: its cards a group (the leader's and ``size - 1`` workers') count. The HPA's bounds are read once (:mod:`core.manifests.objects`).

Source: kserve #871 (50 autoscaled GPU pods on a 2-card node, most Pending), vllm-project/aibrix #2670. Does not check: surge
pods (gpu-card-allocation), autoscalers of an InferenceService's own predictor (KServe makes them from
minReplicas / maxReplicas, which gpu-card-allocation counts).
Judged and worded once, in :mod:`core.rulebook.scaling`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import registry
from core.manifests import objects
from core.rulebook import scaling
from policylib import declare, stack_helpers, views
from policylib import objects as glue

NAME = "autoscaler-within-cards"
SOURCE = registry.RULES[NAME].source


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    if not objs.autoscalers:
        return
    inv = stack_helpers.read_inventory(report_violation, NAME)
    if inv is None:
        return
    stack = views.stack_view(args.resources)
    nodes = {n.name: n for n in inv.nodes}
    single = len(inv.nodes) == 1  # an unpinned workload is on this node only when it is the only one
    for a in objs.autoscalers:
        views_ = objects.scaled(a, stack.workloads)  # a LeaderWorkerSet's leaders and workers: its groups scale
        if not views_:
            continue
        w = views_[0]
        node = w.node or (inv.nodes[0].name if single else None)
        groups = max(w.replicas, 1)
        per_unit = sum(v.replicas * v.cards_per_pod for v in views_) // groups  # cards a pod, or a group
        if not w.running or not per_unit or node not in nodes:
            continue
        others = sum(o.replicas * o.cards_per_pod for o in stack.workloads
                     if o.running and all(o is not v for v in views_) and (o.node == node or (o.node is None and single)))
        free = nodes[node].cards - sum(r.cards for r in nodes[node].reserved) - others
        breach = scaling.autoscaler_within_cards(f"{a.kind} {a.name}", a.max_replicas, per_unit,
                                                 node, free, w.replicas,
                                                 "groups" if w.kind == "LeaderWorkerSet" else "pods", a.bound)
        message = glue.report(f"{w.kind} {w.name}", breach, w.annotations)
        if message:
            report_violation(message, a.urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
