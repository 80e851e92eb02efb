"""How the pack reads the manifests for the policies :mod:`core.rulebook.network` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from core.judging import terms
from core.k8s import manifests
from core.k8s.manifests import filesystem as fs
from core.k8s.manifests.network_policies import IngressPolicy, parse_egress, parse_policy, ports_admit, ports_text
from core.rulebook import network
from policylib import containers, declare, stack_helpers, views
from policylib.stack_helpers import PodIndex

# --- ingress-admits-server-port: a NetworkPolicy that isolates a model server admits the port it listens on.


def ingress_admits_server_port(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


declare.validate("ingress-admits-server-port", ingress_admits_server_port)


# --- network-egress-for-hub: a NetworkPolicy that isolates a model server's egress lets it fetch its model.


def network_egress_for_hub(args: StackValidationArgs, report_violation: ReportViolation) -> None:  # noqa: F821
    stack = views.stack_view(args.resources)
    egress = [p for urn, props in stack.network_policies if (p := parse_egress(urn, props)) is not None]
    if not egress:
        return
    for w in stack.workloads:
        if not w.running:
            continue
        isolating = [p for p in egress if p.namespace == w.namespace and w.matched_by(p.pod_selector)]
        if not isolating:
            continue
        for c, server in w.servers:
            if server.engine != "vllm" or not fs.is_hub_id(server.model_arg) or fs.offline(c):
                continue
            dns = any(p.admits(53, "UDP") for p in isolating)
            https = any(p.admits(443, "TCP") for p in isolating)
            containers.report(args, report_violation, w,
                              network.egress_for_hub(str(server.model_arg), [p.name for p in isolating], dns, https), c,
                              stack=True)


declare.validate("network-egress-for-hub", network_egress_for_hub)


# --- network-ingress-for-clients: every declared client of a Service gets through the NetworkPolicies.

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"



def _empty_selector(selector: Any) -> bool:
    return isinstance(selector, Mapping) and not selector.get("matchLabels") and not selector.get("matchExpressions")


def peer_admits(peer: Mapping, client_ns: str, policy_ns: str, trust_pod_selector: bool) -> bool:
    """Whether one ``from`` peer admits a client pod of namespace ``client_ns`` (see the module docstring)."""
    ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
    if ns_sel is None and pod_sel is None:
        return False  # ipBlock (or an empty peer): cannot be judged
    if ns_sel is not None:
        if not manifests.label_selector_matches(ns_sel, {NAMESPACE_NAME_LABEL: client_ns}):
            return False
    elif client_ns != policy_ns:
        return False
    return pod_sel is None or _empty_selector(pod_sel) or trust_pod_selector


def from_admits(rule: Mapping, client_ns: str, policy_ns: str, trust_pod_selector: bool) -> bool:
    """Whether a rule's ``from`` admits the client: none or empty admits every source."""
    peers = rule.get("from")
    if not peers:
        return True
    return any(isinstance(p, Mapping) and peer_admits(p, client_ns, policy_ns, trust_pod_selector) for p in peers)


def _sort_ports(texts: set[str]) -> list[str]:
    return sorted(texts, key=lambda t: (0, int(t.split("-")[0])) if t.split("-")[0].isdigit() else (1, t))


def judge_client(client, pod_port: int, names, protocol: str, policies, trust: bool) -> str | None:
    """None when some rule of ``policies`` admits the client on ``pod_port``; else what they do admit."""
    seen: set[str] = set()
    for pol in policies:
        for rule in pol.rules:
            if not from_admits(rule, client.namespace, pol.namespace, trust):
                continue
            if ports_admit(rule.get("ports"), pod_port, names, protocol):
                return None
            seen.update(ports_text(rule.get("ports") or []))
    label, verb = ("NetworkPolicy", "admits") if len(policies) == 1 else ("NetworkPolicies", "admit")
    which = ", ".join(sorted(p.name for p in policies))
    if seen:
        return f"{label} {which} {verb} {client.name} only on {', '.join(_sort_ports(seen))}"
    return f"{label} {which} {verb} nothing from namespace {client.namespace}"


class _Context:
    """The NetworkPolicies by namespace, with the ones selecting each workload memoised."""

    def __init__(self, netpols) -> None:
        self.by_ns: dict[str, list[IngressPolicy]] = defaultdict(list)
        for urn, props in netpols:
            pol = parse_policy(urn, props)
            if pol is not None:
                self.by_ns[pol.namespace].append(pol)
        self._memo: dict[str, list[IngressPolicy]] = {}

    def selecting(self, w: manifests.Workload) -> list[IngressPolicy]:
        key = w.urn or f"{w.kind}/{w.namespace}/{w.name}"
        hit = self._memo.get(key)
        if hit is None:
            hit = [p for p in self.by_ns.get(w.namespace, ()) if w.matched_by(p.pod_selector)]
            self._memo[key] = hit
        return hit


def _api_breach(who: str, port: int, sp: manifests.ServicePort, w: manifests.Workload):
    """The client's Service port lands on a pod port that is not the API port of the server that
    declares (or opens) it: :func:`core.rulebook.network.client_reaches_api`; None when it is, or
    when no modelled server's endpoint says (another program, an argv that cannot be read)."""
    pod_port = stack_helpers.target_port_number(sp.target_port, w)
    if pod_port is None:
        return None
    for c in w.containers:
        ep = c.endpoint
        if ep is None or ep.port == pod_port:
            continue
        beside = pod_port in c.ports and ep.port in c.ports  # a side port by service-target-port's reading too
        side = ep.side_ports.get(pod_port) or (f"containerPort {pod_port} beside the API" if beside else None)
        if side is not None:
            return network.client_reaches_api(who, port, pod_port, ep.engine, ep.port, side)
    return None


def check_service(svc: manifests.Service, index: PodIndex, ctx: _Context, trust: bool) -> list[str]:
    """The violation messages for one Service's declared clients."""
    subject = f"Service {svc.name}"
    breach = network.clients_declared(svc.clients_error)
    if breach is not None:
        return [terms.message(svc.annotations, breach.finding(subject))]
    if not svc.clients or not svc.selector:
        return []
    out = []
    by_port = {sp.port: sp for sp in svc.ports}
    backends = stack_helpers.running(index.select(svc.namespace, svc.selector))
    for client in svc.clients:
        who = f"client {client.name} (namespace {client.namespace})"
        breach = network.client_port_exposed(who, client.port, list(by_port))
        if breach is not None:
            out.append(terms.message(svc.annotations, breach.finding(subject)))
            continue
        sp = by_port[client.port]
        for w in backends:
            api = _api_breach(who, client.port, sp, w)
            if api is not None:
                out.append(terms.message(svc.annotations, api.finding(subject)))
                continue
            policies = ctx.selecting(w)
            pod_port = stack_helpers.target_port_number(sp.target_port, w) if policies else None
            if pod_port is None:
                continue
            verdict = judge_client(client, pod_port, stack_helpers.port_names_of(w, pod_port), sp.protocol, policies, trust)
            breach = network.client_admitted(who, client.namespace, client.port, pod_port, verdict,
                                             f" of {w.name}" if len(backends) > 1 else "")
            if breach is not None:
                out.append(terms.message(svc.annotations, breach.finding(subject)))
    return out


def network_ingress_for_clients(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    if not any(s.clients or s.clients_error for s in stack.services):
        return
    trust = stack_helpers.config_value(args, network.NETWORK_INGRESS_FOR_CLIENTS_CONFIG, "podSelectorPeers") != "refuse"
    index = PodIndex(stack.workloads)
    ctx = _Context(stack.network_policies)
    for svc in stack.services:
        for message in check_service(svc, index, ctx, trust):
            report_violation(message, svc.urn)


declare.validate("network-ingress-for-clients", network_ingress_for_clients)
