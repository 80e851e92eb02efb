"""How the pack reads the manifests for the policies :mod:`core.rulebook.endpoints` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from core.rulebook import endpoints
from policylib import declare, stackconfig, views
from policylib import resource_helpers as rh

# --- server-listen-endpoint: a model server listens where its pod is reached, and its probes knock there.

PROBES = (("startupProbe", "startup_probe"), ("livenessProbe", "liveness_probe"), ("readinessProbe", "readiness_probe"))


def probe_port(probe: Mapping, c: manifests.Container) -> tuple[int | None, Any]:
    """``(port number, port as written)`` of a probe's ``httpGet`` / ``tcpSocket`` / ``grpc``
    handler; the number is None for a port name the container does not declare, and both are
    None for a probe without a port (``exec``)."""
    for handler in ("httpGet", "tcpSocket", "grpc"):
        block = rh.mapping(probe.get(handler))
        if "port" in block:
            written = block["port"]
            number = rh.whole(written)
            if number is None and isinstance(written, str):
                number = c.port_names.get(written)
            return number, written
    return None, None


def breaches(c: manifests.Container, ep: manifests.Endpoint, house: bool = True) -> list[Breach]:
    """What is wrong with where container ``c`` listens, against its probes and ports
    (:mod:`core.rulebook.endpoints`); ``house``: the inventory's ``house_conventions`` (the
    declared containerPort must be the listen port)."""
    out = [endpoints.reachable_host(ep.engine, ep.host)]
    for field, attr in PROBES:
        probe = getattr(c, attr)
        if probe is None:
            continue
        number, written = probe_port(rh.mapping(probe), c)
        if written is None:
            continue
        if rh.whole(written) is not None:
            shown = f"port {number}"
        elif number is None:
            shown = f"port {written}, a name no containerPort carries"
        else:
            shown = f"port {written} ({number})"
        out.append(endpoints.probe_on_listen_port(field, number, shown, ep.engine, ep.port, ep.port_text))
        get = rh.mapping(rh.mapping(probe).get("httpGet"))
        if get:
            out.append(endpoints.probe_scheme(field, str(get.get("scheme") or "HTTP"), ep.scheme, ep.engine))
    if house:
        out.append(endpoints.container_port(tuple(c.ports), ep.engine, ep.port, ep.port_text))
    return [b for b in out if b]


def server_listen_endpoint(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    for c, _server in w.servers:
        ep = c.endpoint
        if ep is None:
            continue
        for breach in breaches(c, ep, stackconfig.house_conventions()):
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


declare.validate("server-listen-endpoint", server_listen_endpoint)
