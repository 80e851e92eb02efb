"""Services as the manifests describe them: :class:`Service` (selector, ports, declared clients)
and the label selectors Services and NetworkPolicies use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from core.base import facts
from core.k8s.manifests.read import SERVICE_TYPE, as_map, as_seq, whole


@dataclass(frozen=True)
class Client:
    """A declared client of a Service (``facts.CLIENTS_ANNOTATION``)."""

    name: str
    namespace: str
    port: int


@dataclass(frozen=True)
class ServicePort:  # noqa: D101
    name: str
    port: int
    target_port: Any  # int or a named port
    protocol: str


@dataclass(frozen=True)
class Service:  # noqa: D101
    urn: str
    name: str
    namespace: str
    selector: Mapping[str, str]
    ports: tuple[ServicePort, ...]
    annotations: Mapping[str, str]
    clients: tuple[Client, ...]
    clients_error: str | None = None
    #: ``spec.clusterIP`` as written (None when the API server assigns one; ``"None"``: headless).
    cluster_ip: str | None = None

    @property
    def parked_reason(self) -> str | None:
        return self.annotations.get(facts.PARKED_ANNOTATION)


def service(resource_type: str, props: Mapping, urn: str = "") -> Service | None:
    """The :class:`Service` view of a core/v1 Service; None for other types.

    ``clients_error`` is set (and ``clients`` empty) when the clients annotation is not valid JSON
    of the documented shape.
    """
    if resource_type != SERVICE_TYPE:
        return None
    meta = as_map(props.get("metadata"))
    spec = as_map(props.get("spec"))
    annotations = {str(k): str(v) for k, v in as_map(meta.get("annotations")).items()}
    clients: list[Client] = []
    error = None
    raw = annotations.get(facts.CLIENTS_ANNOTATION)
    if raw:
        try:
            for c in json.loads(raw):
                clients.append(Client(name=str(c["name"]), namespace=str(c["namespace"]), port=int(c["port"])))
        except (ValueError, TypeError, KeyError) as err:
            clients, error = [], f"{facts.CLIENTS_ANNOTATION} is not a JSON list of {{name, namespace, port}}: {err}"
    ports = tuple(
        ServicePort(
            name=str(as_map(p).get("name", "")),
            port=whole(as_map(p).get("port"), 0),
            target_port=_port_ref(as_map(p).get("targetPort", as_map(p).get("port"))),
            protocol=str(as_map(p).get("protocol", "TCP")),
        )
        for p in as_seq(spec.get("ports"))
    )
    return Service(
        urn=urn,
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "default")),
        selector={str(k): str(v) for k, v in as_map(spec.get("selector")).items()},
        ports=ports,
        annotations=annotations,
        clients=tuple(clients),
        clients_error=error,
        cluster_ip=None if spec.get("clusterIP") is None else str(spec.get("clusterIP")),
    )


def _port_ref(value: Any) -> Any:
    """A targetPort as an int (numbers arrive as doubles over gRPC) or a port name (str)."""
    if isinstance(value, str) and not value.isdigit():
        return value
    return whole(value, 0)


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A Service-style equality selector matches ``labels`` (an empty selector matches nothing)."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def label_selector_matches(selector: Mapping, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions) matches ``labels``; ``{}`` matches all."""
    selector = as_map(selector)
    for k, v in as_map(selector.get("matchLabels")).items():
        if labels.get(str(k)) != str(v):
            return False
    for expr in as_seq(selector.get("matchExpressions")):
        expr = as_map(expr)
        key, op = str(expr.get("key")), str(expr.get("operator"))
        values = {str(v) for v in as_seq(expr.get("values"))}
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True
