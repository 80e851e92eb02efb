"""The pack's policies judged by :mod:`core.rulebook.pod_security`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

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


declare.resource_policy(
    "env-var-secret", env_var_secret, EnforcementLevel.ADVISORY, Severity.HIGH,
    doc="""env-var-secret: no token, API key or password is written in plain text in an env value.

Rule: a container's env entry whose name says it holds a credential (``*_TOKEN``, ``*SECRET*``,
``*PASSWORD*``, ``*API_KEY*``, access and private keys: HF_TOKEN, VLLM_API_KEY, ...;
``core.rulebook.pod_security.SECRET_ENV_NAME``) has no literal ``value``: it reads a Secret
(``valueFrom.secretKeyRef``) or composes other variables (``$(VAR)``). A flag (``1``, ``true``), a
file path (``/run/secrets/...``, the Secret mounted as a file) and vLLM's documented "no key" value
``EMPTY`` are no credential.

Source: kube-linter's ``env-var-secret`` (pkg/builtinchecks/yamls/env-var-secret.yaml: an env name
matching ``(?i).*secret.*`` with a non-empty value; "Don't use raw secrets in an environment
variable. Instead, either mount the secret as a file or use a secretKeyRef"). checkov's CKV_K8S_35
(checkov/kubernetes/checks/resource/k8s/Secrets.py, CIS 5.4.1 "Prefer using secrets as files over
secrets as environment variables") is a different check: it fails on ``valueFrom.secretKeyRef`` and
``envFrom.secretRef`` themselves, which this policy accepts.

Advisory: the pod runs; a credential in the manifest is a judgement about who can read it (the
repository, the object), not a failure of serving. Judged on every manifest, not only under the
house conventions: a credential in git is exposed on any cluster.

Does not check: values in ConfigMaps read with ``envFrom`` or ``configMapKeyRef``, or credentials
in args.

The rule is judged and worded once, in :mod:`core.rulebook.pod_security`.
""",
)


# --- model-mounts-read-only: the models PVC is mounted read-only in every container.


def model_mounts_read_only(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for _, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.writable_model_mounts(spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


declare.resource_policy(
    "model-mounts-read-only", model_mounts_read_only, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""model-mounts-read-only: the models PVC is mounted read-only in every container.

Rule: a container's volumeMount of the models PVC (a persistentVolumeClaim volume with claim
``llm-models``, ``core.base.facts.MODELS_PVC``) or of anything at ``/mnt/models``
(``facts.MODELS_MOUNT_PATH``) sets ``readOnly: true``. The PVC holds every model's weights and
the fixed candle-vllm binary that clef-candle runs: a server that can write there can corrupt
what every other server loads.

Source: spec "storage" row (PVC llm-models, read-only mount at /mnt/models; 001, 003); coder.yaml
mounted it writable for vLLM's Hugging Face cache (HF_HOME=/mnt/models), which the vLLM
component now reads with HF_HUB_OFFLINE=1.

The rule is judged and worded once, in :mod:`core.rulebook.pod_security`; this module walks the
pods (:mod:`policylib.podsec`) and reports its breaches.
""",
)


# --- no-service-account-token: pods that call no Kubernetes API get no service account token.


def no_service_account_token(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, _ in podsec.pods(args.resource_type, args.props) for c in podsec.token_mounts(pod, spec)]
    podsec.report_breaches(args, checks, report_violation)


declare.resource_policy(
    "no-service-account-token", no_service_account_token, EnforcementLevel.MANDATORY, Severity.MEDIUM,
    doc="""no-service-account-token: pods that call no Kubernetes API get no service account token.

Rule: every pod template sets ``automountServiceAccountToken: false`` (the model servers and
the reference server never call the Kubernetes API; a mounted token is a credential for
anyone who gets code execution in the server). ``core.base.facts.AUTOMOUNT_SERVICE_ACCOUNT_TOKEN``.

Source: CIS Kubernetes Benchmark 5.1.6 ("Ensure that Service Account Tokens are only mounted
where necessary", checkov CKV_K8S_38, failed on all three of prod's Deployments before the components set it).

Does not check: the ServiceAccount's own automountServiceAccountToken (the pod's setting wins).

The rule is judged and worded once, in :mod:`core.rulebook.pod_security`; this module walks the
pods (:mod:`policylib.podsec`) and reports its breaches.
""",
)


# --- pod-run-as-non-root: containers run as a non-root user, or the workload says why not.


def pod_run_as_non_root(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    annotations = rh.mapping(rh.mapping(args.props.get("metadata")).get("annotations"))
    if str(annotations.get(facts.RUNS_AS_ROOT_ANNOTATION) or "").strip():
        return
    checks = [c for _, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.root_containers(spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


declare.resource_policy(
    "pod-run-as-non-root", pod_run_as_non_root, EnforcementLevel.MANDATORY, Severity.MEDIUM,
    doc="""pod-run-as-non-root: containers run as a non-root user, or the workload says why not.

Rule: every container of a Deployment, StatefulSet, InferenceService (or other pod owner) has
``runAsNonRoot: true`` (on the container or the pod) and no ``runAsUser: 0``
(:func:`policylib.podsec.root_containers`), unless the object carries the annotation
``llm-serving.riotpiao.com/runs-as-root`` with the reason (``core.base.facts.RUNS_AS_ROOT_ANNOTATION``).
The components write that reason for every server here by default
(``core.base.facts.ROOT_REASONS``: the vllm/vllm-openai image runs as root, the candle-vllm images
set no USER, clef-serve pip-installs at start); ``run_as_user: <uid>`` in the stack file runs
the workload as that user instead.

Source: Kubernetes Pod Security Standards, Restricted ("Running as Non-root"): run as
non-root where the image allows, and say where it does not.

The rule is judged and worded once, in :mod:`core.rulebook.pod_security`; this module walks the
pods (:mod:`policylib.podsec`) and reports its breaches.
""",
)


# --- pod-security-baseline: every pod meets the Kubernetes Pod Security Standards' Baseline profile.

def pod_security_baseline(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.baseline(pod, spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


declare.resource_policy(
    "pod-security-baseline", pod_security_baseline, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""pod-security-baseline: every pod meets the Kubernetes Pod Security Standards' Baseline profile.

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
""",
)


# --- pod-security-restricted: every pod meets the Restricted profile of the Pod Security

def pod_security_restricted(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for pod, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.restricted(pod, spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


declare.resource_policy(
    "pod-security-restricted", pod_security_restricted, EnforcementLevel.MANDATORY, Severity.MEDIUM,
    doc="""pod-security-restricted: every pod meets the Restricted profile of the Pod Security
Standards, as far as a GPU server can (running as non-root is ``pod-run-as-non-root``).

Rule: every container sets ``allowPrivilegeEscalation: false`` and drops ALL capabilities
(adding back NET_BIND_SERVICE at most); the pod (or every container) sets a RuntimeDefault or
Localhost seccomp profile; volumes are configMap, csi, downwardAPI, emptyDir, ephemeral,
persistentVolumeClaim, projected or secret (:func:`policylib.podsec.restricted`). The
components set all of it (``core.base.facts.CONTAINER_SECURITY``, ``SECCOMP_PROFILE``).

Source: Kubernetes Pod Security Standards, Restricted (kubernetes.io/docs/concepts/security/
pod-security-standards); checkov 3.3.30 counted 37 failed checks on prod's manifests before the
components set these fields, among them these three on every Deployment.

Does not check: runAsNonRoot (``pod-run-as-non-root``, which accepts a declared reason).

Each row of the profile is a rule judged and worded once, in :mod:`core.rulebook.pod_security`;
this module walks the pods (:mod:`policylib.podsec`) and reports their breaches.
""",
)
