"""What an update costs while it runs, per object: the model servers that restart, how long each
is down, what is deleted or replaced, and the deletions to refuse. One model for the offline
``--base`` diff (:func:`tools.offline.treediff.diff_trees`) and the real CLI's plan (:mod:`tools.plan`).

A server restarts when its pods are replaced:

- a Deployment, StatefulSet or DaemonSet whose ``spec.template`` changes (the controller rolls
  every pod; ``metadata`` of the object itself does not reach its pods);
- an InferenceService whose change KServe carries into the predictor's pod template. KServe's
  predictor reconciler (kserve/kserve ``aaac4e2``,
  ``pkg/controller/v1beta1/inferenceservice/components/predictor.go`` ``buildPredictorResources``
  and ``buildObjectMeta``; ``reconcilers/deployment/deployment_reconciler.go``
  ``createRawDefaultDeployment``, whose ``Template.ObjectMeta`` is that object meta) builds the
  pod template from ``spec.predictor``'s pod spec, the union of the InferenceService's own
  ``metadata.labels`` and ``spec.predictor.labels``, and of its ``metadata.annotations`` (less
  :data:`KSERVE_NOT_COPIED`) and ``spec.predictor.annotations``. So an argument, an env value, a
  label or ANY annotation of the InferenceService (``pulumi.com/patchForce`` and
  ``pulumi.com/waitFor`` included: kserve #2743, #3710) rolls the predictor;
  :data:`PREDICTOR_NOT_TEMPLATE` fields (replicas, autoscaling, the rollout strategy) do not;
- any replacement (delete and re-create) of a running workload.

How long it is down: a Recreate rollout (every GPU workload here: the node is full) stops the old
pod before the new one starts, so the server answers nothing for its declared cold start
(``llm-serving.riotpiao.com/cold-start-seconds``); a RollingUpdate with surge keeps the old pod
serving until the new one is Ready (no outage, if the node has room: the peak table says).

A Secret's new value reaches no running pod (environment variables are read at start): the cost
says so; nothing restarts. A Service port change restarts nothing either.

A workload scaled to 0 replicas (parked) ``stops``: in place, yet no longer "update in place".
What the update leaves without a server is stated by :func:`outages` (a server at 0 replicas, a
Service without a running backend, with the clients that lose it), and what the engine refuses
by :func:`protected_deletion` (an object ``facts.PROTECTED_COMPONENTS`` made, with the way
through: ``llm-serving:retire``, then ``pulumi state unprotect`` with its URN, :func:`object_urn`).

Plain Python: :func:`object_cost` takes the two objects and the changed field paths; the two
paths compute those with the same field diff.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.base import facts
from core.base.stackkeys import PROJECT
from core.judging.problems import Finding
from core.k8s.manifests import service, type_token, workload

#: InferenceService annotations KServe does not copy to the predictor (``constants.go``
#: ``ServiceAnnotationDisallowedList``, kserve ``aaac4e2``; a cluster may add to it in the
#: ``inferenceservice-config`` ConfigMap's ``serviceAnnotationDisallowedList``).
KSERVE_NOT_COPIED = frozenset({
    "autoscaling.knative.dev/min-scale", "autoscaling.knative.dev/max-scale",
    "internal.serving.kserve.io/storage-initializer-sourceuri", "kubectl.kubernetes.io/last-applied-configuration",
    "modelFormat",
})
#: ``spec.predictor`` fields that configure KServe (the Deployment's replicas and strategy, the
#: autoscaler), not the predictor's pod template.
PREDICTOR_NOT_TEMPLATE = (
    "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric", "scaleMetricType", "autoScaling",
    "deploymentStrategy", "canaryTrafficPercent", "containerConcurrency", "timeout",
)
#: Kinds whose deletion is refused unless the stack file retires them (``llm-serving:retire``).
GUARDED_KINDS = ("Deployment", "StatefulSet", "InferenceService", "Service", "NetworkPolicy")
#: The ``llm-serving:retire`` section that names a deleted object of each kind (the rest: ``workloads``).
RETIRE_SECTION = {"Service": "services", "NetworkPolicy": "network_policies"}
SOURCE = ("kserve predictor.go buildObjectMeta and deployment_reconciler.go createRawDefaultDeployment (kserve #2743, "
          "#3710); seed 002 reasoning.yaml (Recreate, a 600 s cold start)")
RETIRE_SOURCE = ("Pulumi deletes at the end of an update what the program no longer registers; coder-service.yaml "
                 "(\"Do not delete and recreate this Service\")")


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")


def _kind(obj: Mapping[str, Any]) -> str:
    return str(obj.get("kind", ""))


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def restart_causes(obj: Mapping[str, Any], paths: Iterable[str]) -> list[str]:
    """The changed field paths of ``obj`` (an update's new side) that replace its pods (see the
    module docstring): ``[]`` when none does. ``metadata.annotations.<key>`` names one annotation."""
    kind = _kind(obj)
    out: list[str] = []
    for p in paths:
        if kind in ("Deployment", "StatefulSet", "DaemonSet"):
            if _under(p, "spec.template"):
                out.append(p)
        elif kind == "InferenceService":
            if _under(p, "spec.predictor"):
                if not any(_under(p, f"spec.predictor.{f}") for f in PREDICTOR_NOT_TEMPLATE):
                    out.append(p)
            elif _under(p, "metadata.labels"):
                out.append(p)
            elif _under(p, "metadata.annotations"):
                key = p[len("metadata.annotations."):]
                if key and key not in KSERVE_NOT_COPIED:
                    out.append(p)
    return out


@dataclass(frozen=True)
class ServerCost:
    """One model server the update stops: ``server`` (the workload's name), ``effect``
    (``restarts``, ``is replaced``, ``is deleted``, ``stops``: scaled to 0 replicas), its ``node`` and ``cards``, ``down_seconds``
    (its declared cold start under Recreate; 0 under a RollingUpdate with surge; None when it
    declares none) and ``why`` (the change that causes it)."""

    server: str
    effect: str
    node: str | None
    cards: int
    down_seconds: int | None
    why: str

    def line(self) -> str:
        if self.effect == "is deleted":
            down = "down for good (nothing serves it after the update)"
        elif self.effect == "stops":
            down = "down until it is scaled up again (0 replicas after the update)"
        elif self.down_seconds is None:
            down = "down until its new pod is Ready (it declares no cold start)"
        elif self.down_seconds == 0:
            down = "no outage (a RollingUpdate: the old pod serves until the new one is Ready)"
        else:
            down = (f"down about {self.down_seconds} s (Recreate: the old pod stops first, the new one needs its declared "
                    "cold start)")
        where = f" on {self.node}" if self.node else ""
        return f"{self.server} {self.effect} ({self.cards} card(s){where}): {down}; cause: {self.why}"


@dataclass(frozen=True)
class ObjectCost:
    """What one object's change costs: the servers it stops (:class:`ServerCost`) and notes
    (a Secret's value the running pods do not see)."""

    servers: tuple[ServerCost, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def restarts(self) -> bool:
        return bool(self.servers)

    def lines(self) -> list[str]:
        return [f"cost: {s.line()}" for s in self.servers] + [f"cost: {n}" for n in self.notes]


def _view(obj: Mapping[str, Any]):
    return workload(type_token(str(obj.get("apiVersion")), _kind(obj)), obj)


def _server(obj: Mapping[str, Any], effect: str, why: str) -> ServerCost | None:
    view = _view(obj)
    if view is None or not view.running:
        return None
    down = 0 if view.max_surge > 0 and effect == "restarts" else view.cold_start_seconds
    return ServerCost(view.name, effect, view.node, view.cards_per_pod * view.replicas, down, why)


def _why(obj: Mapping[str, Any], causes: list[str]) -> str:
    shown = ", ".join(causes[:3]) + (f" and {len(causes) - 3} more" if len(causes) > 3 else "")
    if _kind(obj) == "InferenceService":
        return f"{shown} changes, which KServe copies into the predictor's pod template"
    return f"{shown} changes the pod template"


def object_cost(action: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None,
                paths: Iterable[str] = (), protected: bool | None = None) -> ObjectCost:
    """The cost of one object's change. ``action``: ``add``, ``update``, ``replace`` or
    ``remove``; ``old`` / ``new`` the object before and after (None when absent); ``paths`` the
    changed field paths of an update or replacement; ``protected``: the state's protect flag of
    the old object (the real plan knows it; None: a protected component made it,
    :func:`protected_component`, as offline)."""
    paths = list(paths)
    if action in ("update", "replace") and new is not None and _kind(new) == "Secret":
        # pulumi-kubernetes 4.x replaces a Secret whose data changes (``enableSecretMutable`` off,
        # its default); either way the running pods keep the values they started with.
        return ObjectCost(notes=("a Secret's new value reaches no running pod (environment variables are read at start); "
                                 "it takes effect when the pods reading it next restart",))
    if action == "remove" and old is not None:
        s = _server(old, "is deleted", "the update removes it")
        guarded = protected if protected is not None else protected_component(old) is not None
        notes = (PROTECTED_NOTE,) if guarded else ()
        return ObjectCost((s,) if s else (), notes)
    if action == "replace" and old is not None:
        s = _server(old, "is replaced", "the provider deletes and re-creates it")
        return ObjectCost((s,) if s else ())
    if action == "update" and new is not None and old is not None:
        before, after = _view(old), _view(new)
        if before is not None and before.running and (after is None or not after.running):
            s = _server(old, "stops", f"its replicas go from {before.replicas} to 0")
            return ObjectCost((s,) if s else ())
        causes = restart_causes(new, paths)
        if causes:
            s = _server(old, "restarts", _why(new, causes))
            if s is not None:
                return ObjectCost((s,))
    return ObjectCost()


#: The cost line of a protected object's deletion (the way through follows the diff).
PROTECTED_NOTE = ("protected: pulumi up refuses this delete while the stack's state marks it protected; the way "
                  "through, in order, follows (BEFORE THE DEPLOY offline, REFUSED on the real plan)")


def label(action: str, cost: ObjectCost) -> str:
    """How a diff names an object's change: ``add``, ``remove`` (``remove, PROTECTED`` for a protected
    object), ``REPLACE``, ``update in place``, or ``update, RESTARTS <server>`` (``update, STOPS
    <server>`` when it goes to 0 replicas) when the update stops a server ("update in place" never does)."""
    if action == "update" and cost.restarts:
        verb = "STOPS" if all(s.effect == "stops" for s in cost.servers) else "RESTARTS"
        return f"update, {verb} " + ", ".join(s.server for s in cost.servers)
    if action == "remove" and PROTECTED_NOTE in cost.notes:
        return "remove, PROTECTED"
    return {"add": "add", "remove": "remove", "update": "update in place", "replace": "REPLACE"}[action]


def summary(costs: Iterable[ObjectCost]) -> list[str]:
    """One line for the whole update: the servers it stops and the longest outage, or that it
    restarts none."""
    servers = [s for c in costs for s in c.servers]
    if not servers:
        return ["update cost: no model server restarts"]
    parts = []
    for s in servers:
        down = "for good" if s.effect == "is deleted" else "until scaled up again" if s.effect == "stops" else (
            f"down about {s.down_seconds} s" if s.down_seconds else "no outage" if s.down_seconds == 0 else "down until Ready")
        parts.append(f"{s.server} {s.effect} ({down})")
    return [f"update cost: {len(servers)} model server(s) stop: {'; '.join(parts)}"]


@dataclass(frozen=True)
class Retired:
    """What the stack file's ``llm-serving:retire`` says an update deletes on purpose: workload
    names (a Deployment, StatefulSet or InferenceService of that name), Service names (a
    workload and a Service may share a name: prod's clef-serve) and NetworkPolicy names."""

    workloads: frozenset[str] = frozenset()
    services: frozenset[str] = frozenset()
    network_policies: frozenset[str] = frozenset()

    def covers(self, obj: Mapping[str, Any]) -> bool:
        return _name(obj) in getattr(self, RETIRE_SECTION.get(_kind(obj), "workloads"))


def retired(raw: Any) -> Retired:
    """The :class:`Retired` of a ``llm-serving:retire`` value (``{workloads: [...], services:
    [...]}``; empty when unset or malformed: the loader refuses that form)."""
    if not isinstance(raw, Mapping):
        return Retired()

    def names(key: str) -> frozenset[str]:
        value = raw.get(key)
        return frozenset(str(n) for n in value) if isinstance(value, list) else frozenset()

    return Retired(names("workloads"), names("services"), names("network_policies"))


def unintended_deletions(deleted: Iterable[Mapping[str, Any]], retire: Retired) -> list[str]:
    """One message per deleted workload, Service or NetworkPolicy (:data:`GUARDED_KINDS`) that ``llm-serving:retire``
    does not list: the refusal both paths print."""
    out: list[str] = []
    for obj in deleted:
        kind, name = _kind(obj), _name(obj)
        if kind not in GUARDED_KINDS or retire.covers(obj):
            continue
        meta = obj.get("metadata") or {}
        ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
        section = RETIRE_SECTION.get(kind, "workloads")
        out.append(Finding(
            f"{kind} {ns}{name}",
            "the update deletes it, and the stack file does not say that is intended (a workload or Service that "
            "drops out of the stack file, e.g. under a misspelt key, is deleted from the cluster by pulumi up)",
            f"if it should go, add it to the stack file: llm-serving:retire: {{{section}: [{name}]}} (remove the entry "
            "after the update); otherwise put it back in the stack file",
            RETIRE_SOURCE).render())
    return out


def is_guarded(obj: Mapping[str, Any]) -> bool:
    """True for a workload or Service object (:data:`GUARDED_KINDS`)."""
    return _kind(obj) in GUARDED_KINDS


# --- what the update leaves without a server -------------------------------------------------------


def _ref(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta['namespace']}/{_name(obj)}" if meta.get("namespace") else _name(obj)


def _running_backends(svc_obj: Mapping[str, Any], objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """Names of the running workloads of ``objects`` whose pods ``svc_obj``'s selector matches."""
    svc = service(type_token(str(svc_obj.get("apiVersion")), _kind(svc_obj)), svc_obj)
    if svc is None:
        return []
    out = []
    for obj in objects:
        view = _view(obj)
        if view is not None and view.running and view.namespace == svc.namespace and view.selected_by(svc.selector):
            out.append(view.name)
    return out


def _clients(svc_obj: Mapping[str, Any]) -> str:
    svc = service(type_token(str(svc_obj.get("apiVersion")), _kind(svc_obj)), svc_obj)
    clients = svc.clients if svc is not None else ()
    if not clients:
        return "it declares no clients"
    return "clients that lose it: " + ", ".join(f"{c.name} (namespace {c.namespace}, port {c.port})" for c in clients)


def outages(old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One ``OUTAGE:`` line per model server the update leaves at 0 replicas (scaled down, or
    deleted while it was a Service's last backend) and per Service it leaves without a running backend (deleted, or its selector matches
    no running pod), naming the Service's declared clients (``facts.CLIENTS_ANNOTATION``, the stack
    file's ``llm-serving:services.<name>.clients``) that lose it. ``old`` / ``new``: render path ->
    object before and after the update. ``[]`` when every Service that answered still does."""
    new_by_ref = {(_kind(o), _ref(o)): o for o in new.values()}
    lost: dict[str, list[str]] = {}  # old Service ref -> what it loses
    for obj in old.values():
        if _kind(obj) != "Service" or not _running_backends(obj, old.values()):
            continue
        after = new_by_ref.get(("Service", _ref(obj)))
        if after is None:
            lost[_ref(obj)] = ["is deleted", _clients(obj)]
        elif not _running_backends(after, new.values()):
            lost[_ref(obj)] = ["is left without a running backend", _clients(after)]
    lines: list[str] = []
    told: set[str] = set()
    for obj in old.values():
        before = _view(obj)
        if before is None or not before.running:
            continue
        after_obj = new_by_ref.get((_kind(obj), _ref(obj)))
        after = _view(after_obj) if after_obj is not None else None
        if after is not None and after.running:
            continue
        how = "is deleted" if after_obj is None else f"goes from {before.replicas} to 0 replicas"
        services = [ref for ref, svc in ((_ref(o), o) for o in old.values() if _kind(o) == "Service")
                    if ref in lost and before.name in _running_backends(svc, [obj])]
        if services:
            told.update(services)
            what = "; ".join(f"Service {ref} {lost[ref][0]}: {lost[ref][1]}" for ref in services)
        elif after_obj is None:
            continue  # deleted, its Services served by another workload (a rename): its cost line says it
        else:
            what = "no Service of the stack loses its last backend by it"
        lines.append(f"OUTAGE: model server {before.name} {how}: {what}")
    lines += [f"OUTAGE: Service {ref} {why}: {clients}" for ref, (why, clients) in lost.items() if ref not in told]
    return lines


# --- what the engine refuses: protected objects ------------------------------------------------------

PROTECT_SOURCE = ("Pulumi's engine refuses to delete or replace a resource its state marks protected (the pinned pulumi CLI, pyproject.toml: "
                  "\"... because it is protected. To unprotect the resource, either remove the `protect` flag ... or use "
                  "the command: `pulumi state unprotect`\"); coder-service.yaml")


def protected_component(obj: Mapping[str, Any]) -> str | None:
    """The component class (``facts.PROTECTED_COMPONENTS``) that created ``obj`` with ``protect``,
    read from its ``facts.COMPONENT_ANNOTATION``; None for an object no protected component made."""
    component = str(((obj.get("metadata") or {}).get("annotations") or {}).get(facts.COMPONENT_ANNOTATION, ""))
    cls = component.split("/", 1)[0]
    return cls if cls in facts.PROTECTED_COMPONENTS else None


def object_urn(obj: Mapping[str, Any], stack: str, project: str = PROJECT) -> str:
    """The URN Pulumi gives the Kubernetes object a component made: ``urn:pulumi:<stack>::<project>::
    <project>:index:<Class>$kubernetes:<group or core>/<version>:<Kind>::<name>`` (the child is named
    like its component; the engine joins the parent's type and the child's with ``$``)."""
    component = str(((obj.get("metadata") or {}).get("annotations") or {}).get(facts.COMPONENT_ANNOTATION, ""))
    cls = component.split("/", 1)[0]
    api = str(obj.get("apiVersion", ""))
    group_version = api if "/" in api else f"core/{api}"
    child = f"kubernetes:{group_version}:{_kind(obj)}"
    chain = f"{project}:index:{cls}${child}" if cls else child
    return f"urn:pulumi:{stack}::{project}::{chain}::{_name(obj)}"


def unprotect_command(urn: str) -> str:
    """The state command that clears ``urn``'s protect flag (the stack is the URN's own)."""
    stack = urn.split("::", 1)[0].rsplit(":", 1)[-1] if urn.startswith("urn:pulumi:") else ""
    return f"pulumi state unprotect --stack {stack} --yes '{urn}'"


def protected_deletion(obj: Mapping[str, Any], urn: str, retire: Retired) -> str:
    """What the engine does with the deletion of a protected object, and the way through in order
    (the offline diff shows it; :mod:`tools.plan` refuses it while the state still marks it
    protected): list it under ``llm-serving:retire``, clear the flag with the state command, then
    ``pulumi up`` deletes it."""
    section = "services" if _kind(obj) == "Service" else "workloads"
    listed = "(the stack file lists it)" if retire.covers(obj) else "(missing: add it)"
    return Finding(
        f"{_kind(obj)} {_ref(obj)}",
        "pulumi up refuses to delete it while the stack's state marks it protected (the program creates it with "
        "protect): the update fails there, and what it did before (other deletions among them) stays done",
        f"in order: 1. list it under llm-serving:retire: {{{section}: [{_name(obj)}]}} {listed}; 2. before the deploy, "
        f"by someone with the stack's backend: `{unprotect_command(urn)}`; 3. pulumi up deletes it; 4. remove the "
        "retire entry in the next change",
        PROTECT_SOURCE).render()
