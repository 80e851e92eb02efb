"""lws-group-ranks: a LeaderWorkerSet's vLLM starts as many ranks as its group holds cards.

Rule: for each LeaderWorkerSet whose leader runs vLLM with a known argv, TP x PP equals the group's
cards (the leader's plus ``size - 1`` workers'). Ray places one rank on each card of the group; with
more ranks the leader waits for GPUs that never join, with fewer the cards idle.

Source: vllm #6938, #36861. Judged and worded once, in :mod:`core.rulebook.scaling`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import registry
from core.rulebook import scaling
from policylib import declare, views
from policylib import objects as glue

NAME = "lws-group-ranks"
SOURCE = registry.RULES[NAME].source


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
