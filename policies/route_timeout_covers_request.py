"""route-timeout-covers-request: a proxy's or route's timeout outlasts the server's longest request.

Rule: for each Ingress or Gateway API route backend whose timeout the manifests say (ingress-nginx's
``proxy-read-timeout`` annotation, or its 60 s default on an Ingress of class nginx; an HTTPRoute rule's
``timeouts.request`` / ``timeouts.backendRequest``), and each running vLLM server behind it (through
its Service, or its InferencePool's pods) whose model and card the stack's inventory knows: the timeout is not shorter than the least
time its longest request takes, ``--max-model-len`` tokens at the fastest decode the card allows (its
memory bandwidth over the weights one token reads on a card: a lower bound of the time, an MoE's
weights scaled by the experts a token uses). Read once in :mod:`core.manifests.objects`.

Advisory: short requests pass; streaming keeps a read timeout alive while tokens flow.
Source: basetenlabs/truss PR #670, llm-d-benchmark PR #1617. Judged and worded once, in
:mod:`core.rulebook.routes`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import manifests, registry
from core.manifests import objects
from core.rulebook import routes
from policylib import capacity_helpers, declare, stackconfig, views
from policylib import objects as glue

NAME = "route-timeout-covers-request"
SOURCE = registry.RULES[NAME].source


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


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
