"""How the pack reads the manifests for the policies :mod:`core.rulebook.routes` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, StackValidationArgs

from core.k8s import manifests
from core.k8s.manifests import objects
from core.rulebook import routes
from policylib import capacity_helpers, declare, stack_helpers, stackconfig, views
from policylib import objects as glue

# --- route-reaches-server: Ingress, Gateway API routes and InferencePools reach a model server's API port.


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


def route_reaches_server(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


declare.validate("route-reaches-server", route_reaches_server)


# --- route-timeout-covers-request: a proxy's or route's timeout outlasts the server's longest request.


def fastest_tokens_per_second(sc: capacity_helpers.ServerCapacity) -> float | None:
    """The card's bandwidth over the bytes a decoded token reads at least (its weights a card; an MoE
    model's scaled by experts a token / experts), tokens/s; None when the estimate is missing."""
    if sc.estimate is None or sc.card is None or sc.facts is None:
        return None
    read = sc.estimate.weights_gib_per_card * 2**30
    if sc.facts.num_experts and sc.facts.num_experts_per_tok:
        read *= sc.facts.num_experts_per_tok / sc.facts.num_experts
    return sc.card.hbm_bandwidth_gb_s * 1e9 / read if read > 0 else None


def behind(b: objects.Backend, stack: manifests.Stack, objs: objects.Objects) -> list[manifests.Workload]:
    """The running workloads a backend reaches: its Service's selected pods, or its InferencePool's (none
    when the Service or pool is not among the manifests)."""
    if b.kind == "InferencePool":
        pool = next((p for p in objs.pools if p.namespace == b.namespace and p.name == b.name), None)
        return [w for w in objects.pooled(pool, stack.workloads) if w.running] if pool is not None else []
    svc = glue.service_named(stack.services, b.namespace, b.name)
    if svc is None:
        return []
    return [w for w in stack.workloads
            if w.running and w.namespace == svc.namespace and w.selected_by(svc.selector)]


def route_timeout_covers_request(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    timed = [(rt, b) for rt in objs.routes for b in rt.backends if b.timeout_seconds and b.kind in ("Service", "InferencePool")]
    if not timed:
        return
    try:
        inv, models = stackconfig.inventory(), stackconfig.models()
    except stackconfig.StackConfigError:
        return  # the capacity policies report an unreadable stack config once
    stack = views.stack_view(args.resources)
    for rt, b in timed:
        for w in behind(b, stack, objs):
            for sc in capacity_helpers.servers(w, inv, models):
                tps = fastest_tokens_per_second(sc)
                tokens = sc.settings.max_model_len or (sc.facts.max_position_embeddings if sc.facts else None)
                if sc.server.engine != "vllm" or tps is None or not tokens:
                    continue
                breach = routes.timeout_covers(f"its backend {b.at}", b.timeout_from, float(b.timeout_seconds or 0),
                                               f"{sc.container.name} of {w.kind} {w.name}", int(tokens), tps)
                message = glue.report(f"{rt.kind} {rt.name}", breach)
                if message:
                    report_violation(message, rt.urn)


declare.validate("route-timeout-covers-request", route_timeout_covers_request)
