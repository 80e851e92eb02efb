"""The model-server rules, each worded once (:mod:`core.judging.registry`) and judged once: by the policy
pack on the rendered manifests, or by the stack file's cross-checks where no policy judges it. A judge takes plain values (numbers, strings, model facts, a card)
and returns a :class:`~core.judging.registry.Breach` whose settings (:data:`S`) render as stack-file keys
or as flags and manifest fields. The predicates are :mod:`core.rulebook`'.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from core.base import facts
from core.base.facts import STARTUP_HEADROOM
from core.catalog import cards as catalog_cards
from core.catalog import images, modelfacts
from core.engines import config
from core.engines.settings import S
from core.judging.registry import MANIFEST, STACK, Breach, declare_policy, only, rule
from core.k8s import kube

if TYPE_CHECKING:  # pragma: no cover
    from core.capacity.inventory import CardSpec
    from core.catalog.modelfacts import ModelFacts


def startup_budget_covers(budget_s: float, cold_start_s: float) -> bool:
    """A startup probe budget covers the declared cold start only when it EXCEEDS it (spec:
    the budget "must exceed" the cold start; equal leaves no margin for the last probe)."""
    return budget_s > cold_start_s


def startup_threshold_needed(cold_start_s: int, period_s: int, initial_delay_s: int = 0) -> int:
    """The smallest failure threshold whose budget (delay + period x threshold) exceeds the cold start."""
    return max(1, (cold_start_s - initial_delay_s) // period_s + 1)


#: The largest tensor parallel size suggested in messages (a node rarely has more than 8 cards).
MAX_SUGGESTED_TP = 8


def tp_sizes_that_divide(facts: ModelFacts, max_cards: int = MAX_SUGGESTED_TP, engine: str = "candle-vllm") -> list[int]:
    """Tensor parallel sizes 1 .. ``max_cards`` that divide every dimension ``engine`` shards
    (:meth:`core.catalog.modelfacts.ModelFacts.tp_divisibility_problems`; candle-vllm's rule, the
    stricter, by default)."""
    return [tp for tp in range(1, max_cards + 1) if not facts.tp_divisibility_problems(tp, engine)]


# --- host memory of a GPU workload ------------------------------------------------------------


def gpu_memory_declared(request_mib: float | None, limit_mib: float | None) -> bool:
    """A container holding cards declares a memory request and a memory limit (MiB; None: not
    declared). A limit alone counts as both: the API server copies it into the missing request.
    Without either the scheduler and node-memory-allocation count the pod as 0 MiB; without a
    limit nothing bounds what it takes from the node. coder.yaml: 12Gi request, 40Gi limit."""
    request = request_mib if request_mib is not None else limit_mib
    return request is not None and limit_mib is not None


# --- start-up ---------------------------------------------------------------------------------

@rule("startup-probe-covers-cold-start", "The startup probe allows more than the declared cold start.",
      "seed 002 and coder.yaml (a probe killed the server while it loaded the weights)",
      policy="startup-probe-covers-cold-start")
def startup_budget(cold_start_seconds: int, period: int, threshold: int, initial_delay: int = 0,
                   assumed: str | None = None) -> Breach | None:
    """Budget ``initial_delay + period x threshold`` seconds against the cold start (seconds);
    ``assumed``: the cold start was not declared but assumed, by this (a manifest's policy
    parameter), and the fix offers declaring it."""
    budget = initial_delay + period * threshold
    if startup_budget_covers(budget, cold_start_seconds):
        return None
    need = startup_threshold_needed(cold_start_seconds, period, initial_delay)
    formula = (f"{initial_delay} + " if initial_delay else "") + f"{period} s x {threshold}"
    whose = (f"cold start of {cold_start_seconds} s assumed for a model server that declares none ({assumed})"
             if assumed else f"declared cold start of {cold_start_seconds} s")
    return Breach(
        f"the startup probe allows {formula} = {budget} s, which does not exceed the {whose}, so the kubelet kills "
        "the server while it loads",
        f"raise {S.failure_threshold} to at least {need} at a {period} s period"
        + only(STACK, f", or leave it unset for {STARTUP_HEADROOM} x {S.cold_start}")
        + (f", or declare the measured cold start as {S.cold_start}" if assumed else ""),
    )


# --- tensor parallel --------------------------------------------------------------------------

@rule("tensor-parallel-divisibility", "Tensor parallel size divides what the engine shards.", "seed 001",
      policy="tensor-parallel-divisibility")
def tp_divides(model_key: str, model: ModelFacts, tp: int, engine: str = "candle-vllm") -> Breach | None:
    """``tp`` divides what ``engine`` shards (:meth:`core.catalog.modelfacts.ModelFacts.tp_divisibility_problems`):
    candle-vllm heads, KV heads, intermediate size and vocab (001); vLLM heads, KV heads (or their
    replicas), a dense MLP."""
    if tp <= 1:
        return None
    bad = model.tp_divisibility_problems(tp, engine)
    if not bad:
        return None
    fits = ", ".join(map(str, tp_sizes_that_divide(model, engine=engine)))
    return Breach(
        f"tensor parallel {tp} does not divide model {model_key}: {'; '.join(bad)}; the shards would be uneven "
        "and the server fails at load",
        f"set {S.cards} to a tensor parallel size that divides them: {fits}"
        + (only(MANIFEST, f", with {S.tp} to match") if engine == "vllm" else ""),
    )


@rule("hybrid-one-card", "A hybrid (GatedDeltaNet) model runs on one card in candle-vllm.", "seed 003",
      policy="candle-vllm-args")
def hybrid_one_card(model_key: str, model: ModelFacts, tp: int) -> Breach | None:
    """candle-vllm cannot shard a hybrid model's recurrent state like attention KV (003)."""
    if tp <= 1 or not model.is_hybrid:
        return None
    return Breach(
        f"model {model_key} is hybrid ({model.full_attention_layers} full-attention of {model.num_hidden_layers} "
        f"layers; the GDN state is not shardable) and cannot run on {tp} cards",
        f"set {S.cards.to(1)}",
    )


@rule("vllm-parallelism", "vLLM's TP x PP (x DP) ranks equal the pod's cards.",
      "seed 001 (ranks equal cards; an idle card is a card another server waits for)", policy="vllm-parallelism")
def parallel_matches_cards(tp: int, pp: int, cards: int, dp: int = 1) -> Breach | None:
    """VLLM starts one rank a card."""
    if config.parallel_matches_cards(tp, pp, cards, dp):
        return None
    ranks = tp * pp * dp
    formula = f"tensor parallel {tp} x pipeline parallel {pp}" + (f" x data parallel {dp}" if dp != 1 else "")
    effect = "vLLM fails at start for want of cards" if ranks > cards else f"{cards - ranks} card(s) are held and idle"
    return Breach(
        f"{formula} = {ranks} ranks, but the pod holds {cards} cards; {effect}",
        f"set {S.cards.to(ranks)}, or {S.tp} x {S.pp} = {cards}",
    )


# --- the card's capabilities ------------------------------------------------------------------

@rule("half-dtype", "Below sm_80 a server runs an explicit half dtype.", "seed 001 and coder.yaml",
      policy="vllm-volta")
def half_dtype(card: CardSpec | None, dtype: str | None, engine: str,
               checkpoint_dtype: str | None = None, explicit: bool = True) -> Breach | None:
    """:func:`core.catalog.cards.dtype_runs_on`; ``dtype`` None: not given (the checkpoint's, bf16 for most).
    ``explicit`` False (a cluster without the house conventions): ``auto`` or no dtype on a
    ``checkpoint_dtype`` of float16 passes, as vLLM then serves float16."""
    if card is None or catalog_cards.dtype_runs_on(engine, dtype, card.sm):
        return None
    if not explicit and (not dtype or dtype == "auto") and checkpoint_dtype == "float16":
        return None
    half = catalog_cards.half_dtype(engine)
    where = f"{card.product} is sm_{card.sm}"
    if dtype in ("bf16", "bfloat16"):
        why = f"{S.dtype} {dtype} needs compute capability 8.0; {where}"
    elif not dtype or dtype == "auto":
        ckpt = f" ({checkpoint_dtype})" if checkpoint_dtype else " (bfloat16 for most)"
        shown = f"{S.dtype} auto" if dtype else f"no {S.dtype}"
        if checkpoint_dtype in ("float16", "half"):
            why = f"{shown} takes the checkpoint's dtype{ckpt}; {where}, where this cluster asks for an explicit half dtype"
        else:
            why = f"{shown} takes the checkpoint's dtype{ckpt}, which needs compute capability 8.0; {where}"
    else:
        why = f"{S.dtype} {dtype} is not a half dtype; {where} and serves {half}"
    return Breach(why, f"set {S.dtype.to(half)}")


@rule("vllm-kernels", "sm_70 has no FP8, Marlin or AWQ kernels.",
      "seed 001 and coder.yaml; vLLM's get_min_capability", policy="vllm-volta")
def vllm_kernels(card: CardSpec | None, quantization: str | None, kv_cache_dtype: str | None,
                 written: bool = True) -> Breach | None:
    """``quantization``: the method (``written`` False: the checkpoint's, picked up without the flag)."""
    if card is None:
        return None
    need = catalog_cards.quantization_min_sm(quantization)
    if need is not None and not catalog_cards.quantization_runs_on(quantization, card.sm):
        how = f"{S.quantization} {quantization}" if written else f"the checkpoint's {quantization} quantization"
        return Breach(
            f"{how} needs compute capability {need / 10:.1f}; {card.product} is sm_{card.sm}",
            f"point {S.model} at a gptq checkpoint ({S.quantization.to('gptq')}, which runs on sm_70) or a "
            "half-precision one",
        )
    if not catalog_cards.kv_cache_dtype_runs_on(kv_cache_dtype, card.sm):
        return Breach(
            f"{S.kv_cache_dtype} {kv_cache_dtype} needs FP8 support; {card.product} (sm_{card.sm}) has none",
            f"set {S.kv_cache_dtype.to('auto')}", "coder.yaml",
        )
    return None


@rule("custom-all-reduce", "TP 2 over PCIe without NVLink disables vLLM's custom all-reduce.", "coder.yaml",
      policy="vllm-volta")
def custom_all_reduce(card: CardSpec | None, tp: int, disabled: bool | None,
                      nodes: tuple[str, ...] = ()) -> Breach | None:
    """``disabled``: the setting (None: the component's default, on without NVLink); ``nodes``: the
    nodes without NVLink the pod can land on, named in the wording."""
    if disabled is not False or card is None or not config.custom_all_reduce_must_be_disabled(tp, card.nvlink):
        return None
    where = f" ({', '.join(nodes)})" if nodes else ""
    return Breach(
        f"custom all-reduce is on at tensor parallel {tp} without NVLink{where}; it deadlocked after CUDA graph capture "
        "on this Volta/PCIe pair",
        f"set {S.disable_custom_all_reduce.to(True)}",
    )


@rule("hybrid-on-volta-vllm", "vLLM's GatedDeltaNet kernels need sm_75.", "coder.yaml", policy="vllm-volta")
def hybrid_on_volta_vllm(model_key: str, model: ModelFacts, card: CardSpec | None) -> Breach | None:
    """A hybrid (GDN) model on vLLM needs compute capability 7.5 and the fla module."""
    if card is None or catalog_cards.gdn_runs_on_vllm(model.is_hybrid, card.sm):
        return None
    return Breach(
        f"model {model_key} is hybrid (GatedDeltaNet); vLLM's GDN kernels need compute capability 7.5 and the fla "
        f"module, {card.product} is sm_{card.sm}",
        f"serve it with {S.server.to('candle-vllm')} on one card (clef-candle)",
    )


@rule("vllm-digest-pinned", "The vLLM image is pinned by digest.", "coder.yaml")
def digest_pinned(image: str) -> Breach | None:
    """coder.yaml: v0.15.0 failed on this node (error 803); a digest never moves."""
    if images.is_digest_pinned(image):
        return None
    return Breach(
        f"vLLM image {image} is not pinned by digest; a tag can move, and v0.15.0 failed on this node (empty arch "
        "list, cudaGetDeviceCount error 803)",
        f"pin {S.image} as <image>:<tag>@sha256:<digest>, e.g. {facts.VLLM_IMAGE}",
    )


# --- memory -----------------------------------------------------------------------------------

@rule("vllm-gpu-memory-utilization", "vLLM --gpu-memory-utilization is at most 0.95.",
      "vllm-project/vllm #15598 (0.98 ran out of memory in CUDA-graph capture)", policy="vllm-gpu-memory-utilization")
def gpu_memory_utilization(value: float, enforce_eager: bool, overridden: bool) -> Breach | None:
    """:func:`core.engines.config.gpu_memory_utilization_ok`."""
    if config.gpu_memory_utilization_ok(value, enforce_eager=enforce_eager, overridden=overridden):
        return None
    ceiling = config.GPU_MEMORY_UTILIZATION_CEILING
    return Breach(
        f"{S.gmu} {value} is above the {ceiling} ceiling without {S.enforce_eager} or {S.gmu_override}: vLLM "
        "fills that much of the card with weights and KV cache and has too little left for CUDA graph capture and NCCL",
        f"lower {S.gmu} to at most {ceiling} (vLLM's default is 0.90), set {S.enforce_eager.to(True)}, or declare "
        f"the measured exception as {S.gmu_override}",
    )


@rule("gpu-memory-request", "A container holding cards declares a memory request and limit.",
      "coder.yaml (12Gi request, 40Gi limit on a node with 63,495 MiB allocatable)", policy="gpu-memory-request")
def memory_declared(request_mib: float | None, limit_mib: float | None, cards: int = 1) -> Breach | None:
    """:func:`core.rulebook.servers.gpu_memory_declared`; MiB, None: not declared."""
    if gpu_memory_declared(request_mib, limit_mib):
        return None

    def shown(v: float | None) -> str:
        return "none" if v is None else f"{v:,.0f} MiB"

    effect = ("it counts as 0 MiB on the node, so the scheduler and node-memory-allocation cannot tell whether the "
              "node holds it, and nothing bounds what it takes while loading"
              if request_mib is None and limit_mib is None else "nothing bounds what it takes while loading")
    return Breach(
        f"it holds {cards} card(s) with memory request {shown(request_mib)} and limit {shown(limit_mib)}: {effect}",
        f"set {S.memory_request} and {S.memory_limit} (coder.yaml: 12Gi and 40Gi for vLLM TP=2; the weights stay "
        "on the card)",
    )


# --- the context window -----------------------------------------------------------------------

@rule("vllm-context-window", "vLLM --max-model-len is within the model's window, or rope scaling stretches it.",
      "vLLM v0.11.0 _get_and_verify_max_len; the Qwen3 model card (YaRN)", policy="vllm-context-window")
def context_window(model_key: str, max_position_embeddings: int, max_model_len: int,
                   rope_scaling: Mapping[str, Any] | None, allow_long: bool, *,
                   from_checkpoint: bool = False) -> Breach | None:
    """:func:`core.catalog.modelfacts.max_model_len_ok`; ``rope_scaling`` the one vLLM derives the window from
    (:meth:`core.catalog.modelfacts.ModelFacts.window_rope_scaling`), ``from_checkpoint`` when it is the
    checkpoint's config.json's, not the manifest's; ``allow_long``: ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is on."""
    window = max_position_embeddings
    if modelfacts.max_model_len_ok(max_model_len, window, rope_scaling, allow_long):
        return None
    derived = modelfacts.derived_max_model_len(window, rope_scaling)
    factor = modelfacts.yarn_factor_needed(max_model_len, window)
    whose = "its config.json's rope scaling" if from_checkpoint else "its rope scaling"
    how = (f"{whose} {json.dumps(dict(rope_scaling), separators=(',', ':'))} stretches that to {derived:,}"
           if rope_scaling else "no rope scaling is set")
    yarn = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": window}
    return Breach(
        f"{S.max_model_len} {max_model_len:,} is above model {model_key}'s max_position_embeddings {window:,} and "
        f"{how}, without VLLM_ALLOW_LONG_MAX_MODEL_LEN: vLLM refuses to start",
        f"add the rope scaling the model card documents, e.g. YaRN: {S.rope_scaling.to(yarn)}, or lower "
        f"{S.max_model_len} to {derived:,}",
    )


# --- names ------------------------------------------------------------------------------------

@rule("kserve-predictor-label", "KServe's predictor pod label of the name is a valid label value.",
      "KServe RawDeployment pod labels; apimachinery IsValidLabelValue")
def kserve_label(name: str) -> Breach | None:
    """KServe labels an InferenceService's predictor pods ``app: isvc.<name>-predictor``."""
    label = f"{facts.KSERVE_APP_LABEL_PREFIX}{name}{facts.KSERVE_PREDICTOR_SUFFIX}"
    problems = kube.label_value_problems(label)
    if not problems:
        return None
    return Breach(f"KServe labels the predictor pods app: {label}, which Kubernetes refuses: {problems[0]}",
                  f"shorten {S.name} to at most {kube.LABEL_VALUE_MAX - len(label) + len(name)} characters")


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "gpu-memory-request",
    "Containers holding cards declare a memory request and limit, so no GPU pod counts as 0 MiB.",
    (
        "Give every container that requests nvidia.com/gpu a resources.requests.memory and resources.limits.memory (coder.yaml: "
        "12Gi / 40Gi); in the stack file, resources on the workload."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""gpu-memory-request: a container holding cards declares its host memory request and limit.

Rule: each container with ``nvidia.com/gpu`` above 0 of a Deployment, StatefulSet or
InferenceService predictor has a memory limit, and a memory request or the limit Kubernetes
copies into it (:func:`core.rulebook.memory_declared`, the rule the stack file's
``resources`` check judges by too). Parked workloads are judged too (unparking is one replicas change).

Why: node-memory-allocation, like the scheduler, counts a pod by its memory requests; a GPU
server without one counts as 0 MiB and passes beside pods that already fill the node's 63,495
MiB, then is OOM-killed or starves them; without a limit nothing bounds what a server takes
while it loads its weights through host memory. coder.yaml: 12Gi request, 40Gi limit.

Source: spec "Memory requests must fit" row; coder.yaml (worker-1 exposes 63,495 MiB; "two vLLM workers
keep the weights on the GPU and need little host RAM, so the request stays small and the limit
allows burst").

Where: a convention of this cluster, which counts host memory per node
(``llm-serving:cluster`` ``house_conventions: true``, the user's inventory); on an inventory
without it the policy does not run: public manifests commonly leave host memory to the node,
and such house rules must not block other teams' YAML. Does not check: CPU, containers without cards, the figures themselves
(node-memory-allocation sums them).
""",
)

#: The cold start assumed for a model server that declares none, seconds: coder.yaml's ~10 min.
ASSUMED_COLD_START_SECONDS = 600

STARTUP_PROBE_COVERS_COLD_START_CONFIG = {
    "assumedColdStartSeconds": {
        "type": "integer",
        "minimum": 1,
        "default": ASSUMED_COLD_START_SECONDS,
        "description": (
            "Cold start, seconds, assumed for a model server without the cold-start-seconds annotation "
            "(default 600: coder.yaml's vLLM TP=2 at 256K, the longest start measured here)."
        ),
    },
}


declare_policy(
    "startup-probe-covers-cold-start",
    "Model servers have a startupProbe whose period x failure threshold exceeds the declared cold start (600 s assumed when none"
    " is declared).",
    (
        "Give the server container a startupProbe on its health endpoint with periodSeconds x failureThreshold above the cold "
        "start (coder.yaml: 15 s x 120 for about 10 minutes); keep any livenessProbe, it starts only after the startup probe "
        "succeeds. Declare the measured cold start (stack file: cold_start_seconds on the workload; plain YAML: annotation "
        "llm-serving.riotpiao.com/cold-start-seconds); without it 600 s is assumed (parameter assumedColdStartSeconds)."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    config=STARTUP_PROBE_COVERS_COLD_START_CONFIG,
    doc="""startup-probe-covers-cold-start: a model server's startup probe outlasts its cold start.

Applies to every workload that runs a model server (a vLLM or candle-vllm container,
recognised by image or command) and to every workload that declares a cold start
(annotation ``facts.COLD_START_ANNOTATION``, whole seconds, e.g. the PyTorch clef-serve).
The judged containers are the model-server containers, else those holding cards, else all.
One violation per problem:

- a declared cold start must be whole seconds above 0;
- each judged container has a ``startupProbe``: without one the kubelet runs the liveness
  probe from its ``initialDelaySeconds``, and a server still loading its weights fails it and
  is restarted (the message states that probe's own delay and budget); with one, liveness waits
  until startup succeeds;
- its budget, initialDelaySeconds + periodSeconds x failureThreshold (Kubernetes defaults 0,
  10 and 3 when omitted), EXCEEDS the cold start (spec "must exceed"), by
  :func:`core.rulebook.startup_budget`, the rule the program's config check judges by too.

The cold start judged is the declared one; when a model server declares none (every
hand-written manifest), it is the policy parameter ``assumedColdStartSeconds``, default 600 s:
coder.yaml's measured "TP=2 at 256K needs ~10 min before the API binds", the longest start
measured in this namespace (clef-serve: about 4 min). Why this and not the alternatives:

- a mandatory "declare it" (what this policy did) failed every correct hand-written manifest,
  e.g. coder.yaml with its ample 120 x 15 s probe, for a missing annotation, not a fault;
- an estimate from the weights size would be wrong by its largest terms: coder.yaml's start was
  22 s of weights, 80 s of torch.compile, 85 s of KV profiling, then graph capture, and the
  weights' share depends on the PVC's throughput, which nothing here knows;
- a default judged like a declaration keeps the check: a manifest without a probe, or with
  the Kubernetes default probe (3 x 10 s = 30 s), still fails, naming the assumption, while
  any probe that covers the namespace's worst measured start passes. A server that needs
  longer declares its cold start, which always wins over the default.

That is the user's cluster (inventory ``house_conventions: true``). On another team's cluster
600 s is this namespace's figure, not theirs, so an undeclared cold start decides only what it
must: a liveness probe without a startup probe whose grace (initialDelaySeconds + period x
threshold) does not cover the assumed cold start restarts the server while it loads, and
fails; a server with no liveness probe is never restarted while loading, and a startup probe
its author sized passes (declare the cold start to have it checked).

Source: seed 002 (clef-serve "Cold start is about four minutes ... startupProbe allows for
that"), coder.yaml ("TP=2 at 256K needs ~10 min before the API binds ... 120 x 15s = 30 min
of headroom"), spec "Start-up can take minutes" row; correct YAML raises no false alarm
(tests/manifests/hand-written/vllm-tp2.yaml).

Does not check: that the probes hit the port the server listens on (server-listen-endpoint);
that a liveness probe exists at all (a judgement, not a start-up failure); readiness probes;
parked workloads are judged too (unparking is one replicas change).
""",
)

declare_policy(
    "tensor-parallel-divisibility",
    "Tensor parallel size divides the model's attention heads, KV heads, intermediate size and vocabulary.",
    (
        "Choose a tensor parallel size (vLLM --tensor-parallel-size, candle-vllm --d device list) that divides "
        "num_attention_heads, num_key_value_heads, intermediate_size (and moe_intermediate_size) and vocab_size of the model, "
        "and give the pod that many nvidia.com/gpu cards."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""tensor-parallel-divisibility: tensor parallel size divides the model's sharded dimensions.

Rule, per vLLM / candle-vllm container with tensor parallel above 1 (vLLM
``--tensor-parallel-size``, candle-vllm the count of ``--d`` devices), by engine
(:meth:`core.catalog.modelfacts.ModelFacts.tp_divisibility_problems`): candle-vllm needs attention
heads, KV heads, intermediate size and vocabulary to divide by TP (it divides heads by the
rank count with integer division, qwen.rs, so the shards no longer match the layer shapes);
vLLM needs the attention heads to divide, replicates the KV heads when TP exceeds them (TP a
multiple of them), pads the vocabulary, and asserts a dense MLP's split (``divide`` in
vllm/distributed/utils.py). Both: the experts' width of an MoE model and, for a GPTQ
checkpoint, the quantization groups of the row-parallel projections. A server
whose model is not in the stack's models is reported with how to add it where the inventory holds
the house conventions (the user's cluster), and not judged elsewhere; a stack that lists no
model at all (``llm-serving:models`` absent: someone else's cluster) is not judged, and the
analyze summary says so.

Source: seed 001 (coder-14b-fp16.yaml: "Every dimension divides by 2: attention heads 40 ->
20, KV heads 8 -> 4, intermediate_size 13824 -> 6912, vocab 152064 -> 76032. Verify this first
for any replacement model"); spec "Tensor parallel needs attention heads, KV heads ... to divide" row.

Does not check: TP x PP against the pod's cards (vllm-parallelism, candle-vllm-args); that a
hybrid (GDN) model runs on one card (seed 003; the components refuse it); TP=1 servers.
""",
)

declare_policy(
    "vllm-context-window",
    "vLLM --max-model-len is within the model's window, stretched only by rope scaling or VLLM_ALLOW_LONG_MAX_MODEL_LEN.",
    (
        "Keep --max-model-len within the model's max_position_embeddings, or pass the model card's rope scaling (YaRN for Qwen3:"
        " --hf-overrides with rope_scaling; stack file: rope_scaling on the workload). VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 also lets"
        " vLLM start, at the risk of wrong outputs."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""vllm-context-window: vLLM's --max-model-len fits the model's window, or the manifest carries what stretches it.

Rule: for each vLLM container whose model is in the stack's models (``llm-serving:models``),
an explicit ``--max-model-len`` is at most the window vLLM derives
(:func:`core.catalog.modelfacts.derived_max_model_len`: the model's ``max_position_embeddings``, scaled by a
``rope_scaling`` given as ``--hf-overrides '{"rope_scaling": {...}}'`` or the deprecated
``--rope-scaling '{...}'``; YaRN counts from ``original_max_position_embeddings``), unless the
container sets ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` (``1`` or ``true``). Otherwise vLLM v0.11.0
refuses to start ("User-specified max_model_len ... is greater than the derived max_model_len").
The stack file and the component args judge by the same rule and wording,
:func:`core.rulebook.context_window` (:func:`core.catalog.modelfacts.max_model_len_ok`).

Source: Prod's ``reasoning`` asks 65,536 of Qwen3-30B-A3B (config.json: 40,960), which
the user measured serving 64k: the Qwen3 model card's YaRN setting (``rope_type: yarn``,
``original_max_position_embeddings: 32768``, factor 2.0 for about 65,536 tokens, 4.0 for 131,072)
makes it start; coder.yaml ("Native window is 262144 and rope_scaling is null, so 256K needs no YaRN").

The checkpoint's own ``rope_scaling`` (the model facts' ``rope_scaling``, read from config.json)
counts when the manifest gives none: linear and dynamic multiply ``max_position_embeddings`` by the
factor, YaRN counts from ``original_max_position_embeddings``, llama3 / longrope / su leave it, and
Gemma 3's window is already scaled (vLLM v0.11.0 ``_get_and_verify_max_len``); a manifest's
rope_scaling replaces the checkpoint's whole (``--hf-overrides`` sets the config key).

Does not check: ``--hf-overrides`` in dotted form, servers without ``--max-model-len`` (vLLM then uses the derived
window itself), models not in the stack's models (kv-cache-fits-max-model-len reports those).
""",
)

declare_policy(
    "vllm-gpu-memory-utilization",
    "vLLM --gpu-memory-utilization is at most 0.95, unless --enforce-eager or a declared override.",
    (
        "Keep --gpu-memory-utilization at or below 0.95 (coder.yaml: 0.90). Above it, run with --enforce-eager or declare the "
        "measured exception (stack file: gpu_memory_utilization_override: {reason: ...}; plain YAML: annotation "
        "llm-serving.riotpiao.com/gpu-memory-utilization-override)."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""vllm-gpu-memory-utilization: vLLM's --gpu-memory-utilization stays below its usual ceiling.

Rule: each vLLM container's ``--gpu-memory-utilization`` (vLLM's default 0.90 when absent) is at
most ``core.engines.config.GPU_MEMORY_UTILIZATION_CEILING`` (0.95), by
:func:`core.rulebook.gpu_memory_utilization`, the rule the stack file judges by too.
The bound is lifted only by ``--enforce-eager`` (no CUDA graphs are captured, so the headroom
they need is not needed) or an explicit override: the annotation
``facts.GMU_OVERRIDE_ANNOTATION`` with the reason (the components write it from the stack
file's ``gpu_memory_utilization_override: {reason: ...}``).

Why: vLLM sizes the KV cache to fill ``utilization x card`` and captures CUDA graphs, NCCL
buffers and the sampler's scratch afterwards from what is left: at 0.98 that ran out of memory
in CUDA-graph capture (vllm-project/vllm #15598). The capacity estimate never credits more than
the ceiling either (``core.capacity.estimator.estimate``), so the preview's table shows no extra room for it.

Source: vllm-project/vllm #15598; coder.yaml runs 0.90. Does not check: values outside (0, 1]
(the capacity policies report what the estimator refuses); candle-vllm (its ``--kv-fraction``
is a share of the memory free after load, bounded by the estimator).
""",
)

declare_policy(
    "vllm-parallelism",
    "vLLM tensor parallel x pipeline parallel size equals the container's nvidia.com/gpu cards.",
    (
        "Set resources.limits and requests nvidia.com/gpu to --tensor-parallel-size x --pipeline-parallel-size (x "
        "--data-parallel-size), or change the sizes to the cards you have."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""vllm-parallelism: vLLM's tensor parallel x pipeline parallel size equals the container's cards.

Rule, for every vLLM container: ``--tensor-parallel-size`` (``-tp``, default 1) x
``--pipeline-parallel-size`` (``-pp``, default 1) x ``--data-parallel-size`` (``-dp``,
default 1; one pod runs every local data-parallel rank) equals the container's
``nvidia.com/gpu`` (its limit, else its request). Fewer cards than ranks: vLLM fails at start
("world size ... greater than the number of available GPUs"); more: cards held and idle,
which on a fully allocated node starves another workload (coder.yaml's 2 cards).

Source: coder.yaml (``--tensor-parallel-size=2``, ``--pipeline-parallel-size=1``
with ``nvidia.com/gpu: "2"``), seed 002 reasoning.yaml (TP 1 on 1 card).

Does not check: that TP divides the model's heads (the TP divisibility policy, with model
facts); multi-node pipeline parallelism (Ray clusters, LeaderWorkerSets), which this stack does
not run; a pod on another vendor's accelerator (``amd.com/gpu``, ``google.com/tpu``), whose cards
are not nvidia.com/gpu (the analyze summary lists it as not judged); a container with no card whose
image the image catalog does not know (``core.catalog.images.image_user``): it may be a CPU build of vLLM
(tchangkiat/aws-cdk-stacks' Graviton vLLM, tests/heldout/).
""",
)
