"""How the pack reads the manifests for the policies :mod:`core.rulebook.probes` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core.judging import terms
from core.k8s.manifests.read import as_map, as_seq, whole
from core.rulebook import probes
from policylib import containers, declare, stackconfig, views
from policylib import resource_helpers as rh

# --- liveness-probe-window: a model server's liveness probe tolerates a busy server.


def timing(probe: Mapping) -> tuple[int, int, int]:
    """``(timeoutSeconds, periodSeconds, failureThreshold)`` with the kubelet's defaults (1, 10, 3)."""
    return whole(probe.get("timeoutSeconds"), 1), whole(probe.get("periodSeconds"), 10), whole(probe.get("failureThreshold"), 3)


def handler(probe: Mapping) -> Any:
    """What the probe checks (its httpGet, tcpSocket, exec or grpc), for comparison."""
    return next(((k, dict(probe[k])) for k in ("httpGet", "tcpSocket", "exec", "grpc") if isinstance(probe.get(k), Mapping)), None)


def liveness_probe_window(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
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


declare.validate("liveness-probe-window", liveness_probe_window)


# --- model-server-readiness: every model server has a readiness probe.


def model_server_readiness(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not stackconfig.house_conventions():
        return  # a convention of the user's cluster (house_conventions), as the pod security policies
    for c in w.containers:
        if c.server is None and c.cards <= 0:
            continue
        breach = probes.readiness(bool(c.readiness_probe), c.ports[0] if c.ports else None)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


declare.validate("model-server-readiness", model_server_readiness)


# --- probes-skip-api-key: a vLLM server that requires an API key is probed on a route that needs none.

PROBES = (("startupProbe", "startup_probe"), ("readinessProbe", "readiness_probe"), ("livenessProbe", "liveness_probe"))


def probes_skip_api_key(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for w, c in containers.each(args):
        ep = c.endpoint
        if ep is None or ep.api_key is None:
            continue
        for name, field in PROBES:
            get = as_map(as_map(getattr(c, field)).get("httpGet"))
            headers = {str(as_map(h).get("name", "")).lower() for h in as_seq(get.get("httpHeaders"))}
            path = str(get.get("path") or "/")
            if get and "authorization" not in headers and ep.needs_key(path):
                containers.report(args, report_violation, w, probes.probe_needs_no_key(name, path, ep.api_key), c)


declare.validate("probes-skip-api-key", probes_skip_api_key)
