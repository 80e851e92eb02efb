"""The pod walk of the pack's pod security policies (``pod-security-baseline``,
``pod-security-restricted``, ``pod-run-as-non-root``, ``no-service-account-token``,
``model-mounts-read-only``): which pods and containers an object runs, and which field of each the
rulebook's judges (:mod:`core.rulebook.pod_security`, one registry record a Pod Security Standards
check) are given. Each walk returns ``(where, breach)`` pairs: ``where`` names the container (or
the pod). Pods of every kind that runs containers are read
(:func:`policylib.resource_helpers.pod_specs`: Pod, Deployment, StatefulSet, DaemonSet,
ReplicaSet, Job, CronJob, the InferenceService's components).

Pure functions; no Pulumi program code. The policies report only on a cluster whose inventory
sets ``house_conventions`` (:func:`report_breaches`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from core.base import facts
from core.catalog.images import image_user
from core.judging.registry import Breach
from core.rulebook import pod_security as ps
from policylib import resource_helpers as rh

Check = tuple[str, Breach]
#: The rulebook's value shown in a message (``unset``, ``true``).
shown = ps.shown


def _found(*items: tuple[str, Breach | None]) -> list[Check]:
    return [(where, b) for where, b in items if b is not None]


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


def baseline(pod: str, spec: Mapping, containers: list[tuple[str, Mapping]]) -> list[Check]:
    """What the Baseline profile refuses: host namespaces, hostPath volumes, privileged
    containers, capabilities beyond the baseline set, host ports, an Unconfined seccomp or
    AppArmor profile, SELinux users, roles or types outside the list, an unmasked /proc,
    unsafe sysctls, Windows host processes."""
    out = _found(*((pod, ps.host_access(f, spec.get(f), "the pod shares the node's namespace")) for f in ("hostNetwork", "hostPID", "hostIPC")))
    out += _found(*((pod, ps.host_path(rh.mapping(v))) for v in rh.sequence(spec.get("volumes"))))
    psc = _sc(spec)
    out += _found(*((pod, ps.sysctl(str(rh.mapping(s).get("name", "")))) for s in rh.sequence(psc.get("sysctls"))))
    out += _contexts(pod, psc)
    for where, c in containers:
        sc = _sc(c)
        out += _found((where, ps.host_access("privileged", sc.get("privileged"), "full access to the node",
                                             "securityContext.")), (where, ps.baseline_capabilities(_caps(c)[0])),
                      (where, ps.proc_mount(sc.get("procMount"))),
                      *((where, ps.host_port(rh.whole(rh.mapping(p).get("hostPort")))) for p in rh.sequence(c.get("ports"))))
        out += _contexts(where, sc)
    return out


def _contexts(where: str, sc: Mapping) -> list[Check]:
    return _found(*((where, ps.confined(p, rh.mapping(sc.get(p)).get("type"))) for p in ("seccompProfile", "appArmorProfile")),
                  (where, ps.selinux(rh.mapping(sc.get("seLinuxOptions")))),
                  (where, ps.host_access("windowsOptions.hostProcess", rh.mapping(sc.get("windowsOptions")).get("hostProcess"))))


def restricted(pod: str, spec: Mapping, containers: list[tuple[str, Mapping]]) -> list[Check]:
    """What the Restricted profile adds to Baseline, but running as non-root (policy
    ``pod-run-as-non-root``): volume types, ``allowPrivilegeEscalation: false``, a
    RuntimeDefault or Localhost seccomp profile, every capability dropped (only
    NET_BIND_SERVICE added back)."""
    out = _found(*((pod, ps.volume_types(str(rh.mapping(v).get("name", "")), sorted(set(rh.mapping(v)) - {"name"})))
                   for v in rh.sequence(spec.get("volumes"))))
    pod_seccomp = rh.mapping(_sc(spec).get("seccompProfile")).get("type")
    for where, c in containers:
        sc = _sc(c)
        added, dropped = _caps(c)
        out += _found((where, ps.required("allowPrivilegeEscalation", ps.ALLOW_ESCALATION, sc.get("allowPrivilegeEscalation"),
                                          (False,), "container")),
                      (where, ps.required("seccompProfile", ps.SECCOMP, rh.mapping(sc.get("seccompProfile")).get("type")
                                          or pod_seccomp, ("RuntimeDefault", "Localhost"), "pod")),
                      (where, ps.drops_all(dropped)), (where, ps.restricted_capabilities(added)))
    return out


def root_containers(spec: Mapping, containers: list[tuple[str, Mapping]]) -> list[Check]:
    """Containers that may run as root: ``runAsNonRoot`` not true (container, else pod) or
    ``runAsUser: 0`` (Restricted: "Running as Non-root", "Running as Non-root user")."""
    psc = _sc(spec)
    return _found(*((where, ps.runs_as_non_root(_sc(c).get("runAsNonRoot", psc.get("runAsNonRoot")),
                                                rh.whole(_sc(c).get("runAsUser", psc.get("runAsUser"))),
                                                _image_user(c)))
                    for where, c in containers))


def _image_user(container: Mapping) -> str | None:
    """The user the container's image runs as, from the image catalog (None: not known)."""
    known = image_user(str(container.get("image") or ""))
    return known.user if known else None


def token_mounts(pod: str, spec: Mapping) -> list[Check]:
    """The pod, when it gets a service account token (``automountServiceAccountToken`` not false)."""
    return _found((pod, ps.no_token(spec.get("automountServiceAccountToken"))))


def writable_model_mounts(spec: Mapping, containers: list[tuple[str, Mapping]]) -> list[Check]:
    """Containers that mount the models PVC (claim ``facts.MODELS_PVC``) or ``facts.MODELS_MOUNT_PATH`` writable."""
    models = {str(rh.mapping(v).get("name")) for v in rh.sequence(spec.get("volumes"))
              if rh.mapping(rh.mapping(v).get("persistentVolumeClaim")).get("claimName") == facts.MODELS_PVC}
    return _found(*((where, ps.models_read_only(str(m.get("name")), str(m.get("mountPath", "")), m.get("readOnly"),
                                                str(m.get("name")) in models))
                    for where, c in containers for m in map(rh.mapping, rh.sequence(c.get("volumeMounts")))))


def secret_env_values(containers: list[tuple[str, Mapping]]) -> list[Check]:
    """Containers whose env writes a credential as a literal ``value`` (``valueFrom`` is not a literal)."""
    return _found(*((where, ps.env_var_secret(str(e.get("name", "")), None if "valueFrom" in e else e.get("value")))
                    for where, c in containers for e in map(rh.mapping, rh.sequence(c.get("env")))))


def report_breaches(args: Any, found: list[Check], report_violation: Any) -> None:
    """Report each ``(where, breach)`` as the breach's finding about ``where``, in the pack's message
    form (:func:`core.judging.terms.message`: the stack-file fix for objects the program made).

    Only where the inventory sets ``house_conventions`` (the user's cluster hardens every pod): elsewhere the namespace's Pod Security admission, not this pack, says which
    profile a pod must meet, and a public manifest without these fields is not wrong for its
    cluster (the team's rules do not block other teams' YAML)."""
    from core.judging.terms import message
    from policylib.stackconfig import house_conventions

    if not found or not house_conventions():
        return
    annotations = rh.mapping(rh.mapping(args.props.get("metadata")).get("annotations"))
    for where, breach in found:
        report_violation(message(annotations, breach.finding(where)), args.urn)
