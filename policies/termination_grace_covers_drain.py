"""termination-grace-covers-drain: a model server's grace period outlasts its preStop sleep and drain.

Rule: for each model server container (vLLM or candle-vllm, or one holding cards) with a preStop hook
that sleeps (``lifecycle.preStop.sleep.seconds``, or an exec ``sleep N``) or a vLLM
``--shutdown-timeout``: the pod's ``terminationGracePeriodSeconds`` (default 30) exceeds the sleep plus
the shutdown timeout. The kubelet sends SIGKILL at the end of the grace period, preStop included, so a
shorter grace kills the server with its in-flight requests.

Advisory: only the requests in flight at a rollout or scale-down are lost.
Source: kserve PR #5485, vllm PR #43208, llm-d #927. Judged and worded once, in :mod:`core.rulebook.time_budgets`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from core.manifests.read import as_map, as_seq, whole
from core.rulebook import time_budgets
from policylib import containers, declare

NAME = "termination-grace-covers-drain"
SOURCE = registry.RULES[NAME].source
_SLEEP = re.compile(r"(?:^|[\s;&/])sleep\s+(\d+)")


def pre_stop_sleep(lifecycle: Mapping) -> int:
    """Seconds a preStop hook sleeps: its ``sleep.seconds``, or the ``sleep N`` its exec command runs (0: none)."""
    hook = as_map(as_map(lifecycle).get("preStop"))
    if as_map(hook.get("sleep")):
        return whole(as_map(hook.get("sleep")).get("seconds"), 0)
    command = " ".join(str(x) for x in as_seq(as_map(hook.get("exec")).get("command")))
    return sum(int(n) for n in _SLEEP.findall(command))


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for w, c in containers.each(args):
        if c.server is None and c.cards <= 0:
            continue
        sleep = pre_stop_sleep(c.lifecycle)
        shutdown = whole(c.server.get("--shutdown-timeout"), 0) if c.server is not None and c.server.engine == "vllm" else 0
        if sleep or shutdown:
            containers.report(args, report_violation, w,
                              time_budgets.grace_covers(w.termination_grace_seconds, sleep, shutdown), c)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
