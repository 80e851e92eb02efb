"""Where a model server listens (:func:`core.k8s.manifests.servers.endpoint`): a pod-reachable host,
the port its probes knock on and its containerPort names. The components render one port for
all of them (8080), so these judge hand-written manifests.

Source: coder.yaml and every server of the namespace (``--host=0.0.0.0 --port=8080``, candle-vllm
``--p 8080``, probes on 8080).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from core.engines.settings import flag_setting
from core.judging.registry import Breach, Setting, declare_policy, rule

# --- where a server listens -------------------------------------------------------------------


def loopback_host(host: str | None) -> bool:
    """True for a listen address only the pod itself reaches (``127.0.0.0/8``, ``localhost``,
    ``::1``): the Service's endpoints and the kubelet's probes connect to the pod IP, so a
    server bound there is unreachable. None (the engine's default: every interface) is False."""
    if host is None:
        return False
    h = host.strip().strip("[]").lower()
    return h in ("localhost", "::1", "ip6-localhost") or h.startswith("127.")


HOST = flag_setting("host", in_stack_file=False)
CONTAINER_PORT = Setting("container_port", None, "containerPort")
_SOURCE = "coder.yaml (--host=0.0.0.0 --port=8080, probes on 8080)"


@rule("server-listen-endpoint", "A model server listens on a pod-reachable host.", _SOURCE,
      policy="server-listen-endpoint")
def reachable_host(engine: str, host: str | None) -> Breach | None:
    """:func:`core.rulebook.endpoints.loopback_host`: the Service and the probes connect to the pod IP."""
    if not loopback_host(host):
        return None
    return Breach(f"{engine} listens on --host {host}, a loopback address: the Service and the kubelet's probes "
                  "connect to the pod IP and are refused",
                  f"set {HOST.to('0.0.0.0')} (or drop --host: the engine then listens on every interface)")


@rule("probe-targets-listen-port", "Every probe with a port targets the port the server listens on.", _SOURCE,
      policy="server-listen-endpoint")
def probe_on_listen_port(field: str, port: int | None, shown: str, engine: str, listen: int,
                         listen_text: str) -> Breach | None:
    """``field``: the probe (``startupProbe``); ``port``: its port number (None: a name no
    containerPort carries), ``shown`` as written; ``listen``: the server's port, ``listen_text``
    how it was found (``8000 (vllm's default, no --port)``)."""
    if port == listen:
        return None
    return Breach(f"its {field} targets {shown}, but {engine} listens on {listen_text}",
                  f"point the {field} at port {listen}, or make the server listen where the probe knocks")


@rule("container-port-is-listen-port", "A declared containerPort names the port the server listens on.", _SOURCE,
      policy="server-listen-endpoint")
def container_port(ports: tuple[int, ...], engine: str, listen: int, listen_text: str) -> Breach | None:
    """``ports``: the container's containerPorts (none declared: nothing to judge)."""
    if not ports or listen in ports:
        return None
    return Breach(f"declares containerPort {', '.join(str(p) for p in ports)}, but {engine} listens on {listen_text}",
                  f"declare {CONTAINER_PORT} {listen}, or set the server's port flag to the declared port")


_TLS_SOURCE = ("vLLM's --ssl-keyfile / --ssl-certfile (vllm/entrypoints/openai/cli_args.py: uvicorn then serves TLS "
               "only); Kubernetes httpGet probes default to scheme HTTP (core/v1 HTTPGetAction)")


@rule("probe-scheme-is-server-scheme", "Every HTTP probe speaks the scheme the server serves.", _TLS_SOURCE,
      policy="server-listen-endpoint")
def probe_scheme(field: str, probe: str, server: str, engine: str) -> Breach | None:
    """``field``: the probe (``readinessProbe``); ``probe``: its ``httpGet.scheme`` (``HTTP`` when
    omitted); ``server``: the scheme the endpoint serves (:attr:`core.k8s.manifests.servers.Endpoint.scheme`)."""
    if probe.upper() == server.upper():
        return None
    why = ("the server serves TLS only (--ssl-certfile), so a plain-HTTP request gets no answer and the probe never passes"
           if server.upper() == "HTTPS" else "the server speaks plain HTTP, so the TLS handshake fails")
    return Breach(f"its {field} uses scheme {probe.upper()}, but {engine} serves {server.upper()}: {why}",
                  f"set the {field}'s httpGet.scheme: {server.upper()} (the kubelet does not verify the certificate)")


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "server-listen-endpoint",
    "Model servers listen on a pod-reachable host, on the port their probes and containerPorts name.",
    (
        "Run the server with --host=0.0.0.0 (or no --host) and one port: vLLM --port, candle-vllm --p (8080 for every server in "
        "llm-serving); declare it as the containerPort and point the startup, liveness and readiness probes at it. The "
        "components render exactly that."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""server-listen-endpoint: a model server listens where its pod is reached, and its probes knock there.

Rule, for each vLLM / candle-vllm container, from the one model of where it listens
(:func:`core.k8s.manifests.servers.endpoint`: ``--host``; ``--port`` / candle-vllm ``--p``, else the
engine's default port, vLLM 8000 and candle-vllm 2000):

- the host is not a loopback address (``--host 127.0.0.1``, ``localhost``, ``::1``,
  :func:`core.rulebook.endpoints.loopback_host`): the Service's endpoints and the kubelet's probes connect to
  the pod IP, so a server bound to loopback answers nobody but itself;
- every ``httpGet`` probe speaks the server's scheme: HTTPS when vLLM is given ``--ssl-certfile``
  (uvicorn then serves TLS only), else HTTP (the probe's default);
- every startup, liveness and readiness probe with a port (``httpGet``, ``tcpSocket``,
  ``grpc``; a named port resolved through the container's named ``containerPort``) targets
  the listen port: a startup probe on another port never succeeds and the kubelet kills the
  server when its budget runs out, a readiness probe there keeps the pod out of the Service;
- on a cluster whose inventory sets ``house_conventions`` (the user's), when the container
  declares ``containerPort``s, the listen port is one of them. Elsewhere a containerPort is
  informational (a metrics port beside the server is common) and only a Service ``targetPort``
  that reaches no listener is wrong, which service-target-port judges with the same endpoint.

Source: coder.yaml and every server of the namespace
(``--host=0.0.0.0 --port=8080``, candle-vllm ``--p 8080``, probes on 8080).

Does not check: servers whose argv cannot be read literally (a ``$(VAR)`` port, an ``sh -c``
script; ``endpoint`` is None and nothing is judged), exec probes, containers that are not
vLLM or candle-vllm, the NetworkPolicy side (ingress-admits-server-port).
""",
)
