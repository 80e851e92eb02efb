"""pod-security-baseline: every pod meets the Kubernetes Pod Security Standards' Baseline profile.

Rule: no host namespaces (hostNetwork, hostPID, hostIPC), no hostPath volumes, no privileged
container, no capability added beyond the Baseline set, no hostPort, no Unconfined seccomp or
AppArmor profile, SELinux options within the allowed list, the default /proc mount, only safe
sysctls, no Windows host process (:func:`policylib.podsec.baseline`). A GPU server needs none of
these: the nvidia runtime class and the device plugin give it the cards.

Source: Kubernetes Pod Security Standards, Baseline (kubernetes.io/docs/concepts/security/
pod-security-standards); the rendered pods pass Baseline.

Does not check: the namespace's pod-security.kubernetes.io labels (the admission side).

Each row of the profile is a rule judged and worded once, in :mod:`core.rulebook.pod_security`;
this module walks the pods (:mod:`policylib.podsec`) and reports their breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from policylib import declare, podsec

NAME = "pod-security-baseline"


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.baseline(pod, spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
