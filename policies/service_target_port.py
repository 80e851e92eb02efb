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

Does NOT check: protocols (TCP/UDP), hostPort, sidecars that listen on undeclared ports,
servers other than vLLM / candle-vllm (their listen port is not parsed), or servers whose
argv cannot be read literally (a ``$(VAR)`` port, an ``sh -c`` script: ``endpoint`` is None).
"""

from __future__ import annotations

from typing import Optional

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from core.problems import Finding
from core import manifests
from policylib import stack_helpers, terms

NAME = "service-target-port"


def listen_port(server: manifests.ServerArgs) -> Optional[int]:
    """The port a vLLM or candle-vllm server listens on (:func:`core.manifests.servers.endpoint`:
    the port flag, else the engine's default), or None when its argv cannot be read literally."""
    ep = manifests.endpoint(server)
    return ep.port if ep else None


def _port_label(sp: manifests.ServicePort) -> str:
    return f"port {sp.port} ({sp.name})" if sp.name else f"port {sp.port}"


SOURCE = "spec, stable Services (coder-service.yaml: port 80 and 8080 -> 8080)"


def check_port(svc: manifests.Service, sp: manifests.ServicePort, w: manifests.Workload) -> Optional[str]:
    """The violation message for one Service port against one selected workload, or None."""
    number = stack_helpers.target_port_number(sp.target_port, w)
    # A number shows as one (it arrives as a double, 8080.0, over the analyzer protocol).
    shown = sp.target_port if number is None else number
    head = f"Service {svc.name} {_port_label(sp)}"
    target = f"targetPort {shown}"
    who = f"{w.name} ({w.kind})"
    if number is None:
        names = sorted({n for c in w.containers for n in c.port_names})
        return terms.message(svc.annotations, Finding(
            head, f"{target} names no containerPort of {who} (named ports: {', '.join(names) or 'none'}); "
            "Kubernetes publishes no endpoint for it",
            "name the container port or use the number", SOURCE))
    if any(c.server is not None and listen_port(c.server) == number for c in w.containers):
        return None  # the server listens on it: containerPort lists are informational
    declared = stack_helpers.declared_ports(w)
    if declared and number not in declared:
        return terms.message(svc.annotations, Finding(
            head, f"{target} is not a containerPort of {who} (containerPorts: "
            f"{', '.join(str(p) for p in declared)}); connections are refused",
            "set targetPort to the port the server listens on", SOURCE))
    owners = [c for c in w.containers if number in c.ports] if declared else list(w.containers)
    wrong = []
    for c in owners:
        ep = manifests.endpoint(c.server)
        if ep is None or ep.port == number:
            return None
        wrong.append(f"container {c.name} runs {ep.engine} on {ep.port_text}")
    if wrong:
        return terms.message(svc.annotations, Finding(
            head, f"{target} reaches pod port {number} of {who}, but {'; '.join(wrong)}; connections are refused",
            "make the server's port flag, the containerPort and the targetPort agree", SOURCE,
            stack_fix="set port under the selected workload of {key} to the Service's targetPort"))
    return None


def validate(args, report_violation) -> None:
    services, index = stack_helpers.services_and_index(args)
    for svc in services:
        if not svc.selector:
            continue
        for w in stack_helpers.running(index.select(svc.namespace, svc.selector)):
            for sp in svc.ports:
                message = check_port(svc, sp, w)
                if message:
                    report_violation(message, svc.urn)


POLICY = StackValidationPolicy(
    name=NAME,
    description="Each Service targetPort resolves to a containerPort the selected pods declare and their server listens on.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Set the Service port's targetPort to the server's listen port (8080 for every server in "
        "llm-serving: vLLM --port=8080, candle-vllm --p 8080), declare it as a containerPort, and "
        "name the containerPort when the targetPort is a name."
    ),
)
