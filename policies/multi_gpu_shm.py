"""multi-gpu-shm: pods with more than one card mount a sized, Memory-backed /dev/shm.

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

The rule is judged and worded once, in :mod:`core.rulebook.pods`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from collections.abc import Mapping

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
)

from core import facts, manifests, registry, terms
from core.quantity import QuantityError
from core.registry import Breach
from core.rulebook import pods as rules
from policylib import declare, stackconfig, views
from policylib import resource_helpers as rh

NAME = "multi-gpu-shm"
DEFAULT_MIN_SIZE_MIB = 1024
SOURCE = registry.RULES[NAME].source


def _shm_mount(c: manifests.Container):
    for m in c.volume_mounts:
        if str(m.get("mountPath", "")).rstrip("/") == facts.SHM_MOUNT_PATH:
            return m
    return None


def container_problems(w: manifests.Workload, c: manifests.Container, min_mib: float, house: bool = True) -> list[Breach]:
    """Breaches of one card-holding container of a multi-card pod; ``[]`` when its /dev/shm is right.
    ``house``: the cluster's conventions apply (a sizeLimit of at least ``min_mib``); without them
    an unbounded Memory emptyDir (bounded by the memory limit, tmpfs being charged to it) passes."""
    cards = w.cards_per_pod
    mount = _shm_mount(c)
    if mount is None:
        found = [rules.shm_volume(cards, f"mounts nothing at {facts.SHM_MOUNT_PATH}, so it gets the 64Mi container default")]
        return [b for b in found if b]
    name = str(mount.get("name", ""))
    volume = w.volume(name)
    if volume is None or not isinstance(volume.get("emptyDir"), Mapping):
        found = [rules.shm_volume(cards, f"mounts volume {name} at {facts.SHM_MOUNT_PATH}, which is not an emptyDir of the pod")]
        return [b for b in found if b]
    empty_dir = volume["emptyDir"]
    problems = []
    if str(empty_dir.get("medium", "")) != "Memory":
        problems.append(f"volume {name} at {facts.SHM_MOUNT_PATH} is not medium: Memory (it is disk-backed)")
    size_raw = empty_dir.get("sizeLimit")
    size = manifests.mib(size_raw)
    if size is None:
        if size_raw is not None:  # core.quantity refuses it, as the stack file's check does
            problems.append(f"volume {name} sizeLimit: {QuantityError(size_raw).rule}; write e.g. \"8Gi\"")
        elif house:
            problems.append(f"volume {name} at {facts.SHM_MOUNT_PATH} has no sizeLimit")
    elif size < min_mib and house:
        problems.append(f"volume {name} sizeLimit {size_raw} is below {min_mib:g} MiB")
    found = [rules.shm_volume(cards, p) for p in problems]
    if size is not None:
        found.append(rules.shm_limit_covers(cards, c.memory_limit_mib, size, str(size_raw)))
    return [b for b in found if b]


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or w.cards_per_pod <= 1:
        return
    min_mib = float(args.get_config().get("minSizeLimitMiB", DEFAULT_MIN_SIZE_MIB))
    house = stackconfig.house_conventions()
    for c in rh.gpu_containers(w):
        if c.from_runtime:
            continue  # KServe predictor.model: the ServingRuntime gives its mounts (not in the manifests)
        for breach in container_problems(w, c, min_mib, house):
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


POLICY = declare.resource_policy(
    NAME,
    validate,
    EnforcementLevel.MANDATORY,
    Severity.HIGH,
    config_schema=PolicyConfigSchema(
        properties={
            "minSizeLimitMiB": {
                "type": "number",
                "minimum": 64,
                "default": DEFAULT_MIN_SIZE_MIB,
                "description": "Smallest accepted /dev/shm sizeLimit in MiB (64Mi failed in coder.yaml; the components use 8Gi).",
            }
        }
    ),
)
