"""The model server a container runs, read from its argv: :class:`ServerArgs` (vLLM and
candle-vllm flags as written) and :class:`Endpoint` (where it listens).

Tolerant: the pack judges other teams' YAML, so a flag no engine model knows is kept as
written, never an error. Plain values in, frozen dataclasses out.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from core.base import facts
from core.engines.config import CandleConfig, ServerSettings, VllmConfig
from core.engines.flags import spellings
from core.k8s.manifests.env import Environment
from core.k8s.manifests.read import whole, whole_number

# --- server arguments ---------------------------------------------------------------------

@dataclass(frozen=True)
class ServerArgs:
    """The parsed argv of a model server.

    ``flags`` maps each ``--flag`` to the values that followed it (``--a=b`` and ``--a b c``
    both work; a flag given twice keeps the last). ``raw`` is the argv as written.
    """

    engine: str  # "vllm" or "candle-vllm"
    raw: tuple[str, ...]
    flags: Mapping[str, tuple[str, ...]]
    positional: tuple[str, ...] = ()

    def has(self, flag: str) -> bool:
        return flag in self.flags

    def get(self, flag: str, default: str | None = None) -> str | None:
        values = self.flags.get(flag)
        return values[-1] if values else default

    def values(self, flag: str) -> tuple[str, ...]:
        return self.flags.get(flag, ())

    def setting(self, name: str) -> str | None:
        """VLLM setting ``name`` as written under the first of its spellings that has a value
        (:func:`core.engines.flags.spellings`: ``--tensor-parallel-size``, then ``-tp``), or None."""
        for flag in spellings(name):
            value = self.get(flag)
            if value:
                return value
        return None

    @property
    def model_arg(self) -> str | None:
        """VLLM ``--model`` (or the positional of ``vllm serve``); candle-vllm ``--w`` (or ``--m``)."""
        if self.engine == "vllm":
            return self.get(VllmConfig.FLAGS["model"]) or (self.positional[0] if self.positional else None)
        return self.get(CandleConfig.FLAGS["weights_path"]) or self.get(CandleConfig.FLAGS["model_id"])

    @property
    def served_model_names(self) -> tuple[str, ...]:
        """The names clients send as ``model``.

        vLLM: the ``--served-model-name`` values, else the ``--model`` value. candle-vllm:
        the basename of ``--w`` (its /v1/models reports ``coder-14b-fp16``, seed 001), else ``--m``.
        """
        if self.engine == "vllm":
            names = self.values(VllmConfig.FLAGS["served_model_names"])
            if names:
                return names
            return (self.model_arg,) if self.model_arg else ()
        w = self.get(CandleConfig.FLAGS["weights_path"])
        if w:
            return (posixpath.basename(w.rstrip("/")),)
        m = self.get(CandleConfig.FLAGS["model_id"])
        return (m,) if m else ()

    @property
    def tensor_parallel(self) -> int:
        """VLLM ``--tensor-parallel-size`` (default 1); candle-vllm: the count of ``--d`` devices."""
        if self.engine == "vllm":
            return whole(self.setting("tensor_parallel_size"), 1)
        devices = self.get(CandleConfig.FLAGS["devices"])
        return len([d for d in devices.split(",") if d.strip()]) if devices else 1

    def settings(self, image: str | None = None) -> ServerSettings:
        """The typed settings the capacity estimator takes, read back from the flags by the
        engine's model (:meth:`core.engines.config.VllmConfig.read`, :meth:`core.engines.config.CandleConfig.read`;
        an unknown or unreadable flag is left to the engine's default); ``image``: the container's."""
        if self.engine == "vllm":
            return VllmConfig.read(self.flags, tp=self.tensor_parallel, pp=self.pipeline_parallel, image=image)
        return CandleConfig.read(self.flags, tp=self.tensor_parallel)

    @property
    def pipeline_parallel(self) -> int:
        """VLLM ``--pipeline-parallel-size`` (default 1); candle-vllm has none (1)."""
        if self.engine == "vllm":
            return whole(self.setting("pipeline_parallel_size"), 1)
        return 1


#: at most one, so ``vllm serve --tensor-parallel-size 2 org/model`` keeps the model positional.
VLLM_MULTI_VALUE_FLAGS = frozenset({"--served-model-name", "--middleware", "--allowed-origins",
                                    "--allowed-methods", "--allowed-headers", "--api-key", "--lora-modules"})


def _vllm_boolean(flag: str) -> bool:
    """VLLM switches that take no value (``--enable-*``, ``--disable-*``, ``--no-*``,
    ``--trust-remote-code``, ``--enforce-eager``)."""
    name = flag.replace("_", "-")
    return name.startswith(("--enable-", "--disable-", "--no-")) or name in ("--trust-remote-code", "--enforce-eager")


def parse_args(engine: str, argv: Iterable[str]) -> ServerArgs:
    """Parse a server argv into :class:`ServerArgs` (argparse-like, tolerant). For vLLM a flag
    takes one value (several only for :data:`VLLM_MULTI_VALUE_FLAGS`, none for a switch), the
    rest are positional (``vllm serve <model>``), and a flag's ``_`` is read as ``-``, as vLLM's
    FlexibleArgumentParser reads it (``--tensor_parallel_size`` is ``--tensor-parallel-size``)."""
    raw = tuple(str(a) for a in argv)
    flags: dict[str, tuple[str, ...]] = {}
    positional: list[str] = []
    current: str | None = None
    for token in raw:
        if token.startswith("-") and len(token) > 1 and not _is_number(token):
            name, eq, value = token.partition("=")
            if engine == "vllm" and name.startswith("--"):
                name = "--" + name[2:].replace("_", "-")  # FlexibleArgumentParser: --max_model_len is --max-model-len
            if eq:
                flags[name] = (value,)
                current = None
            else:
                flags[name] = ()
                current = None if engine == "vllm" and _vllm_boolean(name) else name
        elif current is not None:
            flags[current] = flags[current] + (token,)
            if engine == "vllm" and current not in VLLM_MULTI_VALUE_FLAGS:
                current = None
        else:
            positional.append(token)
    return ServerArgs(engine=engine, raw=raw, flags=flags, positional=tuple(positional))


def _is_number(token: str) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


# --- where a server listens ---------------------------------------------------------------

#: The listen-port flag of each engine (vLLM ``--port``; candle-vllm ``--p``, ``--port`` accepted too).
PORT_FLAGS: dict[str, tuple[str, ...]] = {"vllm": (VllmConfig.FLAGS["port"],), "candle-vllm": (CandleConfig.FLAGS["port"], "--port")}


#: The route each engine answers without an API key and once the model is loaded (vLLM's
#: ``/health``, outside the ``/v1`` routes its API-key middleware guards; candle-vllm has no
#: health route, its ``/v1/models`` answers once loaded, coder.yaml's probes).
HEALTH_PATHS: dict[str, str] = {"vllm": "/health", "candle-vllm": "/v1/models"}
#: The routes vLLM's API key guards (vllm/entrypoints/openai/api_server.py ``AuthenticationMiddleware``:
#: only paths starting ``/v1`` need the bearer token).
VLLM_KEYED_PREFIX = "/v1"
#: The env variable vLLM reads its API key from when ``--api-key`` is not given (vllm/envs.py).
VLLM_API_KEY_ENV = "VLLM_API_KEY"


@dataclass(frozen=True)
class Endpoint:
    """Where a model server listens and how it is called, derived once from its argv and env: the
    one model the probe, Service, NetworkPolicy and client checks share.

    ``host`` as given by ``--host`` (None: the engine's default, every interface); ``port``
    (``--port`` / ``--p``, else the engine's default, ``facts.ENGINE_DEFAULT_PORTS``: vLLM 8000,
    candle-vllm 2000) and ``port_flag``, the flag that set it (None when the default applies);
    ``scheme`` ``HTTPS`` when vLLM is given ``--ssl-certfile`` (uvicorn then serves TLS only),
    else ``HTTP``; ``api_key``, how a key is required (``--api-key``, ``env VLLM_API_KEY (from
    Secret s, key k)``; None: no key; vLLM only), and ``api_key_maybe``, an ``envFrom`` source
    that may set ``VLLM_API_KEY`` (not judged); ``health_path``, the route that answers without
    a key (:data:`HEALTH_PATHS`); ``served_model_names``, what clients send as ``model``;
    ``side_ports``, port -> what listens there besides the API, from the server's own
    arguments (``--kv-transfer-config``'s ``kv_port``, ``VLLM_NIXL_SIDE_CHANNEL_PORT``).
    """

    engine: str
    host: str | None
    port: int
    port_flag: str | None
    scheme: str = "HTTP"
    api_key: str | None = None
    api_key_maybe: str | None = None
    health_path: str = "/health"
    served_model_names: tuple[str, ...] = ()
    side_ports: Mapping[int, str] = field(default_factory=dict)

    @property
    def port_text(self) -> str:
        """``"8080 (--port)"`` or ``"8000 (vLLM's default, no --port)"`` as messages show it."""
        if self.port_flag:
            return f"{self.port} ({self.port_flag})"
        return f"{self.port} ({self.engine}'s default, no {PORT_FLAGS[self.engine][0]})"

    def needs_key(self, path: str) -> bool:
        """True when a request to ``path`` without the bearer token is refused (401)."""
        return self.api_key is not None and self.engine == "vllm" and path.startswith(VLLM_KEYED_PREFIX)


def _side_ports(server: ServerArgs, env: Mapping[str, str]) -> dict[int, str]:
    """Ports a vLLM server opens besides its API, from its own arguments: ``--kv-transfer-config``'s
    ``kv_port`` (the KV-cache transfer listener) and ``VLLM_NIXL_SIDE_CHANNEL_PORT`` (NIXL's handshake)."""
    out: dict[int, str] = {}
    if server.engine != "vllm":
        return out
    raw = server.get("--kv-transfer-config")
    if raw:
        try:
            config = json.loads(raw)
        except ValueError:
            config = None
        port = whole_number(config.get("kv_port")) if isinstance(config, dict) else None
        if port:
            out[port] = "--kv-transfer-config kv_port (KV-cache transfer)"
    nixl = whole_number(env.get("VLLM_NIXL_SIDE_CHANNEL_PORT"))
    if nixl:
        out[nixl] = "VLLM_NIXL_SIDE_CHANNEL_PORT (NIXL side channel)"
    return out


def endpoint(server: ServerArgs | None, environment: Environment | None = None) -> Endpoint | None:
    """The :class:`Endpoint` of a parsed server argv (:attr:`Container.server`) and its container's
    ``environment`` (:attr:`Container.environment`; None: no env), the one model of where a server
    listens that the probe, Service and NetworkPolicy checks share. None when there is no server,
    or its argv cannot be read as the server will see it: a port or host that is not a literal
    (``$(PORT)`` of a variable the manifests do not define) or an argv still wrapped in a shell
    (``sh -c "vllm serve ..."``), where assuming the default port would be a false alarm."""
    if server is None or server.has("-c") or any("${" in t for t in server.raw):
        return None
    if any("$(" in v for flag in ("--host", *PORT_FLAGS[server.engine]) for v in server.values(flag)):
        return None
    env = environment if environment is not None else Environment()
    host = server.get("--host")
    port, port_flag = facts.ENGINE_DEFAULT_PORTS[server.engine], None
    for flag in PORT_FLAGS[server.engine]:
        value = server.get(flag)
        if value is not None:
            if not value.strip().isdigit():
                return None
            port, port_flag = int(value), flag
            break
    api_key = api_key_maybe = None
    scheme = "HTTP"
    if server.engine == "vllm":
        if server.values("--api-key"):
            api_key = "--api-key"
        elif env.is_set(VLLM_API_KEY_ENV) and (env.value(VLLM_API_KEY_ENV) is None or env.value(VLLM_API_KEY_ENV)):
            api_key = env.describe(VLLM_API_KEY_ENV)
        elif env.is_set(VLLM_API_KEY_ENV) is None:
            api_key_maybe = env.describe(VLLM_API_KEY_ENV)
        if server.get("--ssl-certfile"):
            scheme = "HTTPS"
    return Endpoint(server.engine, host, port, port_flag, scheme, api_key, api_key_maybe,
                    HEALTH_PATHS[server.engine], server.served_model_names, _side_ports(server, env.known()))


#: Engines whose flags, capacity and parallelism the pack judges; others are recognised
#: (:attr:`core.k8s.manifests.pods.Container.call`) and reported as not judged.
MODELLED_ENGINES = ("vllm", "candle-vllm")
