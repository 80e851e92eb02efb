"""NetworkPolicies as the pack reads them: which pods a policy isolates and which ports its
ingress rules admit (Kubernetes semantics, networking.k8s.io/v1).

Shared by network-ingress-for-clients (a declared client on the pod's port) and
ingress-admits-server-port (the port a model server listens on). Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.k8s.manifests.read import plain


@dataclass(frozen=True)
class IngressPolicy:
    """A NetworkPolicy that isolates ingress: its namespace, pod selector and ingress rules (plain data)."""

    urn: str
    name: str
    namespace: str
    pod_selector: Mapping
    rules: tuple[Mapping, ...]


def parse_policy(urn: str, props: Mapping) -> IngressPolicy | None:
    """The :class:`IngressPolicy` of a NetworkPolicy's properties; None when it does not isolate ingress."""
    props = plain(props)
    meta = props.get("metadata") or {}
    spec = props.get("spec") or {}
    types = spec.get("policyTypes")
    if isinstance(types, list) and "Ingress" not in types:
        return None
    return IngressPolicy(
        urn=urn,
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "default")),
        pod_selector=spec.get("podSelector") or {},
        rules=tuple(r for r in (spec.get("ingress") or []) if isinstance(r, Mapping)),
    )


def port_value(value: Any) -> Any:
    """A rule's port as a number when it is one (``8080``, ``8080.0`` -- every number arrives as
    a protobuf double over the analyzer protocol -- or ``"8080"``), else the port name; None stays None."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def ports_admit(ports: Any, pod_port: int, names: frozenset[str], protocol: str) -> bool:
    """Whether a rule's ``ports`` admit ``pod_port`` (known by ``names`` too): none or empty admits all."""
    if not ports:
        return True
    for entry in ports:
        if not isinstance(entry, Mapping) or str(entry.get("protocol", "TCP")) != protocol:
            continue
        port = port_value(entry.get("port"))
        if port is None:
            return True
        if isinstance(port, str):
            if port in names:
                return True
            continue
        if not isinstance(port, int) or isinstance(port, bool):
            continue  # not a port (a list, a map, a fraction): the API server refuses it; it admits nothing
        high = port_value(entry.get("endPort"))
        if port <= pod_port <= (high if isinstance(high, int) else port):
            return True
    return False


def ports_text(ports: Sequence) -> list[str]:  # noqa: D103
    out = []
    for entry in ports:
        if not isinstance(entry, Mapping):
            continue
        port, end = port_value(entry.get("port")), port_value(entry.get("endPort"))
        if port is None:
            out.append(f"all {entry.get('protocol', 'TCP')} ports")
        elif end is not None:
            out.append(f"{port}-{end}")
        else:
            out.append(str(port))
    return out


def admitting_any_source(policies: list[IngressPolicy], pod_port: int, names: frozenset[str]) -> bool:
    """True when some ingress rule of ``policies`` admits TCP ``pod_port`` (known by ``names``
    too) from any source: without one, nothing reaches the port through these policies."""
    return any(ports_admit(rule.get("ports"), pod_port, names, "TCP") for p in policies for rule in p.rules)


@dataclass(frozen=True)
class EgressPolicy:
    """A NetworkPolicy that isolates egress (``policyTypes`` lists ``Egress``, or it has ``egress``
    rules and no ``policyTypes``): its namespace, pod selector and egress rules (plain data)."""

    urn: str
    name: str
    namespace: str
    pod_selector: Mapping
    rules: tuple[Mapping, ...]

    def admits(self, port: int, protocol: str) -> bool:
        """Some egress rule admits ``protocol`` ``port`` to some destination."""
        return any(ports_admit(rule.get("ports"), port, frozenset(), protocol) for rule in self.rules)


def parse_egress(urn: str, props: Mapping) -> EgressPolicy | None:
    """The :class:`EgressPolicy` of a NetworkPolicy's properties; None when it does not isolate egress."""
    props = plain(props)
    meta = props.get("metadata") or {}
    spec = props.get("spec") or {}
    types = spec.get("policyTypes")
    if not ("Egress" in types if isinstance(types, list) else "egress" in spec):
        return None
    return EgressPolicy(urn, str(meta.get("name", "")), str(meta.get("namespace", "default")),
                        spec.get("podSelector") or {}, tuple(r for r in (spec.get("egress") or []) if isinstance(r, Mapping)))
