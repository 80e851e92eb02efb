"""What the pack did not judge, and why: for the analyze summary, instead of a verdict.

The pack models vLLM and candle-vllm servers in Deployments, StatefulSets and InferenceService
predictors on a cluster its inventory describes. For anything else it stays quiet rather than
guess, and :func:`not_judged` says what was left out, one line each:

- a server of an engine the pack recognises but does not model (SGLang, TGI, Triton, llama.cpp,
  Ollama, LocalAI, Ray Serve: :attr:`Container.call`, or the image's name: :attr:`Container.engine`);
- a running container that holds cards and runs no server the pack knows;
- a server whose argv cannot be known from the manifest (:func:`core.k8s.manifests.argv.effective_argv`);
- a vLLM server whose image tag names no release the engine contract covers (:mod:`core.engines.contracts`),
  or a candle-vllm server whose tag names no covered commit: its flags are not judged against one;
- an InferenceService in the KServe ``predictor.model`` form (the server comes from a
  ServingRuntime, not from the manifest);
- a LeaderWorkerSet (one server across the pods of a group: the per-pod server rules do not apply;
  its pods count in the allocation and Service selection);
- an object of another kind that asks for cards (Pod, Job, DaemonSet, RayCluster, ...);
- a policy that does not run because the inventory does not state the cluster fact it needs
  (gpu-runtime-class without ``gpu_runtime_class``; kserve-deployment-mode without
  ``kserve_deployment_mode``, with KServe's shipped default named).

Pure functions over the analyzer's resources (``resource_type``, ``props``, ``urn``) and the
inventory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from core.base import facts
from core.capacity.inventory import ClusterInventory
from core.catalog import images
from core.engines import contracts
from core.k8s import manifests
from policylib import views

#: How messages name the engines :func:`core.k8s.manifests.argv.server_of` knows.
ENGINE_NAMES = {"vllm": "vLLM", "candle-vllm": "candle-vllm", "sglang": "SGLang", "tgi": "TGI (text-generation-inference)",
                "triton": "Triton Inference Server", "llama.cpp": "llama.cpp's server", "ollama": "Ollama",
                "localai": "LocalAI", "ray-serve": "Ray Serve", "ray": "Ray (and any Serve application on it)"}
#: KServe's shipped default deployment mode (kserve/kserve config/configmap/inferenceservice.yaml,
#: ``deploy.defaultDeploymentMode``, the same from v0.11.0 to v0.20.0).
KSERVE_SHIPPED_MODE = "Serverless"
KSERVE_SHIPPED_MODE_SOURCE = "inferenceservice-config deploy.defaultDeploymentMode, v0.11.0 to v0.20.0"
SERVER_RULES = ("its model, flags, capacity, parallelism, probes' routes and endpoint are not judged "
                "(its cards and memory are counted)")


def _container_lines(w: manifests.Workload) -> list[str]:
    out = []
    if w.servers and not w.is_gpu and w.other_accelerator:
        out.append(f"{w.kind} {w.name}: runs a model server on {w.other_accelerator}, not {facts.GPU_RESOURCE}: "
                   "its parallelism and capacity are not judged")
    for c in w.containers:
        where = f"{w.kind} {w.name}, container {c.name}"
        engine = c.engine
        if c.call is not None and c.call.engine not in manifests.MODELLED_ENGINES:
            out.append(f"{where}: runs {ENGINE_NAMES.get(c.call.engine, c.call.engine)} "
                       f"({' '.join(c.call.program)}), which the pack does not model: {SERVER_RULES}")
        elif c.argv.argv is None and c.looks_like_server:
            out.append(f"{where}: the server's argv cannot be known ({c.argv.unknown}): {SERVER_RULES}")
        elif c.call is None and engine is not None and engine not in manifests.MODELLED_ENGINES:
            out.append(f"{where}: image {c.image} runs {ENGINE_NAMES.get(engine, engine)}, which the pack does not "
                       f"model: {SERVER_RULES}")
        elif c.call is None and c.cards and w.running and not c.looks_like_server:
            out.append(f"{where}: holds {c.cards} card(s) and runs no model server the pack knows "
                       f"(image {c.image or '(none)'}): {SERVER_RULES}")
        elif c.call is not None and c.call.engine == "vllm" and contracts.release_of_image(c.image) is None:
            named = ("names no release the engine contract covers" if images.parse_image(c.image).version
                     else "names no vLLM release")
            out.append(f"{where}: the image tag of {c.image} {named} (covered: vLLM {contracts.covered()}): its flags "
                       "and env are not judged against a release (engine-contract)")
        elif c.call is not None and c.call.engine == "candle-vllm" and contracts.candle_commit_of_image(c.image) is None:
            commits = ", ".join(r.release[:7] for r in contracts.candle_commits())
            out.append(f"{where}: the image tag of {c.image} names no candle-vllm commit the engine contract covers "
                       f"(covered: {commits}): its flags are not judged against a commit (engine-contract)")
    return out


def _model_form(props: Any) -> str | None:
    """``huggingface`` for an InferenceService in the ``predictor.model`` form, else None."""
    model = manifests.as_map(manifests.as_map(manifests.as_map(props.get("spec")).get("predictor")).get("model"))
    if not model:
        return None
    return str(manifests.as_map(model.get("modelFormat")).get("name") or "unknown format")


def _gpu_request(props: Any) -> bool:
    """True when any ``resources`` block under the object asks for ``nvidia.com/gpu``."""
    stack = [props]
    while stack:
        node = stack.pop()
        if isinstance(node, dict) or hasattr(node, "items"):
            try:
                items = list(node.items())
            except Exception:  # pragma: no cover - a proxy that cannot be listed
                continue
            for k, v in items:
                if k in ("limits", "requests") and hasattr(v, "get") and v.get(facts.GPU_RESOURCE) not in (None, 0, "0"):
                    return True
                stack.append(v)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return False


def not_judged(resources: Iterable[Any], inventory: ClusterInventory | None, models_declared: bool = True,
               model_known: Callable[[str | None], bool] | None = None) -> list[str]:
    """One line for each thing the pack did not judge in ``resources`` (see the module docstring),
    in resource order, then the policies that did not run for want of a cluster fact.
    ``models_declared``: the stack's ``llm-serving:models`` lists at least one model (else the
    capacity and TP divisibility policies judge no server). ``model_known(model argument)``: the
    stack lists that model; a server whose model it does not list is not judged on a cluster
    without the house conventions."""
    lines: list[str] = []
    resources = list(resources)
    runtimes = manifests.kserve.runtimes_of(resources)
    house = inventory is not None and inventory.house_conventions
    any_gpu = False
    servers = 0
    for r in resources:
        t = r.resource_type
        if t in manifests.WORKLOAD_TYPES:
            w = views.workload(t, r.props, r.urn)
            if w is None:
                continue
            any_gpu = any_gpu or w.is_gpu
            servers += len(w.servers)
            if t == manifests.ISVC_TYPE and w.running and w.deployment_mode is None and (
                    inventory is None or inventory.kserve_deployment_mode is None):
                lines.append(f"InferenceService {w.name}: no {facts.KSERVE_DEPLOYMENT_MODE_ANNOTATION} annotation and the "
                             "inventory does not record kserve_deployment_mode, so kserve-deployment-mode did not judge "
                             f"it; KServe ships {KSERVE_SHIPPED_MODE} as the default ({KSERVE_SHIPPED_MODE_SOURCE}), under "
                             "which a predictor with cards becomes a Knative revision")
            form = _model_form(r.props) if t == manifests.ISVC_TYPE else None
            built = manifests.workload(t, r.props, r.urn, runtimes) if form is not None and runtimes else None
            if built is not None and built.runtime is not None:
                lines.append(f"InferenceService {w.name}: its predictor is built from {built.runtime} as KServe builds it "
                             f"(the container merge, the storage initializer; its args {manifests.kserve.ARGS_MERGE}): "
                             "the Service, NetworkPolicy and allocation policies judge that pod; the per-container "
                             "server policies see one object at a time and do not judge it")
            elif form is not None:
                lines.append(f"InferenceService {w.name}: the predictor.model form (modelFormat {form}) runs the server "
                             f"of a ServingRuntime that is not in the manifests: {SERVER_RULES}, nor its /dev/shm; its cards "
                             "count in the allocation")
            lines.extend(line for line in _container_lines(w)
                         if form is None or f", container {manifests.KSERVE_MODEL_CONTAINER}:" not in line)
            if models_declared and not house and model_known is not None:
                lines.extend(f"{w.kind} {w.name}, container {c.name}: model {s.model_arg or '(none named)'} is not in "
                             "llm-serving:models, so its weights, KV cache and TP divisibility are not judged"
                             for c, s in w.servers if not model_known(s.model_arg))
        elif t == manifests.LWS_TYPE:
            workload_views = views.stack_view([r]).workloads
            any_gpu = any_gpu or any(w.is_gpu for w in workload_views)
            if workload_views:
                w = workload_views[0]
                lines.append(f"LeaderWorkerSet {w.name}: one server spans each group's leader and worker pods, so the "
                             "per-pod server rules (parallelism, capacity, sm_70 flags, startup probes, runtime class) "
                             "are not judged; its pods count in the card and memory allocation and in Service selection")
                for v in workload_views:
                    lines.extend(_container_lines(v))
        elif t not in (manifests.SERVICE_TYPE, manifests.NETWORK_POLICY_TYPE) and _gpu_request(r.props):
            kind = str(r.props.get("kind") or t.rsplit(":", 1)[-1])
            name = manifests.as_map(r.props.get("metadata")).get("name", "")
            lines.append(f"{kind} {name}: asks for {facts.GPU_RESOURCE}, but the pack does not model this kind: "
                         "its cards are not counted and its servers are not judged")
            any_gpu = True
    if servers and not models_declared:
        lines.append(f"weights-fit-card, kv-cache-fits-max-model-len and tensor-parallel-divisibility judged none of "
                     f"the {servers} vLLM / candle-vllm server(s): llm-serving:models lists no model, so their "
                     "model facts (config.json) are not known")
    if any_gpu and (inventory is None or (inventory.gpu_runtime_class is None and not inventory.driver_injected_by_default)):
        lines.append("gpu-runtime-class did not run: llm-serving:cluster does not say whether GPU pods need a "
                     "RuntimeClass (gpu_runtime_class); where the default runtime injects the driver none is needed: "
                     "say so with driver_injected_by_default: true")
    return lines
