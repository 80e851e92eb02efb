"""no-service-account-token: pods that call no Kubernetes API get no service account token.

Rule: every pod template sets ``automountServiceAccountToken: false`` (the model servers and
the reference server never call the Kubernetes API; a mounted token is a credential for
anyone who gets code execution in the server). ``core.facts.AUTOMOUNT_SERVICE_ACCOUNT_TOKEN``.

Source: CIS Kubernetes Benchmark 5.1.6 ("Ensure that Service Account Tokens are only mounted
where necessary", checkov CKV_K8S_38, failed on all three of prod's Deployments before the components set it).

Does not check: the ServiceAccount's own automountServiceAccountToken (the pod's setting wins).

The rule is judged and worded once, in :mod:`core.rulebook.pod_security`; this module walks the
pods (:mod:`policylib.podsec`) and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from policylib import declare, podsec

NAME = "no-service-account-token"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, _ in podsec.pods(args.resource_type, args.props) for c in podsec.token_mounts(pod, spec)]
    podsec.report_breaches(args, checks, report_violation)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.MEDIUM)
