"""A normalised, read-only view of the Kubernetes objects the policies judge.

Every policy reads resources through this module, so a Deployment and an InferenceService
predictor look the same to it: pods with labels, a node, cards, containers, a rollout
strategy and the component annotations (``core.facts``). It works on the properties
the analyzer receives (the Pulumi CLI's, the offline runner's from the program, or a plain
manifest's), which are the manifest itself: ``apiVersion``, ``kind``, ``metadata``, ``spec``.
Properties may be pulumi-policy proxies, so only the Mapping / Sequence protocols are used.

Nothing here reports a violation; policies decide.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from decimal import Decimal
from typing import Any, Iterable, Optional

from core import allocation as _allocation
from core import argv as _argv
from core import facts
from core import quantity as _quantity

from policylib import decode_once

DEPLOYMENT_TYPES = {"kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet"}
ISVC_TYPE = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
SERVICE_TYPE = "kubernetes:core/v1:Service"
NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
WORKLOAD_TYPES = DEPLOYMENT_TYPES | {ISVC_TYPE}
#: LeaderWorkerSet (sigs.k8s.io/lws): groups of a leader pod and ``size - 1`` worker pods, one
#: model server across the group (multi-node TP/PP). In the stack view only (Service selection,
#: card and memory allocation); the per-pod server policies do not judge it (:mod:`policylib.coverage`).
LWS_TYPE = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
#: Labels the LeaderWorkerSet controller puts on every pod of a group (leader: worker-index 0).
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
#: The container name KServe gives the ``spec.predictor.model`` container.
KSERVE_MODEL_CONTAINER = "kserve-container"


def type_token(api_version: str, kind: str) -> str:
    """The Pulumi type token the kubernetes provider uses for ``apiVersion``/``kind``.

    ``v1``/``Service`` -> ``kubernetes:core/v1:Service``; ``apps/v1``/``Deployment`` ->
    ``kubernetes:apps/v1:Deployment``; a CRD keeps its group: ``kubernetes:serving.kserve.io/v1beta1:InferenceService``.
    """
    if "/" not in api_version:
        api_version = "core/" + api_version
    return f"kubernetes:{api_version}:{kind}"


# --- small readers ------------------------------------------------------------------------

def _m(value: Any) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def _s(value: Any) -> Sequence:
    return value if isinstance(value, Sequence) and not isinstance(value, str) else ()


def plain(value: Any) -> Any:
    """A deep copy of ``value`` as plain dicts and lists (proxies unwrapped)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    return value


def quantity(value: Any) -> Optional[Decimal]:
    """A Kubernetes quantity ("12Gi", "500m", "2", 2) as a Decimal in base units, or None when
    it is missing or invalid (:func:`core.quantity.parse_or_none`; invalid ones are listed by
    :attr:`Container.invalid_quantities`)."""
    return _quantity.parse_or_none(value)


def mib(value: Any) -> Optional[float]:
    """A memory quantity in MiB ("12Gi" -> 12288.0), or None when missing or invalid."""
    q = quantity(value)
    return None if q is None else float(q / _quantity.MIB)


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

    def get(self, flag: str, default: Optional[str] = None) -> Optional[str]:
        values = self.flags.get(flag)
        return values[-1] if values else default

    def values(self, flag: str) -> tuple[str, ...]:
        return self.flags.get(flag, ())

    @property
    def model_arg(self) -> Optional[str]:
        """vLLM ``--model`` (or the positional of ``vllm serve``); candle-vllm ``--w`` (or ``--m``)."""
        if self.engine == "vllm":
            return self.get("--model") or (self.positional[0] if self.positional else None)
        return self.get("--w") or self.get("--m")

    @property
    def served_model_names(self) -> tuple[str, ...]:
        """The names clients send as ``model``.

        vLLM: the ``--served-model-name`` values, else the ``--model`` value. candle-vllm:
        the basename of ``--w`` (its /v1/models reports ``coder-14b-fp16``, seed 001), else ``--m``.
        """
        if self.engine == "vllm":
            names = self.values("--served-model-name")
            if names:
                return names
            return (self.model_arg,) if self.model_arg else ()
        w = self.get("--w")
        if w:
            return (posixpath.basename(w.rstrip("/")),)
        m = self.get("--m")
        return (m,) if m else ()

    @property
    def tensor_parallel(self) -> int:
        """vLLM ``--tensor-parallel-size`` (default 1); candle-vllm: the count of ``--d`` devices."""
        if self.engine == "vllm":
            return _int(self.get("--tensor-parallel-size") or self.get("-tp"), 1)
        devices = self.get("--d")
        return len([d for d in devices.split(",") if d.strip()]) if devices else 1

    @property
    def pipeline_parallel(self) -> int:
        """vLLM ``--pipeline-parallel-size`` (default 1); candle-vllm has none (1)."""
        if self.engine == "vllm":
            return _int(self.get("--pipeline-parallel-size") or self.get("-pp"), 1)
        return 1


def _int(value: Any, default: int) -> int:
    """A whole number from an int, a whole float or numeric text; ``default`` otherwise.

    Over the analyzer protocol every number is a protobuf double, so ``replicas: 0`` arrives
    as ``0.0``; it must read as 0, not fall back to the default.
    """
    if value is None or isinstance(value, bool):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return int(number) if number.is_integer() else default


#: vLLM flags that take several values (``--served-model-name a b``); every other vLLM flag takes
#: at most one, so ``vllm serve --tensor-parallel-size 2 org/model`` keeps the model positional.
VLLM_MULTI_VALUE_FLAGS = frozenset({"--served-model-name", "--middleware", "--allowed-origins",
                                    "--allowed-methods", "--allowed-headers", "--api-key", "--lora-modules"})


def _vllm_boolean(flag: str) -> bool:
    """vLLM switches that take no value (``--enable-*``, ``--disable-*``, ``--no-*``,
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
    current: Optional[str] = None
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
PORT_FLAGS: dict[str, tuple[str, ...]] = {"vllm": ("--port",), "candle-vllm": ("--p", "--port")}


@dataclass(frozen=True)
class Endpoint:
    """Where a model server listens, from its argv: ``host`` as given by ``--host`` (None: the
    engine's default, every interface), ``port`` (``--port`` / ``--p``, else the engine's default,
    ``facts.ENGINE_DEFAULT_PORTS``: vLLM 8000, candle-vllm 2000) and ``port_flag``, the flag that
    set it (None when the default applies)."""

    engine: str
    host: Optional[str]
    port: int
    port_flag: Optional[str]

    @property
    def port_text(self) -> str:
        """``"8080 (--port)"`` or ``"8000 (vLLM's default, no --port)"`` as messages show it."""
        if self.port_flag:
            return f"{self.port} ({self.port_flag})"
        return f"{self.port} ({self.engine}'s default, no {PORT_FLAGS[self.engine][0]})"


def endpoint(server: Optional[ServerArgs]) -> Optional[Endpoint]:
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


# --- containers and workloads -------------------------------------------------------------

@dataclass(frozen=True)
class Container:
    """One container of a pod template, as the policies need it."""

    name: str
    image: str
    image_pull_policy: Optional[str]
    command: tuple[str, ...]
    args: tuple[str, ...]
    env: Mapping[str, str]
    ports: tuple[int, ...]
    port_names: Mapping[str, int]
    gpu_request: Optional[Decimal]
    gpu_limit: Optional[Decimal]
    memory_request_mib: Optional[float]
    memory_limit_mib: Optional[float]
    startup_probe: Optional[Mapping]
    liveness_probe: Optional[Mapping]
    readiness_probe: Optional[Mapping]
    volume_mounts: tuple[Mapping, ...]
    #: The env list as written (plain), for :attr:`argv`; ``env_from``: the container has ``envFrom``.
    env_list: tuple[Mapping, ...] = ()
    env_from: bool = False
    #: The KServe ``predictor.model`` container: its image, command, probes and mounts come from a
    #: ServingRuntime that is not in the manifests (only resources, env and args are the object's).
    from_runtime: bool = False
    #: Every resource name the container asks for (limits and requests), e.g. ``("cpu", "amd.com/gpu")``.
    resource_names: tuple[str, ...] = ()
    #: (key path from the object, value) of each ``resources`` memory quantity that is not a
    #: Kubernetes quantity, e.g. ``("spec.template.spec.containers[0].resources.requests.memory", "lots")``.
    invalid_quantities: tuple[tuple[str, Any], ...] = ()

    @property
    def cards(self) -> int:
        """Cards this container holds: its nvidia.com/gpu limit, else its request (whole cards)."""
        q = self.gpu_limit if self.gpu_limit is not None else self.gpu_request
        return int(q) if q is not None else 0

    @cached_property
    def argv(self) -> _argv.Argv:
        """The argv the container will run (:func:`core.argv.effective_argv`: ``$(VAR)`` expanded
        from its env, ``sh -c`` scripts split, an omitted command taken from a known image's
        entrypoint), or ``Argv(None, why)`` when the manifest cannot tell it."""
        return _argv.effective_argv(self.command, self.args, self.env_list, self.image, self.env_from)

    @cached_property
    def call(self) -> Optional[_argv.ServerCall]:
        """The model server the container runs (any engine :func:`core.argv.server_of` knows:
        vLLM, candle-vllm, SGLang, TGI), or None (not a server we recognise, or argv unknown)."""
        return _argv.server_of(self.argv.argv) if self.argv.argv is not None else None

    @property
    def looks_like_server(self) -> bool:
        """True when the image or the command as written names a model server, whether or not
        its argv can be known (``vllm``, ``candle-vllm``, ``sglang``, ``text-generation``)."""
        text = (self.image + " " + " ".join(self.command) + " " + " ".join(self.args)).lower()
        return any(k in text for k in ("vllm", "sglang", "text-generation"))

    @cached_property
    def server(self) -> Optional[ServerArgs]:
        """The vLLM or candle-vllm server this container runs, parsed from the argv it will run
        (:attr:`argv`); None for other programs, for engines the pack does not model (SGLang,
        TGI: :attr:`call` names them) and when the argv cannot be known (:attr:`argv` says why).
        ``vllm serve <model>``'s positional is the model."""
        call = self.call
        if call is None or call.engine not in MODELLED_ENGINES:
            return None
        return parse_args(call.engine, call.args)


#: Engines whose flags, capacity and parallelism the pack judges; others are recognised
#: (:attr:`Container.call`) and reported as not judged.
MODELLED_ENGINES = ("vllm", "candle-vllm")


def _container(raw: Mapping, at: str = "") -> Container:
    """One container; ``at`` is its key path in the object (``spec.template.spec.containers[0]``)."""
    resources = _m(raw.get("resources"))
    limits = _m(resources.get("limits"))
    requests = _m(resources.get("requests"))
    ports: list[int] = []
    names: dict[str, int] = {}
    for p in _s(raw.get("ports")):
        p = _m(p)
        port = _int(p.get("containerPort"), 0)
        if port:
            ports.append(port)
            if p.get("name"):
                names[str(p["name"])] = port
    env = {}
    for e in _s(raw.get("env")):
        e = _m(e)
        if "name" in e:
            env[str(e["name"])] = str(e.get("value", ""))
    return Container(
        name=str(raw.get("name", "")),
        image=str(raw.get("image", "")),
        image_pull_policy=raw.get("imagePullPolicy"),
        command=tuple(str(c) for c in _s(raw.get("command"))),
        args=tuple(str(a) for a in _s(raw.get("args"))),
        env=env,
        ports=tuple(ports),
        port_names=names,
        gpu_request=quantity(requests.get(facts.GPU_RESOURCE)),
        gpu_limit=quantity(limits.get(facts.GPU_RESOURCE)),
        memory_request_mib=mib(requests.get("memory")),
        memory_limit_mib=mib(limits.get("memory")),
        startup_probe=raw.get("startupProbe"),
        liveness_probe=raw.get("livenessProbe"),
        readiness_probe=raw.get("readinessProbe"),
        volume_mounts=tuple(_m(v) for v in _s(raw.get("volumeMounts"))),
        env_list=tuple(plain(_m(e)) for e in _s(raw.get("env"))),
        resource_names=tuple(sorted({str(k) for k in (*limits.keys(), *requests.keys())})),
        env_from=bool(_s(raw.get("envFrom"))),
        invalid_quantities=tuple(
            (f"{at}.resources.{field}.memory", plain(value))
            for field, value in (("requests", requests.get("memory")), ("limits", limits.get("memory")))
            if value is not None and not _quantity.is_quantity(value)
        ),
    )


@dataclass(frozen=True)
class Workload:
    """Pods of one Deployment/StatefulSet or one InferenceService predictor.

    ``replicas`` is the count the scheduler must place: a Deployment's ``spec.replicas``
    (default 1); an InferenceService's ``maxReplicas`` (else ``minReplicas``, default 1),
    its replica bound. ``rollout`` is how it replaces pods (``maxSurge`` / ``maxUnavailable``
    resolved against ``replicas`` as Kubernetes does); ``strategy`` the strategy as written
    (``{}`` when omitted) and ``strategy_at`` its key path (``spec.strategy``,
    ``spec.predictor.deploymentStrategy``).
    """

    urn: str
    type: str
    kind: str
    name: str
    namespace: str
    replicas: int
    min_replicas: int
    pod_labels: Mapping[str, str]
    node_selector: Mapping[str, str]
    node_name: Optional[str]
    runtime_class: Optional[str]
    containers: tuple[Container, ...]
    volumes: tuple[Mapping, ...]
    strategy_type: str
    rollout: _allocation.Rollout
    strategy: Mapping
    strategy_at: str
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    init_containers: tuple[Container, ...] = ()
    #: The pod spec's ``enableServiceLinks`` (Kubernetes default true): the kubelet injects the
    #: namespace's Services as environment variables (``core.rules.service_link_env_names``).
    enable_service_links: bool = True
    #: ``leader`` / ``worker`` for the two views of a LeaderWorkerSet, else ``""``.
    role: str = ""

    @property
    def id(self) -> str:
        """A key unique in the stack: the URN (else the name), with the role of a LeaderWorkerSet's view."""
        base = self.urn or self.name
        return f"{base}#{self.role}" if self.role else base

    @property
    def max_surge(self) -> int:
        """Surge pods a RollingUpdate starts (ceil of a percentage of the replicas; 0 for Recreate)."""
        return self.rollout.surge_pods

    @property
    def surge_needing_room(self) -> int:
        """Surge pods that need room beside every running pod (:attr:`core.allocation.Rollout.extra_pods`):
        what the allocation counts."""
        return self.rollout.extra_pods

    @property
    def display(self) -> str:
        """``name`` as messages show it."""
        return self.name

    @property
    def node(self) -> Optional[str]:
        """The node the pods are pinned to (``nodeName`` or the hostname nodeSelector), or None."""
        return self.node_name or self.node_selector.get(facts.HOSTNAME_LABEL)

    @property
    def cards_per_pod(self) -> int:
        """nvidia.com/gpu cards one pod holds: the sum over its containers, or the largest
        init container's if that is more (the scheduler's effective request)."""
        return max([sum(c.cards for c in self.containers)] + [c.cards for c in self.init_containers])

    @property
    def is_gpu(self) -> bool:
        return self.cards_per_pod > 0

    @property
    def other_accelerator(self) -> Optional[str]:
        """An accelerator resource other than nvidia.com/gpu its containers ask for (``amd.com/gpu``,
        ``google.com/tpu``, ``gpu.intel.com/i915``, ``habana.ai/gaudi``, ``aws.amazon.com/neuron``), or
        None: such pods run on cards the inventory does not describe."""
        for c in (*self.init_containers, *self.containers):
            for name in c.resource_names:
                if name != facts.GPU_RESOURCE and any(k in name for k in ("gpu", "tpu", "neuron", "gaudi")):
                    return name
        return None

    @property
    def memory_request_mib(self) -> float:
        """Host memory one pod requests, MiB (sum over containers; a limit stands in for a missing request)."""
        total = 0.0
        for c in self.containers:
            total += c.memory_request_mib if c.memory_request_mib is not None else (c.memory_limit_mib or 0.0)
        return total

    @property
    def invalid_quantities(self) -> tuple[tuple[str, Any], ...]:
        """(key path, value) of every memory quantity of its containers that is not a Kubernetes quantity."""
        return tuple(q for c in (*self.init_containers, *self.containers) for q in c.invalid_quantities)

    @property
    def parked_reason(self) -> Optional[str]:
        """The declared reason it is parked (``facts.PARKED_ANNOTATION``), or None."""
        return self.annotations.get(facts.PARKED_ANNOTATION)

    @property
    def cold_start_seconds(self) -> Optional[int]:
        """The declared cold start in seconds (``facts.COLD_START_ANNOTATION``), or None."""
        value = self.annotations.get(facts.COLD_START_ANNOTATION)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    @property
    def running(self) -> bool:
        """True when it places at least one pod."""
        return self.replicas > 0

    @property
    def servers(self) -> tuple[tuple[Container, ServerArgs], ...]:
        """(container, parsed args) for each container that runs vLLM or candle-vllm."""
        out = []
        for c in self.containers:
            s = c.server
            if s is not None:
                out.append((c, s))
        return tuple(out)

    @property
    def served_model_names(self) -> frozenset[str]:
        """Every model name its servers answer (``--served-model-name``, else what each engine
        answers by default); empty when it runs no known server."""
        return frozenset(n for _, server in self.servers for n in server.served_model_names)

    def servers_of(self, engine: str) -> tuple[tuple[Container, ServerArgs], ...]:
        """:attr:`servers` that run ``engine`` (``vllm`` or ``candle-vllm``)."""
        return tuple((c, s) for c, s in self.servers if s.engine == engine)

    def volume(self, name: str) -> Optional[Mapping]:
        for v in self.volumes:
            if v.get("name") == name:
                return v
        return None


def _strategy(kind: str, spec: Mapping, replicas: int) -> tuple[Mapping, str, _allocation.Rollout]:
    """(strategy as written, its key path from the pod spec's owner, :class:`core.allocation.Rollout`).
    ``spec`` is the Deployment spec, or the InferenceService predictor."""
    if kind == "StatefulSet":
        raw = _m(spec.get("updateStrategy"))
        return raw, "spec.updateStrategy", _allocation.Rollout(str(raw.get("type") or "RollingUpdate"))
    if kind == "LeaderWorkerSet":
        # rolloutStrategy.rollingUpdateConfiguration: maxUnavailable default 1, maxSurge default 0 (lws API).
        raw = _m(spec.get("rolloutStrategy"))
        rolling = _m(raw.get("rollingUpdateConfiguration"))
        plan = _allocation.rollout(str(raw.get("type") or "RollingUpdate"), rolling.get("maxSurge", 0),
                                   rolling.get("maxUnavailable", 1), replicas)
        return raw, "spec.rolloutStrategy", plan
    if kind == "InferenceService":
        raw, at = _m(spec.get("deploymentStrategy")), "spec.predictor.deploymentStrategy"
    else:
        raw, at = _m(spec.get("strategy")), "spec.strategy"
    rolling = _m(raw.get("rollingUpdate"))
    plan = _allocation.rollout(
        str(raw.get("type") or "RollingUpdate"), rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas
    )
    return raw, at, plan


def _containers(pod_spec: Mapping, pod_at: str) -> tuple[Container, ...]:
    """The containers of a pod spec; an InferenceService predictor's ``model`` (the KServe
    ``predictor.model`` form: the ServingRuntime's container, named ``kserve-container``, with the
    model's resources, env and args) comes first when present."""
    out = []
    model = pod_spec.get("model")
    if isinstance(model, Mapping):
        raw = dict(plain(model))
        raw.setdefault("name", KSERVE_MODEL_CONTAINER)
        out.append(replace(_container(raw, f"{pod_at}.model"), from_runtime=True))
    out += [_container(_m(c), f"{pod_at}.containers[{i}]") for i, c in enumerate(_s(pod_spec.get("containers")))]
    return tuple(out)


def _lws_workloads(props: Mapping, urn: str) -> list[Workload]:
    """A LeaderWorkerSet as two :class:`Workload` views: its leaders (``spec.replicas`` pods, the
    ``leaderTemplate``, else the ``workerTemplate``) and its workers (``replicas x (size - 1)``
    pods of the ``workerTemplate``), both named after the set, with the labels the controller adds."""
    meta = _m(props.get("metadata"))
    spec = _m(props.get("spec"))
    name = str(meta.get("name", ""))
    groups = _int(spec.get("replicas"), 1)
    lwt = _m(spec.get("leaderWorkerTemplate"))
    size = max(1, _int(lwt.get("size"), 1))
    worker_t = _m(lwt.get("workerTemplate"))
    leader_t = _m(lwt.get("leaderTemplate")) or worker_t
    _, strategy_at, plan = _strategy("LeaderWorkerSet", spec, groups)
    out = []
    for role, template, pods, at in (("leader", leader_t, groups, "spec.leaderWorkerTemplate.leaderTemplate"),
                                     ("worker", worker_t, groups * (size - 1), "spec.leaderWorkerTemplate.workerTemplate")):
        if role == "worker" and size == 1:
            continue
        pod_spec = _m(template.get("spec"))
        labels = {str(k): str(v) for k, v in _m(_m(template.get("metadata")).get("labels")).items()}
        labels[LWS_NAME_LABEL] = name
        if role == "leader":
            labels[LWS_WORKER_INDEX_LABEL] = "0"
        out.append(Workload(
            urn=urn, type=LWS_TYPE, kind="LeaderWorkerSet", name=name, namespace=str(meta.get("namespace", "default")),
            replicas=pods, min_replicas=pods, pod_labels=labels,
            node_selector={str(k): str(v) for k, v in _m(pod_spec.get("nodeSelector")).items()},
            node_name=pod_spec.get("nodeName"), runtime_class=pod_spec.get("runtimeClassName"),
            containers=_containers(pod_spec, f"{at}.spec"),
            volumes=tuple(_m(v) for v in _s(pod_spec.get("volumes"))),
            strategy_type=plan.strategy, rollout=plan, strategy={}, strategy_at=strategy_at,
            annotations={str(k): str(v) for k, v in _m(meta.get("annotations")).items()},
            labels={str(k): str(v) for k, v in _m(meta.get("labels")).items()},
            init_containers=tuple(_container(_m(c), f"{at}.spec.initContainers[{i}]")
                                  for i, c in enumerate(_s(pod_spec.get("initContainers")))),
            role=role,
        ))
    return out


def workload(resource_type: str, props: Mapping, urn: str = "") -> Optional[Workload]:
    """The :class:`Workload` of a Deployment, StatefulSet or InferenceService; None for other types.
    Within one analyzer request every policy reads the same properties object, so the view is
    built once per request (:func:`policylib.decode_once.request_memo`; a frozen dataclass)."""
    if resource_type not in WORKLOAD_TYPES:
        return None
    memo = decode_once.request_memo()
    if memo is None:
        return _workload(resource_type, props, urn)
    key = ("workload", resource_type, id(props), urn)
    hit = memo.get(key)
    if hit is not None and hit[0] is props:
        return hit[1]
    view = _workload(resource_type, props, urn)
    memo[key] = (props, view)
    return view


def _workload(resource_type: str, props: Mapping, urn: str) -> Workload:
    meta = _m(props.get("metadata"))
    spec = _m(props.get("spec"))
    kind = str(props.get("kind") or resource_type.rsplit(":", 1)[-1])
    name = str(meta.get("name", ""))
    labels = {str(k): str(v) for k, v in _m(meta.get("labels")).items()}
    annotations = {str(k): str(v) for k, v in _m(meta.get("annotations")).items()}
    if resource_type == ISVC_TYPE:
        pod = _m(spec.get("predictor"))
        min_r = _int(pod.get("minReplicas"), 1)
        max_r = pod.get("maxReplicas")
        replicas = max(min_r, _int(max_r, min_r)) if max_r is not None else min_r
        pod_labels = dict(labels)
        pod_labels.update({str(k): str(v) for k, v in _m(_m(pod.get("labels"))).items()})
        pod_labels[facts.KSERVE_ISVC_LABEL] = name
        pod_labels[facts.KSERVE_COMPONENT_LABEL] = facts.KSERVE_PREDICTOR_COMPONENT
        pod_labels["app"] = f"{facts.KSERVE_APP_LABEL_PREFIX}{name}{facts.KSERVE_PREDICTOR_SUFFIX}"
        pod_spec = pod
        pod_at = "spec.predictor"
    else:
        replicas = _int(spec.get("replicas"), 1)
        min_r = replicas
        template = _m(spec.get("template"))
        pod_labels = {str(k): str(v) for k, v in _m(_m(template.get("metadata")).get("labels")).items()}
        pod_spec = _m(template.get("spec"))
        pod_at = "spec.template.spec"
    strategy, strategy_at, plan = _strategy(kind, pod_spec if resource_type == ISVC_TYPE else spec, replicas)
    return Workload(
        urn=urn,
        type=resource_type,
        kind=kind,
        name=name,
        namespace=str(meta.get("namespace", "default")),
        replicas=replicas,
        min_replicas=min_r,
        pod_labels=pod_labels,
        node_selector={str(k): str(v) for k, v in _m(pod_spec.get("nodeSelector")).items()},
        node_name=pod_spec.get("nodeName"),
        runtime_class=pod_spec.get("runtimeClassName"),
        containers=_containers(pod_spec, pod_at),
        volumes=tuple(_m(v) for v in _s(pod_spec.get("volumes"))),
        strategy_type=plan.strategy,
        rollout=plan,
        strategy=strategy,
        strategy_at=strategy_at,
        annotations=annotations,
        labels=labels,
        init_containers=tuple(
            _container(_m(c), f"{pod_at}.initContainers[{i}]") for i, c in enumerate(_s(pod_spec.get("initContainers")))
        ),
        enable_service_links=pod_spec.get("enableServiceLinks") is not False,
    )


def of(args: Any) -> Optional[Workload]:
    """The :class:`Workload` a resource policy is judging (``ResourceValidationArgs``), or None
    when the resource is not a Deployment, StatefulSet or InferenceService."""
    return workload(args.resource_type, args.props, args.urn)


# --- Services and NetworkPolicies -----------------------------------------------------------

@dataclass(frozen=True)
class Client:
    """A declared client of a Service (``facts.CLIENTS_ANNOTATION``)."""

    name: str
    namespace: str
    port: int


@dataclass(frozen=True)
class ServicePort:
    name: str
    port: int
    target_port: Any  # int or a named port
    protocol: str


@dataclass(frozen=True)
class Service:
    urn: str
    name: str
    namespace: str
    selector: Mapping[str, str]
    ports: tuple[ServicePort, ...]
    annotations: Mapping[str, str]
    clients: tuple[Client, ...]
    clients_error: Optional[str] = None
    #: ``spec.clusterIP`` as written (None when the API server assigns one; ``"None"``: headless).
    cluster_ip: Optional[str] = None

    @property
    def parked_reason(self) -> Optional[str]:
        return self.annotations.get(facts.PARKED_ANNOTATION)


def service(resource_type: str, props: Mapping, urn: str = "") -> Optional[Service]:
    """The :class:`Service` view of a core/v1 Service; None for other types.

    ``clients_error`` is set (and ``clients`` empty) when the clients annotation is not valid JSON
    of the documented shape.
    """
    if resource_type != SERVICE_TYPE:
        return None
    meta = _m(props.get("metadata"))
    spec = _m(props.get("spec"))
    annotations = {str(k): str(v) for k, v in _m(meta.get("annotations")).items()}
    clients: list[Client] = []
    error = None
    raw = annotations.get(facts.CLIENTS_ANNOTATION)
    if raw:
        try:
            for c in json.loads(raw):
                clients.append(Client(name=str(c["name"]), namespace=str(c["namespace"]), port=int(c["port"])))
        except (ValueError, TypeError, KeyError) as err:
            clients, error = [], f"{facts.CLIENTS_ANNOTATION} is not a JSON list of {{name, namespace, port}}: {err}"
    ports = tuple(
        ServicePort(
            name=str(_m(p).get("name", "")),
            port=_int(_m(p).get("port"), 0),
            target_port=_port_ref(_m(p).get("targetPort", _m(p).get("port"))),
            protocol=str(_m(p).get("protocol", "TCP")),
        )
        for p in _s(spec.get("ports"))
    )
    return Service(
        urn=urn,
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "default")),
        selector={str(k): str(v) for k, v in _m(spec.get("selector")).items()},
        ports=ports,
        annotations=annotations,
        clients=tuple(clients),
        clients_error=error,
        cluster_ip=None if spec.get("clusterIP") is None else str(spec.get("clusterIP")),
    )


def _port_ref(value: Any) -> Any:
    """A targetPort as an int (numbers arrive as doubles over gRPC) or a port name (str)."""
    if isinstance(value, str) and not value.isdigit():
        return value
    return _int(value, 0)


def selector_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A Service-style equality selector matches ``labels`` (an empty selector matches nothing)."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def label_selector_matches(selector: Mapping, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels + matchExpressions) matches ``labels``; ``{}`` matches all."""
    selector = _m(selector)
    for k, v in _m(selector.get("matchLabels")).items():
        if labels.get(str(k)) != str(v):
            return False
    for expr in _s(selector.get("matchExpressions")):
        expr = _m(expr)
        key, op = str(expr.get("key")), str(expr.get("operator"))
        values = {str(v) for v in _s(expr.get("values"))}
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


@dataclass(frozen=True)
class OtherPods:
    """Pod labels of an object the pack does not model as a workload (a bare Pod, a Job, a
    DaemonSet, a custom resource with pod templates such as a RayCluster): a Service may select
    them, so selecting "no workload" is then not judged. ``label_sets``: every ``metadata.labels``
    found in its pod templates (for a Pod, its own labels)."""

    kind: str
    name: str
    namespace: str
    label_sets: tuple[Mapping[str, str], ...]


def _template_labels(node: Any, out: list[Mapping[str, str]], depth: int = 0) -> None:
    """Every ``template.metadata.labels`` (and ``*Template.metadata.labels``) under ``node``."""
    if depth > 12:
        return
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(value, Mapping) and str(key).lower().endswith("template"):
                labels = _m(_m(value.get("metadata")).get("labels"))
                if labels:
                    out.append({str(k): str(v) for k, v in labels.items()})
            _template_labels(value, out, depth + 1)
    elif isinstance(node, Sequence) and not isinstance(node, str):
        for item in node:
            _template_labels(item, out, depth + 1)


def other_pods(resource_type: str, props: Mapping) -> Optional[OtherPods]:
    """The :class:`OtherPods` of an object that is neither a modelled workload, a Service nor a
    NetworkPolicy, when it has pod labels; else None."""
    if resource_type in WORKLOAD_TYPES or resource_type in (LWS_TYPE, SERVICE_TYPE, NETWORK_POLICY_TYPE):
        return None
    meta = _m(props.get("metadata"))
    sets: list[Mapping[str, str]] = []
    if resource_type == "kubernetes:core/v1:Pod":
        sets.append({str(k): str(v) for k, v in _m(meta.get("labels")).items()})
    _template_labels(props.get("spec"), sets)
    if not sets:
        return None
    kind = str(props.get("kind") or resource_type.rsplit(":", 1)[-1])
    return OtherPods(kind, str(meta.get("name", "")), str(meta.get("namespace", "default")), tuple(sets))


@dataclass(frozen=True)
class Stack:
    """Every workload, Service and NetworkPolicy of a stack, by kind."""

    workloads: tuple[Workload, ...]
    services: tuple[Service, ...]
    network_policies: tuple[tuple[str, Mapping], ...]  # (urn, props)
    others: tuple[OtherPods, ...] = ()


def stack_view(resources: Iterable[Any]) -> Stack:
    """Build a :class:`Stack` from pulumi-policy ``PolicyResource`` objects (anything with
    ``resource_type``, ``props`` and ``urn``). A LeaderWorkerSet gives two workloads (leaders,
    workers: :func:`_lws_workloads`). Other resource types are ignored."""
    workloads, services, netpols, others = [], [], [], []
    for r in resources:
        t = r.resource_type
        if t in WORKLOAD_TYPES:
            w = workload(t, r.props, r.urn)
            if w is not None:
                workloads.append(w)
        elif t == LWS_TYPE:
            workloads.extend(_lws_workloads(r.props, r.urn))
        elif t == SERVICE_TYPE:
            s = service(t, r.props, r.urn)
            if s is not None:
                services.append(s)
        elif t == NETWORK_POLICY_TYPE:
            netpols.append((r.urn, r.props))
        else:
            o = other_pods(t, r.props)
            if o is not None:
                others.append(o)
    return Stack(tuple(workloads), tuple(services), tuple(netpols), tuple(others))
