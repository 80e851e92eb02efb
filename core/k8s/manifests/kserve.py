"""An InferenceService's predictor as KServe builds it from a ServingRuntime of the manifest set.

KServe's reconciler (kserve/kserve ``pkg/controller/v1beta1/inferenceservice/components/predictor.go``
``reconcileModel`` and ``buildPodSpec``, at v0.20.0) turns the ``predictor.model`` form into a pod:

1. **The runtime**: the one ``model.runtime`` names (a ServingRuntime of the namespace, else a
   ClusterServingRuntime), or else the first that supports the model (``predictor_model.go``
   ``GetSupportingRuntimes``): not disabled, single-model, single-node, a ``supportedModelFormats``
   entry with ``autoSelect: true`` whose ``mt:<name>[:<version>]`` label is the model's, the model's
   protocol (default ``v1``) among its ``protocolVersions``; the namespace's before the cluster's, a
   higher ``priority`` first. Creation times are not in manifests, so ties go by name (KServe: newest
   first, then by name).
2. **The container merge** (``utils.MergeRuntimeContainers``): the runtime's ``kserve-container``
   with the model's fields patched over it as a strategic merge patch (env by name, ports by
   containerPort, volumeMounts by mountPath, resources key by key), and the args concatenated
   (the runtime's, then the InferenceService's; KServe before v0.20.0 replaced the runtime's args
   when the InferenceService gave any: the release is not in the inventory, so the shipped release's
   merge is judged and :data:`ARGS_MERGE` says so); then ``{{.Name}}`` / ``{{.Namespace}}``
   replaced from the InferenceService (``ReplacePlaceholders``).
3. **The storage initializer** (``pkg/webhook/admission/pod/storage_initializer_injector.go``): a
   ``storageUri`` other than ``pvc://`` adds the emptyDir ``kserve-provision-location``, the init
   container ``storage-initializer`` downloading into it, and its mount at ``/mnt/models``
   (read-only, the default of ``GetStorageInitializerReadOnlyFlag``); ``pvc://<claim>/<path>``
   mounts the claim there as ``kserve-pvc-source`` with ``subPath: <path>``.

Plain values in and out (the predictor as a pod spec with ``containers``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.k8s.manifests.read import as_map, as_seq, plain

SERVING_RUNTIME_TYPE = "kubernetes:serving.kserve.io/v1alpha1:ServingRuntime"
CLUSTER_SERVING_RUNTIME_TYPE = "kubernetes:serving.kserve.io/v1alpha1:ClusterServingRuntime"
RUNTIME_TYPES = frozenset({SERVING_RUNTIME_TYPE, CLUSTER_SERVING_RUNTIME_TYPE})
#: The container of a runtime the model's fields merge into (``constants.InferenceServiceContainerName``).
MODEL_CONTAINER = "kserve-container"
#: Where the model lands (``constants.DefaultModelLocalMountPath``) and the storage initializer's names.
MODEL_MOUNT_PATH = "/mnt/models"
PROVISION_VOLUME = "kserve-provision-location"
PVC_VOLUME = "kserve-pvc-source"
STORAGE_INITIALIZER = "storage-initializer"
#: How the args are merged, for messages: the shipped release's merge, judged where the inventory
#: does not say which KServe release the cluster runs.
ARGS_MERGE = ("judged as KServe v0.20.0 merges them (the runtime's args, then the InferenceService's); "
              "before v0.20.0 the InferenceService's args replace the runtime's")
#: Model fields that are not container fields (``v1beta1.ModelSpec`` beside the embedded Container).
_MODEL_ONLY = frozenset({"modelFormat", "runtime", "storageUri", "protocolVersion", "runtimeVersion", "storage"})
#: Strategic-merge keys of core/v1 Container lists (``patchMergeKey``).
_MERGE_KEYS = {"env": "name", "ports": "containerPort", "volumeMounts": "mountPath", "envFrom": None}


@dataclass(frozen=True)
class Runtime:
    """A ServingRuntime (``namespace`` set) or ClusterServingRuntime (``namespace`` None) as written."""

    name: str
    namespace: str | None
    spec: Mapping[str, Any]

    @property
    def shown(self) -> str:
        return f"{'ServingRuntime' if self.namespace is not None else 'ClusterServingRuntime'} {self.name}"


def runtimes_of(resources: Iterable[Any]) -> tuple[Runtime, ...]:
    """Every ServingRuntime and ClusterServingRuntime among ``resources`` (objects with
    ``resource_type`` and ``props``)."""
    out = []
    for r in resources:
        if r.resource_type in RUNTIME_TYPES:
            meta = as_map(r.props.get("metadata"))
            ns = None if r.resource_type == CLUSTER_SERVING_RUNTIME_TYPE else str(meta.get("namespace", "default"))
            out.append(Runtime(str(meta.get("name", "")), ns, plain(as_map(r.props.get("spec")))))
    return tuple(out)


def _supports(rt: Runtime, model: Mapping, named: bool) -> bool:
    spec = rt.spec
    if spec.get("disabled") is True or spec.get("multiModel") is True or spec.get("workerSpec"):
        return False
    fmt = as_map(model.get("modelFormat"))
    name, version = fmt.get("name"), fmt.get("version")
    wanted = f"mt:{name}" + (f":{version}" if version is not None else "")
    labels = set()
    for f in as_seq(spec.get("supportedModelFormats")):
        f = as_map(f)
        if named or f.get("autoSelect") is True:
            labels.add(f"mt:{f.get('name')}")
            if f.get("version") is not None:
                labels.add(f"mt:{f.get('name')}:{f.get('version')}")
    if wanted not in labels:
        return False
    protocol = str(model.get("protocolVersion") or "v1")
    versions = [str(v) for v in as_seq(spec.get("protocolVersions"))]
    return protocol in versions if versions else protocol == "v1"


def _priority(rt: Runtime, format_name: Any) -> int | None:
    for f in as_seq(rt.spec.get("supportedModelFormats")):
        f = as_map(f)
        if f.get("name") == format_name and isinstance(f.get("priority"), int):
            return int(f["priority"])
    return None


def select_runtime(model: Mapping, namespace: str, runtimes: Sequence[Runtime]) -> Runtime | None:
    """The runtime KServe gives ``model`` (an InferenceService's ``spec.predictor.model``) in
    ``namespace`` among ``runtimes`` (see the module docstring), or None: none of them fits (the
    runtime may be one the cluster has and the manifests do not, or KServe refuses the model)."""
    named = model.get("runtime")
    if named:
        found = [r for r in runtimes if r.name == named and r.namespace in (namespace, None)]
        found.sort(key=lambda r: r.namespace is None)  # the namespace's ServingRuntime first
        return found[0] if found and _supports(found[0], model, True) else None
    format_name = as_map(model.get("modelFormat")).get("name")
    out: list[Runtime] = []
    for cluster in (False, True):
        group = sorted((r for r in runtimes if (r.namespace is None) == cluster
                        and (cluster or r.namespace == namespace) and _supports(r, model, False)), key=lambda r: r.name)
        group.sort(key=lambda r: -(p if (p := _priority(r, format_name)) is not None else -(2 ** 31)))
        out += group
    return out[0] if out else None


def _merge_list(base: list[Any], patch: list[Any], key: str | None) -> list[Any]:
    if key is None:
        return list(patch)
    out = [copy.deepcopy(x) for x in base]
    for item in patch:
        item = plain(as_map(item))
        at = next((i for i, x in enumerate(out) if as_map(x).get(key) == item.get(key)), None)
        if at is None:
            out.append(item)
        else:
            out[at] = {**as_map(out[at]), **item}
    return out


def merged_container(runtime_container: Mapping, model: Mapping, name: str, namespace: str) -> dict[str, Any]:
    """The predictor container: ``model``'s container fields patched over the runtime's container
    (strategic merge), the args concatenated, the placeholders replaced (module docstring, step 2)."""
    out: dict[str, Any] = plain(as_map(runtime_container))
    for key, value in plain(as_map(model)).items():
        if key in _MODEL_ONLY or key in ("args", "name"):
            continue
        if key in _MERGE_KEYS and isinstance(value, list):
            out[key] = _merge_list(list(as_seq(out.get(key))), value, _MERGE_KEYS[key])
        elif key == "resources" and isinstance(value, Mapping):
            res = dict(as_map(out.get("resources")))
            for part, amounts in value.items():
                res[part] = {**as_map(res.get(part)), **as_map(amounts)} if isinstance(amounts, Mapping) else amounts
            out["resources"] = res
        else:
            out[key] = value
    out["args"] = [*as_seq(out.get("args")), *as_seq(as_map(model).get("args"))]
    out["name"] = MODEL_CONTAINER
    text = json.dumps(out).replace("{{.Name}}", name).replace("{{.Namespace}}", namespace)
    return dict(json.loads(text))


def predictor_pod(isvc: Mapping, runtime: Runtime) -> dict[str, Any]:
    """The predictor of InferenceService ``isvc`` (its whole manifest) as KServe builds it with
    ``runtime``: ``spec.predictor`` with ``model`` replaced by the merged container first in
    ``containers``, the runtime's other containers and pod fields beside it, and the storage
    initializer's volume, init container and mount (module docstring)."""
    meta = as_map(isvc.get("metadata"))
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", "default"))
    predictor = plain(as_map(as_map(isvc.get("spec")).get("predictor")))
    model = as_map(predictor.pop("model", {}))
    containers = [as_map(c) for c in as_seq(runtime.spec.get("containers"))]
    base = next((c for c in containers if c.get("name") == MODEL_CONTAINER), containers[0] if containers else {})
    main = merged_container(base, model, name, namespace)
    pod: dict[str, Any] = {k: plain(v) for k, v in runtime.spec.items()
                           if k not in ("containers", "supportedModelFormats", "protocolVersions", "multiModel",
                                        "disabled", "builtInAdapter", "grpcDataEndpoint", "grpcEndpoint", "httpDataEndpoint",
                                        "replicas", "storageHelper", "workerSpec")}
    for key, value in predictor.items():
        if key in ("volumes", "initContainers") and isinstance(value, list):
            pod[key] = _merge_list(list(as_seq(pod.get(key))), value, "name")
        else:
            pod[key] = value
    sidecars = [plain(c) for c in containers if c is not base] + [plain(c) for c in as_seq(predictor.get("containers"))
                                                                  if as_map(c).get("name") != MODEL_CONTAINER]
    uri = model.get("storageUri")
    if isinstance(uri, str) and uri:
        mount: dict[str, Any] = {"name": PROVISION_VOLUME, "mountPath": MODEL_MOUNT_PATH, "readOnly": True}
        if uri.startswith("pvc://"):
            claim, _, sub = uri.removeprefix("pvc://").partition("/")
            volume: dict[str, Any] = {"name": PVC_VOLUME, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}
            mount = {"name": PVC_VOLUME, "mountPath": MODEL_MOUNT_PATH, "subPath": sub, "readOnly": True}
        else:
            volume = {"name": PROVISION_VOLUME, "emptyDir": {}}
            pod["initContainers"] = [*as_seq(pod.get("initContainers")), {
                "name": STORAGE_INITIALIZER, "image": "kserve/storage-initializer", "args": [uri, MODEL_MOUNT_PATH],
                "volumeMounts": [{"name": PROVISION_VOLUME, "mountPath": MODEL_MOUNT_PATH}]}]
        pod["volumes"] = [*as_seq(pod.get("volumes")), volume]
        main["volumeMounts"] = _merge_list(list(as_seq(main.get("volumeMounts"))), [mount], "mountPath")
    pod["containers"] = [main, *sidecars]
    return pod
