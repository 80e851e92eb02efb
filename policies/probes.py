"""The pack's policies judged by :mod:`core.rulebook.probes`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

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


declare.resource_policy(
    "liveness-probe-window", liveness_probe_window, EnforcementLevel.ADVISORY, Severity.MEDIUM,
    doc="""liveness-probe-window: a model server's liveness probe tolerates a busy server.

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
""",
)


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


declare.resource_policy(
    "model-server-readiness", model_server_readiness, EnforcementLevel.MANDATORY, Severity.MEDIUM,
    doc="""model-server-readiness: every model server has a readiness probe.

Rule: each container of a Deployment, StatefulSet or InferenceService that serves a model (it
runs vLLM or candle-vllm, or holds nvidia.com/gpu cards) has a ``readinessProbe``. Without one a
pod is Ready as soon as its process starts, so a Service sends clients to a server still
loading its weights, and keeps sending them to one that stopped answering until the liveness
probe restarts it.

Source: coder.yaml (vLLM readiness on /health every 10 s); checkov CKV_K8S_9 failed on prod's
three Deployments before the components added a readiness probe to every model server.
""",
)


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


declare.resource_policy(
    "probes-skip-api-key", probes_skip_api_key, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""probes-skip-api-key: a vLLM server that requires an API key is probed on a route that needs none.

Rule: a vLLM container given an API key (``--api-key``, or env ``VLLM_API_KEY`` with a value or
from a Secret, ConfigMap or field: the server's endpoint, :attr:`core.k8s.manifests.Container.endpoint`)
has no startup, readiness or liveness probe whose ``httpGet.path`` is under ``/v1`` without an
``Authorization`` header: vLLM answers 401 on every /v1 route without the bearer token, so the
probe never passes (the pod never becomes Ready, or is restarted forever). ``/health`` needs no
key. A ``VLLM_API_KEY`` only an ``envFrom`` source may set is not judged.

Source: vllm-project/production-stack #150. Judged and worded once, in :mod:`core.rulebook.probes`.
""",
)
