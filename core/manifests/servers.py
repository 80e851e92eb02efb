"""The model server a container runs, read from its argv: :class:`ServerArgs` (vLLM and
candle-vllm flags as written) and :class:`Endpoint` (where it listens).

Tolerant: the pack judges other teams' YAML, so a flag no engine model knows is kept as
written, never an error. Plain values in, frozen dataclasses out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from core import facts
from core.engines import CandleConfig, ServerSettings, VllmConfig
from core.flags import spellings
from core.manifests.read import whole

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
        (:func:`core.flags.spellings`: ``--tensor-parallel-size``, then ``-tp``), or None."""
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
        engine's model (:meth:`core.engines.VllmConfig.read`, :meth:`core.engines.CandleConfig.read`;
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


@dataclass(frozen=True)
class Endpoint:
    """Where a model server listens, from its argv: ``host`` as given by ``--host`` (None: the
    engine's default, every interface), ``port`` (``--port`` / ``--p``, else the engine's default,
    ``facts.ENGINE_DEFAULT_PORTS``: vLLM 8000, candle-vllm 2000) and ``port_flag``, the flag that
    set it (None when the default applies)."""

    engine: str
    host: str | None
    port: int
    port_flag: str | None

    @property
    def port_text(self) -> str:
        """``"8080 (--port)"`` or ``"8000 (vLLM's default, no --port)"`` as messages show it."""
        if self.port_flag:
            return f"{self.port} ({self.port_flag})"
        return f"{self.port} ({self.engine}'s default, no {PORT_FLAGS[self.engine][0]})"


def endpoint(server: ServerArgs | None) -> Endpoint | None:
    """The :class:`Endpoint` of a parsed server argv (:attr:`Container.server`), the one model of
    where a server listens that the probe, Service and NetworkPolicy checks share. None when there
    is no server, or its argv cannot be read as the server will see it: a port or host that is not
    a literal (``$(PORT)``) or an argv still wrapped in a shell (``sh -c "vllm serve ..."``), where
    assuming the default port would be a false alarm."""
    if server is None or server.has("-c") or any("$(" in t or "${" in t for t in server.raw):
        return None
    host = server.get("--host")
    for flag in PORT_FLAGS[server.engine]:
        value = server.get(flag)
        if value is not None:
            return Endpoint(server.engine, host, int(value), flag) if value.strip().isdigit() else None
    return Endpoint(server.engine, host, facts.ENGINE_DEFAULT_PORTS[server.engine], None)


#: Engines whose flags, capacity and parallelism the pack judges; others are recognised
#: (:attr:`core.manifests.pods.Container.call`) and reported as not judged.
MODELLED_ENGINES = ("vllm", "candle-vllm")
