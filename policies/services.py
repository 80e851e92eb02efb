"""The pack's policies judged by :mod:`core.rulebook.services`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from collections import defaultdict

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

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


declare.stack_policy(
    "served-model-name-unique", served_model_name_unique, EnforcementLevel.ADVISORY, Severity.MEDIUM,
    doc="""served-model-name-unique: one served model name is answered by one running server only.

Rule: across the stack, each served model name (the ``model`` a client sends) is answered by
the containers of at most one running workload. Served names come from the server's
arguments (:attr:`core.k8s.manifests.servers.ServerArgs.served_model_names`): vLLM's
``--served-model-name`` values (else ``--model``), candle-vllm's basename of ``--w``
(else ``--m``), which is what its /v1/models reports (seed 001: ``coder-14b-fp16``).

Source: seed 002 reasoning.yaml: "coder-predictor also serves `reasoning`; that ambiguity is
known" -- coder.yaml kept ``reasoning`` as a served name while the ``reasoning``
InferenceService served it too, so a client sending model=reasoning got a different model
depending on which host it called.

Message: ``served model name reasoning is answered by 2 running servers: coder
(InferenceService), reasoning (InferenceService); ...``: servers sorted by name, then kind;
one violation per name, reported on the first server's URN.

Advisory, not mandatory: nothing fails to start and each Service still reaches one server;
the harm is a client getting a different model depending on the host it calls, which the
user accepted knowingly in seed 002 while moving clients ("resolve it by moving the client
host"). It is judgement, so it warns; set it mandatory with --policy-pack-config once no
migration is in flight.

Parked workloads (replicas 0) answer nothing and are not counted. Two containers of one
workload serving the same name count once.

Does NOT check: servers other than vLLM and candle-vllm (their names are not parsed); the
components' ``served-model-names`` annotation (the arguments are the truth the server acts
on); LoRA adapter names (``--lora-modules``); names across stacks or namespaces outside the stack.

The rule is judged and worded once, in :mod:`core.rulebook.services`; this module reads the manifests
and reports its breaches.
""",
)


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


declare.stack_policy(
    "service-link-env-collision", service_link_env_collision, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""service-link-env-collision: no Service injects variables into a model server's own environment namespace.

Kubernetes service links (``enableServiceLinks``, default true) make the kubelet inject, into
every container of every pod of a namespace, variables for each Service of that namespace
with a cluster IP: ``<NAME>_SERVICE_HOST``, ``<NAME>_SERVICE_PORT``, ``<NAME>_PORT=tcp://<ip>:<port>``,
``<NAME>_PORT_<port>_TCP...`` (the name upper-cased, ``-`` as ``_``;
:func:`core.k8s.manifests.env.service_link_env_names`). A Service named ``vllm`` therefore sets
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
""",
)


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


declare.stack_policy(
    "service-selector-uniqueness", service_selector_uniqueness, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""service-selector-uniqueness: each Service selects exactly one running workload.

Rule: a Service's selector matches the pod labels of exactly one running workload
(Deployment, StatefulSet, InferenceService predictor or LeaderWorkerSet, replicas > 0) in its
namespace. A LeaderWorkerSet's pods carry ``leaderworkerset.sigs.k8s.io/name`` and, on leaders,
``leaderworkerset.sigs.k8s.io/worker-index: "0"`` beside its templates' labels.

- Two or more: traffic splits across them (two models, or two implementations of one).
  Message: ``Service coder-predictor selects 2 running workloads: candle-vllm (Deployment),
  coder (InferenceService); its traffic splits across them``. Names sorted by name, then kind.
- None: clients get no endpoints. Allowed only when the Service is declared parked
  (``facts.PARKED_ANNOTATION`` on the Service). Matching parked workloads (replicas 0) do not
  count as running; the message names them: ``... selects only parked clef-serve (Deployment)``.

Sources: spec "Facts each component must carry" (001, 003); kustomization.yaml in seed 001
("It must be the only workload with that label, or the Service splits traffic across two
models"); clef-candle.yaml ("The reference pytorch Deployment must stay at replicas 0 while
this runs, or the Service splits traffic across two different implementations").

Pods carry the labels their controller adds (:attr:`core.k8s.manifests.Workload.controller_labels`):
a Deployment's ``pod-template-hash``, a StatefulSet's ``controller-revision-hash``,
``statefulset.kubernetes.io/pod-name`` and ``apps.kubernetes.io/pod-index``, so a Service that
selects one StatefulSet pod (``pod-index: "0"``) selects that workload, and a selector on a hash
(one ReplicaSet's pods) is no collision.

InferenceService predictor pods carry the labels KServe gives them
(``serving.kserve.io/inferenceservice``, ``component: predictor``, ``app: isvc.<name>-predictor``)
beside the InferenceService's own labels (``core.k8s.manifests``).

Pod labels are indexed by (namespace, key, value) (:class:`policylib.stack_helpers.PodIndex`),
so the cost is linear in Services plus the matches, not Services x workloads.

Does NOT check: Services without a selector (manual Endpoints: not applicable, skipped);
ExternalName Services (no selector); a Service whose selector matches only pods of a kind the
pack does not model (bare Pods, Jobs, DaemonSets, custom resources with pod templates such as a
RayCluster): not reported as selecting nothing; pods of
workloads outside the stack; whether the single match is Ready.

The rule is judged and worded once, in :mod:`core.rulebook.services`; this module reads the manifests
and reports its breaches.
""",
)


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


declare.stack_policy(
    "service-target-port", service_target_port, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""service-target-port: each Service port reaches a port the selected pods listen on.

Rule: for every port of a Service and every running workload it selects, the ``targetPort``
(a number, or the name of a container port; absent = ``port``) resolves to a
``containerPort`` the pods declare, and, where the container runs vLLM or candle-vllm, to the
port it listens on (:func:`core.k8s.manifests.servers.endpoint`, the one model of a server's
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
""",
)
