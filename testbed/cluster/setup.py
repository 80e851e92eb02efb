"""What ``up`` puts into the cluster kwokctl started: kwok's Stages (``cluster_kwok_stages.yaml``,
with the pod-ready delay) and the objects of ``cluster_objects.yaml`` (node worker-1 with four
cards, RuntimeClass, namespace, PV and PVC, the InferenceService CRD), applied server-side, and
the checks that each object is ready."""

from __future__ import annotations

import contextlib
import json
import ssl
from pathlib import Path
from typing import Any

from testbed.cluster.kwokctl import http
from testbed.cluster.layout import CLAIM, CRD_NAME, NAMESPACE, NODE_NAME, ClusterError

HERE = Path(__file__).resolve().parent
OBJECTS_FILE = HERE / "cluster_objects.yaml"
STAGES_FILE = HERE / "cluster_kwok_stages.yaml"
FIELD_MANAGER = "llm-serving-cluster"
POD_READY_STAGE = "pod-ready"

# REST paths of the kinds in cluster_objects.yaml: (apiVersion, kind) -> (prefix, plural, namespaced)
RESOURCES: dict[tuple[str, str], tuple[str, str, bool]] = {
    ("v1", "Node"): ("/api/v1", "nodes", False),
    ("v1", "Namespace"): ("/api/v1", "namespaces", False),
    ("v1", "PersistentVolume"): ("/api/v1", "persistentvolumes", False),
    ("v1", "PersistentVolumeClaim"): ("/api/v1", "persistentvolumeclaims", True),
    ("node.k8s.io/v1", "RuntimeClass"): ("/apis/node.k8s.io/v1", "runtimeclasses", False),
    ("kwok.x-k8s.io/v1alpha1", "Stage"): ("/apis/kwok.x-k8s.io/v1alpha1", "stages", False),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): (
        "/apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        False,
    ),
}


# --------------------------------------------------------------------------------------------
# data files


def load_objects(path: Path = OBJECTS_FILE) -> list[dict[str, Any]]:
    import yaml

    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def load_stages(path: Path = STAGES_FILE) -> list[dict[str, Any]]:
    import yaml

    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def stages(pod_ready_delay: float, path: Path = STAGES_FILE) -> list[dict[str, Any]]:
    """Kwok's Stages with ``pod-ready``'s delay set to ``pod_ready_delay`` seconds (kwok reads
    them from the apiserver: applying them again with another delay takes effect at once)."""
    out = load_stages(path)
    ready = [s for s in out if s.get("kind") == "Stage" and s["metadata"]["name"] == POD_READY_STAGE]
    if not ready:
        raise ClusterError(f"{path} has no Stage {POD_READY_STAGE!r}; it is part of this repository, restore it")
    ready[0]["spec"].setdefault("delay", {})["durationMilliseconds"] = int(round(pod_ready_delay * 1000))
    return out


def resource_path(obj: dict[str, Any], subresource: str = "") -> str:
    key = (obj["apiVersion"], obj["kind"])
    if key not in RESOURCES:
        raise ClusterError(f"{OBJECTS_FILE.name} or {STAGES_FILE.name}: no REST path known for {key[1]} ({key[0]}); add it to RESOURCES in testbed/cluster/setup.py")
    prefix, plural, namespaced = RESOURCES[key]
    meta = obj["metadata"]
    ns = f"/namespaces/{meta['namespace']}" if namespaced else ""
    return f"{prefix}{ns}/{plural}/{meta['name']}" + (f"/{subresource}" if subresource else "")


def apply_objects(api: str, ctx: ssl.SSLContext, objects: list[dict[str, Any]]) -> None:
    """Server-side apply each object (and its status, where it has one) in file order."""
    q = f"?fieldManager={FIELD_MANAGER}&force=true"
    for obj in objects:
        parts = [("", {k: v for k, v in obj.items() if k != "status"})]
        if "status" in obj:
            parts.append(("status", {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                                     "metadata": {"name": obj["metadata"]["name"]}, "status": obj["status"]}))
        for sub, body in parts:
            url = api + resource_path(obj, sub) + q
            status, text = http(url, ctx, "PATCH", json.dumps(body).encode(), "application/apply-patch+yaml", timeout=10)
            if status not in (200, 201):
                msg = text
                with contextlib.suppress(ValueError, AttributeError):
                    msg = json.loads(text).get("message", text)
                what = f"{obj['kind']} {obj['metadata']['name']}" + (f"/{sub}" if sub else "")
                raise ClusterError(f"kube-apiserver refused {what} "
                                   f"(HTTP {status}): {' '.join(str(msg).split())[:200]}")


def get_json(api: str, ctx: ssl.SSLContext, path: str) -> tuple[dict[str, Any] | None, str]:
    status, text = http(api + path, ctx)
    if status != 200:
        return None, f"GET {path}: " + (f"HTTP {status}" if status is not None else text)
    return json.loads(text), ""


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}


def check_node(api: str, ctx: ssl.SSLContext) -> tuple[bool, str]:
    node, err = get_json(api, ctx, f"/api/v1/nodes/{NODE_NAME}")
    if node is None:
        return False, err
    if conditions(node).get("Ready") != "True":
        return False, f"node {NODE_NAME} not Ready yet"
    taints = (node.get("spec") or {}).get("taints") or []
    if taints:
        return False, f"node {NODE_NAME} still has taints {[t.get('key') for t in taints]}"
    return True, ""


def check_claim(api: str, ctx: ssl.SSLContext) -> tuple[bool, str]:
    pvc, err = get_json(api, ctx, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims/{CLAIM}")
    if pvc is None:
        return False, err
    phase = (pvc.get("status") or {}).get("phase")
    return phase == "Bound", f"PVC {NAMESPACE}/{CLAIM} is {phase}"


def check_service_account(api: str, ctx: ssl.SSLContext) -> tuple[bool, str]:
    sa, err = get_json(api, ctx, f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default")
    return sa is not None, err or ""


def check_crd(api: str, ctx: ssl.SSLContext, name: str = CRD_NAME) -> tuple[bool, str]:
    crd, err = get_json(api, ctx, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    if crd is None:
        return False, err
    return conditions(crd).get("Established") == "True", f"CRD {name} not Established"
