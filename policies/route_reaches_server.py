"""route-reaches-server: Ingress, Gateway API routes and InferencePools reach a model server's API port.

Rule: (1) each Ingress / HTTPRoute / GRPCRoute backend that names a Service of the manifests names a
port that Service exposes (by number, or an Ingress's port name), and when the Service selects a running
model server, that Service port's targetPort is the port the server listens on
(:func:`core.manifests.endpoint`); (2) each InferencePool selects the pods of a running model server
and sends to a port one of them listens on (the endpoint picker drops a pod whose port is not among the
pool's target ports). Routes and pools are read once (:mod:`core.manifests.objects`).

A backend Service that is not among the manifests is not judged. Source: gateway-api-inference-extension
#2562, ai-dynamo/dynamo PR #1940, helm/charts PR #20245. Judged and worded once, in
:mod:`core.rulebook.routes`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import manifests, registry
from core.manifests import objects
from core.rulebook import routes
from policylib import declare, stack_helpers, views
from policylib import objects as glue

NAME = "route-reaches-server"
SOURCE = registry.RULES["route-backend-port"].source


def _backends(objs: objects.Objects, stack: manifests.Stack, report_violation: ReportViolation) -> None:
    for rt in objs.routes:
        for b in rt.backends:
            if b.kind != "Service":
                continue
            svc = glue.service_named(stack.services, b.namespace, b.name)
            if svc is None:
                continue
            port = next((p for p in svc.ports if (b.port is not None and p.port == b.port)
                         or (b.port_name is not None and p.name == b.port_name)), None)
            asked = str(b.port) if b.port is not None else str(b.port_name) if b.port_name else "(no port: a Service backend needs one)"
            exposed = [f"{p.port}" + (f" ({p.name})" if p.name else "") for p in svc.ports]
            selected = [w for w in stack.workloads if w.namespace == svc.namespace
                        and w.selected_by(svc.selector)]
            served = glue.listening(selected)
            reaches = api = None
            server = ""
            if port is not None and served:
                w, c, ep = served[0]
                reaches, api, server = stack_helpers.target_port_number(port.target_port, w), ep.port, f"{c.name} of {w.kind} {w.name}"
                if reaches is None:
                    continue  # a named targetPort the pods do not declare: service-target-port says so
            elif port is not None:
                continue
            breach = routes.backend_port(f"its backend {b.at}", svc.name, asked, exposed,
                                         reaches if port is not None else None, api, server)
            message = glue.report(f"{rt.kind} {rt.name}", breach)
            if message:
                report_violation(message, rt.urn)


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    if not objs.routes and not objs.pools:
        return
    stack = views.stack_view(args.resources)
    _backends(objs, stack, report_violation)
    for p in objs.pools:
        chosen = objects.pooled(p, stack.workloads)
        served = glue.listening(chosen)
        if (chosen and not served) or any(o.namespace == p.namespace and any(
                manifests.selector_matches(p.selector, labels) for labels in o.label_sets) for o in stack.others):
            continue  # pods the pack does not model, or a server whose port is not known: not judged
        selector = ", ".join(f"{k}={v}" for k, v in p.selector.items()) or "nothing"
        breach = routes.pool_selects_server(p.name, selector, [f"{w.kind} {w.name}" for w, _, _ in served], p.target_ports,
                                            [f"{c.name} of {w.kind} {w.name} listens on {ep.port}" for w, c, ep in served])
        message = glue.report(f"InferencePool {p.name}", breach)
        if message:
            report_violation(message, p.urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
