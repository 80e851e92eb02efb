"""What routes requests to a model server, judged against the server's endpoint: an Ingress or Gateway
API route whose backend port the Service does not expose or whose Service port does not reach the API
port, an InferencePool that selects no server pods or sends to a port the server does not listen on
(``route-reaches-server``), and a route or proxy timeout shorter than the server's longest request
(``route-timeout-covers-request``). The policies read the objects (:mod:`core.k8s.manifests.objects`) and
the endpoint (:func:`core.k8s.manifests.servers.endpoint`) and call these judges.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.judging.registry import Breach, declare_policy, rule

ROUTE_SOURCE = ("kubernetes-sigs/gateway-api-inference-extension #2562 (pods whose port is not the pool's targetPorts "
                "are silently dropped); ai-dynamo/dynamo PR #1940 (an InferencePool's targetPortNumber 3000 and selector "
                "key that no frontend pod had); helm/charts PR #20245 (an Ingress servicePort the Service does not "
                "expose: 503)")
TIMEOUT_SOURCE = ("basetenlabs/truss PR #670 (nginx's 60 s default proxy_read_timeout cut TGI and vLLM generations); "
                  "llm-d/llm-d-benchmark PR #1617 (an HTTPRoute request timeout of 300 s aborted long turns with 502); "
                  "llm-d-incubation/llm-d-modelservice PR #45")


@rule("route-backend-port", "A route's backend port is one its Service exposes, and reaches the server's API port.",
      ROUTE_SOURCE, policy="route-reaches-server")
def backend_port(route: str, service: str, asked: str, exposed: Sequence[str], reaches: int | None,
                 api_port: int | None, server: str) -> Breach | None:
    """``asked``: the backend's port as written; ``exposed``: the Service's ports (``80 (http)``); ``reaches``: the
    pod port the matching Service port targets (None: no Service port matches); ``api_port``: where the server listens."""
    if reaches is None:
        return Breach(f"{route} sends to Service {service} port {asked}, which the Service does not expose (ports: "
                      f"{', '.join(exposed) or 'none'}): every request gets 503",
                      f"set the backend's port to one the Service exposes ({', '.join(exposed) or 'add the port'})")
    if api_port is not None and reaches != api_port:
        return Breach(f"{route} sends to Service {service} port {asked}, which reaches pod port {reaches}, but {server} "
                      f"serves its API on {api_port}: every request fails",
                      f"route to the Service port whose targetPort is {api_port}")
    return None


@rule("pool-selects-server", "An InferencePool selects running model server pods, on the port they listen on.",
      ROUTE_SOURCE, policy="route-reaches-server")
def pool_selects_server(pool: str, selector: str, selected: Sequence[str], target_ports: Sequence[int],
                        listens: Sequence[str]) -> Breach | None:
    """``pool``: the pool's name (the finding's subject names it); ``selected``: the running server workloads the
    selector matches; ``listens``: ``<server> on <port>`` for each; ``target_ports``: the pool's ports."""
    if not selected:
        return Breach(f"it selects {selector}, which no running model server's pods carry: the endpoint "
                      "picker has no endpoint and every request through the pool fails",
                      "set the pool's selector to labels of the server's pod template")
    ports = {int(x.rsplit(" ", 1)[-1]) for x in listens}
    if ports and not ports & set(target_ports):
        return Breach(f"it sends to port(s) {', '.join(str(p) for p in target_ports)}, but "
                      f"{', '.join(listens)}: the endpoint picker drops those pods and the pool has no endpoint",
                      f"set the pool's target port to {sorted(ports)[0]}")
    return None


@rule("route-timeout-covers-request", "A route's or proxy's timeout outlasts the longest request the server accepts.",
      TIMEOUT_SOURCE, policy="route-timeout-covers-request")
def timeout_covers(route: str, timeout_from: str, timeout: float, server: str, max_tokens: int, fastest_tps: float) -> Breach | None:
    """``max_tokens``: the server's --max-model-len (the most a request may generate); ``fastest_tps``: an upper
    bound of its decode rate, tokens/s (the card's bandwidth over the bytes one token reads), so
    ``max_tokens / fastest_tps`` is a lower bound of the longest request's time."""
    least = max_tokens / fastest_tps if fastest_tps > 0 else 0.0
    if timeout <= 0 or timeout >= least:
        return None
    return Breach(f"{route} cuts a request after {timeout:g} s ({timeout_from}), but {server} accepts requests of up to "
                  f"{max_tokens} tokens, which take at least {least:.0f} s to generate at its fastest decode "
                  f"({fastest_tps:.0f} tokens/s): long non-streaming requests get 504",
                  f"raise the timeout above {least:.0f} s (0s disables an HTTPRoute's), or lower --max-model-len")


declare_policy("route-reaches-server",
                "Ingress, Gateway API routes and InferencePools reach a model server's API port: the backend port is the "
                "Service's, it targets the API port, and a pool selects the server's pods on the port they listen on.",
                "Point each backend at the Service port that targets the server's --port, and each InferencePool at the "
                "server's pod labels and --port.",
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""route-reaches-server: Ingress, Gateway API routes and InferencePools reach a model server's API port.

Rule: (1) each Ingress / HTTPRoute / GRPCRoute backend that names a Service of the manifests names a
port that Service exposes (by number, or an Ingress's port name), and when the Service selects a running
model server, that Service port's targetPort is the port the server listens on
(:func:`core.k8s.manifests.endpoint`); (2) each InferencePool selects the pods of a running model server
and sends to a port one of them listens on (the endpoint picker drops a pod whose port is not among the
pool's target ports). Routes and pools are read once (:mod:`core.k8s.manifests.objects`).

A backend Service that is not among the manifests is not judged. Source: gateway-api-inference-extension
#2562, ai-dynamo/dynamo PR #1940, helm/charts PR #20245. Judged and worded once, in
:mod:`core.rulebook.routes`.
""",
)
declare_policy("route-timeout-covers-request",
                "An Ingress or route timeout is not shorter than the least time the server's longest request takes.",
                "Raise the proxy's or route's timeout (nginx proxy-read-timeout, HTTPRoute timeouts.request), or lower "
                "--max-model-len.",
    kind="stack",
    level="advisory",
    severity="medium",
    doc="""route-timeout-covers-request: a proxy's or route's timeout outlasts the server's longest request.

Rule: for each Ingress or Gateway API route backend whose timeout the manifests say (ingress-nginx's
``proxy-read-timeout`` annotation, or its 60 s default on an Ingress of class nginx; an HTTPRoute rule's
``timeouts.request`` / ``timeouts.backendRequest``), and each running vLLM server behind it (through
its Service, or its InferencePool's pods) whose model and card the stack's inventory knows: the timeout is not shorter than the least
time its longest request takes, ``--max-model-len`` tokens at the fastest decode the card allows (its
memory bandwidth over the weights one token reads on a card: a lower bound of the time, an MoE's
weights scaled by the experts a token uses). Read once in :mod:`core.k8s.manifests.objects`.

Advisory: short requests pass; streaming keeps a read timeout alive while tokens flow.
Source: basetenlabs/truss PR #670, llm-d-benchmark PR #1617. Judged and worded once, in
:mod:`core.rulebook.routes`.
""",
)
