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
from core.judging.registry import MANIFEST, STACK, Breach, Setting, describe_policy, only, rule

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


# --- the pack policies' own text -----------------------------------------------------------------

describe_policy(
    "gpu-runtime-class",
    "GPU pods (nvidia.com/gpu > 0) set the runtimeClassName the inventory names (nvidia on worker-1), so libcuda.so is injected.",
    (
        "Set runtimeClassName: nvidia in the pod spec (Deployment spec.template.spec, InferenceService spec.predictor). The "
        "components set it for every workload with cards. On a cluster whose default runtime injects the driver, leave "
        "gpu_runtime_class out of llm-serving:cluster."
    ),
)

describe_policy(
    "gpu-whole-cards",
    "nvidia.com/gpu requests equal limits and are whole numbers of cards.",
    (
        "Give nvidia.com/gpu as a whole number under resources.limits, and under resources.requests either the same number or "
        "nothing (it then defaults to the limit)."
    ),
)

describe_policy(
    "moving-tag-pull-always",
    "An image not pinned by @sha256 digest has imagePullPolicy Always, so a rebuilt tag reaches the pod.",
    (
        "Set imagePullPolicy: Always on the container, or pin the image by digest (repository:tag@sha256:<digest>, as the vLLM "
        "image is in facts.VLLM_IMAGE)."
    ),
)

describe_policy(
    "multi-gpu-shm",
    "Pods with more than one card mount a Memory-backed /dev/shm emptyDir with a sizeLimit the memory limit covers.",
    (
        "Add a pod volume {name: shm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}, mount it at /dev/shm in the server container,"
        " and keep resources.limits.memory above 8Gi."
    ),
)


describe_policy(
    "gpu-runtime-class-without-cards",
    "A pod under the GPU RuntimeClass that requests no nvidia.com/gpu sets NVIDIA_VISIBLE_DEVICES=void.",
    (
        "Drop runtimeClassName from a pod that needs no card, request the cards it uses, or set env "
        "NVIDIA_VISIBLE_DEVICES=void in its containers."
    ),
)


describe_policy(
    'node-offers-resources',
    "Pods request only extended resources their node offers (the inventory's extended_resources).",
    (
        "Request whole cards as nvidia.com/gpu (one per tensor-parallel rank); record in the node's extended_"
        'resources (llm-serving:cluster) what its device plugins advertise.'
    ),
)
