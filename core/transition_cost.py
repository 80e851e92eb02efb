"""What an update costs while it runs, per object: the model servers that restart, how long each
is down, what is deleted or replaced, and the deletions to refuse. One model for the offline
``--base`` diff (:func:`tools.offline.render.diff_trees`) and the real CLI's plan (:mod:`tools.plan`).

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

Plain Python: :func:`object_cost` takes the two objects and the changed field paths; the two
paths compute those with the same field diff.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.manifests import type_token, workload
from core.problems import Finding

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
    (``restarts``, ``is replaced``, ``is deleted``), its ``node`` and ``cards``, ``down_seconds``
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


def _server(obj: Mapping[str, Any], effect: str, why: str) -> ServerCost | None:
    view = workload(type_token(str(obj.get("apiVersion")), _kind(obj)), obj)
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
                paths: Iterable[str] = ()) -> ObjectCost:
    """The cost of one object's change. ``action``: ``add``, ``update``, ``replace`` or
    ``remove``; ``old`` / ``new`` the object before and after (None when absent); ``paths`` the
    changed field paths of an update or replacement."""
    paths = list(paths)
    if action in ("update", "replace") and new is not None and _kind(new) == "Secret":
        # pulumi-kubernetes 4.x replaces a Secret whose data changes (``enableSecretMutable`` off,
        # its default); either way the running pods keep the values they started with.
        return ObjectCost(notes=("a Secret's new value reaches no running pod (environment variables are read at start); "
                                 "it takes effect when the pods reading it next restart",))
    if action == "remove" and old is not None:
        s = _server(old, "is deleted", "the update removes it")
        return ObjectCost((s,) if s else ())
    if action == "replace" and old is not None:
        s = _server(old, "is replaced", "the provider deletes and re-creates it")
        return ObjectCost((s,) if s else ())
    if action == "update" and new is not None and old is not None:
        causes = restart_causes(new, paths)
        if causes:
            s = _server(old, "restarts", _why(new, causes))
            if s is not None:
                return ObjectCost((s,))
    return ObjectCost()


def label(action: str, cost: ObjectCost) -> str:
    """How a diff names an object's change: ``add``, ``remove``, ``REPLACE``, ``update in place``,
    or ``update, RESTARTS <server>`` when the update stops a server ("update in place" never does)."""
    if action == "update" and cost.restarts:
        return "update, RESTARTS " + ", ".join(s.server for s in cost.servers)
    return {"add": "add", "remove": "remove", "update": "update in place", "replace": "REPLACE"}[action]


def summary(costs: Iterable[ObjectCost]) -> list[str]:
    """One line for the whole update: the servers it stops and the longest outage, or that it
    restarts none."""
    servers = [s for c in costs for s in c.servers]
    if not servers:
        return ["update cost: no model server restarts"]
    parts = []
    for s in servers:
        down = "for good" if s.effect == "is deleted" else (
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
