"""GPU workloads as ComponentResources: the generic :class:`GpuDeployment` and
:class:`CandleDeployment` built on it.

Each Kubernetes object is built by a small pure function that returns the manifest as a dict
in the manifest's own shape (camelCase), e.g. :func:`deployment_manifest`; tests call them
without the Pulumi engine, and the components pass ``metadata`` / ``spec`` straight into the
typed ``pulumi_kubernetes`` classes.

Facts every GPU pod gets here (``core/facts.py`` names the sources):

* ``runtimeClassName: nvidia`` (001, 003: without it libcuda.so is never injected);
* rollout ``Recreate`` (001, 003, coder.yaml: every card is allocated, a surge pod waits forever);
* ``imagePullPolicy: Always`` on any image not pinned by ``@sha256`` digest (003: a moving tag
  such as ``:sm70`` is otherwise never pulled again);
* a Memory-backed ``/dev/shm`` emptyDir of 8Gi when the pod holds more than one card
  (coder.yaml: the 64Mi default shows up as an init hang or a bus error under NCCL);
* a startup probe whose budget (period x failure threshold) exceeds the declared cold start,
  by default 3x it in 15 s periods (coder.yaml: 120 x 15 s for about 10 minutes), and a
  liveness probe on the same route behind it;
* the node pinned with ``nodeSelector kubernetes.io/hostname`` (coder.yaml);
* ``enableServiceLinks: false``: a Service of the namespace named like the engine (``vllm``)
  would otherwise inject ``VLLM_PORT=tcp://...`` and vLLM refuses to start (vllm-project/vllm
  #34199); the servers find each other by DNS;
* the component -> policy annotations (``facts.COMPONENT_ANNOTATION`` etc.).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any, Optional

import pulumi
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from core import facts, rules
from core.placement import Resources, StartupProbe, secret_name, startup_threshold
from core.rule_wordings import rule_half_dtype, rule_hybrid_one_card, rule_startup_budget, rule_tp_divides
from core.rules import is_digest_pinned
from core.engines import CandleConfig
from core.images import parse_image
from core.values import REDACTED
from core.inventory import CardSpec
from core.modelfacts import ModelFacts

#: Liveness probe timing: a server that stops answering for 4 x 30 s is restarted. It starts
#: only after the startup probe succeeded, so it never races the model load.
LIVENESS_PERIOD_SECONDS = 30
LIVENESS_TIMEOUT_SECONDS = 10
LIVENESS_FAILURE_THRESHOLD = 4

#: candle-vllm's health route. Its router (src/main.rs) serves only ``GET /v1/models``,
#: ``POST /v1/chat/completions`` and ``POST /v1/embeddings``, and binds the listener only after
#: the weights and the KV cache are allocated; ``/v1/models`` answering means it is serving.
CANDLE_HEALTH_PATH = "/v1/models"


# --- pure helpers (shared with components/vllm.py) --------------------------------------------

class ComponentArgs(BaseModel):
    """Base of the component argument models: unknown fields refused, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class TransitionArgs(ComponentArgs):
    """How a workload moves from one update to the next (issue 7): its former names (Pulumi
    aliases, so a rename replaces the object instead of adding a second copy) and whether a
    replacement deletes the old object first (``deleteBeforeReplace`` on the child)."""

    former_names: list[str] = Field(default_factory=list, description="Names it had before a rename (aliases).")
    delete_before_replace: bool = Field(
        default=False,
        description=("Replace the child delete-first. The provider deletes first on its own only when the "
                     "object keeps its name and namespace (pulumi-kubernetes provider.go Diff); a rename "
                     "otherwise creates the new object while the old one still holds its cards."),
    )


def transition_options(args: TransitionArgs, parent: pulumi.Resource) -> pulumi.ResourceOptions:
    """The child object's options: parented to the component, deleted first on replacement when
    ``args.delete_before_replace``. (The former names are the component's aliases; the child, named
    like the component, inherits them: Pulumi derives a child's alias from its parent's.)"""
    return pulumi.ResourceOptions(parent=parent, delete_before_replace=args.delete_before_replace or None)


def former_names_annotation(former_names: list[str]) -> dict[str, str]:
    """``{facts.FORMER_NAMES_ANNOTATION: '["clef-candle"]'}`` when the workload was renamed, else {}:
    the offline diff pairs the renamed object with its former self by it (tools/render.py)."""
    return {facts.FORMER_NAMES_ANNOTATION: json.dumps(list(former_names))} if former_names else {}


def pull_policy(image: str) -> Optional[str]:
    """``"Always"`` for an image not pinned by digest (003), else None (the default applies)."""
    return None if is_digest_pinned(image) else facts.MOVING_TAG_PULL_POLICY


def http_get(path: str, port: int) -> dict[str, Any]:
    """The ``httpGet`` part of a probe: ``{"httpGet": {"path": path, "port": port}}``."""
    return {"httpGet": {"path": path, "port": port}}


def startup_probe(path: str, port: int, cold_start_seconds: int, probe: StartupProbe) -> dict[str, Any]:
    """``startupProbe`` with ``failureThreshold`` x ``periodSeconds`` above the cold start."""
    return {**http_get(path, port), "failureThreshold": startup_threshold(cold_start_seconds, probe),
            "periodSeconds": probe.period_seconds}


def liveness_probe(path: str, port: int) -> dict[str, Any]:
    """``livenessProbe``: 4 misses of 30 s (10 s timeout each) restart a wedged server."""
    return {**http_get(path, port), "periodSeconds": LIVENESS_PERIOD_SECONDS,
            "timeoutSeconds": LIVENESS_TIMEOUT_SECONDS, "failureThreshold": LIVENESS_FAILURE_THRESHOLD}


def container_resources(resources: Resources, cards: int) -> dict[str, Any]:
    """``resources`` with CPU / memory as given and ``nvidia.com/gpu`` = ``cards`` in both
    requests and limits (an extended resource must have them equal)."""
    out: dict[str, Any] = {}
    for key, amounts in (("limits", resources.limits), ("requests", resources.requests)):
        block = {k: v for k, v in (("cpu", amounts.cpu), ("memory", amounts.memory)) if v is not None}
        block[facts.GPU_RESOURCE] = str(cards)
        out[key] = block
    return out


def models_volume(pvc: str) -> dict[str, Any]:
    """The ``models`` volume: the PVC with weights and the fixed candle-vllm binary (001, 003)."""
    return {"name": "models", "persistentVolumeClaim": {"claimName": pvc}}


def shm_volume() -> dict[str, Any]:
    """The Memory-backed /dev/shm for pods with more than one card (coder.yaml)."""
    return {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": facts.SHM_SIZE_LIMIT}}


def secret_env_entries(workload: str, names: list[str]) -> list[dict[str, Any]]:
    """Container ``env`` entries reading each of ``names`` from the workload's Secret
    (``valueFrom.secretKeyRef``): the value never appears in the pod spec."""
    return [{"name": n, "valueFrom": {"secretKeyRef": {"name": secret_name(workload), "key": n}}} for n in names]


def secret_manifest(workload: str, namespace: str, names: list[str], component: str) -> dict[str, Any]:
    """The workload's Secret (v1, Opaque) with each of ``names`` in ``stringData``, the values
    shown as :data:`core.values.REDACTED`: the component registers the real values as Pulumi
    secrets (:meth:`WorkloadComponent._secret`), so no rendering, diff or report holds them."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(workload), "namespace": namespace, "labels": app_labels(workload),
                     "annotations": {facts.COMPONENT_ANNOTATION: component}},
        "type": "Opaque",
        "stringData": {n: REDACTED for n in names},
    }


def workload_annotations(component: str, cold_start_seconds: int, served_names: list[str],
                         parked_reason: Optional[str], root_reason: Optional[str] = None) -> dict[str, str]:
    """The component -> policy annotations of a model server (core/facts.py), and how long
    ``pulumi up`` waits for it (``pulumi.com/timeoutSeconds``: :func:`core.rules.await_timeout_seconds`
    of the cold start; reasoning's 600 s would otherwise hit the provider's 10-minute default);
    ``root_reason``: why its containers run as root (None when they run as a non-root user)."""
    out = {
        facts.COMPONENT_ANNOTATION: component,
        facts.COLD_START_ANNOTATION: str(cold_start_seconds),
        facts.SERVED_NAMES_ANNOTATION: json.dumps(list(served_names)),
        facts.AWAIT_TIMEOUT_ANNOTATION: str(rules.await_timeout_seconds(cold_start_seconds)),
    }
    if parked_reason:
        out[facts.PARKED_ANNOTATION] = parked_reason
    if root_reason:
        out[facts.RUNS_AS_ROOT_ANNOTATION] = root_reason
    return out


def checkov_waivers(image: str, root_reason: Optional[str]) -> dict[str, str]:
    """``checkov.io/skip<N>`` annotations of a Deployment: each check it cannot meet with the
    reason (:data:`core.facts.CHECKOV_WAIVER_REASONS`; root: ``root_reason``); a check that
    does not apply (a digest-pinned image, a non-root user) is not waived."""
    ref = parse_image(image)
    waived = {"CKV_K8S_22": facts.CHECKOV_WAIVER_REASONS["CKV_K8S_22"]}
    if not ref.pinned:
        waived["CKV_K8S_43"] = facts.CHECKOV_WAIVER_REASONS["CKV_K8S_43"]
        if ref.tag in (None, "latest"):
            waived["CKV_K8S_14"] = facts.CHECKOV_WAIVER_REASONS["CKV_K8S_14"]
    if root_reason:
        waived.update({check: root_reason for check in facts.CHECKOV_ROOT_CHECKS})
    return {f"{facts.CHECKOV_SKIP_ANNOTATION}{i}": f"{check}={reason}"
            for i, (check, reason) in enumerate(sorted(waived.items()), 1)}


def pod_security_context(run_as_user: Optional[int]) -> dict[str, Any]:
    """The pod ``securityContext``: the RuntimeDefault seccomp profile, and ``runAsNonRoot`` /
    ``runAsUser`` when a non-root UID is given (restricted profile; issue 9)."""
    out: dict[str, Any] = {"seccompProfile": dict(facts.SECCOMP_PROFILE)}
    if run_as_user is not None:
        out.update(runAsNonRoot=True, runAsUser=run_as_user)
    return out


def container_security_context() -> dict[str, Any]:
    """A container's ``securityContext``: no privilege escalation, every capability dropped."""
    return json.loads(json.dumps(facts.CONTAINER_SECURITY))


def readiness_probe(path: str, port: int) -> dict[str, Any]:
    """``readinessProbe`` on the health route every 10 s (coder.yaml's vLLM readiness): a
    server that stops answering leaves the Service's endpoints until it answers again."""
    return {**http_get(path, port), "periodSeconds": facts.READINESS_PERIOD_SECONDS}


# --- the generic GPU Deployment -------------------------------------------------------------

class GpuDeploymentArgs(TransitionArgs):
    """A single-replica GPU Deployment pinned to a node. Errors (ValueError): a startup budget
    that does not exceed ``cold_start_seconds``."""

    name: str = Field(description="Object name and its ``app`` label.")
    namespace: str = Field(description="Namespace (llm-serving).")
    image: str = Field(min_length=1, description="Image; pulled Always unless pinned by digest (003).")
    command: list[str] = Field(default_factory=list, description="Container command; empty: the image's.")
    args: list[str] = Field(default_factory=list, description="Container args.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment, in order.")
    secret_env: dict[str, SecretStr] = Field(default_factory=dict, description="Environment from the workload's Secret.")
    port: int = Field(default=facts.CONTAINER_PORT, ge=1, le=65535, description="Container port (8080).")
    container_name: str = Field(default="server", description="Container name (candle-vllm: candle).")
    node: str = Field(description="Node name, pinned with nodeSelector kubernetes.io/hostname (coder.yaml).")
    cards: int = Field(ge=1, description="nvidia.com/gpu cards of the pod.")
    resources: Resources = Field(default_factory=Resources, description="CPU and memory.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra pod labels.")
    cold_start_seconds: int = Field(gt=0, description="Declared cold start, seconds.")
    startup: StartupProbe = Field(default_factory=StartupProbe, description="Startup probe timing.")
    health_path: str = Field(default="/health", description="HTTP route of the startup and liveness probes.")
    models_pvc: Optional[str] = Field(default=facts.MODELS_PVC, description="PVC mounted read-only at /mnt/models; None: no mount.")
    parked_reason: Optional[str] = Field(default=None, description="Set: replicas 0 and the parked annotation (000).")
    served_model_names: list[str] = Field(default_factory=list, description="Names it answers (annotation).")
    run_as_user: Optional[int] = Field(default=None, ge=1, description="Non-root UID; None: the image's user (root).")
    runtime_class: Optional[str] = Field(
        default=facts.GPU_RUNTIME_CLASS,
        description="The pods' runtimeClassName: the inventory's gpu_runtime_class (worker-1: nvidia, seeds 001, 003); None: the cluster's default runtime injects the driver.")
    root_reason: Optional[str] = Field(default=None, description="Why it runs as root (annotation), when run_as_user is None.")

    @model_validator(mode="after")
    def _startup_budget(self) -> "GpuDeploymentArgs":
        threshold = startup_threshold(self.cold_start_seconds, self.startup)
        breach = rule_startup_budget(self.cold_start_seconds, self.startup.period_seconds, threshold)
        if breach:
            raise ValueError(f"{self.name}: {breach.rule}; {breach.fix}")
        return self


def app_labels(name: str) -> dict[str, str]:
    """The object labels of every Deployment here: part-of and ``app: <name>`` (all seeds)."""
    return {facts.PART_OF_LABEL: facts.PART_OF_VALUE, "app": name}


def deployment_pod_labels(args: GpuDeploymentArgs) -> dict[str, str]:
    """Pod labels: part-of, the extra labels, then ``app: <name>`` (what Services select)."""
    return {facts.PART_OF_LABEL: facts.PART_OF_VALUE, **args.labels, "app": args.name}


def gpu_container(args: GpuDeploymentArgs) -> dict[str, Any]:
    """The server container of the pod template."""
    c: dict[str, Any] = {"name": args.container_name, "image": args.image}
    policy = pull_policy(args.image)
    if policy:
        c["imagePullPolicy"] = policy
    if args.command:
        c["command"] = list(args.command)
    if args.args:
        c["args"] = list(args.args)
    env = [{"name": k, "value": v} for k, v in args.env.items()] + secret_env_entries(args.name, list(args.secret_env))
    if env:
        c["env"] = env
    c["ports"] = [{"containerPort": args.port}]
    c["startupProbe"] = startup_probe(args.health_path, args.port, args.cold_start_seconds, args.startup)
    c["livenessProbe"] = liveness_probe(args.health_path, args.port)
    c["readinessProbe"] = readiness_probe(args.health_path, args.port)
    c["securityContext"] = container_security_context()
    c["resources"] = container_resources(args.resources, args.cards)
    mounts = []
    if args.models_pvc:
        mounts.append({"name": "models", "mountPath": facts.MODELS_MOUNT_PATH, "readOnly": True})
    if args.cards > 1:
        mounts.append({"name": "shm", "mountPath": facts.SHM_MOUNT_PATH})
    if mounts:
        c["volumeMounts"] = mounts
    return c


def gpu_pod_spec(args: GpuDeploymentArgs) -> dict[str, Any]:
    """The pod spec: runtime class nvidia, node pinned, the container, its volumes."""
    spec: dict[str, Any] = {
        **({"runtimeClassName": args.runtime_class} if args.runtime_class else {}),
        "nodeSelector": {facts.HOSTNAME_LABEL: args.node},
        "automountServiceAccountToken": facts.AUTOMOUNT_SERVICE_ACCOUNT_TOKEN,
        "securityContext": pod_security_context(args.run_as_user),
        "enableServiceLinks": False,
        "containers": [gpu_container(args)],
    }
    volumes = []
    if args.models_pvc:
        volumes.append(models_volume(args.models_pvc))
    if args.cards > 1:
        volumes.append(shm_volume())
    if volumes:
        spec["volumes"] = volumes
    return spec


def deployment_manifest(args: GpuDeploymentArgs, component: str) -> dict[str, Any]:
    """The Deployment as a manifest dict (apps/v1). ``component`` is the annotation value
    (``<ClassName>/<name>``). Parked: replicas 0 and the parked annotation."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": args.name,
            "namespace": args.namespace,
            "labels": app_labels(args.name),
            "annotations": {
                **workload_annotations(component, args.cold_start_seconds, args.served_model_names,
                                       args.parked_reason, None if args.run_as_user else args.root_reason),
                **checkov_waivers(args.image, None if args.run_as_user else args.root_reason),
                **former_names_annotation(args.former_names),
            },
        },
        "spec": {
            "replicas": 0 if args.parked_reason else 1,
            "strategy": {"type": facts.GPU_ROLLOUT_STRATEGY},
            "selector": {"matchLabels": {"app": args.name}},
            "template": {"metadata": {"labels": deployment_pod_labels(args)}, "spec": gpu_pod_spec(args)},
        },
    }


class WorkloadComponent(pulumi.ComponentResource):
    """A model-server workload: what a StablePredictorService needs to select it.

    Attributes (plain values, known at construction): ``workload_name``, ``namespace``,
    ``pod_labels`` (every label its pods carry), ``selector_labels`` (the subset a Service
    selects), ``port`` (container port), ``node``, ``cards`` (held while running),
    ``parked_reason`` (None when running), ``served_model_names``, ``cold_start_seconds``
    (declared; the Service in front of it awaits its endpoints as long as the workload).
    """

    workload_name: str
    namespace: str
    pod_labels: dict[str, str]
    selector_labels: dict[str, str]
    port: int
    node: str
    cards: int
    parked_reason: Optional[str]
    served_model_names: list[str]
    cold_start_seconds: int

    def _secret(self, name: str, namespace: str, values: dict[str, SecretStr]) -> None:
        """Register the workload's Secret (:func:`secret_manifest`) with each value wrapped in
        ``pulumi.Output.secret``: encrypted in the state, masked in the CLI's diff."""
        if not values:
            return
        from pulumi_kubernetes.core.v1 import Secret

        manifest = secret_manifest(name, namespace, list(values), f"{type(self).__name__}/{name}")
        self.secret = Secret(
            secret_name(name), metadata=manifest["metadata"], type=manifest["type"],
            string_data={k: pulumi.Output.secret(v.get_secret_value()) for k, v in values.items()},
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _outputs(self) -> dict[str, Any]:
        return {"name": self.workload_name, "podLabels": self.pod_labels, "node": self.node,
                "cards": 0 if self.parked_reason else self.cards, "parked": self.parked_reason}


class GpuDeployment(WorkloadComponent):
    """A generic GPU Deployment (the reference PyTorch clef-serve server), one child
    ``kubernetes:apps/v1:Deployment`` named like the component.

    Type token ``llm-serving:index:GpuDeployment``. Args: :class:`GpuDeploymentArgs`.
    """

    TYPE = "llm-serving:index:GpuDeployment"

    def __init__(self, name: str, args: GpuDeploymentArgs, opts: Optional[pulumi.ResourceOptions] = None):
        self._create(name, args, opts)

    def _create(self, name: str, args: GpuDeploymentArgs, opts: Optional[pulumi.ResourceOptions]) -> None:
        from pulumi_kubernetes.apps.v1 import Deployment

        super().__init__(self.TYPE, name, None, opts)
        manifest = deployment_manifest(args, f"{type(self).__name__}/{name}")
        self.workload_name, self.namespace, self.port = args.name, args.namespace, args.port
        self.node, self.cards, self.parked_reason = args.node, args.cards, args.parked_reason
        self.served_model_names = list(args.served_model_names)
        self.cold_start_seconds = args.cold_start_seconds
        self.pod_labels = manifest["spec"]["template"]["metadata"]["labels"]
        self.selector_labels = manifest["spec"]["selector"]["matchLabels"]
        self._secret(name, args.namespace, args.secret_env)
        self.deployment = Deployment(
            name,
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=transition_options(args, self),
        )
        self.register_outputs(self._outputs())


# --- candle-vllm ----------------------------------------------------------------------------

class CandleDeploymentArgs(CandleConfig, TransitionArgs):
    """A candle-vllm server (coder-14b-fp16.yaml, clef-candle.yaml): the server settings of
    :class:`core.engines.CandleConfig` (its flags, declared once) and where it runs. TP is ``cards``.

    Errors (ValueError): TP that does not divide the model (001), a hybrid model on more than
    one card (003), bf16 on a card below sm_80 (001), a startup budget not above the cold start.
    """

    name: str = Field(description="Deployment name and ``app`` label, e.g. candle-vllm.")
    namespace: str = Field(description="Namespace (llm-serving).")
    weights_path: str = Field(min_length=1, description="--w, e.g. /mnt/models/coder-14b-fp16 (from the model entry).")
    cards: int = Field(ge=1, description="Cards = TP; becomes --d 0,1,... (001).")
    runtime_class: Optional[str] = Field(
        default=facts.GPU_RUNTIME_CLASS,
        description="The pods' runtimeClassName: the inventory's gpu_runtime_class (worker-1: nvidia, seeds 001, 003); None: the cluster's default runtime injects the driver.")
    node: str = Field(description="Node name.")
    resources: Resources = Field(default_factory=Resources, description="CPU and memory.")
    models_pvc: str = Field(default=facts.MODELS_PVC, description="Models PVC (llm-models).")
    cold_start_seconds: int = Field(gt=0, description="Declared cold start, seconds.")
    startup: StartupProbe = Field(default_factory=StartupProbe, description="Startup probe timing.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra pod labels.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment.")
    secret_env: dict[str, SecretStr] = Field(default_factory=dict, description="Environment from the workload's Secret.")
    parked_reason: Optional[str] = Field(default=None, description="Set: parked at replicas 0.")
    run_as_user: Optional[int] = Field(default=None, ge=1, description="Non-root UID; None: the image's user (root).")
    model_key: str = Field(default="", description="Model key, for messages.")
    model_facts: Optional[ModelFacts] = Field(default=None, description="Checked for TP divisibility and hybrid layers.")
    card: Optional[CardSpec] = Field(default=None, description="The node's card, checked for dtype support.")

    @model_validator(mode="after")
    def _facts(self) -> "CandleDeploymentArgs":
        breaches = [rule_half_dtype(self.card, self.dtype, "candle-vllm")]
        if self.model_facts is not None:
            key = self.model_key or posixpath.basename(self.weights_path.rstrip("/"))
            breaches += [rule_tp_divides(key, self.model_facts, self.cards),
                         rule_hybrid_one_card(key, self.model_facts, self.cards)]
        for b in breaches:
            if b:
                raise ValueError(f"{self.name}: {b.rule}; {b.fix}")
        return self


def candle_argv(args: CandleDeploymentArgs) -> list[str]:
    """candle-vllm's argv (:meth:`core.engines.CandleConfig.argv`, the references' order)."""
    return args.argv(args.weights_path, cards=args.cards)


def candle_served_name(weights_path: str) -> str:
    """What candle-vllm's /v1/models reports: the basename of --w (001: coder-14b-fp16)."""
    return posixpath.basename(weights_path.rstrip("/"))


def candle_gpu_args(args: CandleDeploymentArgs) -> GpuDeploymentArgs:
    """The generic Deployment args of a candle-vllm server (container ``candle``, health
    route ``/v1/models``, models PVC read-only)."""
    return GpuDeploymentArgs(
        name=args.name, namespace=args.namespace, image=args.image, command=list(args.command),
        args=candle_argv(args), env=dict(args.env), secret_env=dict(args.secret_env), port=args.port, container_name="candle",
        node=args.node, cards=args.cards, resources=args.resources, labels=dict(args.labels),
        cold_start_seconds=args.cold_start_seconds, startup=args.startup, health_path=CANDLE_HEALTH_PATH,
        models_pvc=args.models_pvc, parked_reason=args.parked_reason, former_names=list(args.former_names),
        delete_before_replace=args.delete_before_replace,
        served_model_names=[candle_served_name(args.weights_path)],
        run_as_user=args.run_as_user, root_reason=facts.ROOT_REASONS["candle-vllm"], runtime_class=args.runtime_class,
    )


class CandleDeployment(GpuDeployment):
    """A candle-vllm Deployment: :class:`GpuDeployment` with typed server fields.

    Type token ``llm-serving:index:CandleDeployment``. Args: :class:`CandleDeploymentArgs`.
    """

    TYPE = "llm-serving:index:CandleDeployment"

    def __init__(self, name: str, args: CandleDeploymentArgs, opts: Optional[pulumi.ResourceOptions] = None):
        self.candle_args = args
        self._create(name, candle_gpu_args(args), opts)
