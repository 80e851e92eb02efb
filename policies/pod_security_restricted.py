"""pod-security-restricted: every pod meets the Restricted profile of the Pod Security
Standards, as far as a GPU server can (running as non-root is ``pod-run-as-non-root``).

Rule: every container sets ``allowPrivilegeEscalation: false`` and drops ALL capabilities
(adding back NET_BIND_SERVICE at most); the pod (or every container) sets a RuntimeDefault or
Localhost seccomp profile; volumes are configMap, csi, downwardAPI, emptyDir, ephemeral,
persistentVolumeClaim, projected or secret (:func:`policylib.podsec.restricted`). The
components set all of it (``core.facts.CONTAINER_SECURITY``, ``SECCOMP_PROFILE``).

Source: Kubernetes Pod Security Standards, Restricted (kubernetes.io/docs/concepts/security/
pod-security-standards); checkov 3.3.30 counted 37 failed checks on prod's manifests before the
components set these fields, among them these three on every Deployment.

Does not check: runAsNonRoot (``pod-run-as-non-root``, which accepts a declared reason).

Each row of the profile is a rule judged and worded once, in :mod:`core.rulebook.pod_security`;
this module walks the pods (:mod:`policylib.podsec`) and reports their breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from policylib import declare, podsec

NAME = "pod-security-restricted"


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.restricted(pod, spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.MEDIUM)
