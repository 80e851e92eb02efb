"""The hard-won facts of the llm-serving namespace, as constants with their sources.

Plain data, no Pulumi import: the program, the policy pack (``policies/``) and the offline
tools (``tools/``) all read this module, so a fact is written once.

Sources are named the way ``../shared/spec/prod-stack.md`` names them: a seed commit
(``000`` .. ``004`` under ``../shared/seeds/``) or a reference manifest
(``../shared/reference/k8s/apps/llm-serving/*.yaml``).

The annotation keys below are the contract between the components and the policy pack:
what only a component knows (a Service's declared clients, a parked workload and its
reason, a server's cold start) is written onto the Kubernetes object, so the pack reaches
the same verdict on objects from this program and on hand-written manifests that carry
the same annotations.
"""

from __future__ import annotations

# --- labels -----------------------------------------------------------------------------

#: Every object carries this label (all seeds).
PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF_VALUE = "llm-serving"

#: Label that pins a pod to a node (coder.yaml ``nodeSelector``).
HOSTNAME_LABEL = "kubernetes.io/hostname"

#: Extended resource name of an NVIDIA card.
GPU_RESOURCE = "nvidia.com/gpu"

#: Labels KServe puts on the predictor pods of an InferenceService (RawDeployment), beside
#: the InferenceService's own metadata.labels (reasoning-long-service.yaml selects them).
KSERVE_ISVC_LABEL = "serving.kserve.io/inferenceservice"
KSERVE_COMPONENT_LABEL = "component"
KSERVE_PREDICTOR_COMPONENT = "predictor"
#: KServe (RawDeployment) names the predictor's Deployment and Service ``<isvc>-predictor``
#: (``constants.PredictorServiceName``) and labels its pods ``app: isvc.<isvc>-predictor``
#: (reasoning-long-service.yaml: clients use ``reasoning-predictor``).
KSERVE_PREDICTOR_SUFFIX = "-predictor"
#: The annotation that picks an InferenceService's deployment mode, and the mode every
#: InferenceService here uses (a plain Deployment; no Knative).
KSERVE_DEPLOYMENT_MODE_ANNOTATION = "serving.kserve.io/deploymentMode"
KSERVE_RAW_MODE = "RawDeployment"
KSERVE_APP_LABEL_PREFIX = "isvc."

# --- annotations: the component -> policy contract ----------------------------------------

ANNOTATION_PREFIX = "llm-serving.riotpiao.com/"

#: On a Deployment, InferenceService or Service: why it is parked (replicas 0 / no
#: endpoints on purpose). Its presence is the declaration; the value is the reason.
#: Source: 000 (clef-serve parked at 0 "to free the only V100"), kustomization (an
#: InferenceService at zero replicas still reports Ready=True).
PARKED_ANNOTATION = ANNOTATION_PREFIX + "parked"

#: On a model-server workload: the declared cold start in whole seconds, from pod start
#: to the health endpoint answering. The startup probe budget must exceed it.
#: Source: 002 (clef-serve about 4 minutes), coder.yaml (vLLM TP=2 at 256K about 10 min).
COLD_START_ANNOTATION = ANNOTATION_PREFIX + "cold-start-seconds"

#: On a Service: its declared clients, a JSON list of
#: ``{"name": str, "namespace": str, "port": int}`` (port = the Service port they call).
#: Source: 002 networkpolicy.yaml (poimen-memory dropped for 34 days).
CLIENTS_ANNOTATION = ANNOTATION_PREFIX + "clients"

#: On a model-server workload: the served model names it answers, a JSON list of strings.
#: Written by the components for readers; the policies derive names from the server's
#: arguments (``--served-model-name``; candle-vllm: the basename of ``--w``, which is what
#: its /v1/models reports, seed 001) so plain manifests need not carry it.
SERVED_NAMES_ANNOTATION = ANNOTATION_PREFIX + "served-model-names"

#: On a model-server workload whose containers run as root: why (the image allows no other
#: user). Its presence is the declaration the pod-run-as-non-root policy accepts in place of
#: ``runAsNonRoot: true``. Source: the Pod Security Standards (restricted profile), kubernetes.io/docs/concepts/security/pod-security-standards.
RUNS_AS_ROOT_ANNOTATION = ANNOTATION_PREFIX + "runs-as-root"

#: On every object the program renders: the ComponentResource that made it
#: (``<ClassName>/<component name>``); the preview summary groups objects by it.
COMPONENT_ANNOTATION = ANNOTATION_PREFIX + "component"
#: The annotation contract's other half: the stack-file section each ComponentResource class is
#: built from, so a policy names the stack-file key of an object it judges (``llm-serving:
#: workloads.<name>``). tests/components/test_manifest_functions.py holds it equal to the classes of ``components/``.
#: The ComponentResource classes whose Kubernetes object the program creates with Pulumi's
#: ``protect`` option (``components/service.py`` reads it): the engine refuses to delete or
#: replace such an object until ``pulumi state unprotect`` clears the flag in the stack's state.
#: Source: coder-service.yaml ("Do not delete and recreate this Service").
PROTECTED_COMPONENTS = frozenset({"StablePredictorService"})
COMPONENT_SECTIONS = {
    "CandleDeployment": "workloads",
    "GpuDeployment": "workloads",
    "VllmInferenceService": "workloads",
    "StablePredictorService": "services",
    "NamespaceNetworkPolicy": "network_policy",
}

#: On a renamed workload: its former names, a JSON list of strings (stack file
#: ``former_names``). The program makes them Pulumi aliases; the offline diff pairs the renamed
#: object with the object of its former name by this annotation. Source: Pulumi's aliases (renaming
#: clef-candle on a full worker-1 left the new pod Pending).
FORMER_NAMES_ANNOTATION = ANNOTATION_PREFIX + "former-names"

# --- runtime and rollout facts ------------------------------------------------------------

#: Required on every GPU pod; without it libcuda.so is not injected and the server panics
#: at start ("Unable to dynamically load the cuda shared library"). Source: 001, 003.
GPU_RUNTIME_CLASS = "nvidia"

#: Every card on the node is allocated, so a RollingUpdate surge pod waits Pending forever
#: for a card the old pod holds. Source: 001, 003, coder.yaml.
GPU_ROLLOUT_STRATEGY = "Recreate"

#: A moving tag needs this, or a rebuilt image never reaches the pod. Source: 003.
MOVING_TAG_PULL_POLICY = "Always"

#: The models PVC, mounted read-only; it holds weights and the fixed candle-vllm binary.
#: Source: 001, 003.
MODELS_PVC = "llm-models"
MODELS_MOUNT_PATH = "/mnt/models"

#: A Memory-backed /dev/shm for pods with more than one card; the 64Mi default shows up as
#: an init hang or a bus error under NCCL. Source: coder.yaml.
SHM_MOUNT_PATH = "/dev/shm"
SHM_SIZE_LIMIT = "8Gi"

#: vLLM on sm_70: FlashInfer's check_cuda_arch raises on 7.0, and FlashInfer /
#: FlashAttention-2 need sm75+, so Triton serves attention. Source: coder.yaml.
VLLM_VOLTA_ENV = {
    "VLLM_USE_FLASHINFER_SAMPLER": "0",
    "VLLM_ATTENTION_BACKEND": "TRITON_ATTN",
}

#: The last vLLM image measured to work on worker-1 (torch 2.8.0+cu128, driver 580.159.04);
#: v0.15.0 failed with an empty arch list and cudaGetDeviceCount error 803. Source: coder.yaml.
VLLM_IMAGE = (
    "vllm/vllm-openai:v0.11.0"
    "@sha256:014a95f21c9edf6abe0aea6b07353f96baa4ec291c427bb1176dc7c93a85845c"
)

#: The Services' ports: 80 for base URLs without a port, 8080 = the container port.
#: Source: coder-service.yaml, reasoning-long-service.yaml.
SERVICE_PORTS = ((80, "http"), (8080, "http-8080"))
CONTAINER_PORT = 8080

# --- pod security: the Pod Security Standards' "restricted" profile where a GPU
# server allows it (kubernetes.io/docs/concepts/security/pod-security-standards) -------------

#: Every pod: the container runtime's default seccomp profile (restricted: "Seccomp").
SECCOMP_PROFILE = {"type": "RuntimeDefault"}
#: Every container: no privilege escalation, every capability dropped (restricted:
#: "Privilege Escalation", "Capabilities"); GPU access comes from the nvidia runtime class and
#: the device plugin, not from capabilities.
CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
#: The model servers talk to no Kubernetes API: no service account token in the pod.
AUTOMOUNT_SERVICE_ACCOUNT_TOKEN = False
#: Readiness probe period of every model server, seconds (coder.yaml's vLLM readiness: 10 s).
READINESS_PERIOD_SECONDS = 10

#: Why each kind of server runs as root unless the stack file gives ``run_as_user`` (the
#: restricted profile's ``runAsNonRoot`` is the one GPU servers here cannot meet by default).
ROOT_REASONS = {
    "vllm": "the vllm/vllm-openai image runs as root (its Dockerfile sets no USER) and keeps its caches under /root",
    "candle-vllm": ("the candle-vllm images (built on nvidia/cuda) set no USER; set run_as_user once the image "
                    "is checked to start as another user"),
    "pytorch": "clef-serve pip-installs its packages into the image's site-packages at start (002, 004), which needs root",
}

#: checkov's skip annotation (``checkov.io/skip<N>: <check>=<reason>``): the checks of the
#: restricted profile and image hygiene a rendered Deployment cannot meet, each waived on the
#: object with its reason (no failed check is waived without a written reason).
CHECKOV_SKIP_ANNOTATION = "checkov.io/skip"
#: Check id -> reason, for the waivers that do not depend on the workload's own facts.
CHECKOV_WAIVER_REASONS = {
    # readOnlyRootFilesystem: the servers write at run time outside their volumes.
    "CKV_K8S_22": ("model servers write to the root filesystem at run time (Triton, CUDA and torch compile "
                   "caches under the home directory; clef-serve pip-installs at start)"),
    # digest / tag: moving tags on purpose.
    "CKV_K8S_43": ("a moving tag on purpose (the team rebuilds it, e.g. :sm70 for Volta), pulled with imagePullPolicy Always so "
                   "the rebuilt image reaches the pod (003)"),
    "CKV_K8S_14": "the image is published only under this moving tag; pulled Always (003)",
}
#: The checks a root container fails (runAsNonRoot; UID >= 10000): waived with the server's
#: :data:`ROOT_REASONS` entry.
CHECKOV_ROOT_CHECKS = ("CKV_K8S_23", "CKV_K8S_40")

#: HF_HUB_OFFLINE=1 for vLLM: the models PVC is mounted read-only, so the Hugging Face cache
#: (HF_HOME on the PVC) is read, never written; a model is downloaded to the PVC beforehand.
VLLM_READ_ONLY_CACHE_ENV = {"HF_HUB_OFFLINE": "1"}

# --- the kubernetes provider's awaits ------------------------------------------------------

#: On a workload and on the Service in front of it: how long ``pulumi up`` waits for it to be
#: ready, in whole seconds (pulumi-kubernetes ``metadata.AnnotationTimeoutSeconds``; without it
#: the provider waits 10 minutes for a Deployment and for a Service's endpoints,
#: ``DefaultDeploymentTimeoutMins`` / ``DefaultServiceTimeoutMins`` in ``provider/pkg/await``).
#: The value comes from the declared cold start (:func:`core.rulebook.time_budgets.await_timeout_seconds`).
AWAIT_TIMEOUT_ANNOTATION = "pulumi.com/timeoutSeconds"

#: On an InferenceService: what ``pulumi up`` awaits (pulumi-kubernetes v4.25.0
#: ``metadata.AnnotationWaitFor``, read by ``metadata.ReadyCondition`` in
#: ``provider/pkg/metadata/overrides.go``): without it the provider does not await a custom
#: resource at all (unless ``PULUMI_K8S_AWAIT_ALL=true``), so ``pulumi.com/timeoutSeconds`` bounded
#: nothing. ``condition=Ready``: KServe's Ready condition, set once the predictor is ready.
#: KServe copies it into the predictor's pod template like every annotation (core/k8s/manifests/transition_cost.py).
WAIT_FOR_ANNOTATION = "pulumi.com/waitFor"
ISVC_WAIT_FOR = "condition=Ready"

#: On a Service whose workload is parked: ``"true"`` makes the provider skip its endpoint await
#: (``metadata.AnnotationSkipAwait``); a parked workload's Service has no endpoints on purpose.
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"

#: On every object when the stack file sets ``llm-serving:adopt: true``: ``"true"`` makes the
#: provider's server-side apply force conflicts (``metadata.AnnotationPatchForce``), taking the
#: fields whose live value differs from the program's over from the old field manager
#: (ArgoCD's ``argocd-controller``). Without it, this provider's first create of an object that
#: already exists is an apply without force: equal fields become shared, a differing one fails
#: with "Server-Side Apply field conflict" (tests/real/test_real_adoption.py).
PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"

# Compute capability thresholds (sm_70, sm_75, sm_80) are rules: core/catalog/cards.py SM_VOLTA,
# SM_TURING, SM_AMPERE.

# --- the engines' own environment and default endpoints -------------------------------------

#: The environment namespace each engine reads its settings from. vLLM reads every ``VLLM_*``
#: variable through vllm/envs.py, and a Service named ``vllm`` makes the kubelet inject
#: ``VLLM_PORT=tcp://<ip>:<port>``, which vLLM refuses to start on (vllm-project/vllm #34199 and
#: the docs note that followed). candle-vllm takes its settings as flags; no ``CANDLE_*``
#: namespace of its own is known, so it has no entry (only ``RUST_LOG`` / ``CUDA_*``, which no
#: Service name produces with a ``_SERVICE_HOST`` / ``_PORT`` suffix).
ENGINE_ENV_PREFIXES: dict[str, str] = {"vllm": "VLLM_"}

#: Of an engine's own variables, those a Service's links can set and the engine parses so that
#: a ``tcp://<ip>:<port>`` value stops it: vLLM's envs.py reads ``VLLM_PORT`` as an integer (a
#: Service named ``vllm``). Other injected ``VLLM_*`` names (a Service ``vllm-router`` gives
#: ``VLLM_ROUTER_SERVICE_HOST``) are names vLLM does not read: it logs them as unknown and starts.
ENGINE_ENV_PARSED: dict[str, frozenset[str]] = {"vllm": frozenset({"VLLM_PORT"})}

#: Where each engine listens when its argv names no host or port: vLLM ``--host`` None (every
#: interface) and ``--port`` 8000 (vllm/entrypoints/openai/cli_args.py); candle-vllm binds every
#: interface on ``--p`` 2000 (src/main.rs).
ENGINE_DEFAULT_PORTS: dict[str, int] = {"vllm": 8000, "candle-vllm": 2000}

#: On a vLLM workload: the declared reason its ``--gpu-memory-utilization`` is above
#: ``core.engines.config.GPU_MEMORY_UTILIZATION_CEILING`` (written by the component from the stack file's
#: ``gpu_memory_utilization_override: {reason: ...}``). Source: vllm-project/vllm #15598 (0.98 ran
#: out of memory in CUDA-graph capture).
GMU_OVERRIDE_ANNOTATION = ANNOTATION_PREFIX + "gpu-memory-utilization-override"

#: Startup budget = this many times the declared cold start (coder.yaml: 120 x 15 s = 30 min of
#: headroom for about 10 min of start-up, i.e. 3x).
STARTUP_HEADROOM = 3

#: The longest window a rope factor may derive, in tokens: vLLM's per-request sequence lengths are
#: int32 tensors (the attention metadata's ``seq_lens``), so a window past 2^31-1 cannot be served.
MOST_TOKENS = 2**31 - 1
