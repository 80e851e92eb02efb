"""service-link-env-collision: no Service injects variables into a model server's own environment namespace.

Kubernetes service links (``enableServiceLinks``, default true) make the kubelet inject, into
every container of every pod of a namespace, variables for each Service of that namespace
with a cluster IP: ``<NAME>_SERVICE_HOST``, ``<NAME>_SERVICE_PORT``, ``<NAME>_PORT=tcp://<ip>:<port>``,
``<NAME>_PORT_<port>_TCP...`` (the name upper-cased, ``-`` as ``_``;
:func:`core.rules.service_link_env_names`). A Service named ``vllm`` therefore sets
``VLLM_PORT=tcp://10.x.y.z:8000`` in every vLLM pod, and vLLM, which reads ``VLLM_PORT`` as an
integer, refuses to start (vllm-project/vllm #34199, and the docs note that followed).

Rule: for each workload with service links on, each model-server container whose engine reads
an environment namespace (``facts.ENGINE_ENV_PREFIXES``: vLLM ``VLLM_``; candle-vllm has none
known), no Service of the same namespace injects a variable with that prefix that the engine parses
(``facts.ENGINE_ENV_PARSED``: vLLM's ``VLLM_PORT``); other injected names with the prefix
(``VLLM_ROUTER_SERVICE_HOST`` from a Service ``vllm-router``) are not read, vLLM logs them as
unknown and starts, so they are no finding. A variable the container sets itself is not
counted (the container's ``env`` wins over service links). Parked workloads are judged too
(unparking is one replicas change).

Not judged: headless Services (``clusterIP: None``; the kubelet injects nothing for them), the
``kubernetes`` Service of ``default`` (``KUBERNETES_*``), Services outside the stack.

Source: vllm-project/vllm #34199. The components set ``enableServiceLinks: false``
on every pod they render, so only hand-written YAML can meet this.

The rule is judged and worded once, in :mod:`core.rulebook.services`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from collections import defaultdict

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import facts, manifests, registry, rules, terms
from core.rulebook import services as service_rules
from policylib import declare, views

NAME = "service-link-env-collision"
SOURCE = registry.RULES[NAME].source


def injected(svc: manifests.Service) -> list[str]:
    """The variables service links inject for ``svc`` (none for a headless Service)."""
    if svc.cluster_ip in ("None", ""):
        return []
    return rules.service_link_env_names(svc.name, [(p.name or None, p.port, p.protocol) for p in svc.ports])


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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
                hits = [n for n in rules.env_collisions(names, prefix) if c.environment.is_set(n) is False and n in parsed]
                breach = service_rules.service_links(svc_name, server.engine, prefix, hits)
                if breach is not None:
                    report_violation(terms.message(w.annotations, breach.finding(f"{w.kind} {w.name}, container {c.name}")),
                                     w.urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
