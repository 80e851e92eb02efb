"""How the pack reads the manifests for the policies :mod:`core.rulebook.scaling` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, StackValidationArgs

from core.k8s.manifests import objects
from core.rulebook import scaling
from policylib import declare, stack_helpers, views
from policylib import objects as glue

# --- autoscaler-metric-has-requests: an autoscaler scaling on utilization scales pods that request the resource.


def autoscaler_metric_has_requests(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    if not any(a.utilization_of for a in objs.autoscalers):
        return
    stack = views.stack_view(args.resources)
    for a in objs.autoscalers:
        for w in objects.scaled(a, stack.workloads):
            ranges = objs.limit_ranges_in(w.namespace)
            for resource in a.utilization_of:
                missing = [f"container {c.name}" for c in w.containers if resource not in objects.admitted(c, ranges).requests]
                message = glue.report(f"{w.kind} {w.name}", scaling.metric_has_requests(
                    f"{a.kind} {a.name}", resource, ", ".join(missing)), w.annotations)
                if message:
                    report_violation(message, a.urn)


declare.validate("autoscaler-metric-has-requests", autoscaler_metric_has_requests)


# --- autoscaler-within-cards: an autoscaler of a GPU workload scales it only to pods whose cards its node has.


def autoscaler_within_cards(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    if not objs.autoscalers:
        return
    inv = stack_helpers.read_inventory(report_violation, "autoscaler-within-cards")
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


declare.validate("autoscaler-within-cards", autoscaler_within_cards)


# --- disruption-budget-allows-drain: a PodDisruptionBudget over a model server allows an eviction.


def disruption_budget_allows_drain(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    if not objs.budgets:
        return
    stack = views.stack_view(args.resources)
    for b in objs.budgets:
        selected = [w for w in objects.disrupted(b, stack.workloads) if w.running and (w.servers or w.is_gpu)]
        if not selected:
            continue
        pods = sum(w.replicas for w in selected)
        breach = scaling.budget_allows_drain(b.name, b.setting, pods, b.allowed_disruptions(pods))
        message = glue.report(", ".join(f"{w.kind} {w.name}" for w in selected), breach, selected[0].annotations)
        if message:
            report_violation(message, b.urn)


declare.validate("disruption-budget-allows-drain", disruption_budget_allows_drain)


# --- lws-group-ranks: a LeaderWorkerSet's vLLM starts as many ranks as its group holds cards.


def lws_group_ranks(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    sets = [w for w in stack.workloads if w.kind == "LeaderWorkerSet"]
    for leader in (w for w in sets if w.role == "leader"):
        workers = next((w for w in sets if w.role == "worker" and w.urn == leader.urn and w.name == leader.name), None)
        groups = max(leader.replicas, 1)
        size = 1 + (workers.replicas // groups if workers is not None else 0)
        cards = leader.cards_per_pod + (size - 1) * (workers.cards_per_pod if workers is not None else 0)
        for c, server in leader.servers_of("vllm"):
            breach = scaling.group_ranks(server.tensor_parallel, server.pipeline_parallel, size, cards)
            message = glue.report(f"LeaderWorkerSet {leader.name}, container {c.name}", breach, leader.annotations)
            if message:
                report_violation(message, leader.urn)


declare.validate("lws-group-ranks", lws_group_ranks)
