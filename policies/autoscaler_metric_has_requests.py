"""autoscaler-metric-has-requests: an autoscaler scaling on utilization scales pods that request the resource.

Rule: for each HorizontalPodAutoscaler with a ``Resource`` metric of target type ``Utilization`` (or
autoscaling/v1's ``targetCPUUtilizationPercentage``) whose scaleTargetRef is a workload of the manifests,
every container of the workload's pods requests that resource, after the namespace's LimitRange defaults
(:func:`core.manifests.objects.admitted`). The HPA computes utilization as usage over the pods' summed
requests; one container without it ("missing request for cpu") leaves it unable to scale.

Advisory: the server keeps serving at its current replicas; it does not scale under load.
Source: bentoml/Yatai #187, kubernetes #78846. Judged and worded once, in :mod:`core.rulebook.scaling`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import registry
from core.manifests import objects
from core.rulebook import scaling
from policylib import declare, views
from policylib import objects as glue

NAME = "autoscaler-metric-has-requests"
SOURCE = registry.RULES[NAME].source


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
