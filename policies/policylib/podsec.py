"""The Kubernetes Pod Security Standards as checks over raw pod specs, for the pack's pod
security policies (issue 9): ``pod-security-baseline``, ``pod-security-restricted``,
``pod-run-as-non-root``, ``no-service-account-token``, ``model-mounts-read-only``.

Source of every rule and list: kubernetes.io/docs/concepts/security/pod-security-standards
("Baseline" and "Restricted" policy tables, Kubernetes v1.31). Each check returns
``(where, wrong, fix)`` triples: ``where`` names the container (or ``""`` for the pod), ``wrong``
states the value the object has, ``fix`` the manifest field to set. Pods of every kind that
runs containers are read (:func:`policylib.resource_helpers.pod_specs`: Pod, Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, the InferenceService's components).

Pure functions; no Pulumi program code. The policies report only on a cluster whose inventory
sets ``house_conventions`` (:func:`report`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator

from policylib import resource_helpers as rh

SOURCE_BASELINE = "Kubernetes Pod Security Standards, Baseline profile (kubernetes.io/docs/concepts/security/pod-security-standards)"
SOURCE_RESTRICTED = ("Kubernetes Pod Security Standards, Restricted profile "
                     "(kubernetes.io/docs/concepts/security/pod-security-standards)")

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

Check = tuple[str, str, str]


def pods(resource_type: str, props: Mapping) -> Iterator[tuple[str, Mapping, list[tuple[str, Mapping]]]]:
    """``(label, pod spec, [(container label, container)])`` for each pod template of the object."""
    label = rh.object_label(props, resource_type)
    for where, spec in rh.pod_specs(resource_type, props):
        containers = [(rh.container_label(label, where, field, c), c) for field, c in rh.raw_containers(spec)]
        containers += [(f"{label}, ephemeral container {c.get('name', '')}", rh.mapping(c))
                       for c in rh.sequence(spec.get("ephemeralContainers"))]
        yield (f"{label}, {where}" if where else label), spec, containers


def _sc(value: Any) -> Mapping:
    return rh.mapping(rh.mapping(value).get("securityContext"))


def _caps(container: Mapping) -> tuple[list[str], list[str]]:
    caps = rh.mapping(_sc(container).get("capabilities"))
    return [str(c) for c in rh.sequence(caps.get("add"))], [str(c) for c in rh.sequence(caps.get("drop"))]


def shown(value: Any) -> str:
    return "unset" if value is None else str(value).lower() if isinstance(value, bool) else repr(value)


def baseline(pod: str, spec: Mapping, containers: list[tuple[str, Mapping]]) -> list[Check]:
    """What the Baseline profile refuses: host namespaces, hostPath volumes, privileged
    containers, capabilities beyond the baseline set, host ports, an Unconfined seccomp or
    AppArmor profile, SELinux users, roles or types outside the list, an unmasked /proc,
    unsafe sysctls, Windows host processes."""
    out: list[Check] = []
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            out.append((pod, f"{field} is true (the pod shares the node's namespace)", f"remove {field}"))
    for v in rh.sequence(spec.get("volumes")):
        if "hostPath" in rh.mapping(v):
            out.append((pod, f"volume {rh.mapping(v).get('name', '')} is a hostPath (the node's filesystem)",
                        "use a persistentVolumeClaim, configMap, secret or emptyDir volume"))
    psc = _sc(spec)
    for s in rh.sequence(psc.get("sysctls")):
        name = str(rh.mapping(s).get("name", ""))
        if name not in SAFE_SYSCTLS:
            out.append((pod, f"sysctl {name} is not in the safe set", "remove the sysctl"))
    out += _contexts(pod, psc)
    for where, c in containers:
        sc = _sc(c)
        if sc.get("privileged") is True:
            out.append((where, "privileged is true (full access to the node)", "remove securityContext.privileged"))
        added, _ = _caps(c)
        extra = sorted(set(added) - BASELINE_CAPABILITIES)
        if extra:
            out.append((where, f"adds capabilities {', '.join(extra)}", "remove them from securityContext.capabilities.add"))
        if sc.get("procMount") not in (None, "Default"):
            out.append((where, f"procMount is {sc.get('procMount')}", "remove securityContext.procMount"))
        for p in rh.sequence(c.get("ports")):
            if rh.whole(rh.mapping(p).get("hostPort")):
                out.append((where, f"hostPort {rh.whole(rh.mapping(p).get('hostPort'))} binds the node's port",
                            "remove hostPort; reach the pod through a Service"))
        out += _contexts(where, sc)
    return out


def _contexts(where: str, sc: Mapping) -> list[Check]:
    out: list[Check] = []
    if rh.mapping(sc.get("seccompProfile")).get("type") == "Unconfined":
        out.append((where, "seccompProfile is Unconfined", "set seccompProfile.type: RuntimeDefault"))
    if rh.mapping(sc.get("appArmorProfile")).get("type") == "Unconfined":
        out.append((where, "appArmorProfile is Unconfined", "remove appArmorProfile or set it to RuntimeDefault"))
    se = rh.mapping(sc.get("seLinuxOptions"))
    if str(se.get("type", "")) not in SELINUX_TYPES or se.get("user") or se.get("role"):
        out.append((where, f"seLinuxOptions {dict(se)} set a user, role or type outside the allowed list",
                    "remove seLinuxOptions (or use type container_t)"))
    if rh.mapping(sc.get("windowsOptions")).get("hostProcess") is True:
        out.append((where, "windowsOptions.hostProcess is true", "remove windowsOptions.hostProcess"))
    return out


def restricted(pod: str, spec: Mapping, containers: list[tuple[str, Mapping]]) -> list[Check]:
    """What the Restricted profile adds to Baseline, but running as non-root (policy
    ``pod-run-as-non-root``): volume types, ``allowPrivilegeEscalation: false``, a
    RuntimeDefault or Localhost seccomp profile, every capability dropped (only
    NET_BIND_SERVICE added back)."""
    out: list[Check] = []
    for v in rh.sequence(spec.get("volumes")):
        v = rh.mapping(v)
        kinds = sorted(set(v) - {"name"})
        if kinds and not set(kinds) <= RESTRICTED_VOLUMES:
            out.append((pod, f"volume {v.get('name', '')} is of type {', '.join(kinds)}",
                        f"use one of {', '.join(sorted(RESTRICTED_VOLUMES))}"))
    pod_seccomp = rh.mapping(_sc(spec).get("seccompProfile")).get("type")
    for where, c in containers:
        sc = _sc(c)
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append((where, f"allowPrivilegeEscalation is {shown(sc.get('allowPrivilegeEscalation'))}, not false",
                        "set securityContext.allowPrivilegeEscalation: false on the container"))
        seccomp = rh.mapping(sc.get("seccompProfile")).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append((where, f"seccompProfile is {shown(seccomp)}, not RuntimeDefault or Localhost",
                        "set securityContext.seccompProfile.type: RuntimeDefault on the pod"))
        added, dropped = _caps(c)
        if "ALL" not in dropped:
            out.append((where, f"drops {', '.join(dropped) or 'no'} capabilities, not ALL",
                        "set securityContext.capabilities.drop: [ALL] on the container"))
        extra = sorted(set(added) - RESTRICTED_ADD)
        if extra:
            out.append((where, f"adds capabilities {', '.join(extra)}", "add back NET_BIND_SERVICE at most"))
    return out


def root_containers(spec: Mapping, containers: list[tuple[str, Mapping]]) -> list[Check]:
    """Containers that may run as root: ``runAsNonRoot`` not true (container, else pod) or
    ``runAsUser: 0`` (Restricted: "Running as Non-root", "Running as Non-root user")."""
    psc = _sc(spec)
    out: list[Check] = []
    for where, c in containers:
        sc = _sc(c)
        non_root = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        user = rh.whole(sc.get("runAsUser", psc.get("runAsUser")))
        if user == 0:
            out.append((where, "runAsUser is 0 (root)", "set runAsUser to a non-zero UID the image allows"))
        elif non_root is not True:
            out.append((where, f"runAsNonRoot is {shown(non_root)}, so it runs as the image's user (root unless the "
                        "image sets USER)", "set securityContext.runAsNonRoot: true and runAsUser: <uid> the image allows"))
    return out


def report(args: Any, checks: list[Check], source: str, report_violation: Any, stack_fix: str | None = None) -> None:
    """Report each check as one :class:`core.problems.Finding` in the pack's message form
    (:func:`policylib.terms.message`: the stack-file fix for objects the program made).

    Only where the inventory sets ``house_conventions`` (the user's cluster hardens every pod,
    issue 9): elsewhere the namespace's Pod Security admission, not this pack, says which
    profile a pod must meet, and a public manifest without these fields is not wrong for its
    cluster (issue 12: the team's rules do not block other teams' YAML)."""
    from core.problems import Finding
    from policylib.stackconfig import house_conventions
    from policylib.terms import message

    if not house_conventions():
        return

    annotations = rh.mapping(rh.mapping(args.props.get("metadata")).get("annotations"))
    for where, wrong, fix in checks:
        report_violation(message(annotations, Finding(where, wrong, fix, source, stack_fix)), args.urn)
