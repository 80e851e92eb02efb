"""A vLLM server as a KServe InferenceService (RawDeployment): :class:`VllmInferenceService`.

The manifest is built by the pure :func:`inference_service_manifest` in coder.yaml's form:
``serving.kserve.io/deploymentMode: RawDeployment``, predictor min/maxReplicas, nodeSelector,
``deploymentStrategy: Recreate``, container ``kserve-container`` with the arguments in
coder.yaml's order (:func:`vllm_argv`), ``runtimeClassName: nvidia`` and the models PVC.

Facts it carries (sources in ``core/base/facts.py``):

* the image is pinned by digest (coder.yaml: v0.15.0 failed, error 803); default v0.11.0;
* ``--served-model-name`` followed by each name as its own argv item (002 reasoning.yaml: the
  comma-joined form serves one model whose name contains the comma);
* on a card below sm_75 (V100 is sm_70): ``VLLM_USE_FLASHINFER_SAMPLER=0`` and
  ``VLLM_ATTENTION_BACKEND=TRITON_ATTN`` (coder.yaml: FlashInfer and FlashAttention-2 need sm75+);
* ``--disable-custom-all-reduce`` by default when TP is 2 and the node has no NVLink
  (coder.yaml: the custom all-reduce deadlocked after CUDA graph capture);
* a Memory-backed ``/dev/shm`` (8Gi) when the pod holds more than one card (coder.yaml);
* readiness (10 s) and startup probes on ``/health`` (coder.yaml), the startup budget above
  the declared cold start (coder.yaml: 120 x 15 s for about 10 min), a liveness probe behind it;
* ``enableServiceLinks: false`` (vllm-project/vllm #34199: a Service named ``vllm`` injects
  ``VLLM_PORT=tcp://...`` and vLLM refuses to start);
* ``HF_HOME=/mnt/models`` with the models PVC mounted READ-ONLY and ``HF_HUB_OFFLINE=1``: the
  Hugging Face cache on the PVC is read, never written (coder.yaml mounted it writable and let
  vLLM download ``--model`` into it; model mounts are read-only everywhere). A new model is
  downloaded to the PVC beforehand;
* the pod security of :mod:`components.pod` (seccomp RuntimeDefault, no privilege
  escalation, every capability dropped, no service account token; runs as root, the
  vllm/vllm-openai image's user, unless ``run_as_user`` is given).
"""

from __future__ import annotations

import posixpath
from typing import Any, Literal

import pulumi
from pydantic import Field

from components import pod
from components.workload import WorkloadArgs, WorkloadComponent, transition_options
from core.base import facts
from core.capacity.inventory import CardSpec
from core.catalog import cards
from core.engines.config import VllmConfig

KSERVE_API_VERSION = "serving.kserve.io/v1beta1"
#: vLLM's health route (coder.yaml; readiness every facts.READINESS_PERIOD_SECONDS).
VLLM_HEALTH_PATH = "/health"


class VllmArgs(VllmConfig, WorkloadArgs):
    """The typed fields of a vLLM InferenceService: the server settings of
    :class:`core.engines.config.VllmConfig` (its flags, declared once) and where it runs
    (:class:`components.workload.WorkloadArgs`).

    Types only (a served model name is one argv item: no comma, no space): the server's rules
    (TP x PP against the cards, TP against the model, dtype and kernels on the card, the context
    window, the startup budget) are the policy pack's, judged once on the rendered InferenceService.
    """

    model: str = Field(min_length=1, description="--model: the Hugging Face id (or a path on the PVC).")
    card: CardSpec = Field(description="The node's card: sm_70 env and the NVLink default come from it.")
    port: Literal[8080] = Field(default=8080, description="--port (8080, facts.CONTAINER_PORT).")

    @property
    def tp(self) -> int:
        """The tensor parallel size: explicit, else cards / pipeline_parallel_size."""
        return self.tp_for(self.placement.cards)



def vllm_argv(args: VllmArgs) -> list[str]:
    """VLLM's argv (:meth:`core.engines.config.VllmConfig.argv`, coder.yaml's order and form)."""
    return args.argv(args.model, tp=args.tp, nvlink=args.card.nvlink, port=args.port)


def vllm_env(args: VllmArgs) -> list[dict[str, str]]:
    """Environment: the sm_70 pair first when the card is below sm_75
    (:func:`core.catalog.cards.needs_volta_path`), then HF_HOME, HF_HUB_OFFLINE=1 when HF_HOME is on the
    read-only models PVC, then extras."""
    env: dict[str, str] = dict(facts.VLLM_VOLTA_ENV) if cards.needs_volta_path(args.card.sm) else {}
    env["HF_HOME"] = args.hf_home
    home = posixpath.normpath(args.hf_home)
    if home == facts.MODELS_MOUNT_PATH or home.startswith(facts.MODELS_MOUNT_PATH + "/"):
        env.update(facts.VLLM_READ_ONLY_CACHE_ENV)  # the cache is on the read-only models PVC
    env.update(args.placement.env)
    return [{"name": k, "value": v} for k, v in env.items()] + pod.secret_env_entries(args.name, list(args.placement.secret_env))


def vllm_container(args: VllmArgs) -> dict[str, Any]:
    """The ``kserve-container`` of the predictor."""
    return {
        "name": "kserve-container",
        "image": args.image,
        "args": vllm_argv(args),
        "env": vllm_env(args),
        "ports": [{"containerPort": args.port, "protocol": "TCP"}],
        "readinessProbe": pod.readiness_probe(VLLM_HEALTH_PATH, args.port),
        "startupProbe": pod.startup_probe(VLLM_HEALTH_PATH, args.port, args.placement),
        "livenessProbe": pod.liveness_probe(VLLM_HEALTH_PATH, args.port),
        "resources": pod.container_resources(args.placement.resources, args.placement.cards),
        "volumeMounts": pod.model_mounts(args.placement.cards),
        "securityContext": pod.container_security_context(),
    }


def inference_service_labels(args: VllmArgs) -> dict[str, str]:
    """The InferenceService's labels: the given ones, then part-of (coder.yaml)."""
    return {**args.placement.labels, facts.PART_OF_LABEL: facts.PART_OF_VALUE}


def predictor_selector(args: VllmArgs) -> dict[str, str]:
    """What a Service selects to reach the predictor pods: the InferenceService's own labels
    (KServe propagates them) but part-of, plus KServe's ``component: predictor`` and
    ``serving.kserve.io/inferenceservice: <name>`` (reasoning-long-service.yaml)."""
    return {**args.placement.labels, facts.KSERVE_COMPONENT_LABEL: facts.KSERVE_PREDICTOR_COMPONENT,
            facts.KSERVE_ISVC_LABEL: args.name}


def predictor_pod_labels(args: VllmArgs) -> dict[str, str]:
    """Every label KServe gives the predictor pods (RawDeployment)."""
    return {**inference_service_labels(args), **predictor_selector(args), "app": f"{facts.KSERVE_APP_LABEL_PREFIX}{args.name}{facts.KSERVE_PREDICTOR_SUFFIX}"}


def inference_service_manifest(args: VllmArgs, component: str) -> dict[str, Any]:
    """The InferenceService as a manifest dict. Parked: min/maxReplicas 0 and the parked
    annotation (an InferenceService at 0 still reports Ready, kustomization). ``pulumi up`` awaits
    its ``Ready`` condition (``facts.WAIT_FOR_ANNOTATION``), bounded by ``pulumi.com/timeoutSeconds``."""
    replicas = 0 if args.placement.parked_reason else 1
    p = args.placement
    annotations = {facts.KSERVE_DEPLOYMENT_MODE_ANNOTATION: facts.KSERVE_RAW_MODE,
                   **pod.workload_annotations(component, p.cold_start_seconds, args.served_model_names, p.parked_reason,
                                              None if p.run_as_user else facts.ROOT_REASONS["vllm"]),
                   facts.WAIT_FOR_ANNOTATION: facts.ISVC_WAIT_FOR,
                   **pod.former_names_annotation(p.former_names)}
    if args.gpu_memory_utilization_override is not None:
        annotations[facts.GMU_OVERRIDE_ANNOTATION] = args.gpu_memory_utilization_override.reason
    volumes = pod.model_volumes(args.placement.models_pvc, args.placement.cards)
    return {
        "apiVersion": KSERVE_API_VERSION,
        "kind": "InferenceService",
        "metadata": {"name": args.name, "namespace": args.namespace, "labels": inference_service_labels(args),
                     "annotations": annotations},
        "spec": {
            "predictor": {
                "minReplicas": replicas,
                "maxReplicas": replicas,
                "nodeSelector": {facts.HOSTNAME_LABEL: args.placement.node},
                "deploymentStrategy": {"type": facts.GPU_ROLLOUT_STRATEGY},
                "containers": [vllm_container(args)],
                **({"runtimeClassName": args.runtime_class} if args.runtime_class else {}),
                "automountServiceAccountToken": facts.AUTOMOUNT_SERVICE_ACCOUNT_TOKEN,
                "securityContext": pod.pod_security_context(args.placement.run_as_user),
                "enableServiceLinks": False,
                "volumes": volumes,
            }
        },
    }


class VllmInferenceService(WorkloadComponent):
    """A vLLM server in a KServe InferenceService; one child
    ``kubernetes:serving.kserve.io/v1beta1:InferenceService`` named like the component.

    Type token ``llm-serving:index:VllmInferenceService``. Args: :class:`VllmArgs`.
    """

    TYPE = "llm-serving:index:VllmInferenceService"

    def __init__(self, name: str, args: VllmArgs, opts: pulumi.ResourceOptions | None = None):
        from pulumi_kubernetes.apiextensions import CustomResource

        super().__init__(self.TYPE, name, None, opts)
        manifest = inference_service_manifest(args, f"{type(self).__name__}/{name}")
        self.vllm_args = args
        self._place(args, args.port, args.served_model_names)
        self.pod_labels = predictor_pod_labels(args)
        self.selector_labels = predictor_selector(args)
        self._secret(name, args.namespace, args.placement.secret_env)
        self.inference_service = CustomResource(
            name,
            api_version=KSERVE_API_VERSION,
            kind="InferenceService",
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=transition_options(args, self),
        )
        self.register_outputs(self._outputs())
