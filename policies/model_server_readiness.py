"""model-server-readiness: every model server has a readiness probe.

Rule: each container of a Deployment, StatefulSet or InferenceService that serves a model (it
runs vLLM or candle-vllm, or holds nvidia.com/gpu cards) has a ``readinessProbe``. Without one a
pod is Ready as soon as its process starts, so a Service sends clients to a server still
loading its weights, and keeps sending them to one that stopped answering until the liveness
probe restarts it.

Source: coder.yaml (vLLM readiness on /health every 10 s); checkov CKV_K8S_9 failed on prod's
three Deployments before the components added a readiness probe to every model server.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry, terms
from core.rulebook import probes
from policylib import declare, stackconfig, views
from policylib import resource_helpers as rh

NAME = "model-server-readiness"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
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


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.MEDIUM)
