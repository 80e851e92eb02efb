"""The stack file's ``config:`` map as typed models, and every check that needs the whole map.

Shape (keys of the ``llm-serving`` namespace; other namespaces such as ``kubernetes:context``
are ignored):

===============================================  ============================================
``llm-serving:namespace``                        str, default ``llm-serving``
``llm-serving:render_yaml_to_directory``         optional str: the provider writes YAML there
``llm-serving:cluster``                          :class:`core.inventory.ClusterInventory`
``llm-serving:models``                           map of model key -> :class:`ModelEntry`
``llm-serving:workloads``                        map of name -> :data:`Workload` (``server:``
                                                 ``candle-vllm`` | ``vllm`` | ``pytorch``)
``llm-serving:services``                         map of name -> :class:`ServiceConfig`
``llm-serving:network_policy``                   optional :class:`NetworkPolicyConfig`
===============================================  ============================================

:func:`load_stack_config` validates it all and raises :class:`ConfigError` carrying EVERY
problem at once, each with its config key path, the value, the rule and the fix. Rules that
judge several workloads together (cards or memory summed over a node, one served model name
answered by two servers, two workloads behind one Service selector) are the policy pack's
(``policies/``), because the history stacks (``tests/stacks/``) must load so the pack can judge
them; the config refuses what is wrong for one workload or one reference on its own.

The rule functions (``rule_*``) are pure and shared with the component argument models
(``components/workload.py``, ``components/vllm.py``), so a fact is checked by one function
whether it arrives through a stack file or through a component built by hand.

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, Optional, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from core import allocation, capacity, facts, quantity, rules
from core.engines import CANDLE_BINARY, CandleConfig, ServedName, VllmConfig, check_served_name, fraction_text, rule_error  # noqa: F401 (re-exported)
from core.inventory import CardSpec, ClusterInventory, Node
from core.modelfacts import ModelEntry, ModelFacts

PROJECT = "llm-serving"
PREFIX = PROJECT + ":"


#: Startup probe period in seconds (coder.yaml: ``periodSeconds: 15``).
STARTUP_PERIOD_SECONDS = 15
#: Startup budget = this many times the declared cold start (coder.yaml: 120 x 15 s = 30 min of
#: headroom for about 10 min of start-up, i.e. 3x).
STARTUP_HEADROOM = 3

#: Minimum compute capability (x10) of vLLM quantization methods: the one table the policy
#: pack's vllm-volta uses too (core/rules.py).
VLLM_QUANT_MIN_SM = rules.QUANT_MIN_SM

_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


# --- problems -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack config.

    ``path`` is the config key path (``llm-serving:workloads.candle-vllm.cards``), ``value`` the
    value found there (``None`` when missing), ``rule`` what it breaks, ``fix`` what to change.
    """

    path: str
    value: Any
    rule: str
    fix: str

    def render(self) -> str:
        """Four lines: the path, then value, rule and fix indented beneath it."""
        return f"{self.path}\n  value: {_show(self.value)}\n  rule:  {self.rule}\n  fix:   {self.fix}"


class ConfigError(Exception):
    """The stack config is invalid; ``problems`` lists every problem found, in key order."""

    def __init__(self, problems: list[Problem], source: str = "the stack config"):
        self.problems = list(problems)
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        """Human text, one block per problem, no traceback."""
        n = len(self.problems)
        head = (
            f"Cannot load {self.source}: {n} problem{'s' if n != 1 else ''}. "
            "Nothing was previewed or written; fix each one below and run again."
        )
        return "\n\n".join([head, *(p.render() for p in self.problems)])


class RuleBreach(NamedTuple):
    """A rule function's verdict: the rule broken and the fix."""

    rule: str
    fix: str


def _show(value: Any) -> str:
    if value is None:
        return "(missing)"
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


_custom = rule_error


# --- small value types ----------------------------------------------------------------------

def _dns_label(value: str) -> str:
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise _custom(
            f"{value!r} is not a DNS-1035 label (lowercase letters, digits and '-', starting with a "
            "letter, at most 63 characters); it becomes a Kubernetes object name",
            "rename it, e.g. " + repr(re.sub(r"[^a-z0-9-]+", "-", value.lower()).strip("-")[:63] or "name"),
        )
    return value


def _quantity_text(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    return value


def _quantity(value: str) -> str:
    try:
        quantity.parse(value)
    except quantity.QuantityError as err:
        raise _custom(err.rule, err.fix) from None
    return value


Name = Annotated[str, AfterValidator(_dns_label)]
Quantity = Annotated[str, BeforeValidator(_quantity_text), AfterValidator(_quantity)]


def mib(value: Optional[str]) -> Optional[float]:
    """A memory quantity in MiB ("12Gi" -> 12288.0); None for None (:func:`core.quantity.mib`).
    Raises :class:`core.quantity.QuantityError` if it is not a Kubernetes quantity."""
    return quantity.mib(value)


def is_digest_pinned(image: str) -> bool:
    """True when ``image`` ends in ``@sha256:<64 hex>`` (a digest never moves)."""
    return bool(_DIGEST.search(image))


# --- shared models --------------------------------------------------------------------------

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ResourceAmounts(_Strict):
    """CPU and memory of a container's requests or limits (cards come from ``cards``)."""

    cpu: Optional[Quantity] = Field(default=None, description='CPU cores, e.g. "4" or "500m".')
    memory: Optional[Quantity] = Field(default=None, description='Memory, e.g. "12Gi" (binary units).')


class Resources(_Strict):
    """Requests and limits of the server container, without cards.

    GPU servers keep weights on the card and need little host RAM (coder.yaml: 12Gi request,
    40Gi limit for vLLM TP=2). Errors: a request above its limit.
    """

    requests: ResourceAmounts = Field(default_factory=ResourceAmounts, description="Scheduling requests.")
    limits: ResourceAmounts = Field(default_factory=ResourceAmounts, description="Limits (burst).")

    @model_validator(mode="after")
    def _request_within_limit(self) -> "Resources":
        for field in ("memory", "cpu"):
            req, lim = getattr(self.requests, field), getattr(self.limits, field)
            if req is not None and lim is not None and quantity.parse(req) > quantity.parse(lim):
                raise _custom(
                    f"requests.{field} {req} exceeds limits.{field} {lim}",
                    f"raise limits.{field} to at least {req} or lower requests.{field}",
                )
        return self


class Parked(_Strict):
    """A workload or Service kept at zero on purpose. Source: 000 (clef-serve parked "to free
    the only V100"), kustomization (an InferenceService at zero replicas still reports Ready)."""

    reason: str = Field(min_length=1, description="Why it is parked; shown in the preview and by the policy pack.")


class StartupProbe(_Strict):
    """The startup probe's timing. Default period 15 s (coder.yaml); the failure threshold
    defaults to ``ceil(3 x cold_start_seconds / period)`` (coder.yaml: 120 x 15 s for about
    10 minutes of start-up). Errors: a budget (period x threshold) not above the cold start."""

    period_seconds: int = Field(default=STARTUP_PERIOD_SECONDS, ge=1, le=300, description="Seconds between probes.")
    failure_threshold: Optional[int] = Field(
        default=None, ge=1, description="Failed probes before the pod restarts; default from the cold start."
    )


def startup_threshold(cold_start_seconds: int, probe: StartupProbe) -> int:
    """The startup probe's failure threshold: the explicit one, else 3 x cold start / period."""
    if probe.failure_threshold is not None:
        return probe.failure_threshold
    return max(1, math.ceil(STARTUP_HEADROOM * cold_start_seconds / probe.period_seconds))


# --- workloads ------------------------------------------------------------------------------

class _Workload(_Strict):
    node: str = Field(description="Node the pods are pinned to (kubernetes.io/hostname), e.g. worker-1. Source: coder.yaml.")
    cards: int = Field(ge=1, description="nvidia.com/gpu cards one pod holds (requests = limits).")
    labels: dict[str, str] = Field(
        default_factory=dict,
        description="Extra pod labels, e.g. app.kubernetes.io/name: llm-reasoning (reasoning-long-service.yaml).",
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables of the server.")
    cold_start_seconds: int = Field(
        gt=0,
        description=(
            "Seconds from pod start to the health route answering; the startup probe budget is "
            "built from it (002: clef-serve about 240; coder.yaml: vLLM TP=2 at 256K about 600)."
        ),
    )
    startup_probe: StartupProbe = Field(default_factory=StartupProbe, description="Startup probe timing.")
    resources: Resources = Field(default_factory=Resources, description="CPU and memory (cards come from cards).")
    parked: Optional[Parked] = Field(default=None, description="Set to keep it at zero replicas, with the reason.")
    models_pvc: str = Field(default=facts.MODELS_PVC, description="PVC with weights, mounted at /mnt/models. Source: 001, 003.")

    @model_validator(mode="after")
    def _labels_reserved(self) -> "_Workload":
        for key in ("app", facts.PART_OF_LABEL, facts.KSERVE_ISVC_LABEL, facts.KSERVE_COMPONENT_LABEL):
            if key in self.labels:
                raise _custom(
                    f"label {key} is set by the component (it is what Services select)",
                    f"remove {key} from labels",
                )
        return self


class CandleWorkload(CandleConfig, _Workload):
    """A candle-vllm Deployment (coder-14b-fp16.yaml, clef-candle.yaml): TP = ``cards``; its
    server settings are :class:`core.engines.CandleConfig`'s."""

    server: Literal["candle-vllm"]
    model: str = Field(description="Key of llm-serving:models; its weights_path becomes --w.")


class VllmWorkload(VllmConfig, _Workload):
    """A vLLM server in a KServe InferenceService, RawDeployment (coder.yaml, 002 reasoning.yaml);
    its server settings are :class:`core.engines.VllmConfig`'s."""

    server: Literal["vllm"]
    model: str = Field(description="Key of llm-serving:models; its hf_id (else weights_path) becomes --model.")

    @property
    def tp(self) -> int:
        """The tensor parallel size: explicit, else cards / pipeline_parallel_size."""
        return self.tp_for(self.cards)


class PytorchWorkload(_Workload):
    """A generic GPU Deployment: the reference PyTorch clef-serve server (joint_schema_model.py
    in fp16, pip-installs on boot; 002, 004)."""

    server: Literal["pytorch"]
    image: str = Field(min_length=1, description="Image; a moving tag is pulled Always (003).")
    model: Optional[str] = Field(default=None, description="Key of llm-serving:models it serves, if any.")
    command: list[str] = Field(default_factory=list, description="Container command; empty: the image's entrypoint.")
    args: list[str] = Field(default_factory=list, description="Container args.")
    port: int = Field(default=facts.CONTAINER_PORT, ge=1, le=65535, description="Container port (8080).")
    health_path: str = Field(default="/health", description="HTTP health route (004: kubelet /health probes).")
    served_model_names: list[ServedName] = Field(default_factory=list, description="Model names it answers, e.g. clef-flash.")


#: One workload of ``llm-serving:workloads``, chosen by its ``server`` key.
Workload = Annotated[Union[CandleWorkload, VllmWorkload, PytorchWorkload], Field(discriminator="server")]
WORKLOAD_CLASSES: dict[str, type[_Workload]] = {
    "candle-vllm": CandleWorkload,
    "vllm": VllmWorkload,
    "pytorch": PytorchWorkload,
}


# --- services and network policy ------------------------------------------------------------

class ServiceClient(_Strict):
    """A declared client of a Service (written to the clients annotation for the policy pack)."""

    name: str = Field(min_length=1, description="Client name as messages show it, e.g. poimen-memory.")
    namespace: Name = Field(description="Client's namespace, e.g. poimen.")
    port: Literal[80, 8080] = Field(description="The Service port it calls: 80 or 8080 (coder-service.yaml).")


class ServiceConfig(_Strict):
    """A stable predictor Service (ClusterIP, ports 80 and 8080 to 8080)."""

    selects: Name = Field(description="Name of the workload of llm-serving:workloads it sends traffic to.")
    clients: list[ServiceClient] = Field(default_factory=list, description="Who calls it (namespace, port).")
    parked: Optional[Parked] = Field(default=None, description="Set when it is meant to have no endpoints.")


class IngressRule(_Strict):
    """Admit a namespace on some ports (seed 002's poimen rule)."""

    namespace: Name = Field(description="Source namespace (kubernetes.io/metadata.name).")
    ports: list[Annotated[int, Field(ge=1, le=65535)]] = Field(min_length=1, description="TCP ports of the pods admitted.")


class NetworkPolicyConfig(_Strict):
    """The namespace's ingress NetworkPolicy (002 networkpolicy.yaml)."""

    name: Name = Field(default="llm-serving-ingress", description="NetworkPolicy name (002).")
    gateway: Optional[IngressRule] = Field(default=None, description="The gateway's namespace and ports (002: 80, 8000).")
    clients: list[IngressRule] = Field(default_factory=list, description="Client namespaces and their ports (002: poimen 8080).")
    same_namespace: bool = Field(default=True, description="Admit pods of the same namespace (002).")


# --- the whole config -----------------------------------------------------------------------

class StackConfig(_Strict):
    """The validated ``llm-serving:*`` map. Build it with :func:`load_stack_config`."""

    namespace: Name = Field(default="llm-serving", description="Namespace of every object (all seeds).")
    render_yaml_to_directory: Optional[str] = Field(
        default=None, description="Directory the kubernetes provider writes YAML to instead of applying (ArgoCD)."
    )
    cluster: ClusterInventory = Field(description="Nodes, cards and memory (core/inventory.py).")
    models: dict[str, ModelEntry] = Field(default_factory=dict, description="Model key -> entry (core/modelfacts.py).")
    workloads: dict[Name, Workload] = Field(default_factory=dict, description="Workload name -> workload.")
    services: dict[Name, ServiceConfig] = Field(default_factory=dict, description="Service name -> Service.")
    network_policy: Optional[NetworkPolicyConfig] = Field(default=None, description="The namespace ingress policy.")

    _facts: dict[str, ModelFacts] = PrivateAttr(default_factory=dict)

    def model_facts(self, key: str) -> ModelFacts:
        """The resolved facts of model ``key`` (KeyError if unknown)."""
        return self._facts[key]

    def node(self, name: str) -> Node:
        """The inventory node ``name`` (KeyError if unknown)."""
        node = self.cluster.node(name)
        if node is None:
            raise KeyError(name)
        return node

    def card_demands(self) -> list[allocation.Demand]:
        """Each workload's cards as a :class:`core.allocation.Demand`: one pod of ``cards``
        on its node (0 pods when parked; the components roll out with Recreate: no surge)."""
        return [
            allocation.Demand(name, float(wl.cards), 0 if wl.parked else 1, 0, wl.node, name,
                              wl.parked.reason if wl.parked else None)
            for name, wl in self.workloads.items()
        ]

    def card_table(self) -> dict[str, dict[str, Any]]:
        """Cards per node: ``{node: {"cards": n, "used": n, "workloads": {name: cards}}}``, from
        :func:`core.allocation.cards` (the allocation gpu-card-allocation judges and the preview
        prints). A parked workload counts 0; cards reserved outside the stack count as used
        and appear under their holder's name, first. Prod: worker-1 4 of 4 (2 + 1 + 1 + 0).
        """
        alloc = allocation.cards(self.card_demands(), self.cluster)
        table: dict[str, dict[str, Any]] = {}
        for n in self.cluster.nodes:
            use = alloc.nodes[n.name]
            held = {s.name: int(s.total) for s in use.shares if s.reserved_reason is not None}
            table[n.name] = {"cards": n.cards, "used": int(use.used), "workloads": held}
        for name, wl in self.workloads.items():
            use = alloc.nodes.get(wl.node)
            if use is not None:
                share = use.share_of(name)
                use_cards = int(share.total) if share is not None else 0
                table[wl.node]["workloads"][name] = use_cards
        return table


TOP_LEVEL_KEYS = tuple(StackConfig.model_fields)
STRING_KEYS = {"namespace", "render_yaml_to_directory"}
_SINGLE_SECTIONS: dict[str, Any] = {
    "namespace": Name,
    "render_yaml_to_directory": Optional[str],
    "cluster": ClusterInventory,
    "network_policy": Optional[NetworkPolicyConfig],
}


# --- rule functions (shared with the component argument models) -----------------------------

def rule_startup_budget(cold_start_seconds: int, period: int, threshold: int) -> Optional[RuleBreach]:
    """The startup probe must allow more than the cold start (002, coder.yaml)."""
    if rules.startup_budget_covers(period * threshold, cold_start_seconds):
        return None
    need = rules.startup_threshold_needed(cold_start_seconds, period)
    return RuleBreach(
        f"startup probe budget {period} s x {threshold} = {period * threshold} s does not exceed the "
        f"declared cold start of {cold_start_seconds} s, so the kubelet kills the server while it loads",
        f"raise startup_probe.failure_threshold to at least {need}, or leave it unset for "
        f"{STARTUP_HEADROOM} x the cold start",
    )


def rule_tp_divides(model_key: str, facts_: ModelFacts, tp: int) -> Optional[RuleBreach]:
    """Attention heads, KV heads, intermediate size and vocab divide by TP (001)."""
    if tp <= 1:
        return None
    bad = facts_.tp_divisibility_problems(tp)
    if not bad:
        return None
    fits = rules.tp_sizes_that_divide(facts_)
    return RuleBreach(
        f"tensor parallel {tp} does not divide model {model_key}: {', '.join(bad)} "
        "(heads, KV heads, intermediate size and vocab must split evenly, seed 001)",
        f"use a tensor parallel size that divides them: {', '.join(map(str, fits))}",
    )


def rule_hybrid_one_card(model_key: str, facts_: ModelFacts, tp: int) -> Optional[RuleBreach]:
    """A hybrid (GDN) model runs on one card in candle-vllm: its recurrent state is not
    shardable like attention KV (003)."""
    if tp <= 1 or not facts_.is_hybrid:
        return None
    return RuleBreach(
        f"model {model_key} is hybrid ({facts_.full_attention_layers} full-attention of "
        f"{facts_.num_hidden_layers} layers; the GDN state is not shardable, seed 003) and cannot "
        f"run on {tp} cards",
        "set cards: 1",
    )


def rule_digest_pinned(image: str) -> Optional[RuleBreach]:
    """The vLLM image is pinned by digest (coder.yaml: v0.15.0 failed, error 803)."""
    if is_digest_pinned(image):
        return None
    return RuleBreach(
        f"vLLM image {image} is not pinned by digest; a tag can move, and v0.15.0 failed on this "
        "node (empty arch list, cudaGetDeviceCount error 803, coder.yaml)",
        f"pin it as <image>:<tag>@sha256:<digest>, e.g. {facts.VLLM_IMAGE}",
    )


def rule_half_dtype(card: Optional[CardSpec], dtype: str, engine: str) -> Optional[RuleBreach]:
    """Below sm_80 an explicit half dtype (:func:`core.rules.dtype_runs_on`): bf16 needs
    compute capability 8.0, ``auto`` takes the checkpoint's (bf16), and the pack's vllm-volta /
    candle-vllm-args refuse float32 too; V100 (sm_70) runs f16 (001, coder.yaml)."""
    if card is None or rules.dtype_runs_on(engine, dtype, card.sm):
        return None
    half = rules.half_dtype(engine)
    if dtype in ("bf16", "bfloat16"):
        why = f"dtype {dtype} needs compute capability 8.0; {card.product} is sm_{card.sm}"
    elif dtype == "auto":
        why = (f"dtype auto takes the checkpoint's dtype (bfloat16 for most), which needs compute "
               f"capability 8.0; {card.product} is sm_{card.sm} and needs an explicit half dtype")
    else:
        why = f"dtype {dtype} is not a half dtype; {card.product} (sm_{card.sm}) serves {half} (001, coder.yaml)"
    return RuleBreach(why, f"set dtype: {half}")


def rule_vllm_kernels(card: Optional[CardSpec], quantization: Optional[str], kv_cache_dtype: str) -> Optional[RuleBreach]:
    """sm_70 has no FP8 and no Marlin / AWQ kernels (coder.yaml, 001; vLLM get_min_capability)."""
    if card is None:
        return None
    need = rules.quantization_min_sm(quantization)
    if not rules.quantization_runs_on(quantization, card.sm):
        return RuleBreach(
            f"quantization {quantization} needs compute capability {need / 10:.1f}; {card.product} is sm_{card.sm}",
            "use a GPTQ checkpoint with quantization: gptq (runs on sm_70), or a half-precision one",
        )
    if not rules.kv_cache_dtype_runs_on(kv_cache_dtype, card.sm):
        return RuleBreach(
            f"kv_cache_dtype {kv_cache_dtype} needs FP8 support; {card.product} (sm_{card.sm}) has none",
            "set kv_cache_dtype: auto",
        )
    return None


def rule_custom_all_reduce(card: Optional[CardSpec], tp: int, setting: Optional[bool]) -> Optional[RuleBreach]:
    """TP >= 2 over PCIe without NVLink needs --disable-custom-all-reduce (coder.yaml)."""
    if setting is not False or card is None or not rules.custom_all_reduce_must_be_disabled(tp, card.nvlink):
        return None
    return RuleBreach(
        f"custom all-reduce is on at tensor parallel {tp} without NVLink; it deadlocked after CUDA "
        "graph capture on this Volta/PCIe pair (coder.yaml)",
        "remove disable_custom_all_reduce (it defaults to on here) or set it to true",
    )


def rule_parallel_matches_cards(tp: int, pp: int, cards: int) -> Optional[RuleBreach]:
    """vLLM starts TP x PP workers, one a card."""
    if rules.parallel_matches_cards(tp, pp, cards):
        return None
    return RuleBreach(
        f"tensor parallel {tp} x pipeline parallel {pp} = {tp * pp} workers, but the pod holds {cards} cards",
        f"set cards: {tp * pp}, or tensor_parallel_size x pipeline_parallel_size = {cards}",
    )


def rule_hybrid_on_volta_vllm(model_key: str, facts_: ModelFacts, card: Optional[CardSpec]) -> Optional[RuleBreach]:
    """vLLM's GatedDeltaNet kernels need sm75+ and the fla module (coder.yaml)."""
    if card is None or rules.gdn_runs_on_vllm(facts_.is_hybrid, card.sm):
        return None
    return RuleBreach(
        f"model {model_key} is hybrid (GatedDeltaNet); vLLM's GDN kernels need compute capability 7.5 "
        f"and the fla module, {card.product} is sm_{card.sm} (coder.yaml)",
        "serve it with server: candle-vllm on one card (clef-candle)",
    )


# --- loading --------------------------------------------------------------------------------

_ADAPTERS: dict[Any, TypeAdapter] = {}


def _adapter(tp: Any) -> TypeAdapter:
    hit = _ADAPTERS.get(tp)
    if hit is None:
        hit = _ADAPTERS[tp] = TypeAdapter(tp)
    return hit


def load_stack_config(config: dict[str, Any], base_dir: Optional[Path] = None, source: str = "the stack config") -> StackConfig:
    """Validate a stack file's ``config:`` map (keys as written, ``llm-serving:cluster`` ...).

    Values may be parsed YAML/JSON or JSON text (as ``PULUMI_CONFIG`` carries them).
    ``base_dir`` resolves a model's relative ``config_json``; default (and what the program,
    the pack and the preview use): the project directory, ``rules.PROJECT_DIR``. Raises :class:`ConfigError` with
    every problem found: unknown ``llm-serving:*`` keys, field errors of each item, and the
    cross-field rules (node exists, cards fit the node, model exists, TP divides the model,
    hybrid models on one card, vLLM pinned by digest, sm_70 dtypes and kernels, memory fits
    the node, Service targets exist and are not parked, startup budget above the cold start).
    """
    problems: list[Problem] = []
    raw = _known_sections(config, problems)
    parts: dict[str, Any] = {}
    for key, tp in _SINGLE_SECTIONS.items():
        if key in raw:
            value = _validate(tp, raw[key], (key,), problems)
            if value is not _INVALID:
                parts[key] = value
    if "cluster" not in raw:
        problems.append(Problem(PREFIX + "cluster", None, "the cluster inventory is required",
                                "add llm-serving:cluster with nodes (name, cards, card, allocatable_memory_mib)"))
    invalid: set[str] = set()  # models and workloads present but invalid: no cross check names them
    parts["models"] = _validate_map(raw.get("models"), ModelEntry, "models", problems, invalid)
    parts["workloads"] = _validate_workloads(raw.get("workloads"), problems, invalid)
    parts["services"] = _validate_map(raw.get("services"), ServiceConfig, "services", problems, set(), keys_are_names=True)
    model_facts = _resolve_models(parts["models"], base_dir if base_dir is not None else rules.PROJECT_DIR, problems)
    # The cross checks run even when the cluster is missing or invalid (its problems are
    # reported above): only the node-dependent ones (node exists, fits it, its card's
    # capability) need it, the rest (Service targets, model references, TP, startup budget,
    # vLLM image and parallelism) are reported at the same time.
    declared = [str(k) for k in raw.get("workloads") or {}] if isinstance(raw.get("workloads"), dict) else []
    problems.extend(_cross_checks(parts, model_facts, invalid, declared))
    if problems:
        problems.sort(key=lambda p: _sort_key(p.path))
        raise ConfigError(problems, source)
    stack = StackConfig.model_construct(**parts)
    stack._facts = model_facts
    return stack


_INVALID = object()


def _sort_key(path: str) -> tuple[int, str]:
    section = path[len(PREFIX):].split(".", 1)[0]
    order = TOP_LEVEL_KEYS.index(section) if section in TOP_LEVEL_KEYS else -1
    return order, path


def _known_sections(config: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        if not key.startswith(PREFIX):
            continue  # other namespaces (kubernetes:context ...) are not ours
        name = key[len(PREFIX):]
        if name not in TOP_LEVEL_KEYS:
            near = difflib.get_close_matches(name, TOP_LEVEL_KEYS, n=1)
            hint = f"did you mean {PREFIX}{near[0]}? " if near else ""
            problems.append(Problem(key, value, f"{key} is not a key of this program",
                                    f"{hint}remove it or rename it; known keys: {', '.join(PREFIX + k for k in TOP_LEVEL_KEYS)}"))
            continue
        if isinstance(value, str) and name not in STRING_KEYS:
            try:
                value = json.loads(value)
            except ValueError:
                pass  # the model reports the wrong type
        out[name] = value
    return out


def _validate(tp: Any, value: Any, loc: tuple, problems: list[Problem], model: Any = None) -> Any:
    try:
        return _adapter(tp).validate_python(value)
    except ValidationError as err:
        problems.extend(_from_pydantic(err, loc, model if model is not None else tp))
        return _INVALID


def _validate_map(value: Any, item_type: type, section: str, problems: list[Problem],
                  invalid: set[str], keys_are_names: bool = False) -> dict[str, Any]:
    """Valid entries by name; names of entries with problems go to ``invalid`` (no cross checks)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(Problem(PREFIX + section, value, f"{PREFIX}{section} must be a map of name -> entry",
                                "write one `name:` key per entry, each holding a map"))
        return {}
    out = {}
    for name, item in value.items():
        ok = True
        if keys_are_names:
            ok = _validate(Name, str(name), (section, name), problems) is not _INVALID
        parsed = _validate(item_type, item, (section, name), problems)
        if ok and parsed is not _INVALID:
            out[str(name)] = parsed
        else:
            invalid.add(str(name))
    return out


def _validate_workloads(value: Any, problems: list[Problem], invalid: set[str]) -> dict[str, Any]:
    """Valid workloads by name, each validated by the class its ``server`` names."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(Problem(PREFIX + "workloads", value, f"{PREFIX}workloads must be a map of name -> workload",
                                "write one `name:` key per workload, each with server: candle-vllm | vllm | pytorch"))
        return {}
    out = {}
    for name, item in value.items():
        ok = _validate(Name, str(name), ("workloads", name), problems) is not _INVALID
        server = item.get("server") if isinstance(item, dict) else None
        cls = WORKLOAD_CLASSES.get(server) if isinstance(server, str) else None
        if cls is None:
            problems.append(Problem(f"{PREFIX}workloads.{name}.server", server,
                                    "server must name the kind of workload",
                                    f"set server: to one of {', '.join(WORKLOAD_CLASSES)}"))
            invalid.add(str(name))
            continue
        parsed = _validate(cls, item, ("workloads", name), problems)
        if ok and parsed is not _INVALID:
            out[str(name)] = parsed
        else:
            invalid.add(str(name))
    return out


def _resolve_models(models: dict[str, ModelEntry], base_dir: Optional[Path], problems: list[Problem]) -> dict[str, ModelFacts]:
    out = {}
    for key, entry in models.items():
        try:
            out[key] = entry.resolve(base_dir)
        except ValueError as err:
            problems.append(Problem(f"{PREFIX}models.{key}.config_json", entry.config_json, str(err),
                                    "point config_json at a readable Hugging Face config.json (a relative path is relative to the project directory, where Pulumi.yaml is)"))
    return out


# --- pydantic errors -> problems ------------------------------------------------------------

_FIXES = {
    "int_type": "give a whole number",
    "int_parsing": "give a whole number",
    "int_from_float": "give a whole number",
    "float_type": "give a number",
    "float_parsing": "give a number",
    "string_type": "give a text value",
    "bool_type": "give true or false",
    "bool_parsing": "give true or false",
    "dict_type": "give a map (key: value lines)",
    "model_type": "give a map (key: value lines)",
    "model_attributes_type": "give a map (key: value lines)",
    "list_type": "give a list",
    "tuple_type": "give a list",
}


_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}


def _from_pydantic(err: ValidationError, loc: tuple, root: Any) -> list[Problem]:
    """One :class:`Problem` per pydantic error; ``loc`` is where ``root`` sits in the config.

    A ``too_short`` error whose location is a prefix of another error's is dropped: pydantic
    checks a tuple's length after validating its items, so one invalid node also reports
    "nodes: ... at least 1 item after validation, not 0", which is not a problem of its own."""
    errors = err.errors(include_url=False)
    locs = [tuple(e["loc"]) for e in errors]
    errors = [e for e in errors if not (e["type"] == "too_short" and any(
        len(other) > len(e["loc"]) and other[:len(e["loc"])] == tuple(e["loc"]) for other in locs))]
    out = []
    for e in errors:
        full = loc + tuple(e["loc"])
        value, rule, fix = _describe(e, tuple(e["loc"]), str(full[-1]) if full else "", root)
        out.append(Problem(PREFIX + ".".join(str(p) for p in full), value, rule, fix))
    return out


def _describe(e: dict, rel: tuple, field: str, root: Any) -> tuple[Any, str, str]:
    """(value, rule, fix) of one pydantic error at ``rel`` (relative to ``root``)."""
    etype, ctx, value = e["type"], e.get("ctx") or {}, e.get("input")
    rule = f"{field}: {e['msg']}"
    if etype == "extra_forbidden":
        fields = _fields_at(root, rel[:-1])
        near = difflib.get_close_matches(field, fields, n=1)
        hint = f"did you mean {near[0]}? " if near else ""
        return value, f"{field} is not a field here", (
            f"{hint}remove or rename it; allowed: {', '.join(fields)}" if fields else f"{hint}remove it")
    if etype == "missing":
        desc = _description_at(root, rel)
        return None, f"{field} is required", f"add {field}: <value>" + (f" ({desc.rstrip('.')})" if desc else "")
    if etype == "llm_serving_rule":
        return value, ctx["rule"], ctx["fix"]
    if etype in _BOUNDS:
        words, key = _BOUNDS[etype]
        return value, rule, f"give {field} a value {words} {ctx[key]}"
    if etype == "literal_error":
        return value, rule, f"use one of {ctx.get('expected')}"
    if etype == "too_short":
        return value, rule, f"give at least {ctx.get('min_length')} item(s)"
    if etype == "multiple_of":
        return value, rule, f"give a multiple of {ctx.get('multiple_of')}"
    if etype in _FIXES:
        return value, rule, _FIXES[etype]
    if etype == "value_error":
        return value, rule.replace("Value error, ", ""), "correct the value as the rule says"
    return value, rule, "correct the value to match the rule"


def _unwrap(tp: Any) -> Any:
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin is Union:
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _type_at(root: Any, loc: tuple) -> Any:
    tp = root
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(part))
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        elif get_origin(tp) in (list, tuple):
            tp = get_args(tp)[0]
        else:
            return None
    return _unwrap(tp)


def _fields_at(root: Any, loc: tuple) -> list[str]:
    tp = _type_at(root, loc)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return list(tp.model_fields)
    return []


def _description_at(root: Any, loc: tuple) -> str:
    parent = _type_at(root, loc[:-1])
    if isinstance(parent, type) and issubclass(parent, BaseModel):
        field = parent.model_fields.get(str(loc[-1]))
        if field is not None and field.description:
            return field.description
    return ""


# --- cross-field checks ---------------------------------------------------------------------

def _cross_checks(parts: dict[str, Any], model_facts: dict[str, ModelFacts], invalid: set[str],
                  declared: list[str]) -> list[Problem]:
    """Rules that relate items: each workload against its node and model, each Service against
    its workload. O(workloads + services); items in ``invalid`` are already reported. Without a
    valid cluster (``parts`` has no ``cluster``; its problems are already reported) the checks
    that need a node are skipped and every other one runs."""
    cluster: Optional[ClusterInventory] = parts.get("cluster")
    models: dict[str, ModelEntry] = parts["models"]
    workloads: dict[str, Any] = parts["workloads"]
    nodes = {n.name: n for n in cluster.nodes} if cluster is not None else None
    out: list[Problem] = []
    for name, wl in workloads.items():
        out.extend(_check_workload(name, wl, nodes, models, model_facts, invalid))
    for name, svc in parts["services"].items():
        if svc.selects not in invalid:
            out.extend(_check_service(name, svc, workloads, declared))
    return out


def _p(path: str, value: Any, breach: Optional[RuleBreach]) -> list[Problem]:
    return [Problem(PREFIX + path, value, breach.rule, breach.fix)] if breach else []


def _check_workload(name: str, wl: Any, nodes: Optional[dict[str, Node]], models: dict[str, ModelEntry],
                    model_facts: dict[str, ModelFacts], invalid: set[str]) -> list[Problem]:
    """``nodes`` is None when the cluster is missing or invalid: node checks are skipped."""
    at = f"workloads.{name}"
    out: list[Problem] = []
    node = nodes.get(wl.node) if nodes is not None else None
    if nodes is not None and node is None:
        out.append(Problem(f"{PREFIX}{at}.node", wl.node, f"node {wl.node} is not in {PREFIX}cluster",
                           f"use one of {', '.join(nodes)}, or add the node to {PREFIX}cluster.nodes"))
    elif node is not None:
        out.extend(_check_fits_node(at, wl, node))
    card = node.card if node is not None else None
    threshold = startup_threshold(wl.cold_start_seconds, wl.startup_probe)
    out.extend(_p(f"{at}.startup_probe.failure_threshold", wl.startup_probe.failure_threshold,
                  rule_startup_budget(wl.cold_start_seconds, wl.startup_probe.period_seconds, threshold)))
    model_key = getattr(wl, "model", None)
    if model_key is not None and model_key not in models and model_key not in invalid:
        out.append(Problem(f"{PREFIX}{at}.model", model_key, f"model {model_key} is not in {PREFIX}models",
                           f"use one of {', '.join(models) or '(none declared)'}, or add it under {PREFIX}models"))
    facts_ = model_facts.get(model_key) if model_key is not None else None
    if isinstance(wl, CandleWorkload):
        out.extend(_check_candle(at, wl, card, models.get(wl.model), facts_))
    elif isinstance(wl, VllmWorkload):
        out.extend(_check_vllm(at, wl, card, facts_))
    return out


def _check_fits_node(at: str, wl: Any, node: Node) -> list[Problem]:
    out: list[Problem] = []
    if wl.cards > node.cards:
        out.append(Problem(f"{PREFIX}{at}.cards", wl.cards,
                           f"one pod asks {wl.cards} cards; node {node.name} has {node.cards}",
                           f"set cards to at most {node.cards}, or pin it to a node with {wl.cards} cards"))
    request = mib(wl.resources.requests.memory)
    if request is not None and request > node.allocatable_memory_mib:
        out.append(Problem(f"{PREFIX}{at}.resources.requests.memory", wl.resources.requests.memory,
                           f"memory request {request:,.0f} MiB exceeds {node.name}'s allocatable "
                           f"{node.allocatable_memory_mib:,} MiB, so the pod never schedules (coder.yaml)",
                           "lower it; GPU servers keep weights on the card and need little host RAM (coder.yaml: 12Gi)"))
    limit = mib(wl.resources.limits.memory)
    if wl.cards > 1 and limit is not None and limit < mib(facts.SHM_SIZE_LIMIT):
        out.append(Problem(f"{PREFIX}{at}.resources.limits.memory", wl.resources.limits.memory,
                           f"a pod with {wl.cards} cards gets a {facts.SHM_SIZE_LIMIT} Memory-backed /dev/shm, "
                           "which counts against its memory limit (coder.yaml)",
                           f"raise limits.memory above {facts.SHM_SIZE_LIMIT}"))
    return out


def _check_candle(at: str, wl: CandleWorkload, card: Optional[CardSpec], entry: Optional[ModelEntry],
                  facts_: Optional[ModelFacts]) -> list[Problem]:
    out = _p(f"{at}.dtype", wl.dtype, rule_half_dtype(card, wl.dtype, "candle-vllm"))
    if entry is not None and not entry.weights_path:
        out.append(Problem(f"{PREFIX}{at}.model", wl.model, f"model {wl.model} has no weights_path; candle-vllm loads --w from the PVC",
                           f"add weights_path: /mnt/models/<dir> to {PREFIX}models.{wl.model}"))
    if facts_ is not None:
        out += _p(f"{at}.cards", wl.cards, rule_tp_divides(wl.model, facts_, wl.cards))
        out += _p(f"{at}.cards", wl.cards, rule_hybrid_one_card(wl.model, facts_, wl.cards))
        if card is not None and not out:
            out += _capacity_problems(at, "candle-vllm", wl, facts_, card, dict(
                tp=wl.cards, dtype=wl.dtype, kv_fraction=wl.kv_fraction, prefill_chunk_size=wl.prefill_chunk_size))
    return out


def _capacity_problems(at: str, engine: str, wl: Any, facts_: ModelFacts, card: CardSpec,
                       settings: dict[str, Any]) -> list[Problem]:
    """The weights and KV cache of one server on its card, by :func:`core.capacity.estimate`,
    the estimate the pack's weights-fit-card and kv-cache-fits-max-model-len judge."""
    try:
        est = capacity.estimate(engine, facts_, card, **settings)
    except ValueError as err:
        return [Problem(f"{PREFIX}{at}", None, f"the capacity estimator refuses the settings: {err}",
                        "correct the setting the rule names")]
    ranks = "one card" if est.tp * est.pp == 1 else f"each of {est.tp * est.pp} cards"
    if not est.fits_weights:
        tp_at = f"{at}.tensor_parallel_size" if getattr(wl, "tensor_parallel_size", None) else f"{at}.cards"
        return [Problem(
            PREFIX + tp_at, est.tp,
            f"{est.weights_gib_per_card:.2f} GiB of weights a card ({wl.model}, TP={est.tp}) plus "
            f"{est.activation_gib:.2f} GiB of activations do not fit {est.budget_gib:.2f} GiB of a "
            f"{card.product} with room for a KV cache (rule weights-fit-card)",
            "raise cards (and tensor parallel size) so the weights split further, or use a quantized "
            "checkpoint the card supports (GPTQ on sm_70)")]
    if est.fits_kv:
        return []
    if engine == "vllm":
        return [Problem(
            f"{PREFIX}{at}.max_model_len", est.max_model_len,
            f"max_model_len {est.max_model_len:,} needs {est.max_model_len:,} tokens of KV cache; the pool "
            f"holds about {est.kv_tokens:,} tokens on {ranks} (rule kv-cache-fits-max-model-len), so vLLM refuses to start",
            f"lower max_model_len to at most {est.kv_tokens:,}, or raise cards / tensor_parallel_size or "
            "gpu_memory_utilization")]
    return [Problem(
        f"{PREFIX}{at}.kv_fraction", wl.kv_fraction,
        f"kv_fraction {wl.kv_fraction} of the memory free after {est.weights_gib_per_card:.2f} GiB of weights on "
        f"{ranks}, less the workspace reserve, leaves no room for a KV cache (rule kv-cache-fits-max-model-len)",
        "raise kv_fraction, or raise cards so the weights split further")]


def _check_vllm(at: str, wl: VllmWorkload, card: Optional[CardSpec], facts_: Optional[ModelFacts]) -> list[Problem]:
    out = _p(f"{at}.image", wl.image, rule_digest_pinned(wl.image))
    out += _p(f"{at}.dtype", wl.dtype, rule_half_dtype(card, wl.dtype, "vllm"))
    out += _p(f"{at}.quantization", wl.quantization, rule_vllm_kernels(card, wl.quantization, wl.kv_cache_dtype))
    tp_at = f"{at}.tensor_parallel_size" if wl.tensor_parallel_size is not None else f"{at}.cards"
    out += _p(tp_at, wl.tp, rule_parallel_matches_cards(wl.tp, wl.pipeline_parallel_size, wl.cards))
    out += _p(f"{at}.disable_custom_all_reduce", wl.disable_custom_all_reduce,
              rule_custom_all_reduce(card, wl.tp, wl.disable_custom_all_reduce))
    if facts_ is not None:
        out += _p(tp_at, wl.tp, rule_tp_divides(wl.model, facts_, wl.tp))
        out += _p(f"{at}.model", wl.model, rule_hybrid_on_volta_vllm(wl.model, facts_, card))
        if card is not None and not out:
            out += _capacity_problems(at, "vllm", wl, facts_, card, dict(
                tp=wl.tp, pp=wl.pipeline_parallel_size, dtype=wl.dtype, kv_cache_dtype=wl.kv_cache_dtype,
                gpu_memory_utilization=wl.gpu_memory_utilization, max_model_len=wl.max_model_len,
                max_num_batched_tokens=wl.max_num_batched_tokens, max_num_seqs=wl.max_num_seqs))
        if wl.pipeline_parallel_size > facts_.num_hidden_layers:
            out.append(Problem(f"{PREFIX}{at}.pipeline_parallel_size", wl.pipeline_parallel_size,
                               f"pipeline parallel {wl.pipeline_parallel_size} exceeds the model's {facts_.num_hidden_layers} layers",
                               "lower pipeline_parallel_size"))
    return out


def _check_service(name: str, svc: ServiceConfig, workloads: dict[str, Any], declared: list[str]) -> list[Problem]:
    at = f"{PREFIX}services.{name}.selects"
    target = workloads.get(svc.selects)
    if target is None:
        return [Problem(at, svc.selects, f"Service {name} selects workload {svc.selects}, which is not in {PREFIX}workloads",
                        f"use one of {', '.join(declared) or '(none declared)'}, or add the workload")]
    if target.parked and not svc.parked:
        return [Problem(at, svc.selects,
                        f"Service {name} selects {svc.selects}, which is parked ({target.parked.reason}); "
                        "its clients would find no endpoints (001, 003)",
                        "point selects at a running workload, or park the Service too (parked: {reason: ...})")]
    return []

