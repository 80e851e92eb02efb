"""The pod security rules of the pack's ``pod-security-baseline``, ``pod-security-restricted``,
``pod-run-as-non-root``, ``no-service-account-token``, ``model-mounts-read-only`` and ``env-var-secret``: one
registry record a check (the Kubernetes Pod Security Standards' tables, row by row), each judge
over the plain values of one pod or container field, worded once (:mod:`core.judging.registry`).

The stack file has no key for these fields: the components write them on every pod they render,
so a stack user's fix is to preview again (:data:`_WRITTEN`, :data:`_NEVER`).
``policies/policylib/podsec.py`` walks the pods and calls these judges.

Source of every list: kubernetes.io/docs/concepts/security/pod-security-standards ("Baseline"
and "Restricted" tables, Kubernetes v1.31). Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from core.base import facts
from core.judging.registry import MANIFEST, STACK, Breach, Setting, declare_policy, only, rule

SOURCE_BASELINE = ("Kubernetes Pod Security Standards, Baseline profile "
                   "(kubernetes.io/docs/concepts/security/pod-security-standards)")
SOURCE_RESTRICTED = ("Kubernetes Pod Security Standards, Restricted profile "
                     "(kubernetes.io/docs/concepts/security/pod-security-standards)")

BASELINE = "pod-security-baseline"
RESTRICTED = "pod-security-restricted"

#: Baseline "Capabilities": what a container may add.
BASELINE_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                   "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})
#: Baseline "Sysctls": the safe set.
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
})
#: Baseline "SELinux": the types a pod may set.
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
#: Restricted "Volume Types".
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                "persistentVolumeClaim", "projected", "secret"})
#: Restricted "Capabilities": the only one a container may add.
RESTRICTED_ADD = frozenset({"NET_BIND_SERVICE"})

#: The stack user's fix for a field the components never set / always set: a fresh rendering.
_NEVER = only(STACK, "; the components never set it: preview again from the workload")
_WRITTEN = only(STACK, "; the components set it on every pod: preview again from the workload")

ALLOW_ESCALATION = Setting("allow_privilege_escalation", None, "securityContext.allowPrivilegeEscalation")
SECCOMP = Setting("seccomp_profile_type", None, "securityContext.seccompProfile.type")
DROP = Setting("capabilities_drop", None, "securityContext.capabilities.drop")
RUN_AS_NON_ROOT = Setting("run_as_non_root", None, "securityContext.runAsNonRoot")
RUN_AS_USER = Setting("run_as_user", "run_as_user", "securityContext.runAsUser")
AUTOMOUNT = Setting("automount_service_account_token", None, "automountServiceAccountToken")
READ_ONLY = Setting("read_only", None, "readOnly")


def shown(value: Any) -> str:
    """A field's value as a message states it: ``unset``, ``true``, ``'Unconfined'``."""
    return "unset" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)


# --- Baseline ---------------------------------------------------------------------------------

@rule("baseline-host-access", "No host namespace, privileged container or Windows host process.", SOURCE_BASELINE,
      policy=BASELINE)
def host_access(field: str, value: Any, effect: str = "", at: str = "") -> Breach | None:
    """``field``: hostNetwork, hostPID, hostIPC (the pod spec's), privileged or
    windowsOptions.hostProcess (a securityContext's, ``at`` ``securityContext.``); ``value``: its
    value, refused when true; ``effect``: what it gives the pod."""
    if value is not True:
        return None
    return Breach(f"{field} is true" + (f" ({effect})" if effect else ""), f"remove {at}{field}" + _NEVER)


@rule("baseline-host-path", "Pods mount no hostPath volume.", SOURCE_BASELINE, policy=BASELINE)
def host_path(volume: Mapping) -> Breach | None:
    """``volume``: one entry of the pod's ``volumes``."""
    if "hostPath" not in volume:
        return None
    return Breach(f"volume {volume.get('name', '')} is a hostPath (the node's filesystem)",
                  "use a persistentVolumeClaim, configMap, secret or emptyDir volume" + _NEVER)


@rule("baseline-sysctls", "Pods set only the safe sysctls.", SOURCE_BASELINE, policy=BASELINE)
def sysctl(name: str) -> Breach | None:
    """``name``: one sysctl of the pod's securityContext (:data:`SAFE_SYSCTLS`)."""
    if name in SAFE_SYSCTLS:
        return None
    return Breach(f"sysctl {name} is not in the safe set", "remove the sysctl" + _NEVER)


@rule("baseline-capabilities", "Containers add no capability beyond the Baseline set.", SOURCE_BASELINE, policy=BASELINE)
def baseline_capabilities(added: Sequence[str]) -> Breach | None:  # noqa: D103
    return _added(added, BASELINE_CAPABILITIES, "remove them from securityContext.capabilities.add" + _NEVER)


def _added(added: Sequence[str], allowed: frozenset[str], fix: str) -> Breach | None:
    """The capabilities a container adds beyond ``allowed``."""
    extra = sorted(set(added) - allowed)
    return Breach(f"adds capabilities {', '.join(extra)}", fix) if extra else None


@rule("baseline-proc-mount", "Containers keep the default /proc mount.", SOURCE_BASELINE, policy=BASELINE)
def proc_mount(value: Any) -> Breach | None:  # noqa: D103
    if value in (None, "Default"):
        return None
    return Breach(f"procMount is {value}", "remove securityContext.procMount" + _NEVER)


@rule("baseline-host-ports", "Containers bind no host port.", SOURCE_BASELINE, policy=BASELINE)
def host_port(port: int | None) -> Breach | None:
    """``port``: a container port's ``hostPort`` as a whole number (None or 0: unset)."""
    if not port:
        return None
    return Breach(f"hostPort {port} binds the node's port", "remove hostPort; reach the pod through a Service" + _NEVER)


@rule("baseline-unconfined", "No Unconfined seccomp or AppArmor profile.", SOURCE_BASELINE, policy=BASELINE)
def confined(profile: str, profile_type: Any) -> Breach | None:
    """``profile``: seccompProfile or appArmorProfile; ``profile_type``: its ``type``."""
    if profile_type != "Unconfined":
        return None
    return Breach(f"{profile} is Unconfined", f"set {profile}.type: RuntimeDefault" + _NEVER)


@rule("baseline-selinux", "SELinux options set no user or role and an allowed type.", SOURCE_BASELINE, policy=BASELINE)
def selinux(options: Mapping) -> Breach | None:
    """``options``: a securityContext's ``seLinuxOptions`` (:data:`SELINUX_TYPES`)."""
    if str(options.get("type", "")) in SELINUX_TYPES and not options.get("user") and not options.get("role"):
        return None
    return Breach(f"seLinuxOptions {dict(options)} set a user, role or type outside the allowed list",
                  "remove seLinuxOptions (or use type container_t)" + _NEVER)


# --- Restricted -------------------------------------------------------------------------------

@rule("restricted-volume-types", "Volumes are of the Restricted types.", SOURCE_RESTRICTED, policy=RESTRICTED)
def volume_types(name: str, kinds: Sequence[str]) -> Breach | None:
    """``kinds``: the volume's source fields (every key but ``name``)."""
    if not kinds or set(kinds) <= RESTRICTED_VOLUMES:
        return None
    return Breach(f"volume {name} is of type {', '.join(sorted(kinds))}",
                  f"use one of {', '.join(sorted(RESTRICTED_VOLUMES))}" + _WRITTEN)


@rule("restricted-required", "Containers set allowPrivilegeEscalation false and a RuntimeDefault or Localhost "
      "seccomp profile.", SOURCE_RESTRICTED, policy=RESTRICTED)
def required(field: str, setting: Setting, value: Any, allowed: tuple[Any, ...], on: str) -> Breach | None:
    """``value``: the container's ``field`` (seccompProfile: the container's type, else the pod's),
    one of ``allowed`` (same type and value); ``setting``: what the fix sets to ``allowed[0]``, on
    the ``on`` (container, pod)."""
    if any(type(value) is type(a) and value == a for a in allowed):
        return None
    wanted = " or ".join(a if isinstance(a, str) else shown(a) for a in allowed)
    return Breach(f"{field} is {shown(value)}, not {wanted}", f"set {setting.to(allowed[0])} on the {on}" + _WRITTEN)


@rule("restricted-drop-all", "Containers drop ALL capabilities.", SOURCE_RESTRICTED, policy=RESTRICTED)
def drops_all(dropped: Sequence[str]) -> Breach | None:  # noqa: D103
    if "ALL" in dropped:
        return None
    return Breach(f"drops {', '.join(dropped) or 'no'} capabilities, not ALL",
                  f"set {DROP.to(['ALL'])} on the container" + _WRITTEN)


@rule("restricted-capabilities", "Containers add back NET_BIND_SERVICE at most.", SOURCE_RESTRICTED, policy=RESTRICTED)
def restricted_capabilities(added: Sequence[str]) -> Breach | None:  # noqa: D103
    return _added(added, RESTRICTED_ADD, "add back NET_BIND_SERVICE at most" + _WRITTEN)


# --- Running as non-root, the token, the models mount -----------------------------------------

@rule("pod-run-as-non-root", "Containers run as non-root, or the workload says why not.",
      "Kubernetes Pod Security Standards, Restricted (\"Running as Non-root\")",
      policy="pod-run-as-non-root")
def runs_as_non_root(run_as_non_root: Any, run_as_user: int | None, image_user: str | None = None) -> Breach | None:
    """The container's ``runAsNonRoot`` and ``runAsUser`` (each the container's, else the pod's);
    ``image_user``: the user its image runs as (the image catalog, ``core/data/images.yaml``; None:
    not known). The fix always names both fields: ``runAsNonRoot`` alone on an image whose user is
    root is refused by the kubelet (run-as-non-root-needs-uid)."""
    if run_as_user == 0:
        wrong = "runAsUser is 0 (root)"
        fix = f"set {RUN_AS_USER} to a non-zero UID the image allows"
    elif run_as_non_root is not True:
        user = (f"its image's user, {image_user}" if image_user else
                "the image's user (root unless the image sets USER)")
        wrong = f"runAsNonRoot is {shown(run_as_non_root)}, so it runs as {user}"
        fix = (f"set {RUN_AS_USER}: <non-zero uid> together with {RUN_AS_NON_ROOT.to(True)} (on an image whose user "
               "is root, runAsNonRoot alone is refused by the kubelet), with env HOME on a writable volume")
    else:
        return None
    return Breach(wrong, only(MANIFEST, f"{fix}, or declare why it cannot: annotation "
                                        f"{facts.RUNS_AS_ROOT_ANNOTATION}: <reason>")
                  + only(STACK, f"the components declare why it runs as root; once the image runs as a "
                                f"non-root user, set {RUN_AS_USER}: <uid>"))


@rule("no-service-account-token", "Pods that call no Kubernetes API get no service account token.",
      "CIS Kubernetes Benchmark 5.1.6 (checkov CKV_K8S_38)", policy="no-service-account-token")
def no_token(automount: Any) -> Breach | None:
    """``automount``: the pod spec's ``automountServiceAccountToken``."""
    if automount is False:
        return None
    return Breach(f"automountServiceAccountToken is {shown(automount)}, so the pod gets a service account token "
                  "it never uses", f"set {AUTOMOUNT.to(False)} in the pod spec" + _WRITTEN)


@rule("model-mounts-read-only", "The models PVC is mounted read-only in every container.",
      "spec storage row (llm-models mounted read-only at /mnt/models, seeds 001 and 003)",
      policy="model-mounts-read-only")
def models_read_only(name: str, path: str, read_only: Any, models_volume: bool) -> Breach | None:
    """One volumeMount: ``models_volume``, its volume is a persistentVolumeClaim of
    ``facts.MODELS_PVC``; a mount at ``facts.MODELS_MOUNT_PATH`` counts too."""
    if not (models_volume or path.rstrip("/") == facts.MODELS_MOUNT_PATH) or read_only is True:
        return None
    return Breach(f"mounts {name} ({facts.MODELS_PVC}) at {path} writable (readOnly {shown(read_only)})",
                  f"set {READ_ONLY.to(True)} on the volumeMount at {path}" + _WRITTEN)


#: Env names that hold a credential: kube-linter's env-var-secret (pkg/builtinchecks/yamls/env-var-secret.yaml:
#: ``(?i).*secret.*`` with a non-empty value), widened to tokens, API keys, passwords and private or access keys
#: (HF_TOKEN, VLLM_API_KEY, OPENAI_API_KEY, ...). ``TOKEN`` only at the end: TOKENIZERS_PARALLELISM is no credential.
SECRET_ENV_NAME = re.compile(r"(?i)(?:^|_)TOKEN$|SECRET|PASSW(?:OR)?D|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL")
#: A reference to another variable, which the kubelet expands (``Bearer $(TOKEN)``: the secret lives in TOKEN).
_REFERENCE = re.compile(r"(?<!\$)\$\([A-Za-z_][A-Za-z0-9_.-]*\)")
#: Values that are no credential: a flag (HF_HUB_DISABLE_IMPLICIT_TOKEN=1), a file path (the secret is a mounted file,
#: *_PASSWORD_FILE), vLLM's documented "no key" value for its OpenAI-compatible client (api_key="EMPTY").
_NOT_A_SECRET = re.compile(r"(?i)(?:0|1|true|false|yes|no|on|off|empty|none)|/.*")


@rule("env-var-secret", "A credential is not written in plain text in an env value.",
      "kube-linter env-var-secret (stackrox/kube-linter, pkg/builtinchecks/yamls/env-var-secret.yaml)",
      policy="env-var-secret")
def env_var_secret(name: str, value: Any) -> Breach | None:
    """One env entry of a container: ``name`` and its literal ``value`` (None: ``valueFrom`` or no value)."""
    if not isinstance(value, str) or not SECRET_ENV_NAME.search(name):
        return None
    text = value.strip()
    if not text or _REFERENCE.search(text) or _NOT_A_SECRET.fullmatch(text):
        return None
    return Breach(f"env {name} holds a literal value ({len(text)} characters), so the credential is in the manifest, "
                  "in git and in the object anyone who may read the workload sees",
                  f"put it in a Secret and read it with valueFrom.secretKeyRef (env {name}: valueFrom: secretKeyRef: "
                  "{name: <secret>, key: <key>}), or mount the Secret as a file")


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "model-mounts-read-only",
    "The models PVC (llm-models at /mnt/models) is mounted readOnly in every container.",
    (
        "Set readOnly: true on every volumeMount of the llm-models PVC (/mnt/models). vLLM reads its Hugging Face cache there "
        "with HF_HUB_OFFLINE=1; download a new model to the PVC beforehand."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""model-mounts-read-only: the models PVC is mounted read-only in every container.

Rule: a container's volumeMount of the models PVC (a persistentVolumeClaim volume with claim
``llm-models``, ``core.base.facts.MODELS_PVC``) or of anything at ``/mnt/models``
(``facts.MODELS_MOUNT_PATH``) sets ``readOnly: true``. The PVC holds every model's weights and
the fixed candle-vllm binary that clef-candle runs: a server that can write there can corrupt
what every other server loads.

Source: spec "storage" row (PVC llm-models, read-only mount at /mnt/models; 001, 003); coder.yaml
mounted it writable for vLLM's Hugging Face cache (HF_HOME=/mnt/models), which the vLLM
component now reads with HF_HUB_OFFLINE=1.

""",
)

declare_policy(
    "no-service-account-token",
    "Pod templates set automountServiceAccountToken false: the servers call no Kubernetes API.",
    (
        "Set automountServiceAccountToken: false in the pod spec (Deployment spec.template.spec, InferenceService "
        "spec.predictor)."
    ),
    kind="resource",
    level="mandatory",
    severity="medium",
    doc="""no-service-account-token: pods that call no Kubernetes API get no service account token.

Rule: every pod template sets ``automountServiceAccountToken: false`` (the model servers and
the reference server never call the Kubernetes API; a mounted token is a credential for
anyone who gets code execution in the server). ``core.base.facts.AUTOMOUNT_SERVICE_ACCOUNT_TOKEN``.

Source: CIS Kubernetes Benchmark 5.1.6 ("Ensure that Service Account Tokens are only mounted
where necessary", checkov CKV_K8S_38, failed on all three of prod's Deployments before the components set it).

Does not check: the ServiceAccount's own automountServiceAccountToken (the pod's setting wins).

""",
)

declare_policy(
    "pod-run-as-non-root",
    "Containers run with runAsNonRoot true, or the workload declares why it runs as root (annotation runs-as-root).",
    (
        "Set securityContext.runAsUser: <non-zero uid> together with runAsNonRoot: true where the image can start "
        "as that user, with env HOME on a writable volume (stack file: run_as_user on the workload); runAsNonRoot "
        "alone on an image whose user is root is refused by the kubelet. Where it cannot (the vllm/vllm-openai image runs as root), "
        "say why in the annotation llm-serving.riotpiao.com/runs-as-root; the components write it by default."
    ),
    kind="resource",
    level="mandatory",
    severity="medium",
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

""",
)

declare_policy(
    "pod-security-baseline",
    "Pods meet the Pod Security Standards' Baseline: no host namespaces, hostPath, privileged containers, added capabilities or "
    "host ports.",
    (
        "Remove hostNetwork / hostPID / hostIPC, hostPath volumes (use the models PVC), privileged: true, capabilities beyond "
        "the Baseline set, hostPort (reach pods through a Service), Unconfined seccomp or AppArmor profiles, SELinux users and "
        "roles, procMount and unsafe sysctls. GPU access comes from runtimeClassName: nvidia and nvidia.com/gpu, none of these."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""pod-security-baseline: every pod meets the Kubernetes Pod Security Standards' Baseline profile.

Rule: no host namespaces (hostNetwork, hostPID, hostIPC), no hostPath volumes, no privileged
container, no capability added beyond the Baseline set, no hostPort, no Unconfined seccomp or
AppArmor profile, SELinux options within the allowed list, the default /proc mount, only safe
sysctls, no Windows host process (:func:`policylib.podsec.baseline`). A GPU server needs none of
these: the nvidia runtime class and the device plugin give it the cards.

Source: Kubernetes Pod Security Standards, Baseline (kubernetes.io/docs/concepts/security/
pod-security-standards); the rendered pods pass Baseline.

Does not check: the namespace's pod-security.kubernetes.io labels (the admission side).

""",
)

declare_policy(
    "pod-security-restricted",
    "Containers set allowPrivilegeEscalation false, drop ALL capabilities and run under a RuntimeDefault seccomp profile; "
    "volumes are of the restricted types.",
    (
        "On every container: securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}. On the pod: "
        "securityContext: {seccompProfile: {type: RuntimeDefault}}. Use persistentVolumeClaim, emptyDir, configMap, secret, "
        "projected, downwardAPI, csi or ephemeral volumes. The stack file's components write all of it."
    ),
    kind="resource",
    level="mandatory",
    severity="medium",
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

""",
)

declare_policy(
    "env-var-secret",
    "No token, API key or password is written in plain text in a container's env value.",
    (
        "Keep the credential in a Secret and read it with env valueFrom.secretKeyRef (or mount the Secret as a file); "
        "write $(VAR) to compose it from another variable. A literal value is in git and in the object anyone who may "
        "read the workload sees."
    ),
    kind="resource",
    level="advisory",
    severity="high",
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

""",
)
