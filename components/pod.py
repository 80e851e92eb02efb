"""The parts every model-server pod here shares, whatever object holds it (a Deployment's pod
template, an InferenceService's predictor): probes, volumes, security contexts, container
resources, the environment from the workload's Secret, and the component -> policy annotations.
Pure functions returning manifest fragments in the manifest's own shape (camelCase);
:mod:`components.workload` and :mod:`components.vllm` assemble them. Sources in ``core/base/facts.py``.
"""

from __future__ import annotations

import json
from typing import Any

from core.base import facts
from core.catalog.images import is_digest_pinned, parse_image
from core.k8s.placement import Placement, Resources, secret_name, startup_threshold
from core.rulebook import time_budgets

#: Liveness probe timing: a server that stops answering for 4 x 30 s is restarted. It starts
#: only after the startup probe succeeded, so it never races the model load.
LIVENESS_PERIOD_SECONDS = 30
LIVENESS_TIMEOUT_SECONDS = 10
LIVENESS_FAILURE_THRESHOLD = 4

def former_names_annotation(former_names: list[str]) -> dict[str, str]:
    """``{facts.FORMER_NAMES_ANNOTATION: '["clef-candle"]'}`` when the workload was renamed, else {}:
    the offline diff pairs the renamed object with its former self by it (tools/offline/treediff.py)."""
    return {facts.FORMER_NAMES_ANNOTATION: json.dumps(list(former_names))} if former_names else {}


def pull_policy(image: str) -> str | None:
    """``"Always"`` for an image not pinned by digest (003), else None (the default applies)."""
    return None if is_digest_pinned(image) else facts.MOVING_TAG_PULL_POLICY


def http_get(path: str, port: int) -> dict[str, Any]:
    """The ``httpGet`` part of a probe: ``{"httpGet": {"path": path, "port": port}}``."""
    return {"httpGet": {"path": path, "port": port}}


def startup_probe(path: str, port: int, placement: Placement) -> dict[str, Any]:
    """``startupProbe`` with ``failureThreshold`` x ``periodSeconds`` above the placement's
    declared cold start (:func:`core.k8s.placement.startup_threshold` of its ``startup_probe``)."""
    probe = placement.startup_probe
    return {**http_get(path, port), "failureThreshold": startup_threshold(placement.cold_start_seconds, probe),
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


def model_volumes(pvc: str, cards: int) -> list[dict[str, Any]]:
    """A model server's volumes: the models PVC, and /dev/shm when the pod holds more than one card."""
    return [models_volume(pvc)] + ([shm_volume()] if cards > 1 else [])


def model_mounts(cards: int) -> list[dict[str, Any]]:
    """The server container's mounts of :func:`model_volumes`: the models PVC read-only at
    ``/mnt/models`` (model mounts are never written), /dev/shm when the pod holds more than one card."""
    mounts: list[dict[str, Any]] = [{"name": "models", "mountPath": facts.MODELS_MOUNT_PATH, "readOnly": True}]
    if cards > 1:
        mounts.append({"name": "shm", "mountPath": facts.SHM_MOUNT_PATH})
    return mounts


def secret_env_entries(workload: str, names: list[str]) -> list[dict[str, Any]]:
    """Container ``env`` entries reading each of ``names`` from the workload's Secret
    (``valueFrom.secretKeyRef``): the value never appears in the pod spec."""
    return [{"name": n, "valueFrom": {"secretKeyRef": {"name": secret_name(workload), "key": n}}} for n in names]


def workload_annotations(component: str, cold_start_seconds: int, served_names: list[str],
                         parked_reason: str | None, root_reason: str | None = None) -> dict[str, str]:
    """The component -> policy annotations of a model server (core/base/facts.py), and how long
    ``pulumi up`` waits for it (``pulumi.com/timeoutSeconds``: :func:`core.rulebook.time_budgets.await_timeout_seconds`
    of the cold start; reasoning's 600 s would otherwise hit the provider's 10-minute default);
    ``root_reason``: why its containers run as root (None when they run as a non-root user)."""
    out = {
        facts.COMPONENT_ANNOTATION: component,
        facts.COLD_START_ANNOTATION: str(cold_start_seconds),
        facts.SERVED_NAMES_ANNOTATION: json.dumps(list(served_names)),
        facts.AWAIT_TIMEOUT_ANNOTATION: str(time_budgets.await_timeout_seconds(cold_start_seconds)),
    }
    if parked_reason:
        out[facts.PARKED_ANNOTATION] = parked_reason
    if root_reason:
        out[facts.RUNS_AS_ROOT_ANNOTATION] = root_reason
    return out


def checkov_waivers(image: str, root_reason: str | None) -> dict[str, str]:
    """``checkov.io/skip<N>`` annotations of a Deployment: each check it cannot meet with the
    reason (:data:`core.base.facts.CHECKOV_WAIVER_REASONS`; root: ``root_reason``); a check that
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


def pod_security_context(run_as_user: int | None) -> dict[str, Any]:
    """The pod ``securityContext``: the RuntimeDefault seccomp profile, and ``runAsNonRoot`` /
    ``runAsUser`` when a non-root UID is given (the Pod Security Standards' restricted profile)."""
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
