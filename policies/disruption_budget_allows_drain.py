"""disruption-budget-allows-drain: a PodDisruptionBudget over a model server allows an eviction.

Rule: for each PodDisruptionBudget whose selector matches the pods of running model servers (a vLLM or
candle-vllm container, or a pod with cards), the evictions it allows with all of them healthy
(minAvailable / maxUnavailable as the disruption controller computes them) are at least one. A budget
of minAvailable equal to the replicas, or maxUnavailable 0, blocks every drain: the GPU Operator's
driver upgrade, a node upgrade and ``kubectl drain`` wait forever. Read once in
:mod:`core.manifests.objects`.

Advisory: the server keeps serving; maintenance of its node is what stops.
Source: kubernetes/kubernetes #48307, NVIDIA/gpu-operator #901. Judged and worded once, in
:mod:`core.rulebook.scaling`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import registry
from core.manifests import objects
from core.rulebook import scaling
from policylib import declare, views
from policylib import objects as glue

NAME = "disruption-budget-allows-drain"
SOURCE = registry.RULES[NAME].source


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
