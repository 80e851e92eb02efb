"""A GPU pod's own shape: whole cards, the RuntimeClass that injects the driver, a sized /dev/shm
for tensor parallel, a moving image tag pulled Always. Judged once for the pack (gpu-whole-cards,
gpu-runtime-class, multi-gpu-shm, moving-tag-pull-always) and, where the stack file can break
the rule, for the stack file (``stackfile/checks.py``: the /dev/shm under the memory limit).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.base import facts
from core.engines.settings import S
from core.judging.registry import MANIFEST, STACK, Breach, Setting, declare_policy, only, rule

RUNTIME_CLASS = Setting("runtime_class", None, "runtimeClassName")
PULL_POLICY = Setting("image_pull_policy", None, "imagePullPolicy")
SHM_SOURCE = "seed 000 (coder.yaml: /dev/shm for tensor parallel)"
_NCCL = ("NCCL's all-reduce between ranks goes through /dev/shm, and too small shows up as an init hang or a "
         "bus error")


@rule("gpu-whole-cards", "nvidia.com/gpu is asked in whole cards, with a limit equal to the request.",
      "Kubernetes docs, extended resources (nvidia.com/gpu cannot be shared or overcommitted)",
      policy="gpu-whole-cards")
def whole_cards(problems: Sequence[str]) -> Breach | None:
    """``problems``: what is wrong with the request and limit as written (``request "0.5" is not a
    whole number of cards``); ``[]``: fine."""
    if not problems:
        return None
    return Breach(f"{facts.GPU_RESOURCE} " + "; ".join(problems) + "; cards are whole and not overcommitted",
                  only(STACK, f"set {S.cards} to a whole number")
                  + only(MANIFEST, "set requests and limits to the same whole number (or give the limit only)"))


@rule("gpu-runtime-class", "GPU pods name the RuntimeClass the cluster needs for them.",
      "seeds 001 and 003 (candle-vllm under runc: cudarc could not load libcuda.so)", policy="gpu-runtime-class")
def runtime_class(cards: int, written: str | None, want: str | None) -> Breach | None:
    """``want``: the class the cluster needs (None: none needed); ``written``: the pod's."""
    if want is None or written == want or cards <= 0:
        return None
    shown = f"{RUNTIME_CLASS} {written}" if written else f"no {RUNTIME_CLASS}"
    return Breach(f"pods hold {cards} card(s) of {facts.GPU_RESOURCE} but set {shown}; GPU pods need "
                  f"{RUNTIME_CLASS} {want}, or libcuda.so is not injected and the server crashes at start",
                  f"set {RUNTIME_CLASS.to(want)} in the pod spec")


@rule("multi-gpu-shm", "Pods with more than one card mount a sized, Memory-backed /dev/shm.", SHM_SOURCE,
      policy="multi-gpu-shm")
def shm_volume(cards: int, problem: str | None) -> Breach | None:
    """``problem``: what is wrong with the container's /dev/shm (``mounts nothing at /dev/shm, so it
    gets the 64Mi container default``); None: fine, or one card (no collective)."""
    if cards <= 1 or problem is None:
        return None
    return Breach(f"pods hold {cards} cards and the container {problem}; {_NCCL}",
                  only(MANIFEST, f"mount an emptyDir {{medium: Memory, sizeLimit: {facts.SHM_SIZE_LIMIT}}} at "
                       f"{facts.SHM_MOUNT_PATH} and ")
                  + f"keep {S.memory_limit} above the /dev/shm sizeLimit ({facts.SHM_SIZE_LIMIT})")


@rule("shm-under-memory-limit", "A multi-card pod's memory limit covers its /dev/shm sizeLimit.", SHM_SOURCE,
      policy="multi-gpu-shm")
def shm_limit_covers(cards: int, limit_mib: float | None, size_mib: float, size_shown: str) -> Breach | None:
    """MiB; ``limit_mib`` None: no limit. tmpfs pages are charged to the container's memory cgroup."""
    if cards <= 1 or limit_mib is None or limit_mib >= size_mib:
        return None
    return Breach(f"pods hold {cards} cards and the container's {S.memory_limit} {limit_mib:,.0f} MiB does not "
                  f"cover its /dev/shm sizeLimit {size_shown} ({size_mib:,.0f} MiB); tmpfs pages count against "
                  f"the memory limit; {_NCCL}",
                  f"raise {S.memory_limit} above the /dev/shm sizeLimit ({size_shown})")


@rule("moving-tag-pull-always", "An image not pinned by digest is pulled on every pod start.",
      "seed 003 (clef-candle.yaml: a merged fix looked like it did not land)", policy="moving-tag-pull-always")
def pull_always(image: str, tag: str, moves: bool, policy: str, defaulted: bool) -> Breach | None:
    """``moves``: the tag is taken as moving (no digest); ``policy``: the effective imagePullPolicy
    (``defaulted``: the API server's default for the tag)."""
    if not moves or policy == facts.MOVING_TAG_PULL_POLICY:
        return None
    shown = f"{policy} (the default for a tagged image)" if defaulted else policy
    return Breach(f"image {image} has moving tag {tag} and {PULL_POLICY} {shown}, so a rebuilt image never "
                  "reaches the pod",
                  f"pin {S.image} by @sha256 digest" + only(MANIFEST, f", or set {PULL_POLICY.to(facts.MOVING_TAG_PULL_POLICY)}"))


@rule("gpu-runtime-class-without-cards", "A pod under the GPU RuntimeClass that holds no card sees none.",
      "NVIDIA/k8s-device-plugin #61, #87 (the nvidia runtime exposes every card to a pod that requests none)",
      policy="gpu-runtime-class-without-cards")
def runtime_class_without_cards(runtime_class: str, visible: str | None) -> Breach | None:
    """A pod under ``runtime_class`` (the cluster's GPU class) that requests no card; ``visible``:
    its NVIDIA_VISIBLE_DEVICES (None: unset, so the image's, ``all`` on CUDA images)."""
    if visible is not None and visible.strip().lower() in ("void", "none", ""):
        return None
    shown = f"NVIDIA_VISIBLE_DEVICES={visible}" if visible is not None else "no NVIDIA_VISIBLE_DEVICES (CUDA images set all)"
    return Breach(f"{RUNTIME_CLASS} is {runtime_class} but it requests no {facts.GPU_RESOURCE}, with {shown}: the "
                  "nvidia runtime exposes every card of the node to it, beside the servers that hold them",
                  f"drop {RUNTIME_CLASS} (it needs no card), request the cards it uses, or set env "
                  "NVIDIA_VISIBLE_DEVICES=void")


@rule("node-offers-resources", "Pods request only extended resources their node offers.",
      "NVIDIA/k8s-device-plugin #929 (nvidia.com/gpu.shared on a node without time-slicing: Pending; shared "
      "slices cannot back tensor parallel)", policy="node-offers-resources")
def node_offers(resource: str, amount: str, node: str, offered: Sequence[str], tp: int) -> Breach | None:
    """``resource``: an extended resource a container requests (``amount``); ``node``: the node
    (or nodes) it may land on; ``offered``: the extended resources they advertise beside their cards."""
    if resource in offered:
        return None
    shared = (f"; and a time-sliced slice is a share of one card, so it cannot back tensor parallel size {tp}"
              if resource.endswith(".shared") and tp > 1 else "")
    return Breach(f"it requests {resource}: {amount}, which is not offered on {node} (offered: "
                  f"{', '.join([facts.GPU_RESOURCE, *offered])}): the pod stays Pending forever{shared}",
                  f"request whole cards as {facts.GPU_RESOURCE} (one per tensor-parallel rank), or record the "
                  "resource in the node's extended_resources once the node offers it")


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "gpu-runtime-class",
    "GPU pods (nvidia.com/gpu > 0) set the runtimeClassName the inventory names (nvidia on worker-1), so libcuda.so is injected.",
    (
        "Set runtimeClassName: nvidia in the pod spec (Deployment spec.template.spec, InferenceService spec.predictor). The "
        "components set it for every workload with cards. On a cluster whose default runtime injects the driver, leave "
        "gpu_runtime_class out of llm-serving:cluster."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    config={
        "runtimeClassName": {
            "type": "string",
            "description": (
                "The RuntimeClass that injects the NVIDIA driver libraries; overrides the inventory's "
                "gpu_runtime_class (seed 001). Default: the inventory's."
            ),
        }
    },
    doc="""gpu-runtime-class: on a cluster whose GPU pods need a RuntimeClass, every GPU pod names it.

Rule: when the inventory says GPU pods need a RuntimeClass (``llm-serving:cluster``
``gpu_runtime_class``, :class:`core.capacity.inventory.ClusterInventory`; the user's cluster:
``nvidia``), a Deployment, StatefulSet or InferenceService predictor whose pods hold cards
(nvidia.com/gpu above 0 in any container) sets the pod's ``runtimeClassName`` to it. The
policy parameter ``runtimeClassName``, when given, names the class instead (and asks for it
even on an inventory that says nothing).

Not run when neither says it: whether the NVIDIA runtime is the node's default is a fact of
the cluster, not of the manifest. The GPU Operator makes it the default by default, and GKE
refuses a runtimeClassName it does not have, so asking every GPU pod for ``nvidia`` there
would be a wrong mandatory finding; the analyze summary lists the policy as not judged.

Source: seed 001 (the candle-vllm Deployment ran under runc: libcuda.so was never injected
and candle-vllm panicked in cudarc, "Unable to dynamically load the cuda shared library"),
seed 003 (clef-candle.yaml carries the same comment), spec "GPU runtime" row. On clusters whose default runtime
is nvidia (the GPU Operator, GKE) a rule without the inventory fact flagged 9 of the 10 public-shaped
workloads of tests/policies/test_public_manifests.py.

Does not check: that the RuntimeClass object exists on the cluster; pods that reach a GPU
without requesting nvidia.com/gpu (NVIDIA_VISIBLE_DEVICES=all); parked workloads are judged
too (unparking is one replicas change).

""",
)

declare_policy(
    "gpu-whole-cards",
    "nvidia.com/gpu requests equal limits and are whole numbers of cards.",
    (
        "Give nvidia.com/gpu as a whole number under resources.limits, and under resources.requests either the same number or "
        "nothing (it then defaults to the limit)."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""gpu-whole-cards: nvidia.com/gpu is asked in whole cards, with a limit equal to the request.

Rule, for every container and init container of every object that runs pods (Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod, InferenceService components):
  - a ``nvidia.com/gpu`` request has a limit (a limit alone is fine: the request defaults to it);
  - request and limit are equal;
  - each is a whole, non-negative number of cards ("0.5" and "1500m" are not).

Source: Kubernetes extended resources cannot be overcommitted (the API
server rejects a request without an equal limit) and the NVIDIA device plugin hands out
whole cards only, so a fraction never schedules. The card counts of every other policy
(gpu-card-allocation, vllm-parallelism) assume whole cards.

Does not check: how many cards a node has (gpu-card-allocation); time-slicing or MIG
resources (other resource names are ignored).

""",
)

declare_policy(
    "moving-tag-pull-always",
    "An image not pinned by @sha256 digest has imagePullPolicy Always, so a rebuilt tag reaches the pod.",
    (
        "Set imagePullPolicy: Always on the container, or pin the image by digest (repository:tag@sha256:<digest>, as the vLLM "
        "image is in facts.VLLM_IMAGE)."
    ),
    kind="resource",
    level="mandatory",
    severity="medium",
    doc="""moving-tag-pull-always: an image not pinned by digest is pulled on every pod start.

Rule, for every container and init container of every object that runs pods (GPU or not):
an image without ``@sha256:`` digest has a moving tag, so its effective ``imagePullPolicy`` is
``Always``. Which tags move is a fact of the cluster's registry: where the inventory says tags
are rebuilt in place (``llm-serving:cluster`` ``image_tags_rebuilt: true``; the user's forge
rebuilds ``:sm70``, seed 003) every tag moves, whatever it says (``:sm70``, ``:v0.11.0``,
``:latest`` or none). Elsewhere a tag naming a build (it carries a number: a release
``v0.11.0``, a date ``20250312_0916_RC01``, a commit ``sha-3f2a1c9``;
``core.catalog.images.ImageRef.names_a_build``) is taken as fixed, as public registries publish them,
and only no tag and word-only tags (``latest``, ``nightly``, ``main``, ``stable``) are judged. An omitted policy counts as what the API server stores:
``Always`` for ``:latest`` or no tag, ``IfNotPresent`` for any other tag (Kubernetes docs,
"Image pull policy").

Source: seed 003 (clef-candle.yaml: ":sm70 is a moving tag. Default IfNotPresent keeps a
cached copy and a rebuilt image never reaches the pod, so a merged fix looks like it did not
land"); spec history row: seed 001's coder-14b-fp16.yaml as written (``:sm70-gptq-slim``,
no imagePullPolicy) is flagged.

Does not check: whether a digest-pinned image exists; ``imagePullSecrets``; that the tag
was in fact rebuilt.

""",
)

#: The smallest /dev/shm sizeLimit accepted by default, MiB (coder.yaml failed with 64Mi; the components use 8Gi).
DEFAULT_MIN_SIZE_MIB = 1024


declare_policy(
    "multi-gpu-shm",
    "Pods with more than one card mount a Memory-backed /dev/shm emptyDir with a sizeLimit the memory limit covers.",
    (
        "Add a pod volume {name: shm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}, mount it at /dev/shm in the server container,"
        " and keep resources.limits.memory above 8Gi."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    config={
        "minSizeLimitMiB": {
            "type": "number",
            "minimum": 64,
            "default": DEFAULT_MIN_SIZE_MIB,
            "description": "Smallest accepted /dev/shm sizeLimit in MiB (64Mi failed in coder.yaml; the components use 8Gi).",
        }
    },
    doc="""multi-gpu-shm: pods with more than one card mount a sized, Memory-backed /dev/shm.

Rule: when a pod holds more than one card (nvidia.com/gpu summed over its containers), each
container that holds cards mounts at ``/dev/shm`` an ``emptyDir`` volume with
``medium: Memory``, and the container's memory limit, when set, covers its sizeLimit. On a
cluster whose inventory holds the team's conventions (``llm-serving:cluster``
``house_conventions: true``, the user's) the sizeLimit must also be given and at least
``minSizeLimitMiB`` (default 1024 MiB, 16 x the 64Mi container default that failed; the
components use 8Gi, ``facts.SHM_SIZE_LIMIT``); elsewhere a Memory emptyDir without one is
bounded by the pod's memory and passes: tmpfs pages are charged to
the container's memory cgroup, so a full /dev/shm under a smaller limit OOM-kills the server.

Source: coder.yaml (vLLM TP=2: "NCCL all-reduce over TP=2 moves through /dev/shm. The 64Mi
default is too small and shows up as an init hang or a bus error"; 8Gi under a 40Gi limit).

candle-vllm is included. Evidence (candle-vllm sources, EricLBuehler/candle-vllm): with
``--d 0,1`` it runs one process per rank by default ("multi-process mode"; README
"Run Large models using multi-process mode (Multi-GPU)", ``--multithread`` is the debug
alternative), the ranks talk over local sockets (src/openai/communicator.rs, interprocess
``local_socket``), and every ``TensorParallelRowLinear`` all-reduces through NCCL
(src/openai/distributed.rs, ``cudarc::nccl::safe::Comm::all_reduce``). NCCL between
processes on one node allocates its buffers in /dev/shm (``ncclShmOpen``; reported failures
read "Error while creating shared memory segment /dev/shm/nccl-... (size 7340384)", and
PyTorch's CI needed ``--shm-size`` to stop a segfault in ``ncclShmOpen``), and falls back to
its SHM transport when PCIe peer-to-peer is off (no NVLink here; candle-vllm's README
suggests ``NCCL_P2P_DISABLE=1``). So the candle-vllm TP=2 pod has the same exposure as the
vLLM one. The reference coder-14b-fp16.yaml (no /dev/shm volume) ran, most likely with NCCL's
P2P transport and only its small segments in the 64Mi default; it is flagged, and the
component adds the volume (a listed fidelity delta).

Does not check: single-card pods (no collective); ``hostIPC``; a ``/dev/shm`` from a
hostPath; the KServe ``predictor.model`` container (its mounts come from the ServingRuntime);
parked workloads are judged too (unparking is one replicas change).

""",
)


declare_policy(
    "gpu-runtime-class-without-cards",
    "A pod under the GPU RuntimeClass that requests no nvidia.com/gpu sets NVIDIA_VISIBLE_DEVICES=void.",
    (
        "Drop runtimeClassName from a pod that needs no card, request the cards it uses, or set env "
        "NVIDIA_VISIBLE_DEVICES=void in its containers."
    ),
    kind="resource",
    level="advisory",
    severity="medium",
    doc="""gpu-runtime-class-without-cards: a pod under the GPU RuntimeClass that requests no card does not see them all.

Rule: a Deployment, StatefulSet or InferenceService whose pods name the cluster's GPU RuntimeClass
(the inventory's ``gpu_runtime_class``, else ``nvidia``) but request no ``nvidia.com/gpu`` sets
``NVIDIA_VISIBLE_DEVICES=void`` in every container. Otherwise the nvidia runtime exposes every card
of the node (CUDA images set ``NVIDIA_VISIBLE_DEVICES=all``), beside the servers that hold them.

Advisory: the pod itself starts; what it does with the cards decides the harm.
Source: NVIDIA/k8s-device-plugin #61, #87. Judged and worded once, in :mod:`core.rulebook.pods`.
""",
)


declare_policy(
    'node-offers-resources',
    "Pods request only extended resources their node offers (the inventory's extended_resources).",
    (
        "Request whole cards as nvidia.com/gpu (one per tensor-parallel rank); record in the node's extended_"
        'resources (llm-serving:cluster) what its device plugins advertise.'
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""node-offers-resources: pods request only extended resources their node offers.

Rule: every extended resource a container asks for (a name with a ``/``, other than ``nvidia.com/gpu``,
which the inventory's ``cards`` count) is in the ``extended_resources`` of the node the pods are pinned
to, else of some node of the inventory. A resource no node offers leaves the pod Pending forever; a
time-sliced ``nvidia.com/gpu.shared`` slice, even where offered, is a share of one card and cannot
back tensor parallel. Not judged where a candidate node does not record its extended resources.

Source: NVIDIA/k8s-device-plugin #929. Judged and worded once, in :mod:`core.rulebook.pods`.
""",
)
