"""probes-skip-api-key: a vLLM server that requires an API key is probed on a route that needs none.

Rule: a vLLM container given an API key (``--api-key``, or env ``VLLM_API_KEY`` with a value or
from a Secret, ConfigMap or field: the server's endpoint, :attr:`core.manifests.Container.endpoint`)
has no startup, readiness or liveness probe whose ``httpGet.path`` is under ``/v1`` without an
``Authorization`` header: vLLM answers 401 on every /v1 route without the bearer token, so the
probe never passes (the pod never becomes Ready, or is restarted forever). ``/health`` needs no
key. A ``VLLM_API_KEY`` only an ``envFrom`` source may set is not judged.

Source: vllm-project/production-stack #150. Judged and worded once, in :mod:`core.rulebook.probes`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from core.manifests.read import as_map, as_seq
from core.rulebook import probes
from policylib import containers, declare

NAME = "probes-skip-api-key"
SOURCE = registry.RULES[NAME].source
PROBES = (("startupProbe", "startup_probe"), ("readinessProbe", "readiness_probe"), ("livenessProbe", "liveness_probe"))


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
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


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
