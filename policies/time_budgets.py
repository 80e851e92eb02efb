"""How the pack reads the manifests for the policies :mod:`core.rulebook.time_budgets` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pulumi_policy import ReportViolation, ResourceValidationArgs

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


declare.validate("rollout-deadlines-cover-cold-start", rollout_deadlines_cover_cold_start)


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


declare.validate("termination-grace-covers-drain", termination_grace_covers_drain)
