"""Cross-checks of the stack file: each workload against its node and model, each Service
against its workload, and the rule functions the component argument models share.

The rule functions (``rule_*``) return a :class:`~core.problems.RuleBreach` (the rule broken
and the fix, in the stack file's terms) from a verdict of :mod:`core.rules` /
:mod:`core.capacity` / :mod:`core.modelfacts`, the predicates the policy pack calls too; the
components (``components/workload.py``, ``components/vllm.py``) raise them as ValueError.

Rules that judge several workloads together (cards or memory summed over a node, one served
model name answered by two servers, two workloads behind one Service selector) are the policy
pack's (``policies/``), because the history stacks (``tests/stacks/``) must load so the pack
can judge them; these checks refuse what is wrong for one workload or one reference on its own.

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

from typing import Any, Optional


from core import capacity, facts, quantity, rules
from core.inventory import CardSpec, ClusterInventory, Node
from core.modelfacts import ModelEntry, ModelFacts
from core.problems import Problem, RuleBreach

from components.schema import CandleWorkload, ServiceConfig, VllmWorkload, PREFIX, STARTUP_HEADROOM, mib, is_digest_pinned, startup_threshold


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
    if need is not None and not rules.quantization_runs_on(quantization, card.sm):
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



# --- cross-field checks ---------------------------------------------------------------------

def cross_checks(parts: dict[str, Any], model_facts: dict[str, ModelFacts], invalid: set[str],
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
        out.extend(_check_former_names(name, wl, workloads))
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


def _check_former_names(name: str, wl: Any, workloads: dict[str, Any]) -> list[Problem]:
    """A former name is an alias of this workload: it cannot be its own name or another current
    workload's (two resources would claim one state entry), nor another workload's former name."""
    out: list[Problem] = []
    for i, former in enumerate(wl.former_names):
        at = f"{PREFIX}workloads.{name}.former_names[{i}]"
        if former in workloads:
            out.append(Problem(at, former, f"{former} is a current workload's name, so it cannot also be a former name of {name}",
                               f"remove {former} from former_names, or rename workload {former}"))
            continue
        claims = sorted(other for other, o in workloads.items() if other != name and former in o.former_names)
        if claims:
            out.append(Problem(at, former, f"{former} is also a former name of {', '.join(claims)}: one old object cannot become two",
                               f"keep {former} under the one workload that replaces it"))
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
    if wl.cards > 1 and limit is not None and limit < quantity.mib_of(facts.SHM_SIZE_LIMIT):
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


