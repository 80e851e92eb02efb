"""service-target-port: each Service port reaches a port the selected pods listen on.

Rule: for every port of a Service and every running workload it selects, the ``targetPort``
(a number, or the name of a container port; absent = ``port``) resolves to a
``containerPort`` the pods declare, and, where the container runs vLLM or candle-vllm, to the
port it listens on (:func:`core.manifests.servers.endpoint`, the one model of a server's
endpoint: vLLM ``--port``, candle-vllm ``--p``, else the engine's default, vLLM 8000 and
candle-vllm 2000).

Source: coder-service.yaml and reasoning-long-service.yaml (ports 80 and 8080, both to
targetPort 8080, "a port translation that is easy to get wrong in a curl"); every server of
the namespace listens on 8080 (``--port=8080``, ``--p 8080``).

Decisions:
- A named targetPort must name a containerPort: Kubernetes publishes no endpoint for a pod
  that lacks the name, so this is a violation even when the pod declares no ports.
- A numeric targetPort on pods that declare no containerPort at all: Kubernetes does not
  require the declaration (it is informational), so it is judged by the server's explicit
  listen port when there is one (a mismatch is a violation) and is otherwise not judged.
- A numeric targetPort that is not among the declared containerPorts is a violation: a
  declared port list that omits the served port is the "easy to get wrong" translation.

Skipped: Services with no selector, and Services that select no running workload
(service-selector-uniqueness reports those). A Service that selects two workloads is checked
against each.

- A port the Service's own ``prometheus.io/port`` annotation names, beside a port that reaches
  the server's API, is a metrics scrape port (AIBrix's samples: 8080 for the aibrix-runtime
  sidecar, serve 8000 for clients) and is not judged: the clients are served either way.

Does NOT check: protocols (TCP/UDP), hostPort, sidecars that listen on undeclared ports,
servers other than vLLM / candle-vllm (their listen port is not parsed), or servers whose
argv cannot be read literally (a ``$(VAR)`` port, an ``sh -c`` script: ``endpoint`` is None).

The rule is judged and worded once, in :mod:`core.rulebook.services`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import manifests, registry, terms
from core.rulebook import services as service_rules
from policylib import declare, stack_helpers

NAME = "service-target-port"


def listen_port(server: manifests.ServerArgs) -> int | None:
    """The port a vLLM or candle-vllm server listens on (:func:`core.manifests.servers.endpoint`:
    the port flag, else the engine's default), or None when its argv cannot be read literally."""
    ep = manifests.endpoint(server)
    return ep.port if ep else None


def _port_label(sp: manifests.ServicePort) -> str:
    return f"port {sp.port} ({sp.name})" if sp.name else f"port {sp.port}"


SOURCE = registry.RULES[NAME].source


#: The Service annotation that names its metrics port for annotation-based Prometheus discovery.
SCRAPE_PORT_ANNOTATION = "prometheus.io/port"


def _scrape_port(svc: manifests.Service, sp: manifests.ServicePort, w: manifests.Workload) -> bool:
    """``sp`` is the port the Service's ``prometheus.io/port`` annotation names, and another port of
    the Service reaches the API port of a server in ``w``."""
    if str(svc.annotations.get(SCRAPE_PORT_ANNOTATION, "")).strip() not in {str(sp.port), str(sp.target_port)}:
        return False
    api = {c.endpoint.port for c in w.containers if c.endpoint is not None}
    return any(other is not sp and stack_helpers.target_port_number(other.target_port, w) in api for other in svc.ports)


def check_port(svc: manifests.Service, sp: manifests.ServicePort, w: manifests.Workload) -> str | None:
    """The violation message for one Service port against one selected workload, or None."""
    breach = service_rules.target_port(
        sp.target_port, stack_helpers.target_port_number(sp.target_port, w), f"{w.name} ({w.kind})",
        {n for c in w.containers for n in c.port_names}, stack_helpers.declared_ports(w),
        [(c.name, c.ports, c.endpoint) for c in w.containers], scrape_port=_scrape_port(svc, sp, w))
    return None if breach is None else terms.message(svc.annotations, breach.finding(f"Service {svc.name} {_port_label(sp)}"))


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    services, index = stack_helpers.services_and_index(args)
    for svc in services:
        if not svc.selector:
            continue
        for w in stack_helpers.running(index.select(svc.namespace, svc.selector)):
            for sp in svc.ports:
                message = check_port(svc, sp, w)
                if message:
                    report_violation(message, svc.urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
