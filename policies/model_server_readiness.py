"""model-server-readiness: every model server has a readiness probe.

Rule: each container of a Deployment, StatefulSet or InferenceService that serves a model (it
runs vLLM or candle-vllm, or holds nvidia.com/gpu cards) has a ``readinessProbe``. Without one a
pod is Ready as soon as its process starts, so a Service sends clients to a server still
loading its weights, and keeps sending them to one that stopped answering until the liveness
probe restarts it.

Source: coder.yaml (vLLM readiness on /health every 10 s), issue 9 ("a readiness probe on
every model server"); checkov CKV_K8S_9 failed on prod's three Deployments before issue 9.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import facts
from policylib import podsec, views
from policylib import resource_helpers as rh

NAME = "model-server-readiness"
SOURCE = "coder.yaml (readiness on /health every 10 s); issue 9"


def validate(args, report_violation) -> None:
    w = views.of(args)
    if w is None:
        return
    checks = [(f"{rh.workload_label(w)}, container {c.name}", "has no readinessProbe, so it is Ready (and gets "
               "Service traffic) before the model is loaded",
               f"add readinessProbe: {{httpGet: {{path: <health route>, port: {c.ports[0] if c.ports else 8080}}}, "
               f"periodSeconds: {facts.READINESS_PERIOD_SECONDS}}}")
              for c in w.containers if (c.server is not None or c.cards > 0) and not c.readiness_probe]
    podsec.report(args, checks, SOURCE, report_violation,
                  "the components add it for {key}; an older rendering lacks it: preview again")


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Every model server container (vLLM, candle-vllm, or holding cards) has a readinessProbe.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    remediation_steps=(
        "Add a readinessProbe on the server's health route (candle-vllm: GET /v1/models; vLLM: GET /health) "
        "every 10 s; the components add it with the startup and liveness probes."
    ),
)
