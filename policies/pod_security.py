"""How the pack reads the manifests for the policies :mod:`core.rulebook.pod_security` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core.base import facts
from core.judging.terms import message
from policylib import declare, podsec
from policylib import resource_helpers as rh
from policylib.resource_helpers import annotations_of

# --- env-var-secret: no token, API key or password is written in plain text in an env value.


def env_var_secret(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    found = [c for _, _, containers in podsec.pods(args.resource_type, args.props)
             for c in podsec.secret_env_values(containers)]
    for where, breach in found:
        report_violation(message(annotations_of(args.props), breach.finding(where)), args.urn)


declare.validate("env-var-secret", env_var_secret)


# --- model-mounts-read-only: the models PVC is mounted read-only in every container.


def model_mounts_read_only(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for _, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.writable_model_mounts(spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


declare.validate("model-mounts-read-only", model_mounts_read_only)


# --- no-service-account-token: pods that call no Kubernetes API get no service account token.


def no_service_account_token(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, _ in podsec.pods(args.resource_type, args.props) for c in podsec.token_mounts(pod, spec)]
    podsec.report_breaches(args, checks, report_violation)


declare.validate("no-service-account-token", no_service_account_token)


# --- pod-run-as-non-root: containers run as a non-root user, or the workload says why not.


def pod_run_as_non_root(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    annotations = rh.mapping(rh.mapping(args.props.get("metadata")).get("annotations"))
    if str(annotations.get(facts.RUNS_AS_ROOT_ANNOTATION) or "").strip():
        return
    checks = [c for _, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.root_containers(spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


declare.validate("pod-run-as-non-root", pod_run_as_non_root)


# --- pod-security-baseline: every pod meets the Kubernetes Pod Security Standards' Baseline profile.

def pod_security_baseline(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.baseline(pod, spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


declare.validate("pod-security-baseline", pod_security_baseline)


# --- pod-security-restricted: every pod meets the Restricted profile of the Pod Security

def pod_security_restricted(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.restricted(pod, spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


declare.validate("pod-security-restricted", pod_security_restricted)
