"""ingress-admits-server-port: a NetworkPolicy that isolates a model server admits the port it listens on.

Rule: for each running workload with a vLLM / candle-vllm container whose endpoint is known
(:func:`core.manifests.servers.endpoint`: ``--port`` / ``--p``, else the engine's default), the
NetworkPolicies of its namespace that isolate ingress and select its pods admit, in some
ingress rule and from some source, the TCP port the server listens on (a rule without
``ports`` admits every port; a named rule port matches the container's named port). When no
NetworkPolicy selects the pods, all ingress is allowed and nothing is judged.

Why beside network-ingress-for-clients: that policy follows each DECLARED client from its
Service port to the targetPort; this one needs no declaration, so it also judges hand-written
YAML without the clients annotation, and it judges the port the server really listens on
(a policy admitting 8080 in front of a vLLM on its default 8000 drops every packet).

Source: seed 002 networkpolicy.yaml (a missing ingress rule looked like a hung engine for 34
days: clients saw a bare timeout, the server log stayed empty); the server's endpoint
is checked against the NetworkPolicy's ports.

Does not check: which sources are admitted (network-ingress-for-clients, for declared
clients), egress policies, ipBlock peers, UDP/SCTP.

The rule is judged and worded once, in :mod:`core.rulebook.network`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from collections import defaultdict

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import manifests, registry, terms
from core.rulebook import network
from policylib import declare, stack_helpers, views

NAME = "ingress-admits-server-port"
SOURCE = registry.RULES[NAME].source


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    by_ns: dict[str, list[manifests.IngressPolicy]] = defaultdict(list)
    for urn, props in stack.network_policies:
        pol = manifests.parse_policy(urn, props)
        if pol is not None:
            by_ns[pol.namespace].append(pol)
    if not by_ns:
        return
    for w in stack.workloads:
        if not w.running:
            continue
        policies = [p for p in by_ns.get(w.namespace, ()) if w.matched_by(p.pod_selector)]
        if not policies:
            continue
        for c, _server in w.servers:
            ep = c.endpoint
            if ep is None:
                continue
            breach = network.server_port_admitted(
                ep.engine, ep.port, ep.port_text, [p.name for p in policies],
                sorted({t for p in policies for rule in p.rules for t in manifests.ports_text(rule.get("ports") or [])}),
                manifests.admitting_any_source(policies, ep.port, stack_helpers.port_names_of(w, ep.port)))
            if breach is not None:
                report_violation(terms.message(w.annotations, breach.finding(f"{w.kind} {w.name}, container {c.name}")), w.urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
