"""The pack's policies judged by :mod:`core.rulebook.time_budgets`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core.base import facts
from core.k8s.manifests.read import as_map, as_seq, whole, whole_number
from core.rulebook import time_budgets
from policylib import containers, declare, views

# --- rollout-deadlines-cover-cold-start: a model server's rollout deadlines outlast its declared cold start.


def rollout_deadlines_cover_cold_start(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
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


declare.resource_policy(
    "rollout-deadlines-cover-cold-start", rollout_deadlines_cover_cold_start, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""rollout-deadlines-cover-cold-start: a model server's rollout deadlines outlast its declared cold start.

Rule: for a workload that declares its cold start (annotation ``facts.COLD_START_ANNOTATION``, whole
seconds): a Deployment's ``spec.progressDeadlineSeconds`` (Kubernetes default 600) and the deploy's
await timeout (annotation ``pulumi.com/timeoutSeconds``, where written) each exceed it. Past the
progress deadline the Deployment reports ProgressDeadlineExceeded, and ``kubectl rollout status`` and
the Pulumi provider's await fail the deploy while the server is still loading.

An undeclared cold start is not judged here (startup-probe-covers-cold-start assumes one for probes).
Source: rh-aiservices-bu/ai-on-openshift PR #100, kserve #3795. Judged and worded once, in
:mod:`core.rulebook.time_budgets`.
""",
)


# --- termination-grace-covers-drain: a model server's grace period outlasts its preStop sleep and drain.

_SLEEP = re.compile(r"(?:^|[\s;&/])sleep\s+(\d+)")


def pre_stop_sleep(lifecycle: Mapping) -> int:
    """Seconds a preStop hook sleeps: its ``sleep.seconds``, or the ``sleep N`` its exec command runs (0: none)."""
    hook = as_map(as_map(lifecycle).get("preStop"))
    if as_map(hook.get("sleep")):
        return whole(as_map(hook.get("sleep")).get("seconds"), 0)
    command = " ".join(str(x) for x in as_seq(as_map(hook.get("exec")).get("command")))
    return sum(int(n) for n in _SLEEP.findall(command))


def termination_grace_covers_drain(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for w, c in containers.each(args):
        if c.server is None and c.cards <= 0:
            continue
        sleep = pre_stop_sleep(c.lifecycle)
        shutdown = whole(c.server.get("--shutdown-timeout"), 0) if c.server is not None and c.server.engine == "vllm" else 0
        if sleep or shutdown:
            containers.report(args, report_violation, w,
                              time_budgets.grace_covers(w.termination_grace_seconds, sleep, shutdown), c)


declare.resource_policy(
    "termination-grace-covers-drain", termination_grace_covers_drain, EnforcementLevel.ADVISORY, Severity.MEDIUM,
    doc="""termination-grace-covers-drain: a model server's grace period outlasts its preStop sleep and drain.

Rule: for each model server container (vLLM or candle-vllm, or one holding cards) with a preStop hook
that sleeps (``lifecycle.preStop.sleep.seconds``, or an exec ``sleep N``) or a vLLM
``--shutdown-timeout``: the pod's ``terminationGracePeriodSeconds`` (default 30) exceeds the sleep plus
the shutdown timeout. The kubelet sends SIGKILL at the end of the grace period, preStop included, so a
shorter grace kills the server with its in-flight requests.

Advisory: only the requests in flight at a rollout or scale-down are lost.
Source: kserve PR #5485, vllm PR #43208, llm-d #927. Judged and worded once, in :mod:`core.rulebook.time_budgets`.
""",
)
