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
from core.judging.registry import MANIFEST, STACK, Breach, Setting, describe_policy, only, rule

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


# --- the pack policies' own text -----------------------------------------------------------------

describe_policy(
    "served-model-name-unique",
    "Each served model name is answered by one running model server only.",
    (
        "Remove the name from all but one server's --served-model-name list (vLLM) or rename the weights directory given to --w "
        "(candle-vllm); move clients that send the old name to the server that keeps it, as seed 002 planned ('resolve it by "
        "moving the client host')."
    ),
)

describe_policy(
    "service-link-env-collision",
    "No Service of the namespace injects service-link variables into a model server's own env prefix (VLLM_).",
    (
        "Set enableServiceLinks: false in the model server's pod spec (Deployment spec.template.spec, InferenceService "
        "spec.predictor); the servers here find each other through DNS, not service-link variables. Or rename the Service so its"
        " upper-cased name does not start with the engine's prefix (VLLM_). The components set enableServiceLinks: false."
    ),
)

describe_policy(
    "service-selector-uniqueness",
    "Each Service's selector matches the pods of exactly one running workload (none only when the Service is declared parked).",
    (
        "Two or more: give the one workload the Service should reach a label the others do not carry and select it, or park the "
        "others (replicas 0). None: fix the selector to the serving workload's pod labels (stack file: selects: <workload> under"
        " llm-serving:services), start the workload, or declare the Service parked (stack file: parked: {reason: ...} on the "
        "Service; plain YAML: the llm-serving.riotpiao.com/parked annotation and a reason)."
    ),
)

describe_policy(
    "service-target-port",
    "Each Service targetPort resolves to a containerPort the selected pods declare and their server listens on.",
    (
        "Set the Service port's targetPort to the server's listen port (8080 for every server in llm-serving: vLLM --port=8080, "
        "candle-vllm --p 8080), declare it as a containerPort, and name the containerPort when the targetPort is a name."
    ),
)
