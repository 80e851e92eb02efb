"""The Service rules the policy pack and the stack file share, each judged and worded once
(:mod:`core.judging.registry`): one served model name a running server (``served-model-name-unique``), one
running workload behind each Service (``service-selector-uniqueness``), a targetPort the pods
listen on (``service-target-port``), no service-link variable in a server's own environment
namespace (``service-link-env-collision``). A judge takes plain values: names, counts, ports and
the :mod:`core.k8s.manifests` read model's endpoints; the policies walk the stack and call it.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from core.base import facts
from core.engines.settings import S
from core.judging.registry import MANIFEST, STACK, Breach, Setting, declare_policy, only, rule

if TYPE_CHECKING:  # pragma: no cover
    from core.k8s.manifests.servers import Endpoint

#: vLLM's ``--served-model-name`` (candle-vllm answers the basename of ``--w``).
SERVED_MODEL_NAMES = S.served_model_names
SELECTS = Setting("selects", "selects", "the selector")
ENABLE_SERVICE_LINKS = Setting("enable_service_links", None, "enableServiceLinks")

SELECTOR_SOURCE = "seed 002 (a Service that could select two models)"


@rule("served-model-name-unique", "One served model name is answered by one running server only.",
      "seed 002 (two servers answering one served model name)", policy="served-model-name-unique")
def served_name_unique(name: str, answering: Sequence[str]) -> Breach | None:
    """``answering``: the running servers that answer ``name``, each described
    (``coder (InferenceService)``), in the order the message lists them."""
    if len(answering) < 2:
        return None
    return Breach(
        f"answered by {len(answering)} running servers: {', '.join(answering)}; a client sending model={name} "
        "gets a different model depending on the host it calls",
        f"give each server its own {SERVED_MODEL_NAMES}, or park all but one"
        + only(STACK, " (parked: {reason: ...})"),
    )


@rule("service-selector-uniqueness", "Each Service selects one running workload.", SELECTOR_SOURCE,
      policy="service-selector-uniqueness")
def selects_one(selected: Sequence[str], selector: str) -> Breach | None:
    """``selected``: the running workloads the Service selects, each described; ``selector``: the
    selector as ``k=v, ...``."""
    if len(selected) < 2:
        return None
    return Breach(
        f"selects {len(selected)} running workloads: {', '.join(selected)}; its traffic splits across them "
        f"(selector {selector})",
        only(MANIFEST, "add a label that only one workload's pods carry (e.g. app.kubernetes.io/instance) to the selector")
        + only(STACK, f"point {SELECTS} at one workload (the component selects by its instance label)"),
    )


@rule("service-selects-running", "A Service with no running workload behind it is declared parked.", SELECTOR_SOURCE,
      policy="service-selector-uniqueness")
def selects_running(running: int, parked: Sequence[str], service_parked: bool,
                    selector: str | None = None) -> Breach | None:
    """``running``: how many running workloads the Service selects; ``parked``: the parked ones it
    selects, each described; ``service_parked``: the Service itself is declared parked;
    ``selector``: the selector as ``k=v, ...`` (None: the stack file's ``selects`` names it)."""
    if running or service_parked:
        return None
    what = f"only parked {', '.join(parked)}" if parked else "no workload"
    shown = f" (selector {selector})" if selector is not None else ""
    return Breach(
        f"selects {what}{shown}: it has no running endpoints and its clients get connection errors",
        only(MANIFEST, f"select a running workload, or declare the Service parked with annotation "
                       f"{facts.PARKED_ANNOTATION}: <reason>")
        + only(STACK, f"point {SELECTS} at a running workload, or park the Service too (parked: {{reason: ...}})"),
    )


@rule("service-target-port", "Each Service port reaches a port the selected pods listen on.",
      "spec, stable Services (coder-service.yaml: port 80 and 8080 -> 8080)", policy="service-target-port")
def target_port(target: object, number: int | None, who: str, port_names: Collection[str],
                declared: Sequence[int], containers: Sequence[tuple[str, Collection[int], Endpoint | None]],
                scrape_port: bool = False) -> Breach | None:
    """One Service port against one selected workload ``who``: ``target``, its targetPort as
    written; ``number``, that port resolved on the pods (None: a name no container port has);
    ``port_names``, the pods' named ports; ``declared``, their containerPorts; ``containers``,
    ``(name, containerPorts, endpoint)`` each (:func:`core.k8s.manifests.servers.endpoint`);
    ``scrape_port``, the Service's own ``prometheus.io/port`` annotation names this port while
    another port of the Service reaches the server's API port (default False).

    A scrape port passes: it is where Prometheus looks for a sidecar's metrics (AIBrix's samples:
    port 8080 for the aibrix-runtime sidecar beside serve 8000), not where clients are served.

    A server listening on the port passes (containerPort lists are informational), and so does
    a side port: one the server's own arguments open (:attr:`core.k8s.manifests.servers.Endpoint.side_ports`:
    KV-cache transfer, NIXL's side channel), or a containerPort of a container that declares its
    API port too (production-stack's engine Service: the API, ``zmq-port`` and ``ucx-port``). A port
    no container declares, when some are, fails; else the containers declaring it (or all, when
    none declares any) must not run a server on another port: the API reached at the wrong port."""
    shown = f"targetPort {target if number is None else number}"
    if number is None:
        return Breach(f"{shown} names no containerPort of {who} (named ports: {', '.join(sorted(port_names)) or 'none'}); "
                      "Kubernetes publishes no endpoint for it", "name the container port or use the number")
    if scrape_port or any(ep is not None and (ep.port == number or number in ep.side_ports) for _, _, ep in containers):
        return None
    if declared and number not in declared:
        return Breach(f"{shown} is not a containerPort of {who} (containerPorts: {', '.join(map(str, declared))}); "
                      "connections are refused", "set targetPort to the port the server listens on")
    wrong = []
    for name, ports, ep in containers:
        if declared and number not in ports:
            continue
        if ep is None:
            return None
        if ep.port in ports:
            continue  # the container declares its API port as well: this one is a side port beside it
        wrong.append(f"container {name} runs {ep.engine} on {ep.port_text}")
    if not wrong:
        return None
    return Breach(f"{shown} reaches pod port {number} of {who}, but {'; '.join(wrong)}; connections are refused",
                  only(MANIFEST, "make the server's port flag, the containerPort and the targetPort agree")
                  + only(STACK, "set port to the Service's targetPort on the workload it selects"))


@rule("service-link-env-collision", "No Service injects service-link variables a model server parses.",
      "vllm-project/vllm #34199 (a Service named vllm injects VLLM_PORT=tcp://<ip>:<port>, vLLM refuses to start)",
      policy="service-link-env-collision")
def service_links(service: str, engine: str, prefix: str, hits: Sequence[str]) -> Breach | None:
    """``hits``: the variables Service ``service`` injects that ``engine`` parses in its own
    environment namespace ``prefix`` (``VLLM_``), the container's own ``env`` left out."""
    if not hits:
        return None
    return Breach(
        f"service links are on (enableServiceLinks unset or true), so Service {service} makes the kubelet "
        f"inject {', '.join(hits)} into {engine}'s own {prefix} environment namespace"
        + (f"; vLLM reads {prefix}PORT as a number and refuses to start on tcp://<ip>:<port>"
           if f"{prefix}PORT" in hits else ""),
        f"set {ENABLE_SERVICE_LINKS.to(False)} in the pod spec, or rename Service {service}"
        + only(STACK, " (the components set it on every pod: preview again from the workload)"),
    )


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "served-model-name-unique",
    "Each served model name is answered by one running model server only.",
    (
        "Remove the name from all but one server's --served-model-name list (vLLM) or rename the weights directory given to --w "
        "(candle-vllm); move clients that send the old name to the server that keeps it, as seed 002 planned ('resolve it by "
        "moving the client host')."
    ),
    kind="stack",
    level="advisory",
    severity="medium",
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

""",
)

declare_policy(
    "service-link-env-collision",
    "No Service of the namespace injects service-link variables into a model server's own env prefix (VLLM_).",
    (
        "Set enableServiceLinks: false in the model server's pod spec (Deployment spec.template.spec, InferenceService "
        "spec.predictor); the servers here find each other through DNS, not service-link variables. Or rename the Service so its"
        " upper-cased name does not start with the engine's prefix (VLLM_). The components set enableServiceLinks: false."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
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

""",
)

declare_policy(
    "service-selector-uniqueness",
    "Each Service's selector matches the pods of exactly one running workload (none only when the Service is declared parked).",
    (
        "Two or more: give the one workload the Service should reach a label the others do not carry and select it, or park the "
        "others (replicas 0). None: fix the selector to the serving workload's pod labels (stack file: selects: <workload> under"
        " llm-serving:services), start the workload, or declare the Service parked (stack file: parked: {reason: ...} on the "
        "Service; plain YAML: the llm-serving.riotpiao.com/parked annotation and a reason)."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
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

""",
)

declare_policy(
    "service-target-port",
    "Each Service targetPort resolves to a containerPort the selected pods declare and their server listens on.",
    (
        "Set the Service port's targetPort to the server's listen port (8080 for every server in llm-serving: vLLM --port=8080, "
        "candle-vllm --p 8080), declare it as a containerPort, and name the containerPort when the targetPort is a name."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
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

""",
)
