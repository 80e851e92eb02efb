"""probes-skip-api-key: a vLLM server that requires an API key is probed on a route that needs none.

Rule: a vLLM container given an API key (env ``VLLM_API_KEY`` or ``--api-key``) has no startup,
readiness or liveness probe whose ``httpGet.path`` is under ``/v1`` without an ``Authorization``
header: vLLM answers 401 on every /v1 route without the bearer token, so the probe never passes (the
pod never becomes Ready, or is restarted forever). ``/health`` needs no key.

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
        server = c.server
        if server is None or server.engine != "vllm":
            continue
        key_from = "env VLLM_API_KEY" if c.env.get("VLLM_API_KEY") else "--api-key" if server.has("--api-key") else None
        if key_from is None:
            continue
        for name, field in PROBES:
            get = as_map(as_map(getattr(c, field)).get("httpGet"))
            headers = {str(as_map(h).get("name", "")).lower() for h in as_seq(get.get("httpHeaders"))}
            if get and "authorization" not in headers:
                containers.report(args, report_violation, w, probes.probe_needs_no_key(name, str(get.get("path") or "/"), key_from), c)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
