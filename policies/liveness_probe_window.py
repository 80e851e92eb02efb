"""liveness-probe-window: a model server's liveness probe tolerates a busy server.

Rule: the livenessProbe of a model server container (it runs a server the pack knows, or holds
cards) has a failure window (``periodSeconds`` x ``failureThreshold``, defaults 10 x 3) of at least
60 s, and does not check the readiness probe's route with a window and timeout no longer than
readiness's (then a busy server is restarted as soon as it leaves the Service, each restart a full
cold start). A short window's message also names a ``timeoutSeconds`` below 5 (the kubelet's default
is 1); a window of 60 s or more passes at any timeout (four 1 s misses in a row over two minutes
is a server that stopped, the hand-written TP=2 Deployment's 30 s x 4).

Advisory: judgement of timing; a server that is never saturated is not restarted.
Source: scaleapi/llm-engine PR #255, llm-d-benchmark PR #1734; kube-score "Pod Probes Identical".
Judged and worded once, in :mod:`core.rulebook.probes`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from core.manifests.read import whole
from core.rulebook import probes
from policylib import containers, declare

NAME = "liveness-probe-window"
SOURCE = registry.RULES[NAME].source


def timing(probe: Mapping) -> tuple[int, int, int]:
    """``(timeoutSeconds, periodSeconds, failureThreshold)`` with the kubelet's defaults (1, 10, 3)."""
    return whole(probe.get("timeoutSeconds"), 1), whole(probe.get("periodSeconds"), 10), whole(probe.get("failureThreshold"), 3)


def handler(probe: Mapping) -> Any:
    """What the probe checks (its httpGet, tcpSocket, exec or grpc), for comparison."""
    return next(((k, dict(probe[k])) for k in ("httpGet", "tcpSocket", "exec", "grpc") if isinstance(probe.get(k), Mapping)), None)


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for w, c in containers.each(args):
        live = c.liveness_probe
        if not isinstance(live, Mapping) or (c.server is None and c.cards <= 0):
            continue
        timeout, period, threshold = timing(live)
        ready = c.readiness_probe if isinstance(c.readiness_probe, Mapping) else None
        same = False
        if ready is not None and handler(ready) == handler(live):
            r_timeout, r_period, r_threshold = timing(ready)
            same = timeout <= r_timeout and period * threshold <= r_period * r_threshold
        containers.report(args, report_violation, w, probes.liveness_window(timeout, period, threshold, same), c)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
