"""How the pack reads the manifests for the policies :mod:`core.rulebook.services` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from collections import defaultdict

from pulumi_policy import ReportViolation, StackValidationArgs

from core.base import facts
from core.judging import terms
from core.k8s import manifests
from core.k8s.manifests import env
from core.rulebook import services
from core.rulebook import services as service_rules
from policylib import declare, stack_helpers, stackconfig, views
from policylib.stack_helpers import PodIndex

# --- served-model-name-unique: one served model name is answered by one running server only.


def servers_by_name(all_workloads) -> dict[str, list[manifests.Workload]]:
    """Served model name -> the running workloads answering it (each once, in input order)."""
    out: dict[str, list[manifests.Workload]] = defaultdict(list)
    for w in all_workloads:
        if not w.running:
            continue
        for name in w.served_model_names:
            out[name].append(w)
    return out


def served_model_name_unique(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    for name, answering in sorted(servers_by_name(stack.workloads).items()):
        ordered = sorted(answering, key=lambda w: (w.name, w.kind))
        breach = services.served_name_unique(name, [f"{w.name} ({w.kind})" for w in ordered])
        if breach is not None:
            keys = terms.stack_file_keys(w.annotations for w in ordered)
            report_violation(breach.finding(f"served model name {name}").render(stack_key=keys), ordered[0].urn)


declare.validate("served-model-name-unique", served_model_name_unique)


# --- service-link-env-collision: no Service injects variables into a model server's own environment namespace.


def injected(svc: manifests.Service) -> list[str]:
    """The variables service links inject for ``svc`` (none for a headless Service)."""
    if svc.cluster_ip in ("None", ""):
        return []
    return env.service_link_env_names(svc.name, [(p.name or None, p.port, p.protocol) for p in svc.ports])


def service_link_env_collision(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    names_by_ns: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    for svc in stack.services:
        names = injected(svc)
        if names:
            names_by_ns[svc.namespace].append((svc.name, names))
    if not names_by_ns:
        return
    for w in stack.workloads:
        if not w.enable_service_links:
            continue
        for c, server in w.servers:
            prefix = facts.ENGINE_ENV_PREFIXES.get(server.engine)
            if prefix is None:
                continue
            for svc_name, names in names_by_ns.get(w.namespace, ()):
                parsed = facts.ENGINE_ENV_PARSED.get(server.engine, frozenset())
                hits = [n for n in env.env_collisions(names, prefix) if c.environment.is_set(n) is False and n in parsed]
                breach = service_rules.service_links(svc_name, server.engine, prefix, hits)
                if breach is not None:
                    report_violation(terms.message(w.annotations, breach.finding(f"{w.kind} {w.name}, container {c.name}")),
                                     w.urn)


declare.validate("service-link-env-collision", service_link_env_collision)


# --- service-selector-uniqueness: each Service selects exactly one running workload.

def _describe(selected) -> str:
    return ", ".join(f"{w.name} ({w.kind})" for w in sorted(selected, key=lambda w: (w.name, w.kind)))


def _selector_text(selector) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))


def one_model_behind(live) -> bool:
    """Whether every workload answers the same, known served model names: a canary or a second
    version of one model, where a split of the traffic is the point."""
    names = {w.served_model_names for w in live}
    return len(names) == 1 and bool(next(iter(names)))


def check_service(svc: manifests.Service, index: PodIndex, house: bool = True):
    """The violation message for one Service, or None when it selects exactly one running workload
    (or none, declared parked; or has no selector). ``house``: the inventory's
    ``house_conventions`` (the user's cluster: one workload behind each Service, seed 002);
    without it a Service in front of workloads that all answer the same model names (a stable
    and a canary Deployment) is a deliberate split and passes; different models behind one
    Service (the seed 002 mistake) fail everywhere."""
    if not svc.selector:
        return None
    selected = index.select(svc.namespace, svc.selector)
    live = stack_helpers.running(selected)
    # One object may give several pod sets (a LeaderWorkerSet's leaders and workers): count objects.
    objects = {(w.kind, w.name) for w in live}
    if len(objects) == 1:
        return None
    if len(objects) >= 2 and any(w.narrowed_by(svc.selector) for w in live):
        return None  # a hash only one ReplicaSet or revision carries: one workload's pods, whichever it is
    if len(objects) >= 2:
        live = tuple({(w.kind, w.name): w for w in live}.values())
        if not house and one_model_behind(live):
            return None
        breach = service_rules.selects_one([_describe([w]) for w in sorted(live, key=lambda w: (w.name, w.kind))],
                                      _selector_text(svc.selector))
    else:
        if not selected and stack_helpers.selects_other_pods(index, svc.namespace, svc.selector) is not None:
            return None  # pods of a kind the pack does not model (policylib.coverage says so)
        parked = sorted((w for w in selected if not w.running), key=lambda w: (w.name, w.kind))
        breach = service_rules.selects_running(0, [_describe([w]) for w in parked], svc.parked_reason is not None,
                                          _selector_text(svc.selector))
    return None if breach is None else terms.message(svc.annotations, breach.finding(f"Service {svc.name}"))


def service_selector_uniqueness(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    services, index = stack_helpers.services_and_index(args)
    house = stackconfig.house_conventions()
    for svc in services:
        message = check_service(svc, index, house)
        if message:
            report_violation(message, svc.urn)


declare.validate("service-selector-uniqueness", service_selector_uniqueness)


# --- service-target-port: each Service port reaches a port the selected pods listen on.

def listen_port(server: manifests.ServerArgs) -> int | None:
    """The port a vLLM or candle-vllm server listens on (:func:`core.k8s.manifests.servers.endpoint`:
    the port flag, else the engine's default), or None when its argv cannot be read literally."""
    ep = manifests.endpoint(server)
    return ep.port if ep else None


def _port_label(sp: manifests.ServicePort) -> str:
    return f"port {sp.port} ({sp.name})" if sp.name else f"port {sp.port}"


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


def service_target_port(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    services, index = stack_helpers.services_and_index(args)
    for svc in services:
        if not svc.selector:
            continue
        for w in stack_helpers.running(index.select(svc.namespace, svc.selector)):
            for sp in svc.ports:
                message = check_port(svc, sp, w)
                if message:
                    report_violation(message, svc.urn)


declare.validate("service-target-port", service_target_port)
