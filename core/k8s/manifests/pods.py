"""Pods as the manifests describe them: a normalised, read-only :class:`Workload` per
Deployment, StatefulSet, InferenceService predictor or LeaderWorkerSet role (pods with labels, a
node, cards, containers, a rollout strategy and the component annotations, ``core.base.facts``), and
:class:`OtherPods` for objects that only carry pod labels.

Works on the manifest itself (``apiVersion``, ``kind``, ``metadata``, ``spec``): a plain
manifest, the program's rendering, or the policy pack's properties. Nothing here reports a
violation; policies decide.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from functools import cached_property
from typing import Any

from core.base import facts
from core.capacity import allocation as _allocation
from core.k8s import quantity as _quantity
from core.k8s.manifests import argv as _argv
from core.k8s.manifests import env as _env
from core.k8s.manifests import kserve as _kserve
from core.k8s.manifests.read import (
    ISVC_TYPE,
    LWS_TYPE,
    NETWORK_POLICY_TYPE,
    SERVICE_TYPE,
    WORKLOAD_TYPES,
    as_map,
    as_seq,
    mib,
    plain,
    quantity,
    whole,
    whole_number,
)
from core.k8s.manifests.servers import MODELLED_ENGINES, Endpoint, ServerArgs, endpoint, parse_args
from core.k8s.manifests.services import label_selector_matches as _selector_matches_one

#: Labels the LeaderWorkerSet controller puts on every pod of a group (leader: worker-index 0).
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
#: The container name KServe gives the ``spec.predictor.model`` container.
KSERVE_MODEL_CONTAINER = "kserve-container"

# --- labels controllers add to the pods they make (k8s.io/api apps/v1 well-known labels) ----------
#: A Deployment's ReplicaSets add a hash of the pod template (``DefaultDeploymentUniqueLabelKey``).
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
#: A StatefulSet (and DaemonSet) adds the hash of its ControllerRevision (``ControllerRevisionHashLabelKey``).
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
#: A StatefulSet names each pod ``<set>-<ordinal>`` in this label (``StatefulSetPodNameLabel``).
STATEFULSET_POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
#: A StatefulSet's pod ordinal (``PodIndexLabel``; Kubernetes 1.28+, on by default since 1.28 beta).
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
#: A LeaderWorkerSet's group ordinal on every pod of a group (sigs.k8s.io/lws ``GroupIndexLabelKey``).
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
#: Every label a controller adds; a value only the controller knows (a hash) is None in
#: :attr:`Workload.controller_labels`.
CONTROLLER_LABELS = frozenset({POD_TEMPLATE_HASH_LABEL, CONTROLLER_REVISION_HASH_LABEL, STATEFULSET_POD_NAME_LABEL,
                               POD_INDEX_LABEL, LWS_GROUP_INDEX_LABEL})


# --- containers and workloads -------------------------------------------------------------

@dataclass(frozen=True)
class Container:
    """One container of a pod template, as the policies need it."""

    name: str
    image: str
    image_pull_policy: str | None
    command: tuple[str, ...]
    args: tuple[str, ...]
    #: name -> value of every variable whose value the manifests hold, as the process sees it
    #: (``$(VAR)`` expanded); a variable set from ``valueFrom`` is in :attr:`environment` only.
    env: Mapping[str, str]
    ports: tuple[int, ...]
    port_names: Mapping[str, int]
    gpu_request: Decimal | None
    gpu_limit: Decimal | None
    memory_request_mib: float | None
    memory_limit_mib: float | None
    startup_probe: Mapping | None
    liveness_probe: Mapping | None
    readiness_probe: Mapping | None
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
    #: The container's ``securityContext`` as written (plain; ``{}`` when absent).
    security_context: Mapping = field(default_factory=dict)
    #: Each resource the container asks for and the amount, as written (the limit where both are given).
    resource_amounts: Mapping[str, str] = field(default_factory=dict)
    #: Every variable the kubelet sets, with its source (:func:`core.k8s.manifests.env.environment`):
    #: ``valueFrom`` and ``envFrom`` count as set, their values unknown.
    environment: _env.Environment = field(default_factory=_env.Environment)
    #: ``resources.requests`` and ``resources.limits`` as written (resource name -> amount).
    resource_requests: Mapping[str, str] = field(default_factory=dict)
    resource_limits: Mapping[str, str] = field(default_factory=dict)
    #: The container's ``lifecycle`` as written (plain; ``{}`` when absent).
    lifecycle: Mapping = field(default_factory=dict)

    @property
    def cards(self) -> int:
        """Cards this container holds: its nvidia.com/gpu limit, else its request (whole cards)."""
        q = self.gpu_limit if self.gpu_limit is not None else self.gpu_request
        return int(q) if q is not None else 0

    @cached_property
    def argv(self) -> _argv.Argv:
        """The argv the container will run (:func:`core.k8s.manifests.argv.effective_argv`: ``$(VAR)`` expanded
        from its env, ``sh -c`` scripts split, an omitted command taken from a known image's
        entrypoint), or ``Argv(None, why)`` when the manifest cannot tell it."""
        return _argv.effective_argv(self.command, self.args, self.env_list, self.image, self.env_from, self.environment)

    @cached_property
    def call(self) -> _argv.ServerCall | None:
        """The model server the container runs (any engine :func:`core.k8s.manifests.argv.server_of` knows:
        vLLM, candle-vllm, SGLang, TGI), or None (not a server we recognise, or argv unknown)."""
        return _argv.server_of(self.argv.argv) if self.argv.argv is not None else None

    @property
    def engine(self) -> str | None:
        """The server it runs: :attr:`call`'s engine, else the one its image is built for
        (:func:`core.k8s.manifests.argv.image_engine`: ``nvcr.io/nvidia/tritonserver`` is Triton), else None."""
        return self.call.engine if self.call is not None else _argv.image_engine(self.image)

    @property
    def looks_like_server(self) -> bool:
        """True when the image or the command as written names a model server, whether or not
        its argv can be known (``vllm``, ``candle-vllm``, ``sglang``, ``text-generation``)."""
        text = (self.image + " " + " ".join(self.command) + " " + " ".join(self.args)).lower()
        return any(k in text for k in ("vllm", "sglang", "text-generation"))

    @cached_property
    def server(self) -> ServerArgs | None:
        """The vLLM or candle-vllm server this container runs, parsed from the argv it will run
        (:attr:`argv`); None for other programs, for engines the pack does not model (SGLang,
        TGI: :attr:`call` names them) and when the argv cannot be known (:attr:`argv` says why).
        ``vllm serve <model>``'s positional is the model."""
        call = self.call
        if call is None or call.engine not in MODELLED_ENGINES:
            return None
        return parse_args(call.engine, call.args)

    @cached_property
    def endpoint(self) -> Endpoint | None:
        """Where its server listens and how it is called (:func:`core.k8s.manifests.servers.endpoint`
        of :attr:`server` and :attr:`environment`: port, scheme, API key, health route, served model
        names, side ports); None when it runs no modelled server or its argv cannot be read."""
        return endpoint(self.server, self.environment)


def container(raw: Mapping, at: str = "", controller_env: Sequence[Mapping[str, str]] = ()) -> Container:
    """One container as the kubelet would run it (:class:`Container`: its environment, argv, server
    and endpoint); ``at`` is its key path in the object (``spec.template.spec.containers[0]``);
    ``controller_env``: ``env`` entries the workload's controller adds before the container's own
    (:func:`lws_env`), in its environment only (:attr:`Container.env_list` stays as written)."""
    resources = as_map(raw.get("resources"))
    limits = as_map(resources.get("limits"))
    requests = as_map(resources.get("requests"))
    ports: list[int] = []
    names: dict[str, int] = {}
    for p in as_seq(raw.get("ports")):
        p = as_map(p)
        port = whole(p.get("containerPort"), 0)
        if port:
            ports.append(port)
            if p.get("name"):
                names[str(p["name"])] = port
    env_list = tuple(plain(as_map(e)) for e in as_seq(raw.get("env")))
    environment = _env.environment((*controller_env, *env_list), tuple(plain(as_map(e)) for e in as_seq(raw.get("envFrom"))))
    return Container(
        name=str(raw.get("name", "")),
        image=str(raw.get("image", "")),
        image_pull_policy=raw.get("imagePullPolicy"),
        command=tuple(str(c) for c in as_seq(raw.get("command"))),
        args=tuple(str(a) for a in as_seq(raw.get("args"))),
        env=environment.known(),
        environment=environment,
        ports=tuple(ports),
        port_names=names,
        gpu_request=quantity(requests.get(facts.GPU_RESOURCE)),
        gpu_limit=quantity(limits.get(facts.GPU_RESOURCE)),
        memory_request_mib=mib(requests.get("memory")),
        memory_limit_mib=mib(limits.get("memory")),
        startup_probe=raw.get("startupProbe"),
        liveness_probe=raw.get("livenessProbe"),
        readiness_probe=raw.get("readinessProbe"),
        volume_mounts=tuple(as_map(v) for v in as_seq(raw.get("volumeMounts"))),
        env_list=env_list,
        resource_names=tuple(sorted({str(k) for k in (*limits.keys(), *requests.keys())})),
        env_from=bool(as_seq(raw.get("envFrom"))),
        security_context=plain(as_map(raw.get("securityContext"))),
        resource_amounts={str(k): str(plain(v)) for k, v in (*requests.items(), *limits.items())},
        resource_requests={str(k): str(plain(v)) for k, v in requests.items()},
        resource_limits={str(k): str(plain(v)) for k, v in limits.items()},
        lifecycle=plain(as_map(raw.get("lifecycle"))),
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
    node_name: str | None
    runtime_class: str | None
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
    #: namespace's Services as environment variables (``core.k8s.manifests.env.service_link_env_names``).
    enable_service_links: bool = True
    #: ``leader`` / ``worker`` for the two views of a LeaderWorkerSet, else ``""``.
    role: str = ""
    #: The pod spec's ``securityContext`` as written (plain; ``{}`` when absent).
    security_context: Mapping = field(default_factory=dict)
    #: The labels its controller adds to each pod beside :attr:`pod_labels`: key -> the values its
    #: pods carry (a StatefulSet of 2 replicas: ``apps.kubernetes.io/pod-index`` -> {"0", "1"}), or
    #: None for a value only the controller knows (``pod-template-hash``). :func:`controller_labels`.
    controller_labels: Mapping[str, frozenset[str] | None] = field(default_factory=dict)
    #: The ServingRuntime an InferenceService's predictor was built from (``ServingRuntime vllm``),
    #: or None (not an InferenceService, or its runtime is not in the manifest set).
    runtime: str | None = None

    def selected_by(self, selector: Mapping[str, str]) -> bool:
        """True when an equality selector (a Service's ``spec.selector``, ``matchLabels``) matches
        some of its pods: each pair is a template label, or a label its controller adds with that
        value (any value, for a hash). An empty selector matches nothing (a Service's rule)."""
        for key, value in selector.items():
            if key in self.controller_labels:
                values = self.controller_labels[key]
                if values is None or value in values:
                    continue
                return False
            if self.pod_labels.get(key) != value:
                return False
        return bool(selector)

    def matched_by(self, selector: Mapping) -> bool:
        """True when a metav1.LabelSelector (``matchLabels`` and ``matchExpressions``: a
        NetworkPolicy's ``podSelector``, a PodDisruptionBudget's ``selector``) matches some of its pods,
        the labels its controller adds included; ``{}`` matches every pod."""
        selector = as_map(selector)
        labels = {k: v for k, v in self.pod_labels.items() if k not in self.controller_labels}
        match = {str(k): str(v) for k, v in as_map(selector.get("matchLabels")).items()}
        if match and not self.selected_by(match):
            return False
        for expr in as_seq(selector.get("matchExpressions")):
            expr = as_map(expr)
            key, op = str(expr.get("key")), str(expr.get("operator"))
            wanted = {str(v) for v in as_seq(expr.get("values"))}
            if key in self.controller_labels:
                have = self.controller_labels[key]
                if op == "DoesNotExist" or (op == "In" and have is not None and not have & wanted) \
                        or (op == "NotIn" and have is not None and have <= wanted):
                    return False
                continue
            if not _selector_matches_one({"matchExpressions": [expr]}, labels):
                return False
        return True

    def narrowed_by(self, selector: Mapping[str, str]) -> str | None:
        """The controller-added label of ``selector`` that picks pods by a value only the
        controller knows (``pod-template-hash``: one ReplicaSet), or None. Two workloads cannot
        both carry one such value, so such a selector is no collision."""
        return next((k for k in selector if k in self.controller_labels and self.controller_labels[k] is None), None)
    #: The required node affinity (:func:`required_node_terms`): terms ORed, each a tuple of
    #: ``(key, operator, values)`` ANDed; ``()`` when none.
    node_affinity: tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] = ()
    #: The pod spec's ``terminationGracePeriodSeconds`` (Kubernetes default 30).
    termination_grace_seconds: int = 30
    #: A Deployment's ``spec.progressDeadlineSeconds`` (Kubernetes default 600); None for other kinds.
    progress_deadline_seconds: int | None = None

    def run_as(self, c: Container) -> tuple[Any, int | None]:
        """``(runAsNonRoot, runAsUser)`` of container ``c``: each the container's, else the pod's
        (None: unset; a runAsUser that is not a whole number reads as None)."""
        non_root = c.security_context.get("runAsNonRoot", self.security_context.get("runAsNonRoot"))
        uid = c.security_context.get("runAsUser", self.security_context.get("runAsUser"))
        return non_root, whole_number(uid)

    @property
    def deployment_mode(self) -> str | None:
        """An InferenceService's ``serving.kserve.io/deploymentMode`` annotation (None: not written)."""
        return self.annotations.get(facts.KSERVE_DEPLOYMENT_MODE_ANNOTATION)

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
        """Surge pods that need room beside every running pod (:attr:`core.capacity.allocation.Rollout.extra_pods`):
        what the allocation counts."""
        return self.rollout.extra_pods

    @property
    def display(self) -> str:
        """``name`` as messages show it."""
        return self.name

    @property
    def node(self) -> str | None:
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
    def other_accelerator(self) -> str | None:
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
    def parked_reason(self) -> str | None:
        """The declared reason it is parked (``facts.PARKED_ANNOTATION``), or None."""
        return self.annotations.get(facts.PARKED_ANNOTATION)

    @property
    def cold_start_seconds(self) -> int | None:
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

    def volume(self, name: str) -> Mapping | None:
        for v in self.volumes:
            if v.get("name") == name:
                return v
        return None


def _strategy(kind: str, spec: Mapping, replicas: int) -> tuple[Mapping, str, _allocation.Rollout]:
    """(strategy as written, its key path from the pod spec's owner, :class:`core.capacity.allocation.Rollout`).
    ``spec`` is the Deployment spec, or the InferenceService predictor."""
    if kind == "StatefulSet":
        raw = as_map(spec.get("updateStrategy"))
        return raw, "spec.updateStrategy", _allocation.Rollout(str(raw.get("type") or "RollingUpdate"))
    if kind == "LeaderWorkerSet":
        # rolloutStrategy.rollingUpdateConfiguration: maxUnavailable default 1, maxSurge default 0 (lws API).
        raw = as_map(spec.get("rolloutStrategy"))
        rolling = as_map(raw.get("rollingUpdateConfiguration"))
        plan = _allocation.rollout(str(raw.get("type") or "RollingUpdate"), rolling.get("maxSurge", 0),
                                   rolling.get("maxUnavailable", 1), replicas)
        return raw, "spec.rolloutStrategy", plan
    if kind == "InferenceService":
        raw, at = as_map(spec.get("deploymentStrategy")), "spec.predictor.deploymentStrategy"
    else:
        raw, at = as_map(spec.get("strategy")), "spec.strategy"
    rolling = as_map(raw.get("rollingUpdate"))
    plan = _allocation.rollout(
        str(raw.get("type") or "RollingUpdate"), rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas
    )
    return raw, at, plan


def _containers(pod_spec: Mapping, pod_at: str, controller_env: Sequence[Mapping[str, str]] = ()) -> tuple[Container, ...]:
    """The containers of a pod spec; an InferenceService predictor's ``model`` (the KServe
    ``predictor.model`` form: the ServingRuntime's container, named ``kserve-container``, with the
    model's resources, env and args) comes first when present."""
    out = []
    model = pod_spec.get("model")
    if isinstance(model, Mapping):
        raw = dict(plain(model))
        raw.setdefault("name", KSERVE_MODEL_CONTAINER)
        out.append(replace(container(raw, f"{pod_at}.model"), from_runtime=True))
    out += [container(as_map(c), f"{pod_at}.containers[{i}]", controller_env)
            for i, c in enumerate(as_seq(pod_spec.get("containers")))]
    return tuple(out)


#: The variables the LeaderWorkerSet controller's pod webhook adds to every container of a group
#: (sigs.k8s.io/lws, docs "Labels, Annotations and Environment Variables"; vLLM's LWS example
#: passes ``--ray_cluster_size=$(LWS_GROUP_SIZE)``).
LWS_GROUP_SIZE_ENV = "LWS_GROUP_SIZE"
LWS_WORKER_INDEX_ENV = "LWS_WORKER_INDEX"


def lws_env(size: int, role: str) -> tuple[dict[str, str], ...]:
    """The LeaderWorkerSet variables whose value is the same on every pod of the ``role`` view:
    ``LWS_GROUP_SIZE`` (the group's pods, leader included) and, on the leaders, ``LWS_WORKER_INDEX``
    0. ``LWS_LEADER_ADDRESS`` (each group's own leader) and a worker's index differ by pod: left
    unset, so an argv that needs them stays unread."""
    out = [{"name": LWS_GROUP_SIZE_ENV, "value": str(size)}]
    if role == "leader":
        out.append({"name": LWS_WORKER_INDEX_ENV, "value": "0"})
    return tuple(out)


def lws_workloads(props: Mapping, urn: str) -> list[Workload]:
    """A LeaderWorkerSet as two :class:`Workload` views: its leaders (``spec.replicas`` pods, the
    ``leaderTemplate``, else the ``workerTemplate``) and its workers (``replicas x (size - 1)``
    pods of the ``workerTemplate``), both named after the set, with the labels the controller adds."""
    meta = as_map(props.get("metadata"))
    spec = as_map(props.get("spec"))
    name = str(meta.get("name", ""))
    groups = whole(spec.get("replicas"), 1)
    lwt = as_map(spec.get("leaderWorkerTemplate"))
    size = max(1, whole(lwt.get("size"), 1))
    worker_t = as_map(lwt.get("workerTemplate"))
    leader_t = as_map(lwt.get("leaderTemplate")) or worker_t
    _, strategy_at, plan = _strategy("LeaderWorkerSet", spec, groups)
    out = []
    for role, template, pods, at in (("leader", leader_t, groups, "spec.leaderWorkerTemplate.leaderTemplate"),
                                     ("worker", worker_t, groups * (size - 1), "spec.leaderWorkerTemplate.workerTemplate")):
        if role == "worker" and size == 1:
            continue
        pod_spec = as_map(template.get("spec"))
        labels = {str(k): str(v) for k, v in as_map(as_map(template.get("metadata")).get("labels")).items()}
        labels[LWS_NAME_LABEL] = name
        if role == "leader":
            labels[LWS_WORKER_INDEX_LABEL] = "0"
        out.append(Workload(
            urn=urn, type=LWS_TYPE, kind="LeaderWorkerSet", name=name, namespace=str(meta.get("namespace", "default")),
            replicas=pods, min_replicas=pods, pod_labels=labels,
            node_selector={str(k): str(v) for k, v in as_map(pod_spec.get("nodeSelector")).items()},
            node_name=pod_spec.get("nodeName"), runtime_class=pod_spec.get("runtimeClassName"),
            containers=_containers(pod_spec, f"{at}.spec", lws_env(size, role)),
            volumes=tuple(as_map(v) for v in as_seq(pod_spec.get("volumes"))),
            strategy_type=plan.strategy, rollout=plan, strategy={}, strategy_at=strategy_at,
            annotations={str(k): str(v) for k, v in as_map(meta.get("annotations")).items()},
            labels={str(k): str(v) for k, v in as_map(meta.get("labels")).items()},
            init_containers=tuple(container(as_map(c), f"{at}.spec.initContainers[{i}]")
                                  for i, c in enumerate(as_seq(pod_spec.get("initContainers")))),
            role=role,
            security_context=plain(as_map(pod_spec.get("securityContext"))),
            controller_labels={CONTROLLER_REVISION_HASH_LABEL: None, STATEFULSET_POD_NAME_LABEL: None,
                               POD_INDEX_LABEL: None, LWS_GROUP_INDEX_LABEL: frozenset(str(i) for i in range(groups))},
            node_affinity=required_node_terms(pod_spec),
            termination_grace_seconds=whole(pod_spec.get("terminationGracePeriodSeconds"), 30),
        ))
    return out


def controller_labels(kind: str, name: str, replicas: int, spec: Mapping[str, Any] | None = None
                      ) -> dict[str, frozenset[str] | None]:
    """The labels the controller of a ``kind`` object named ``name`` adds to its ``replicas`` pods
    (:data:`CONTROLLER_LABELS`): a Deployment (and an InferenceService's RawDeployment) the
    ``pod-template-hash``; a StatefulSet the ``controller-revision-hash``, each pod's name
    ``<name>-<ordinal>`` and ordinal (from ``spec.ordinals.start``, default 0). Source:
    k8s.io/kubernetes pkg/controller/statefulset ``stateful_set_utils.go`` (``initIdentity``,
    ``updateIdentity``) and pkg/controller/deployment ``sync.go``."""
    if kind in ("Deployment", "InferenceService"):
        return {POD_TEMPLATE_HASH_LABEL: None}
    if kind == "StatefulSet":
        start = whole(as_map(as_map(spec).get("ordinals")).get("start"), 0)
        ordinals = range(start, start + max(replicas, 0))
        return {CONTROLLER_REVISION_HASH_LABEL: None,
                STATEFULSET_POD_NAME_LABEL: frozenset(f"{name}-{i}" for i in ordinals),
                POD_INDEX_LABEL: frozenset(str(i) for i in ordinals)}
    return {}


def raw_deployment_min_replicas(predictor: Mapping[str, Any]) -> int:
    """The fewest predictor pods KServe runs for ``predictor`` (an InferenceService's
    ``spec.predictor``) in RawDeployment mode: ``minReplicas`` (default 1), except that 0 runs one
    pod unless ``maxReplicas`` is 0 too (parked): RawDeployment has no scale to zero, and KServe's
    Deployment and HPA keep one pod (kserve #3514). The KServe stand-in of the real suite uses it."""
    min_r = whole(predictor.get("minReplicas"), 1)
    return 1 if min_r == 0 and whole(predictor.get("maxReplicas"), 1) != 0 else min_r


def workload(resource_type: str, props: Mapping, urn: str = "", runtimes: Sequence[_kserve.Runtime] = ()) -> Workload | None:
    """The :class:`Workload` of a Deployment, StatefulSet or InferenceService; None for other types
    (a LeaderWorkerSet: :func:`lws_workloads`). ``runtimes``: the ServingRuntimes of the manifest
    set (:func:`core.k8s.manifests.kserve.runtimes_of`): an InferenceService in the ``predictor.model``
    form whose runtime is among them is read as KServe builds its predictor
    (:func:`core.k8s.manifests.kserve.predictor_pod`; :attr:`Workload.runtime` names it)."""
    if resource_type not in WORKLOAD_TYPES:
        return None
    meta = as_map(props.get("metadata"))
    spec = as_map(props.get("spec"))
    kind = str(props.get("kind") or resource_type.rsplit(":", 1)[-1])
    name = str(meta.get("name", ""))
    labels = {str(k): str(v) for k, v in as_map(meta.get("labels")).items()}
    annotations = {str(k): str(v) for k, v in as_map(meta.get("annotations")).items()}
    runtime = None
    if resource_type == ISVC_TYPE:
        pod = as_map(spec.get("predictor"))
        model = pod.get("model")
        if isinstance(model, Mapping) and runtimes:
            chosen = _kserve.select_runtime(model, str(meta.get("namespace", "default")), runtimes)
            if chosen is not None:
                pod, runtime = _kserve.predictor_pod(props, chosen), chosen.shown
        raw_mode = annotations.get(facts.KSERVE_DEPLOYMENT_MODE_ANNOTATION) == facts.KSERVE_RAW_MODE
        min_r = raw_deployment_min_replicas(pod) if raw_mode else whole(pod.get("minReplicas"), 1)
        max_r = pod.get("maxReplicas")
        replicas = max(min_r, whole(max_r, min_r)) if max_r is not None else min_r
        pod_labels = dict(labels)
        pod_labels.update({str(k): str(v) for k, v in as_map(as_map(pod.get("labels"))).items()})
        pod_labels[facts.KSERVE_ISVC_LABEL] = name
        pod_labels[facts.KSERVE_COMPONENT_LABEL] = facts.KSERVE_PREDICTOR_COMPONENT
        pod_labels["app"] = f"{facts.KSERVE_APP_LABEL_PREFIX}{name}{facts.KSERVE_PREDICTOR_SUFFIX}"
        pod_spec = pod
        pod_at = "spec.predictor"
    else:
        replicas = whole(spec.get("replicas"), 1)
        min_r = replicas
        template = as_map(spec.get("template"))
        pod_labels = {str(k): str(v) for k, v in as_map(as_map(template.get("metadata")).get("labels")).items()}
        pod_spec = as_map(template.get("spec"))
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
        node_selector={str(k): str(v) for k, v in as_map(pod_spec.get("nodeSelector")).items()},
        node_name=pod_spec.get("nodeName"),
        runtime_class=pod_spec.get("runtimeClassName"),
        containers=_containers(pod_spec, pod_at),
        volumes=tuple(as_map(v) for v in as_seq(pod_spec.get("volumes"))),
        strategy_type=plan.strategy,
        rollout=plan,
        strategy=strategy,
        strategy_at=strategy_at,
        annotations=annotations,
        labels=labels,
        init_containers=tuple(
            container(as_map(c), f"{pod_at}.initContainers[{i}]") for i, c in enumerate(as_seq(pod_spec.get("initContainers")))
        ),
        enable_service_links=pod_spec.get("enableServiceLinks") is not False,
        security_context=plain(as_map(pod_spec.get("securityContext"))),
        controller_labels=controller_labels(kind, name, replicas, spec),
        runtime=runtime,
        node_affinity=required_node_terms(pod_spec),
        termination_grace_seconds=whole(pod_spec.get("terminationGracePeriodSeconds"), 30),
        progress_deadline_seconds=whole(spec.get("progressDeadlineSeconds"), 600) if kind == "Deployment" else None,
    )


def required_node_terms(pod_spec: Mapping) -> tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...]:
    """``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`` as
    plain values: one tuple a term (the scheduler ORs terms), of ``(key, operator, values)`` for each
    ``matchExpressions`` entry (ANDed). ``matchFields`` are not read. ``()`` when there is none."""
    required = as_map(as_map(as_map(pod_spec.get("affinity")).get("nodeAffinity")).get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    terms = []
    for term in as_seq(required.get("nodeSelectorTerms")):
        exprs = tuple((str(e.get("key", "")), str(e.get("operator", "")), tuple(str(v) for v in as_seq(e.get("values"))))
                      for e in (as_map(x) for x in as_seq(as_map(term).get("matchExpressions"))))
        if exprs:
            terms.append(exprs)
    return tuple(terms)


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
    #: Labels its controller adds to every pod, as in :attr:`Workload.controller_labels` (a Job's
    #: ``job-name``; a DaemonSet's ``controller-revision-hash``, value None: only the controller knows it).
    controller_labels: Mapping[str, frozenset[str] | None] = field(default_factory=dict)

    def selected_by(self, selector: Mapping[str, str]) -> bool:
        """True when an equality selector matches the pods of one of its templates, the labels its
        controller adds included."""
        for labels in self.label_sets:
            if selector and all(
                    (self.controller_labels[k] is None or v in (self.controller_labels[k] or ()))
                    if k in self.controller_labels else labels.get(k) == v for k, v in selector.items()):
                return True
        return False


def _template_labels(node: Any, out: list[Mapping[str, str]], depth: int = 0) -> None:
    """Every ``template.metadata.labels`` (and ``*Template.metadata.labels``) under ``node``."""
    if depth > 12:
        return
    if isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(value, Mapping) and str(key).lower().endswith("template"):
                labels = as_map(as_map(value.get("metadata")).get("labels"))
                if labels:
                    out.append({str(k): str(v) for k, v in labels.items()})
            _template_labels(value, out, depth + 1)
    elif isinstance(node, Sequence) and not isinstance(node, str):
        for item in node:
            _template_labels(item, out, depth + 1)


def other_pods(resource_type: str, props: Mapping) -> OtherPods | None:
    """The :class:`OtherPods` of an object that is neither a modelled workload, a Service nor a
    NetworkPolicy, when it has pod labels; else None."""
    if resource_type in WORKLOAD_TYPES or resource_type in (LWS_TYPE, SERVICE_TYPE, NETWORK_POLICY_TYPE):
        return None
    meta = as_map(props.get("metadata"))
    sets: list[Mapping[str, str]] = []
    if resource_type == "kubernetes:core/v1:Pod":
        sets.append({str(k): str(v) for k, v in as_map(meta.get("labels")).items()})
    _template_labels(props.get("spec"), sets)
    if not sets:
        return None
    kind = str(props.get("kind") or resource_type.rsplit(":", 1)[-1])
    name = str(meta.get("name", ""))
    added: dict[str, frozenset[str] | None] = {}
    if kind == "Job":  # k8s.io/kubernetes pkg/controller/job: JobNameLabel and its legacy form, the controller's uid
        added = {"job-name": frozenset({name}), "batch.kubernetes.io/job-name": frozenset({name}),
                 "controller-uid": None, "batch.kubernetes.io/controller-uid": None}
    elif kind == "DaemonSet":  # pkg/controller/daemon: the revision hash and the template generation
        added = {CONTROLLER_REVISION_HASH_LABEL: None, "pod-template-generation": None}
    return OtherPods(kind, name, str(meta.get("namespace", "default")), tuple(sets), added)
