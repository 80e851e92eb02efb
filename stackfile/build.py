"""The composition ``__main__.py`` runs: read the stack config, build every component, name
the stack outputs.

* :func:`config_from_pulumi` reads every ``llm-serving:*`` key the engine passed (structured
  ones with ``pulumi.Config.get_object``), so unknown keys reach :func:`load_stack_config`.
* :func:`candle_args`, :func:`vllm_args`, :func:`gpu_args` turn one validated workload of the
  config into the typed args of its component (pure; tests call them).
* :func:`build_stack` creates the workloads, then the Services (each given its workload
  component), then the NetworkPolicy; all take the same ``ResourceOptions`` (e.g. a provider
  that renders YAML).
* :func:`stack_outputs`: each Service's in-cluster URLs, the card table per node and the
  objects left alone (``llm-serving:left_alone``).
* :func:`report_left_alone`: one info diagnostic on the stack per object left alone, which
  ``pulumi preview`` and ``pulumi up`` print under "Diagnostics".
* :func:`render_manifests`: every object of a config as manifest dicts, by the same pure
  functions the components call, without the engine (tests compare the two).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
from pydantic import SecretStr

from components.network import NamespaceNetworkPolicy, NamespaceNetworkPolicyArgs, network_policy_manifest
from components.service import StablePredictorService, StablePredictorServiceArgs, service_await, service_manifest
from components.vllm import VllmArgs, VllmInferenceService, inference_service_manifest, predictor_selector
from components.workload import (
    CandleDeployment,
    CandleDeploymentArgs,
    GpuDeployment,
    GpuDeploymentArgs,
    WorkloadComponent,
    candle_gpu_args,
    deployment_manifest,
    secret_manifest,
)
from core.base import facts
from core.engines.config import CandleConfig, VllmConfig, settings_of
from core.k8s.placement import Placement
from stackfile import (
    PREFIX,
    PROJECT,
    STRING_KEYS,
    CandleWorkload,
    PytorchWorkload,
    StackConfig,
    VllmWorkload,
)
from stackfile.loader import is_secret_value
from stackfile.objects import left_alone_outputs, left_alone_text
from stackfile.schema import config_keys_read


def config_from_pulumi(written: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every ``llm-serving:*`` key of the running stack, as ``{"llm-serving:<key>": value}``.

    Keys come from the engine's config (``pulumi.runtime.config``) and ``PULUMI_CONFIG``;
    values of structured keys are decoded with ``pulumi.Config.get_object`` (plain text is
    kept as text when it is not JSON, so :func:`load_stack_config` reports the type).
    ``written``: the stack file's ``config:`` map as written (``secure:`` leaves still
    encrypted), which says where in a secret key each secret value sits (:func:`_secret_values`).
    """
    from pulumi.runtime import config as runtime_config

    keys = set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())
    cfg = pulumi.Config(PROJECT)
    out: dict[str, Any] = {}
    for key in config_keys_read(keys):
        if not key.startswith(PREFIX):
            out[key] = runtime_config.get_config(key)  # refused by the loader (a misspelt namespace, a provider key)
            if runtime_config.is_config_secret(key):
                out[key] = _secret_values(out[key], (written or {}).get(key))
            continue
        name = key[len(PREFIX):]
        if runtime_config.is_config_secret(key):
            out[key] = _secret_values(runtime_config.get_config(key), (written or {}).get(key))
            continue
        if name in STRING_KEYS:
            out[key] = cfg.get(name)
            continue
        try:
            out[key] = cfg.get_object(name)
        except pulumi.ConfigTypeError:
            out[key] = cfg.get(name)
    return out


def _secret_values(raw: Any, written: Any = None) -> Any:
    """A config key the CLI marks secret (it holds a ``secure:`` value, decrypted here): JSON
    decoded, with each value the stack file stores as ``secure:`` (``written``, the key as
    written) wrapped in ``pydantic.SecretStr``, so the loader accepts it where a secret belongs
    (``secret_env``), refuses it anywhere else, and no message shows it (read without
    ``Config.get_object``, which warns that the key is secret). When ``written`` holds no
    ``secure:`` value (a stack file that cannot be read, or config that came from elsewhere: Pulumi
    ESC, ``--config-file``), every ``workloads.<w>.secret_env`` value is taken as secret, and every
    ``env`` and ``args`` value too: the loader refuses those, unshown, rather than render a value
    that may be the decrypted secret in plain text."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        value = raw
    if _holds_secure(written):
        return _mark_secrets(value, written)
    if isinstance(value, dict):
        for wl in value.values():
            if not isinstance(wl, dict):
                continue
            for key in ("secret_env", "env"):
                if isinstance(wl.get(key), dict):
                    wl[key] = {k: SecretStr(v) if isinstance(v, str) else v for k, v in wl[key].items()}
            if isinstance(wl.get("args"), list):
                wl["args"] = [SecretStr(v) if isinstance(v, str) else v for v in wl["args"]]
    return value


def _holds_secure(written: Any) -> bool:
    if is_secret_value(written):
        return True
    if isinstance(written, dict):
        return any(_holds_secure(v) for v in written.values())
    return isinstance(written, list) and any(_holds_secure(v) for v in written)


def _mark_secrets(value: Any, written: Any) -> Any:
    """``value`` with every part that ``written`` stores as ``secure:`` wrapped in ``SecretStr``."""
    if is_secret_value(written):
        return SecretStr(value if isinstance(value, str) else json.dumps(value))
    if isinstance(value, dict) and isinstance(written, dict):
        return {k: _mark_secrets(v, written.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(written, list):
        return [_mark_secrets(v, written[i] if i < len(written) else None) for i, v in enumerate(value)]
    return value


def _parked(item: Any) -> str | None:
    return item.parked.reason if item.parked else None


def _workload_args(name: str, wl: Placement, config: StackConfig) -> dict[str, Any]:
    """The :class:`components.workload.WorkloadArgs` fields of one workload: its name and
    namespace, its placement handed over whole (:meth:`core.k8s.placement.Placement.of`), the
    inventory's runtime class, and whether a replacement deletes first
    (:meth:`StackConfig.replace_delete_first`)."""
    return {"name": name, "namespace": config.namespace, "placement": Placement.of(wl),
            "runtime_class": config.cluster.gpu_runtime_class, "delete_before_replace": config.replace_delete_first(name)}


def candle_args(name: str, wl: CandleWorkload, config: StackConfig) -> CandleDeploymentArgs:
    """The component args of a ``server: candle-vllm`` workload: its server settings
    (:class:`core.engines.config.CandleConfig`) and its placement, each handed over whole, with the
    weights path from its model entry and the node's card."""
    return CandleDeploymentArgs.model_validate(dict(
        **settings_of(CandleConfig, wl), **_workload_args(name, wl, config),
        weights_path=config.models[wl.model].weights_path or "",
    ))


def vllm_args(name: str, wl: VllmWorkload, config: StackConfig) -> VllmArgs:
    """The component args of a ``server: vllm`` workload: its server settings
    (:class:`core.engines.config.VllmConfig`) and its placement, each handed over whole, with
    --model = the model entry's hf_id, else its path, and the node's card."""
    entry = config.models[wl.model]
    return VllmArgs.model_validate(dict(
        **settings_of(VllmConfig, wl), **_workload_args(name, wl, config),
        model=entry.hf_id or entry.weights_path or "", card=config.node(wl.node).card,
    ))


def gpu_args(name: str, wl: PytorchWorkload, config: StackConfig) -> GpuDeploymentArgs:
    """The component args of a ``server: pytorch`` workload (the generic GPU Deployment): its
    placement handed over whole and its container."""
    return GpuDeploymentArgs.model_validate(dict(
        **_workload_args(name, wl, config), image=wl.image, command=list(wl.command), args=list(wl.args),
        port=wl.port, health_path=wl.health_path, served_model_names=list(wl.served_model_names),
        root_reason=facts.ROOT_REASONS["pytorch"],
    ))


def build_workload(name: str, wl: Any, config: StackConfig, opts: pulumi.ResourceOptions | None) -> WorkloadComponent:
    """The component of one workload, by its ``server``; its ``former_names`` are the
    component's aliases (the child object, named like it, inherits them)."""
    if wl.former_names:
        aliases = pulumi.ResourceOptions(aliases=[pulumi.Alias(name=former) for former in wl.former_names])
        opts = pulumi.ResourceOptions.merge(opts, aliases) if opts is not None else aliases
    if isinstance(wl, CandleWorkload):
        return CandleDeployment(name, candle_args(name, wl, config), opts)
    if isinstance(wl, VllmWorkload):
        return VllmInferenceService(name, vllm_args(name, wl, config), opts)
    return GpuDeployment(name, gpu_args(name, wl, config), opts)


@dataclass
class StackResources:
    """The components of a stack, by name."""

    workloads: dict[str, WorkloadComponent]
    services: dict[str, StablePredictorService]
    network_policy: NamespaceNetworkPolicy | None


def adopt_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` (a manifest or a resource's inputs) with ``facts.PATCH_FORCE_ANNOTATION: "true"``
    added to its ``metadata.annotations``: the stack file's ``adopt`` mode, for the program
    (a transformation of every Kubernetes resource) and :func:`render_manifests` alike.

    An InferenceService is left as it is: KServe copies its annotations into the predictor's pod
    template (``core.k8s.manifests.transition_cost``; kserve #2743, #3710), so the annotation would roll the
    predictor once when added and again when removed. Its takeover is an unforced server-side
    apply: fields of equal value become shared; a field whose live value differs fails with a
    field conflict that names it, and ``PULUMI_K8S_ENABLE_PATCH_FORCE=true pulumi up`` forces that
    one run without an annotation (pulumi-kubernetes v4.25.0 ``await.go`` ``patchForce``;
    docs/update-cost.md)."""
    if obj.get("kind") == "InferenceService":
        return dict(obj)
    meta = dict(obj.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), facts.PATCH_FORCE_ANNOTATION: "true"}
    return {**obj, "metadata": meta}


def _adopt_transformation(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
    if not args.type_.startswith("kubernetes:") or args.type_.startswith("pulumi:providers:"):
        return None
    return pulumi.ResourceTransformationResult(adopt_object(args.props), args.opts)


def build_stack(config: StackConfig, opts: pulumi.ResourceOptions | None = None) -> StackResources:
    """Create every component of ``config`` (validated by :func:`load_stack_config`).

    ``opts`` is given to every component (``ResourceOptions.merge`` keeps each one's own), e.g.
    ``ResourceOptions(providers=[render_provider])``. With ``config.adopt`` every Kubernetes
    object gets the patchForce annotation (:func:`adopt_object`, through a transformation the
    components' children inherit). Each object of ``config.left_alone`` is reported
    (:func:`report_left_alone`); nothing is registered for it.
    """
    report_left_alone(config)
    if config.adopt:
        adopt = pulumi.ResourceOptions(transformations=[_adopt_transformation])
        opts = pulumi.ResourceOptions.merge(opts, adopt) if opts is not None else adopt
    workloads = {name: build_workload(name, wl, config, opts) for name, wl in config.workloads.items()}
    services = {
        name: StablePredictorService(
            name,
            StablePredictorServiceArgs(namespace=config.namespace, selects=workloads[svc.selects],
                                       clients=list(svc.clients), parked_reason=_parked(svc)),
            opts,
        )
        for name, svc in config.services.items()
    }
    netpol = None
    if config.network_policy is not None:
        netpol = NamespaceNetworkPolicy(
            config.network_policy.name,
            NamespaceNetworkPolicyArgs(namespace=config.namespace, policy=config.network_policy),
            opts,
        )
    return StackResources(workloads, services, netpol)


SECRET_TYPE = "kubernetes:core/v1:Secret"


def secrets_to(provider: pulumi.ProviderResource) -> pulumi.ResourceOptions:
    """Options that send every ``kubernetes:core/v1:Secret`` of the components to ``provider``
    (a transformation the components' children inherit), whatever provider the rest uses: in
    render mode the Secrets are applied to the cluster and never written to the directory
    (docs/secrets.md)."""
    def to_provider(args: pulumi.ResourceTransformationArgs) -> pulumi.ResourceTransformationResult | None:
        if args.type_ != SECRET_TYPE:
            return None
        return pulumi.ResourceTransformationResult(args.props, pulumi.ResourceOptions.merge(
            args.opts, pulumi.ResourceOptions(provider=provider)))
    return pulumi.ResourceOptions(transformations=[to_provider])


def report_left_alone(config: StackConfig) -> list[str]:
    """Log each object of ``llm-serving:left_alone`` as an info diagnostic on the stack
    (``pulumi.log.info``; the CLI prints it under "Diagnostics" in ``pulumi preview`` and
    ``pulumi up``, and ``--json`` carries it as a ``diagnosticEvent`` of severity ``info``), in
    the one wording :func:`stackfile.objects.left_alone_text`. Returns the messages. Prod:
    ``left alone: InferenceService llm-serving/coder, not managed by this stack (...): ...``."""
    messages = [left_alone_text(**item) for item in left_alone_outputs(config)]
    for message in messages:
        pulumi.log.info(message)
    return messages


def stack_outputs(config: StackConfig, stack: StackResources) -> dict[str, Any]:
    """The stack outputs: ``services`` (name -> {port name: in-cluster URL}), ``cards``
    (node -> {cards, used, workloads: {name: cards}}, :meth:`StackConfig.card_table`) and
    ``left_alone`` (``[{kind, namespace, name, why}]``, :func:`stackfile.objects.left_alone_outputs`;
    ``[]`` when the stack file lists none)."""
    return {
        "services": {name: svc.urls for name, svc in stack.services.items()},
        "cards": config.card_table(),
        "left_alone": left_alone_outputs(config),
    }


def _component(cls: type, name: str) -> str:
    return f"{cls.__name__}/{name}"


def workload_manifest(name: str, wl: Any, config: StackConfig) -> tuple[dict[str, Any], dict[str, str], int]:
    """(manifest, the labels a Service selects, container port) of one workload, purely."""
    if isinstance(wl, CandleWorkload):
        args = candle_gpu_args(candle_args(name, wl, config))
        manifest = deployment_manifest(args, _component(CandleDeployment, name))
        return manifest, manifest["spec"]["selector"]["matchLabels"], args.port
    if isinstance(wl, VllmWorkload):
        vargs = vllm_args(name, wl, config)
        return inference_service_manifest(vargs, _component(VllmInferenceService, name)), predictor_selector(vargs), vargs.port
    gargs = gpu_args(name, wl, config)
    manifest = deployment_manifest(gargs, _component(GpuDeployment, name))
    return manifest, manifest["spec"]["selector"]["matchLabels"], gargs.port


def render_manifests(config: StackConfig) -> list[dict[str, Any]]:
    """Every Kubernetes object of ``config`` as a manifest dict: workloads, Services (selecting
    their workload's labels), the NetworkPolicy. Equal to the inputs the components register."""
    out: list[dict[str, Any]] = []
    targets: dict[str, tuple[dict[str, str], int]] = {}
    for name, wl in config.workloads.items():
        manifest, selector, port = workload_manifest(name, wl, config)
        if wl.secret_env:
            cls = {CandleWorkload: CandleDeployment, VllmWorkload: VllmInferenceService}.get(type(wl), GpuDeployment)
            out.append(secret_manifest(name, config.namespace, list(wl.secret_env), _component(cls, name)))
        out.append(manifest)
        targets[name] = (selector, port)
    for name, svc in config.services.items():
        selector, port = targets[svc.selects]
        target = config.workloads[svc.selects]
        out.append(service_manifest(name, config.namespace, selector, port, list(svc.clients), _parked(svc),
                                    _component(StablePredictorService, name),
                                    service_await(_parked(svc), _parked(target), target.cold_start_seconds)))
    if config.network_policy is not None:
        args = NamespaceNetworkPolicyArgs(namespace=config.namespace, policy=config.network_policy)
        out.append(network_policy_manifest(args, _component(NamespaceNetworkPolicy, config.network_policy.name)))
    return [adopt_object(m) for m in out] if config.adopt else out
