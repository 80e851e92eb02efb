"""The NetworkPolicy rules of the pack, each judged and worded once (:mod:`core.judging.registry`): every
declared client of a Service gets through (``network-ingress-for-clients``), and a policy that
isolates a model server admits the port it listens on (``ingress-admits-server-port``). A judge
takes plain values (names, ports, what the policies admit); the policies read the NetworkPolicies
(:mod:`core.k8s.manifests.network_policies`) and call it.

The stack file writes the NetworkPolicy from ``llm-serving:network_policy`` (its ``gateway`` and
``clients`` ports) and a Service's ``clients``; its fixes name those keys.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.judging.registry import MANIFEST, STACK, Breach, declare_policy, only, rule

CLIENTS_SOURCE = "seed 002 (poimen-memory dropped by the NetworkPolicy for 34 days)"
#: The stack file's NetworkPolicy section, where its admitted ports are written.
NETWORK_POLICY_KEY = "llm-serving:network_policy"


@rule("network-clients-declared", "A Service's clients annotation is a JSON list of {name, namespace, port}.",
      CLIENTS_SOURCE, policy="network-ingress-for-clients")
def clients_declared(error: str | None) -> Breach | None:
    """``error``: why the clients annotation cannot be read (None: it can)."""
    if not error:
        return None
    return Breach(error, only(MANIFEST, 'write the clients annotation as a JSON list, e.g. [{"name": "gateway", '
                                        '"namespace": "gateway", "port": 80}]')
                  + only(STACK, "write clients as a list of {name, namespace, port}"))


@rule("network-client-port-exposed", "A declared client calls a port the Service exposes.", CLIENTS_SOURCE,
      policy="network-ingress-for-clients")
def client_port_exposed(client: str, port: int, exposed: Sequence[int]) -> Breach | None:
    """``client``: the client described (``client gateway (namespace gateway)``); ``exposed``: the
    Service's ports."""
    if port in exposed:
        return None
    return Breach(f"{client} calls port {port}, which the Service does not expose (ports: "
                  f"{', '.join(str(p) for p in sorted(exposed)) or 'none'})",
                  only(MANIFEST, "fix the client's port or add the port to the Service")
                  + only(STACK, "set the client's port in clients to "
                         + (f"one of {', '.join(str(p) for p in sorted(exposed))}" if exposed else "a port the Service exposes")))


@rule("network-client-reaches-api", "A declared client's Service port reaches the server's API port.", CLIENTS_SOURCE,
      policy="network-ingress-for-clients")
def client_reaches_api(client: str, port: int, pod_port: int, engine: str, api: int, side: str | None) -> Breach | None:
    """``port``: the Service port the client calls; ``pod_port``: where its targetPort lands on the
    pods; ``api``: the server's API port (:attr:`core.k8s.manifests.servers.Endpoint.port`); ``side``:
    what listens on ``pod_port`` instead (a side port, e.g. KV-cache transfer), or None."""
    if pod_port == api:
        return None
    other = f"{side}, not the API" if side else "not the API port"
    return Breach(f"{client} calls port {port} -> pod port {pod_port}, {other}: {engine} answers its API on {api}, "
                  "so the client's requests never reach it",
                  only(MANIFEST, "point the client at the Service port whose targetPort is the server's API port")
                  + only(STACK, "set the client's port in clients to the Service port that reaches the server's API"))


@rule("network-ingress-for-clients", "Each declared client of a Service is admitted on the pod's port.",
      CLIENTS_SOURCE, policy="network-ingress-for-clients")
def client_admitted(client: str, namespace: str, port: int, pod_port: int, refused: str | None,
                    backend: str = "") -> Breach | None:
    """``refused``: what the NetworkPolicies selecting the backend admit instead
    (``NetworkPolicy x admits gateway only on 80``; None: some rule admits the client on
    ``pod_port``); ``backend``: `` of <workload>`` when the Service selects several."""
    if refused is None:
        return None
    return Breach(f"{client} calls port {port} -> pod port {pod_port}{backend}; {refused}: packets are dropped and "
                  "the client sees a bare timeout",
                  only(MANIFEST, f"add an ingress rule admitting namespace {namespace} on port {pod_port}")
                  + only(STACK, f"list namespace {namespace} with port {pod_port} in {NETWORK_POLICY_KEY} "
                                "(gateway or clients) for the Service"))


@rule("ingress-admits-server-port", "A NetworkPolicy that isolates a model server admits its listen port.",
      "seed 002 networkpolicy.yaml (34 days of bare timeouts for poimen-memory)",
      policy="ingress-admits-server-port")
def server_port_admitted(engine: str, port: int, port_text: str, policies: Sequence[str], admitted: Sequence[str],
                         admits: bool) -> Breach | None:
    """``policies``: the NetworkPolicies isolating the server's pods; ``admitted``: the ports their
    rules name; ``admits``: some rule admits ``port`` from some source."""
    if admits or not policies:
        return None
    which = ", ".join(sorted(policies))
    return Breach(f"{engine} listens on {port_text}, but NetworkPolicy {which} admits ingress to its pods only on "
                  f"{', '.join(admitted) or 'no port'}: every packet to the server is dropped and clients see a bare timeout",
                  only(MANIFEST, f"add port {port} to an ingress rule of {which}, or make the server listen on an "
                                 "admitted port")
                  + only(STACK, f"add {port} to the ports of {NETWORK_POLICY_KEY} (gateway / clients) for the workload"))


@rule("network-egress-for-hub", "A NetworkPolicy that isolates the egress of a server fetching its model by hub id "
      "admits DNS and HTTPS.", "aws-network-policy-agent #230 (Egress listed with no DNS rule: name resolution "
      "fails at start)", policy="network-egress-for-hub")
def egress_for_hub(model: str, policies: Sequence[str], dns: bool, https: bool) -> Breach | None:
    """``policies``: the NetworkPolicies that isolate the pods' egress; ``dns`` / ``https``: some
    egress rule of theirs admits UDP 53 / TCP 443."""
    if not policies or (dns and https):
        return None
    missing = " and ".join(w for w, ok in (("DNS (UDP 53)", dns), ("HTTPS (TCP 443)", https)) if not ok)
    which = ", ".join(sorted(policies))
    return Breach(f"it fetches model {model} by hub id, but NetworkPolicy {which} isolates its egress with no rule "
                  f"for {missing}: resolving and downloading the model fail at start",
                  f"add egress rules to {which} for DNS (UDP and TCP 53 to kube-dns) and TCP 443 to the hub, or "
                  "serve the model from a volume with HF_HUB_OFFLINE=1")


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "ingress-admits-server-port",
    "A NetworkPolicy that isolates a model server's pods admits the port the server listens on.",
    (
        "Admit the server's listen port (vLLM --port, candle-vllm --p; 8080 for every server in llm-serving) in an ingress rule "
        "of the NetworkPolicy that selects its pods; in the stack file, llm-serving:network_policy gateway/clients ports."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""ingress-admits-server-port: a NetworkPolicy that isolates a model server admits the port it listens on.

Rule: for each running workload with a vLLM / candle-vllm container whose endpoint is known
(:func:`core.k8s.manifests.servers.endpoint`: ``--port`` / ``--p``, else the engine's default), the
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

""",
)

NETWORK_INGRESS_FOR_CLIENTS_CONFIG = {
    "podSelectorPeers": {
        "type": "string",
        "enum": ["admit", "refuse"],
        "default": "admit",
        "description": (
            "How a peer with a non-empty podSelector is judged for a client whose pod labels are not "
            "declared: admit (trust it) or refuse (require podSelector {} or none)."
        ),
    },
}


declare_policy(
    "network-ingress-for-clients",
    "Each declared client of a Service is admitted, on the pod's port, by a NetworkPolicy that selects the backend pods.",
    (
        "Add an ingress rule to the NetworkPolicy that selects the backend pods: from the client's namespace (namespaceSelector "
        "kubernetes.io/metadata.name: <namespace>) on the POD's port, i.e. the Service's targetPort (8080 for every server in "
        "llm-serving), not the Service port. In the stack file: llm-serving:network_policy gateway/clients ports."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
    config=NETWORK_INGRESS_FOR_CLIENTS_CONFIG,
    doc="""network-ingress-for-clients: every declared client of a Service gets through the NetworkPolicies.

Rule: for each declared client ``{name, namespace, port}`` of a Service (the JSON list in the
``facts.CLIENTS_ANNOTATION`` annotation; port = the Service port it calls) and each running
workload the Service selects: if some NetworkPolicy that isolates ingress selects the pods,
an ingress rule of one of those policies admits the client's namespace on the POD's port.
No NetworkPolicy selecting the pods = all ingress allowed = no finding.

Source: seed 002 networkpolicy.yaml: poimen-memory's egress was allowed and its packets were
dropped at llm-serving-ingress, which had no rule for namespace poimen; the client saw a
bare timeout and the server log stayed empty, so it looked like a hung engine for 34 days.
The coordinator's finding: the same seed admits the gateway on 80 and 8000 only, while the
gateway calls clef-serve:80 -> targetPort 8080; Pulumi.prod.yaml adds 8080.

NetworkPolicy semantics as Kubernetes applies them:
- A policy isolates ingress when ``policyTypes`` contains Ingress, or is absent.
- Ports match the pod's port after the Service's translation: the client's Service port ->
  its ``targetPort`` (a name resolved through the pods' named containerPorts). A rule port
  may be a number (with ``endPort``, a range) or a container port name; a rule without
  ports admits every port; protocol defaults to TCP.
- Peers: ``namespaceSelector`` is matched against the client namespace's labels, assumed to
  be only the automatic ``kubernetes.io/metadata.name=<namespace>``; ``podSelector`` alone
  means the policy's own namespace; both together = AND; an empty ``from`` (or none) admits
  every source; ``ipBlock`` cannot be judged and admits nothing here.
- A peer's non-empty ``podSelector`` cannot be proved to match the client pod (its labels are
  not declared): parameter ``podSelectorPeers`` decides; ``"admit"`` (default) trusts it,
  ``"refuse"`` requires an empty podSelector or none. ``podSelector: {}`` always admits.

Also violations: a clients annotation that is not a JSON list of ``{name, namespace, port}``,
a client that calls a port the Service does not expose, and a client whose Service port lands on
a side port of the server (one its container declares beside the API port, or one the server's
arguments open, :attr:`core.k8s.manifests.servers.Endpoint.side_ports`) rather than its API port.

Message: ``Service clef-serve: client gateway (namespace gateway) calls port 80 -> pod port
8080; NetworkPolicy llm-serving-ingress admits gateway only on 80, 8000: packets are dropped
and the client sees a bare timeout (34 days for poimen-memory, seed 002)``.

Skipped: Services without a selector or without running backends (service-selector-uniqueness
reports those); a targetPort name that resolves nowhere (service-target-port reports it).
Does NOT check: egress policies on the client's side (e.g. poimen/poimen-memory-llm-egress),
namespace labels other than kubernetes.io/metadata.name, ipBlock peers, CNI-specific policies
(Calico, Cilium). Cost: Services x NetworkPolicies of the backend's namespace, memoised per workload.

""",
)


declare_policy(
    "network-egress-for-hub",
    "A NetworkPolicy isolating the egress of a server that fetches its model by hub id admits DNS and HTTPS.",
    (
        "Add egress rules for DNS (UDP and TCP 53 to kube-dns) and TCP 443 to the Hugging Face hub, or serve "
        "the model from a volume with HF_HUB_OFFLINE=1."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""network-egress-for-hub: a NetworkPolicy that isolates a model server's egress lets it fetch its model.

Rule: a running vLLM server whose model is a hub id and whose Hugging Face client is online (no
``HF_HUB_OFFLINE=1``), selected by NetworkPolicies that isolate egress, is admitted DNS (UDP 53) and
HTTPS (TCP 443) by some egress rule of theirs: otherwise resolving and downloading the model fail at
start. Destinations (``to``) are not judged; a rule naming the port to any peer counts.

Source: aws-network-policy-agent #230. Judged and worded once, in :mod:`core.rulebook.network`.
""",
)
