"""GPU workloads as ComponentResources: the generic :class:`GpuDeployment` and
:class:`CandleDeployment` built on it.

Each Kubernetes object is built by a small pure function that returns the manifest as a dict
in the manifest's own shape (camelCase), e.g. :func:`deployment_manifest`; tests call them
without the Pulumi engine, and the components pass ``metadata`` / ``spec`` straight into the
typed ``pulumi_kubernetes`` classes.

Facts every GPU pod gets here (``core/base/facts.py`` names the sources):

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

Those pod parts are :mod:`components.pod`'s (the vLLM InferenceService uses them too). Every
workload component's args extend :class:`WorkloadArgs`: the name, the namespace and where it
runs as one value (:class:`core.k8s.placement.Placement`).
"""

from __future__ import annotations

import posixpath
from typing import Any

import pulumi
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from components.pod import (
    checkov_waivers,
    container_resources,
    container_security_context,
    former_names_annotation,
    liveness_probe,
    model_mounts,
    model_volumes,
    pod_security_context,
    pull_policy,
    readiness_probe,
    secret_env_entries,
    startup_probe,
    workload_annotations,
)
from core.base import facts
from core.engines.config import CandleConfig
from core.k8s.placement import Placement, secret_name
from core.k8s.values import REDACTED
from core.rulebook import time_budgets

#: candle-vllm's health route. Its router (src/main.rs) serves only ``GET /v1/models``,
#: ``POST /v1/chat/completions`` and ``POST /v1/embeddings``, and binds the listener only after
#: the weights and the KV cache are allocated; ``/v1/models`` answering means it is serving.
CANDLE_HEALTH_PATH = "/v1/models"


# --- the args every workload component shares (components/vllm.py too) ----------------------

class ComponentArgs(BaseModel):
    """Base of the component argument models: unknown fields refused, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class WorkloadArgs(ComponentArgs):
    """What every model-server component takes whatever its server: its name and namespace,
    where it runs (:class:`core.k8s.placement.Placement`, one value: node, cards, labels, env,
    resources, cold start, startup probe, models PVC, parked, user, former names), the node's
    runtime class, and whether a replacement deletes the old object first (a renamed workload
    must not hold its cards twice on a full node).

    Types only: the server's rules (the startup budget against the cold start, cards, dtype,
    tensor parallel) are the policy pack's, judged once on the rendered manifest.
    """

    name: str = Field(description="Object name, e.g. candle-vllm or reasoning.")
    namespace: str = Field(description="Namespace (llm-serving).")
    placement: Placement = Field(description="Where and how it runs (the stack file's workload keys).")
    runtime_class: str | None = Field(
        default=facts.GPU_RUNTIME_CLASS,
        description="The pods' runtimeClassName: the inventory's gpu_runtime_class (worker-1: nvidia, seeds 001, 003); None: the cluster's default runtime injects the driver.")
    delete_before_replace: bool = Field(
        default=False,
        description=("Replace the child delete-first. The provider deletes first on its own only when the "
                     "object keeps its name and namespace (pulumi-kubernetes provider.go Diff); a rename "
                     "otherwise creates the new object while the old one still holds its cards."),
    )

    def workload_fields(self) -> dict[str, Any]:
        """The :class:`WorkloadArgs` fields of these args (name, namespace, placement, runtime
        class, delete-first), to hand whole to the args of the object that carries them."""
        return {name: getattr(self, name) for name in WorkloadArgs.model_fields}


def transition_options(args: WorkloadArgs, parent: pulumi.Resource) -> pulumi.ResourceOptions:
    """The child object's options: parented to the component, deleted first on replacement when
    ``args.delete_before_replace``. (The former names are the component's aliases; the child, named
    like the component, inherits them: Pulumi derives a child's alias from its parent's.)"""
    return pulumi.ResourceOptions(parent=parent, delete_before_replace=args.delete_before_replace or None)


def secret_manifest(workload: str, namespace: str, names: list[str], component: str) -> dict[str, Any]:
    """The workload's Secret (v1, Opaque) with each of ``names`` in ``stringData``, the values
    shown as :data:`core.k8s.values.REDACTED`: the component registers the real values as Pulumi
    secrets (:meth:`WorkloadComponent._secret`), so no rendering, diff or report holds them."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name(workload), "namespace": namespace, "labels": app_labels(workload),
                     "annotations": {facts.COMPONENT_ANNOTATION: component}},
        "type": "Opaque",
        "stringData": {n: REDACTED for n in names},
    }


# --- the generic GPU Deployment -------------------------------------------------------------

class GpuDeploymentArgs(WorkloadArgs):
    """A single-replica GPU Deployment pinned to a node: where it runs (:class:`WorkloadArgs`)
    and the container."""

    image: str = Field(min_length=1, description="Image; pulled Always unless pinned by digest (003).")
    command: list[str] = Field(default_factory=list, description="Container command; empty: the image's.")
    args: list[str] = Field(default_factory=list, description="Container args.")
    port: int = Field(default=facts.CONTAINER_PORT, ge=1, le=65535, description="Container port (8080).")
    container_name: str = Field(default="server", description="Container name (candle-vllm: candle).")
    health_path: str = Field(default="/health", description="HTTP route of the startup and liveness probes.")
    served_model_names: list[str] = Field(default_factory=list, description="Names it answers (annotation).")
    root_reason: str | None = Field(default=None, description="Why it runs as root (annotation), when run_as_user is None.")


def app_labels(name: str) -> dict[str, str]:
    """The object labels of every Deployment here: part-of and ``app: <name>`` (all seeds)."""
    return {facts.PART_OF_LABEL: facts.PART_OF_VALUE, "app": name}


def deployment_pod_labels(args: GpuDeploymentArgs) -> dict[str, str]:
    """Pod labels: part-of, the extra labels, then ``app: <name>`` (what Services select)."""
    return {facts.PART_OF_LABEL: facts.PART_OF_VALUE, **args.placement.labels, "app": args.name}


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
    env = [{"name": k, "value": v} for k, v in args.placement.env.items()]
    env += secret_env_entries(args.name, list(args.placement.secret_env))
    if env:
        c["env"] = env
    c["ports"] = [{"containerPort": args.port}]
    c["startupProbe"] = startup_probe(args.health_path, args.port, args.placement)
    c["livenessProbe"] = liveness_probe(args.health_path, args.port)
    c["readinessProbe"] = readiness_probe(args.health_path, args.port)
    c["securityContext"] = container_security_context()
    c["resources"] = container_resources(args.placement.resources, args.placement.cards)
    c["volumeMounts"] = model_mounts(args.placement.cards)
    return c


def gpu_pod_spec(args: GpuDeploymentArgs) -> dict[str, Any]:
    """The pod spec: runtime class nvidia, node pinned, the container, its volumes."""
    spec: dict[str, Any] = {
        **({"runtimeClassName": args.runtime_class} if args.runtime_class else {}),
        "nodeSelector": {facts.HOSTNAME_LABEL: args.placement.node},
        "automountServiceAccountToken": facts.AUTOMOUNT_SERVICE_ACCOUNT_TOKEN,
        "securityContext": pod_security_context(args.placement.run_as_user),
        "enableServiceLinks": False,
        "containers": [gpu_container(args)],
    }
    spec["volumes"] = model_volumes(args.placement.models_pvc, args.placement.cards)
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
                **workload_annotations(component, args.placement.cold_start_seconds, args.served_model_names,
                                       args.placement.parked_reason, None if args.placement.run_as_user else args.root_reason),
                **checkov_waivers(args.image, None if args.placement.run_as_user else args.root_reason),
                **former_names_annotation(args.placement.former_names),
            },
        },
        "spec": {
            "replicas": 0 if args.placement.parked_reason else 1,
            "strategy": {"type": facts.GPU_ROLLOUT_STRATEGY},
            **_progress_deadline(args.placement.cold_start_seconds),
            "selector": {"matchLabels": {"app": args.name}},
            "template": {"metadata": {"labels": deployment_pod_labels(args)}, "spec": gpu_pod_spec(args)},
        },
    }


def _progress_deadline(cold_start_seconds: int) -> dict[str, int]:
    """``{"progressDeadlineSeconds": n}`` when the default does not outlast the cold start
    (:func:`core.rulebook.time_budgets.progress_deadline_seconds`), else ``{}``."""
    seconds = time_budgets.progress_deadline_seconds(cold_start_seconds)
    return {} if seconds is None else {"progressDeadlineSeconds": seconds}


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
    parked_reason: str | None
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

    def _place(self, args: WorkloadArgs, port: int, served_model_names: list[str]) -> None:
        """Set the plain attributes from the component's args."""
        self.workload_name, self.namespace, self.port = args.name, args.namespace, port
        p = args.placement
        self.node, self.cards, self.parked_reason = p.node, p.cards, p.parked_reason
        self.cold_start_seconds = p.cold_start_seconds
        self.served_model_names = list(served_model_names)

    def _outputs(self) -> dict[str, Any]:
        return {"name": self.workload_name, "podLabels": self.pod_labels, "node": self.node,
                "cards": 0 if self.parked_reason else self.cards, "parked": self.parked_reason}


class GpuDeployment(WorkloadComponent):
    """A generic GPU Deployment (the reference PyTorch clef-serve server), one child
    ``kubernetes:apps/v1:Deployment`` named like the component.

    Type token ``llm-serving:index:GpuDeployment``. Args: :class:`GpuDeploymentArgs`.
    """

    TYPE = "llm-serving:index:GpuDeployment"

    def __init__(self, name: str, args: GpuDeploymentArgs, opts: pulumi.ResourceOptions | None = None):
        self._create(name, args, opts)

    def _create(self, name: str, args: GpuDeploymentArgs, opts: pulumi.ResourceOptions | None) -> None:
        from pulumi_kubernetes.apps.v1 import Deployment

        super().__init__(self.TYPE, name, None, opts)
        manifest = deployment_manifest(args, f"{type(self).__name__}/{name}")
        self._place(args, args.port, args.served_model_names)
        self.pod_labels = manifest["spec"]["template"]["metadata"]["labels"]
        self.selector_labels = manifest["spec"]["selector"]["matchLabels"]
        self._secret(name, args.namespace, args.placement.secret_env)
        self.deployment = Deployment(
            name,
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=transition_options(args, self),
        )
        self.register_outputs(self._outputs())


# --- candle-vllm ----------------------------------------------------------------------------

class CandleDeploymentArgs(CandleConfig, WorkloadArgs):
    """A candle-vllm server (coder-14b-fp16.yaml, clef-candle.yaml): the server settings of
    :class:`core.engines.config.CandleConfig` (its flags, declared once) and where it runs
    (:class:`WorkloadArgs`). TP is the placement's ``cards``; they become --d 0,1,... (001).
    Types only: TP against the model, the dtype on the card and the startup budget are the
    pack's (tensor-parallel-divisibility, candle-vllm-args, startup-probe-covers-cold-start).
    """

    weights_path: str = Field(min_length=1, description="--w, e.g. /mnt/models/coder-14b-fp16 (from the model entry).")


def candle_argv(args: CandleDeploymentArgs) -> list[str]:
    """candle-vllm's argv (:meth:`core.engines.config.CandleConfig.argv`, the references' order)."""
    return args.argv(args.weights_path, cards=args.placement.cards)


def candle_served_name(weights_path: str) -> str:
    """What candle-vllm's /v1/models reports: the basename of --w (001: coder-14b-fp16)."""
    return posixpath.basename(weights_path.rstrip("/"))


def candle_gpu_args(args: CandleDeploymentArgs) -> GpuDeploymentArgs:
    """The generic Deployment args of a candle-vllm server (container ``candle``, health
    route ``/v1/models``, models PVC read-only)."""
    return GpuDeploymentArgs.model_validate(dict(
        **args.workload_fields(), image=args.image, command=list(args.command), args=candle_argv(args),
        port=args.port, container_name="candle", health_path=CANDLE_HEALTH_PATH,
        served_model_names=[candle_served_name(args.weights_path)], root_reason=facts.ROOT_REASONS["candle-vllm"],
    ))


class CandleDeployment(GpuDeployment):
    """A candle-vllm Deployment: :class:`GpuDeployment` with typed server fields.

    Type token ``llm-serving:index:CandleDeployment``. Args: :class:`CandleDeploymentArgs`.
    """

    TYPE = "llm-serving:index:CandleDeployment"

    def __init__(self, name: str, args: CandleDeploymentArgs, opts: pulumi.ResourceOptions | None = None):
        self.candle_args = args
        self._create(name, candle_gpu_args(args), opts)
