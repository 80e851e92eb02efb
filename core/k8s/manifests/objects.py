"""The objects that select, scale, limit, disrupt or route to a model server, read once into frozen
views: HorizontalPodAutoscaler, KEDA's ScaledObject and AIBrix's PodAutoscaler (:class:`Autoscaler`), PodDisruptionBudget (:class:`DisruptionBudget`),
ResourceQuota (:class:`Quota`), LimitRange (:class:`LimitRange`), Ingress and Gateway API routes
(:class:`Route`, each backend with the timeout that bounds it), the Gateway API inference
extension's InferencePool (:class:`Pool`), and KServe's ServingRuntime (:class:`Runtime`) with the
InferenceServices that name one (:class:`Predictor`). :func:`objects_view` reads them from a stack's resources;
the relations to the workloads they act on (:func:`scaled`, :func:`disrupted`, :func:`pooled`) are
computed here once, for every rule that judges them.

Field semantics are the Kubernetes API's (autoscaling/v2, policy/v1, core/v1,
networking.k8s.io/v1, gateway.networking.k8s.io/v1, inference.networking.x-k8s.io/v1alpha2 and
inference.networking.k8s.io/v1); where a default applies it is named beside the field. Works on plain
values or the pack's proxies (:mod:`core.k8s.manifests.read`). Nothing here reports a violation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from core.k8s.manifests import pods
from core.k8s.manifests.read import as_map, as_seq, quantity, whole, whole_number

#: ingress-nginx's ``proxy-read-timeout`` when no annotation sets it, seconds (ingress-nginx
#: docs, "ConfigMap": proxy-read-timeout "60").
NGINX_DEFAULT_READ_TIMEOUT = 60
#: The Ingress annotation that sets it per Ingress (ingress-nginx annotations).
NGINX_READ_TIMEOUT_ANNOTATION = "nginx.ingress.kubernetes.io/proxy-read-timeout"
#: Gateway API route kinds whose rules carry ``backendRefs`` (gateway.networking.k8s.io).
ROUTE_KINDS = ("HTTPRoute", "GRPCRoute")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def kind_of(resource_type: str, props: Mapping) -> str:
    """The object's kind: ``props.kind``, else the type token's last part."""
    return str(props.get("kind") or resource_type.rsplit(":", 1)[-1])


def duration_seconds(value: Any) -> float | None:
    """A Gateway API duration (``"300s"``, ``"5m"``, ``"1h30m"``, ``"500ms"``; GEP-2257) in seconds;
    None when it is not one. ``"0s"`` is 0 (the route's timeout is disabled)."""
    text = str(value).strip() if value is not None else ""
    if not text or _DURATION.sub("", text):
        return None
    return sum(float(n) * _UNIT[u] for n, u in _DURATION.findall(text))


# --- HorizontalPodAutoscaler --------------------------------------------------------------

@dataclass(frozen=True)
class Autoscaler:
    """A HorizontalPodAutoscaler: its ``scaleTargetRef`` (``target_kind``, ``target_name``), its
    bounds (``minReplicas`` default 1) and the resources whose ``Utilization`` it targets
    (autoscaling/v2 ``metrics[].resource``; autoscaling/v1 ``targetCPUUtilizationPercentage``): the
    HPA computes a ``Resource`` metric's utilization against the requests of every container of the
    pods (pkg/controller/podautoscaler/replica_calculator: "missing request for cpu" otherwise), so
    each must set it; a ``containerResource`` metric is not read."""

    urn: str
    name: str
    namespace: str
    target_kind: str
    target_name: str
    min_replicas: int
    max_replicas: int
    utilization_of: tuple[str, ...]
    #: The autoscaler's kind: ``HorizontalPodAutoscaler``, KEDA's ``ScaledObject``, AIBrix's ``PodAutoscaler``.
    kind: str = "HorizontalPodAutoscaler"
    #: The upper bound as the manifest names it: ``maxReplicas 4``, ``maxReplicaCount 100 (KEDA's default)``.
    bound: str = ""


#: The autoscalers read as one (their scaleTargetRef and bounds): KEDA's ScaledObject (keda.sh/v1alpha1:
#: ``maxReplicaCount`` default 100, ``minReplicaCount`` default 0, scaleTargetRef.kind default Deployment; it
#: drives an HPA it creates) and AIBrix's PodAutoscaler (autoscaling.aibrix.ai/v1alpha1: minReplicas, maxReplicas).
AUTOSCALER_KINDS = ("HorizontalPodAutoscaler", "ScaledObject", "PodAutoscaler")


def autoscaler(props: Mapping, urn: str = "", kind: str = "HorizontalPodAutoscaler") -> Autoscaler:
    """The :class:`Autoscaler` of a HorizontalPodAutoscaler's, ScaledObject's or PodAutoscaler's manifest."""
    meta, spec = as_map(props.get("metadata")), as_map(props.get("spec"))
    ref = as_map(spec.get("scaleTargetRef"))
    name, ns = str(meta.get("name", "")), str(meta.get("namespace", "default"))
    if kind == "ScaledObject":
        top = whole(spec.get("maxReplicaCount"), 100)
        bound = f"maxReplicaCount {top}" + ("" if spec.get("maxReplicaCount") is not None else " (KEDA's default)")
        return Autoscaler(urn, name, ns, str(ref.get("kind") or "Deployment"), str(ref.get("name", "")),
                          whole(spec.get("minReplicaCount"), 0), top, (), kind, bound)
    utilization: list[str] = []
    for m in as_seq(spec.get("metrics")) if kind == "HorizontalPodAutoscaler" else ():
        res = as_map(as_map(m).get("resource"))  # a containerResource metric needs its one container's request only
        if res and str(as_map(res.get("target")).get("type", "")) == "Utilization":
            utilization.append(str(res.get("name", "")))
    if spec.get("targetCPUUtilizationPercentage") is not None:
        utilization.append("cpu")
    top = whole(spec.get("maxReplicas"), 1)
    return Autoscaler(urn, name, ns, str(ref.get("kind", "")), str(ref.get("name", "")), whole(spec.get("minReplicas"), 1),
                      top, tuple(dict.fromkeys(utilization)), kind, f"maxReplicas {top}")


# --- PodDisruptionBudget ------------------------------------------------------------------

@dataclass(frozen=True)
class DisruptionBudget:
    """A PodDisruptionBudget: its label ``selector`` and ``minAvailable`` / ``maxUnavailable`` as written
    (a whole number or a percentage string; policy/v1 allows one of them)."""

    urn: str
    name: str
    namespace: str
    selector: Mapping
    min_available: Any
    max_unavailable: Any

    @property
    def setting(self) -> str:
        """``minAvailable: 1`` / ``maxUnavailable: 0`` as written."""
        field, value = (("minAvailable", self.min_available) if self.min_available is not None
                        else ("maxUnavailable", self.max_unavailable))
        number = whole_number(value)
        return f"{field}: {number if number is not None else value}"

    def allowed_disruptions(self, pods_: int) -> int | None:
        """Evictions the budget allows with ``pods_`` healthy pods, as the disruption controller
        computes it (pkg/controller/disruption: a percentage of minAvailable rounds up, of
        maxUnavailable rounds up too); None when the budget sets neither field or an unreadable one."""
        if self.min_available is not None:
            need = _scaled(self.min_available, pods_)
            return None if need is None else max(0, pods_ - need)
        if self.max_unavailable is not None:
            allowed = _scaled(self.max_unavailable, pods_)
            return None if allowed is None else max(0, min(allowed, pods_))
        return None


def _scaled(value: Any, pods_: int) -> int | None:
    """An IntOrString of a PodDisruptionBudget against ``pods_`` pods (a percentage rounds up)."""
    text = str(value).strip()
    if text.endswith("%") and text[:-1].isdigit():
        return math.ceil(int(text[:-1]) * pods_ / 100)
    return whole_number(value)


def disruption_budget(props: Mapping, urn: str = "") -> DisruptionBudget:
    """The :class:`DisruptionBudget` of a PodDisruptionBudget's manifest."""
    meta, spec = as_map(props.get("metadata")), as_map(props.get("spec"))
    return DisruptionBudget(urn, str(meta.get("name", "")), str(meta.get("namespace", "default")),
                            as_map(spec.get("selector")), spec.get("minAvailable"), spec.get("maxUnavailable"))


# --- ResourceQuota and LimitRange ---------------------------------------------------------

@dataclass(frozen=True)
class Quota:
    """A ResourceQuota's ``spec.hard``: each resource name (``requests.nvidia.com/gpu``,
    ``limits.memory``, ``memory``, ``pods``) with its amount as written and parsed (None: not a quantity)."""

    urn: str
    name: str
    namespace: str
    hard: Mapping[str, str]
    #: The quota sets ``scopes`` or a ``scopeSelector``: it counts only the pods those match (PriorityClass,
    #: BestEffort, Terminating, ...), which the rules do not resolve.
    scoped: bool = False

    def amount(self, resource: str) -> Decimal | None:
        """The hard limit of ``resource`` as a number in base units (None: not set or not a quantity)."""
        return quantity(self.hard.get(resource)) if resource in self.hard else None


def quota(props: Mapping, urn: str = "") -> Quota:
    """The :class:`Quota` of a ResourceQuota's manifest."""
    meta, spec = as_map(props.get("metadata")), as_map(props.get("spec"))
    return Quota(urn, str(meta.get("name", "")), str(meta.get("namespace", "default")),
                 {str(k): str(v) for k, v in as_map(spec.get("hard")).items()},
                 bool(as_seq(spec.get("scopes")) or as_map(spec.get("scopeSelector"))))


@dataclass(frozen=True)
class LimitItem:
    """One ``spec.limits[]`` entry of type Container: ``max``, ``min``, ``default`` (the limit a
    container without one gets) and ``defaultRequest`` (the request it gets; else ``default``), each
    resource name -> amount as written."""

    max: Mapping[str, str]
    min: Mapping[str, str]
    default: Mapping[str, str]
    default_request: Mapping[str, str]


@dataclass(frozen=True)
class LimitRange:
    """A LimitRange's Container items (``type: Container``; Pod and PersistentVolumeClaim items are not read)."""

    urn: str
    name: str
    namespace: str
    items: tuple[LimitItem, ...]


def limit_range(props: Mapping, urn: str = "") -> LimitRange:
    """The :class:`LimitRange` of a LimitRange's manifest."""
    meta, spec = as_map(props.get("metadata")), as_map(props.get("spec"))

    def amounts(item: Mapping, key: str) -> dict[str, str]:
        return {str(k): str(v) for k, v in as_map(item.get(key)).items()}

    items = tuple(LimitItem(amounts(i, "max"), amounts(i, "min"), amounts(i, "default"), amounts(i, "defaultRequest"))
                  for i in (as_map(x) for x in as_seq(spec.get("limits"))) if str(i.get("type", "Container")) == "Container")
    return LimitRange(urn, str(meta.get("name", "")), str(meta.get("namespace", "default")), items)


@dataclass(frozen=True)
class Admitted:
    """A container's resources as the LimitRanger admission plugin leaves them: ``requests`` and
    ``limits`` (resource name -> amount as written), a missing limit filled from ``default`` and a
    missing request from ``defaultRequest`` (else from the limit), and ``defaulted`` naming each
    ``limits.<resource>`` / ``requests.<resource>`` a LimitRange filled in (with its LimitRange)."""

    requests: Mapping[str, str]
    limits: Mapping[str, str]
    defaulted: Mapping[str, str]


def admitted(c: pods.Container, ranges: Iterable[LimitRange]) -> Admitted:
    """The container ``c``'s requests and limits after the namespace's LimitRanges default them
    (k8s.io/kubernetes plugin/pkg/admission/limitranger ``mergeContainerResources``: the first
    LimitRange that sets a default wins; a default request is ``defaultRequest``, else ``default``), after the
    API server's own defaulting (a request the container leaves out is its limit)."""
    requests = {k[len("requests."):]: v for k, v in _resources(c).items() if k.startswith("requests.")}
    limits = {k[len("limits."):]: v for k, v in _resources(c).items() if k.startswith("limits.")}
    for res, amount in limits.items():
        requests.setdefault(res, amount)  # the API server's defaulting, before any admission: a request is its limit
    defaulted: dict[str, str] = {}
    for r in ranges:
        for item in r.items:
            for res, amount in item.default.items():
                if res not in limits:
                    limits[res] = amount
                    defaulted[f"limits.{res}"] = r.name
            for res, amount in {**item.default, **item.default_request}.items():
                if res not in requests:
                    requests[res] = amount
                    defaulted[f"requests.{res}"] = r.name
    return Admitted(requests, limits, defaulted)


def _resources(c: pods.Container) -> dict[str, str]:
    """``requests.<name>`` / ``limits.<name>`` -> amount as written, from the container's resources."""
    out: dict[str, str] = {}
    for field, values in (("requests", c.resource_requests), ("limits", c.resource_limits)):
        for k, v in values.items():
            out[f"{field}.{k}"] = v
    return out


# --- Ingress, HTTPRoute, GRPCRoute --------------------------------------------------------

@dataclass(frozen=True)
class Backend:
    """One backend of a route: a Service (``kind`` ``Service``) or an InferencePool, by ``name`` in
    ``namespace``, at ``port`` (a number) or ``port_name`` (an Ingress may name the Service port);
    ``timeout_seconds``: what bounds a request through it (None: nothing the manifests say; 0:
    disabled) and ``timeout_from``, where that bound is written."""

    kind: str
    name: str
    namespace: str
    port: int | None
    port_name: str | None
    timeout_seconds: float | None
    timeout_from: str
    at: str


@dataclass(frozen=True)
class Route:
    """An Ingress, HTTPRoute or GRPCRoute and its backends."""

    urn: str
    kind: str
    name: str
    namespace: str
    backends: tuple[Backend, ...]


def _ingress_timeout(meta: Mapping, spec: Mapping) -> tuple[float | None, str]:
    """ingress-nginx's read timeout of an Ingress: its annotation, else the controller's default 60 s
    when the Ingress names the nginx class; None for another controller (its default is not known)."""
    ann = as_map(meta.get("annotations"))
    value = ann.get(NGINX_READ_TIMEOUT_ANNOTATION)
    if value is not None and str(value).strip().isdigit():
        return float(str(value).strip()), f"annotation {NGINX_READ_TIMEOUT_ANNOTATION}: \"{value}\""
    cls = str(spec.get("ingressClassName") or ann.get("kubernetes.io/ingress.class") or "")
    if cls == "nginx":
        return float(NGINX_DEFAULT_READ_TIMEOUT), (f"ingress-nginx's default proxy-read-timeout ({NGINX_DEFAULT_READ_TIMEOUT} s; "
                                                   f"no {NGINX_READ_TIMEOUT_ANNOTATION} annotation)")
    return None, ""


def route(resource_type: str, props: Mapping, urn: str = "") -> Route | None:
    """The :class:`Route` of an Ingress, HTTPRoute or GRPCRoute manifest; None for other kinds."""
    kind = kind_of(resource_type, props)
    meta, spec = as_map(props.get("metadata")), as_map(props.get("spec"))
    ns = str(meta.get("namespace", "default"))
    backends: list[Backend] = []
    if kind == "Ingress":
        timeout, source = _ingress_timeout(meta, spec)

        def ingress_backend(b: Mapping, at: str) -> None:
            svc = as_map(b.get("service"))
            if svc:
                port = as_map(svc.get("port"))
                backends.append(Backend("Service", str(svc.get("name", "")), ns, whole_number(port.get("number")),
                                        str(port["name"]) if port.get("name") else None, timeout, source, at))
            elif b.get("serviceName"):  # networking.k8s.io/v1beta1
                p = b.get("servicePort")
                number = whole_number(p)
                backends.append(Backend("Service", str(b["serviceName"]), ns, number,
                                        None if number is not None else str(p), timeout, source, at))

        if spec.get("defaultBackend"):
            ingress_backend(as_map(spec.get("defaultBackend")), "spec.defaultBackend")
        for i, rule in enumerate(as_seq(spec.get("rules"))):
            for j, path in enumerate(as_seq(as_map(as_map(rule).get("http")).get("paths"))):
                ingress_backend(as_map(as_map(path).get("backend")), f"spec.rules[{i}].http.paths[{j}].backend")
        return Route(urn, kind, str(meta.get("name", "")), ns, tuple(backends))
    if kind not in ROUTE_KINDS:
        return None
    for i, rule in enumerate(as_seq(spec.get("rules"))):
        rule = as_map(rule)
        timeouts = as_map(rule.get("timeouts"))
        timeout, source = None, ""
        for key in ("request", "backendRequest"):
            seconds = duration_seconds(timeouts.get(key))
            if seconds is not None and seconds > 0 and (timeout is None or seconds < timeout):
                timeout, source = seconds, f"spec.rules[{i}].timeouts.{key}: {timeouts.get(key)}"
        for j, ref in enumerate(as_seq(rule.get("backendRefs"))):
            ref = as_map(ref)
            backends.append(Backend(str(ref.get("kind") or "Service"), str(ref.get("name", "")),
                                    str(ref.get("namespace") or ns), whole_number(ref.get("port")), None, timeout, source,
                                    f"spec.rules[{i}].backendRefs[{j}]"))
    return Route(urn, kind, str(meta.get("name", "")), ns, tuple(backends))


# --- InferencePool ------------------------------------------------------------------------

@dataclass(frozen=True)
class Pool:
    """An InferencePool: the pods it selects (``selector``: v1alpha2 a label map, v1
    ``matchLabels``) and the ports its endpoint picker sends requests to (v1alpha2
    ``targetPortNumber``, v1 ``targetPorts[].number``)."""

    urn: str
    name: str
    namespace: str
    selector: Mapping[str, str]
    target_ports: tuple[int, ...]
    target_at: str


def pool(props: Mapping, urn: str = "") -> Pool:
    """The :class:`Pool` of an InferencePool manifest (either API version)."""
    meta, spec = as_map(props.get("metadata")), as_map(props.get("spec"))
    sel = as_map(spec.get("selector"))
    labels = as_map(sel.get("matchLabels")) if "matchLabels" in sel else sel
    ports: tuple[int, ...]
    if spec.get("targetPortNumber") is not None:
        ports, at = (whole(spec.get("targetPortNumber"), 0),), "spec.targetPortNumber"
    else:
        ports = tuple(whole(as_map(p).get("number"), 0) for p in as_seq(spec.get("targetPorts")))
        at = "spec.targetPorts"
    return Pool(urn, str(meta.get("name", "")), str(meta.get("namespace", "default")),
                {str(k): str(v) for k, v in labels.items()}, tuple(p for p in ports if p), at)


# --- ServingRuntime and the InferenceServices that name one ------------------------------

@dataclass(frozen=True)
class Runtime:
    """A KServe ServingRuntime (namespaced; ClusterServingRuntimes are the cluster's, not read):
    ``formats``, each ``supportedModelFormats[]`` entry as ``(name, version or None, autoSelect)``."""

    urn: str
    name: str
    namespace: str
    formats: tuple[tuple[str, str | None, bool], ...]
    disabled: bool


def runtime(props: Mapping, urn: str = "") -> Runtime:
    """The :class:`Runtime` of a ServingRuntime manifest."""
    meta, spec = as_map(props.get("metadata")), as_map(props.get("spec"))
    formats = tuple((str(f.get("name", "")), str(f["version"]) if f.get("version") is not None else None,
                     f.get("autoSelect") is True) for f in (as_map(x) for x in as_seq(spec.get("supportedModelFormats"))))
    return Runtime(urn, str(meta.get("name", "")), str(meta.get("namespace", "default")), formats, spec.get("disabled") is True)


@dataclass(frozen=True)
class Predictor:
    """An InferenceService's ``spec.predictor.model``: its ``modelFormat`` (name, version or None) and the
    ``runtime`` it names (None: KServe selects one among those that auto-select the format)."""

    urn: str
    name: str
    namespace: str
    format_name: str
    format_version: str | None
    runtime: str | None
    annotations: Mapping[str, str]


def predictor(props: Mapping, urn: str = "") -> Predictor | None:
    """The :class:`Predictor` of an InferenceService whose predictor uses ``model`` (None otherwise)."""
    meta = as_map(props.get("metadata"))
    model = as_map(as_map(as_map(props.get("spec")).get("predictor")).get("model"))
    if not model:
        return None
    fmt = as_map(model.get("modelFormat"))
    return Predictor(urn, str(meta.get("name", "")), str(meta.get("namespace", "default")), str(fmt.get("name", "")),
                     str(fmt["version"]) if fmt.get("version") is not None else None,
                     str(model["runtime"]) if model.get("runtime") else None,
                     {str(k): str(v) for k, v in as_map(meta.get("annotations")).items()})


def supports(r: Runtime, name: str, version: str | None) -> bool:
    """Whether ``r`` serves model format ``name`` (at ``version``) as KServe matches it (case-insensitive name;
    a version the predictor gives must be the runtime's, or the runtime's unset)."""
    return not r.disabled and any(n.lower() == name.lower() and (version is None or v is None or v == version)
                                  for n, v, _ in r.formats)


# --- all of them, and what they act on ----------------------------------------------------

@dataclass(frozen=True)
class Objects:
    """Every object of a stack that scales, disrupts, limits or routes to pods, by kind."""

    autoscalers: tuple[Autoscaler, ...] = ()
    budgets: tuple[DisruptionBudget, ...] = ()
    quotas: tuple[Quota, ...] = ()
    limit_ranges: tuple[LimitRange, ...] = ()
    routes: tuple[Route, ...] = ()
    pools: tuple[Pool, ...] = ()
    runtimes: tuple[Runtime, ...] = ()
    predictors: tuple[Predictor, ...] = ()

    def limit_ranges_in(self, namespace: str) -> tuple[LimitRange, ...]:
        return tuple(r for r in self.limit_ranges if r.namespace == namespace)


def objects_view(resources: Iterable[Any]) -> Objects:
    """The :class:`Objects` of pulumi-policy ``PolicyResource`` objects (``resource_type``,
    ``props``, ``urn``); other kinds are ignored."""
    out: dict[str, list[Any]] = {k: [] for k in ("autoscalers", "budgets", "quotas", "limit_ranges", "routes", "pools",
                                                  "runtimes", "predictors")}
    for r in resources:
        kind = kind_of(r.resource_type, r.props)
        if kind in AUTOSCALER_KINDS:
            out["autoscalers"].append(autoscaler(r.props, r.urn, kind))
        elif kind == "PodDisruptionBudget":
            out["budgets"].append(disruption_budget(r.props, r.urn))
        elif kind == "ResourceQuota":
            out["quotas"].append(quota(r.props, r.urn))
        elif kind == "LimitRange":
            out["limit_ranges"].append(limit_range(r.props, r.urn))
        elif kind == "InferencePool":
            out["pools"].append(pool(r.props, r.urn))
        elif kind == "ServingRuntime":
            out["runtimes"].append(runtime(r.props, r.urn))
        elif kind == "InferenceService":
            p = predictor(r.props, r.urn)
            if p is not None:
                out["predictors"].append(p)
        else:
            rt = route(r.resource_type, r.props, r.urn)
            if rt is not None:
                out["routes"].append(rt)
    return Objects(**{k: tuple(v) for k, v in out.items()})


def scaled(a: Autoscaler, workloads: Iterable[pods.Workload]) -> tuple[pods.Workload, ...]:
    """The workloads ``a`` scales: its scaleTargetRef's kind and name in its namespace (both views of
    a LeaderWorkerSet; KServe's predictor Deployment is not a workload of the manifests)."""
    return tuple(w for w in workloads if w.namespace == a.namespace and w.kind == a.target_kind and w.name == a.target_name)


def disrupted(b: DisruptionBudget, workloads: Iterable[pods.Workload]) -> tuple[pods.Workload, ...]:
    """The workloads whose pods ``b``'s selector matches, the labels their
    controller adds included (``Workload.matched_by``; an empty selector matches every pod of its namespace)."""
    return tuple(w for w in workloads if w.namespace == b.namespace and w.matched_by(b.selector))


def pooled(p: Pool, workloads: Iterable[pods.Workload]) -> tuple[pods.Workload, ...]:
    """The workloads whose pods ``p``'s selector matches, the labels their
    controller adds included (``Workload.selected_by``; equality selector; empty matches nothing)."""
    return tuple(w for w in workloads if w.namespace == p.namespace and w.selected_by(p.selector))
