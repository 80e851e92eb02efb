"""rollout-deadlines-cover-cold-start: a model server's rollout deadlines outlast its declared cold start.

Rule: for a workload that declares its cold start (annotation ``facts.COLD_START_ANNOTATION``, whole
seconds): a Deployment's ``spec.progressDeadlineSeconds`` (Kubernetes default 600) and the deploy's
await timeout (annotation ``pulumi.com/timeoutSeconds``, where written) each exceed it. Past the
progress deadline the Deployment reports ProgressDeadlineExceeded, and ``kubectl rollout status`` and
the Pulumi provider's await fail the deploy while the server is still loading.

An undeclared cold start is not judged here (startup-probe-covers-cold-start assumes one for probes).
Source: rh-aiservices-bu/ai-on-openshift PR #100, kserve #3795. Judged and worded once, in
:mod:`core.rulebook.time_budgets`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import facts, registry
from core.manifests.read import as_map, whole_number
from core.rulebook import time_budgets
from policylib import containers, declare, views

NAME = "rollout-deadlines-cover-cold-start"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not w.cold_start_seconds or w.cold_start_seconds <= 0:
        return
    cold = w.cold_start_seconds
    if w.progress_deadline_seconds is not None:
        written = "progressDeadlineSeconds" in as_map(args.props.get("spec"))
        deadline = "spec.progressDeadlineSeconds" + ("" if written else " (Kubernetes' default)")
        containers.report(args, report_violation, w, time_budgets.deadline_covers(deadline, w.progress_deadline_seconds, cold))
    timeout = whole_number(w.annotations.get(facts.AWAIT_TIMEOUT_ANNOTATION))
    if timeout is not None:
        containers.report(args, report_violation, w, time_budgets.deadline_covers(
            f"annotation {facts.AWAIT_TIMEOUT_ANNOTATION}", timeout, cold))


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
