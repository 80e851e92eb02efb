"""The stack file's rule wordings: each rule as a function of plain values returning a
:class:`core.problems.RuleBreach` (the rule broken, the fix in stack-file terms, the source) or
None. They call the predicates of :mod:`core.rules` the policy pack calls too; the component
argument models (components/workload.py, components/vllm.py) raise them as errors, and
:mod:`stackfile.checks` reports them at their key paths.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from core import facts, rules
from core.inventory import CardSpec
from core.modelfacts import ModelFacts
from core.problems import RuleBreach

from core.placement import STARTUP_HEADROOM
from core.quantity import mib
from core.rules import is_digest_pinned


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
        "seed 002 and coder.yaml (a probe killed the server while it loaded the weights)",
    )


def rule_tp_divides(model_key: str, facts_: ModelFacts, tp: int, engine: str = "candle-vllm") -> Optional[RuleBreach]:
    """TP divides what ``engine`` shards (:meth:`core.modelfacts.ModelFacts.tp_divisibility_problems`):
    candle-vllm attention heads, KV heads, intermediate size and vocab (001); vLLM the attention
    heads, the KV heads or their replicas, a dense MLP (it pads the vocabulary)."""
    if tp <= 1:
        return None
    bad = facts_.tp_divisibility_problems(tp, engine)
    if not bad:
        return None
    fits = rules.tp_sizes_that_divide(facts_, engine=engine)
    what = ("heads, KV heads, intermediate size and vocab must split evenly" if engine != "vllm" else
            "vLLM splits the attention heads, the KV heads (or replicates them when TP is a multiple) "
            "and a dense MLP evenly")
    return RuleBreach(
        f"tensor parallel {tp} does not divide model {model_key}: {', '.join(bad)} ({what})",
        f"use a tensor parallel size that divides them: {', '.join(map(str, fits))}",
        "seed 001",
    )


def rule_hybrid_one_card(model_key: str, facts_: ModelFacts, tp: int) -> Optional[RuleBreach]:
    """A hybrid (GDN) model runs on one card in candle-vllm: its recurrent state is not
    shardable like attention KV (003)."""
    if tp <= 1 or not facts_.is_hybrid:
        return None
    return RuleBreach(
        f"model {model_key} is hybrid ({facts_.full_attention_layers} full-attention of "
        f"{facts_.num_hidden_layers} layers; the GDN state is not shardable) and cannot "
        f"run on {tp} cards",
        "set cards: 1",
        "seed 003",
    )


def rule_digest_pinned(image: str) -> Optional[RuleBreach]:
    """The vLLM image is pinned by digest (coder.yaml: v0.15.0 failed, error 803)."""
    if is_digest_pinned(image):
        return None
    return RuleBreach(
        f"vLLM image {image} is not pinned by digest; a tag can move, and v0.15.0 failed on this "
        "node (empty arch list, cudaGetDeviceCount error 803)",
        f"pin it as <image>:<tag>@sha256:<digest>, e.g. {facts.VLLM_IMAGE}",
        "coder.yaml",
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
        why = f"dtype {dtype} is not a half dtype; {card.product} (sm_{card.sm}) serves {half}"
    return RuleBreach(why, f"set dtype: {half}", "seed 001 and coder.yaml")


def rule_vllm_kernels(card: Optional[CardSpec], quantization: Optional[str], kv_cache_dtype: str) -> Optional[RuleBreach]:
    """sm_70 has no FP8 and no Marlin / AWQ kernels (coder.yaml, 001; vLLM get_min_capability)."""
    if card is None:
        return None
    need = rules.quantization_min_sm(quantization)
    if need is not None and not rules.quantization_runs_on(quantization, card.sm):
        return RuleBreach(
            f"quantization {quantization} needs compute capability {need / 10:.1f}; {card.product} is sm_{card.sm}",
            "use a GPTQ checkpoint with quantization: gptq (runs on sm_70), or a half-precision one",
            "seed 001 and coder.yaml; vLLM's get_min_capability",
        )
    if not rules.kv_cache_dtype_runs_on(kv_cache_dtype, card.sm):
        return RuleBreach(
            f"kv_cache_dtype {kv_cache_dtype} needs FP8 support; {card.product} (sm_{card.sm}) has none",
            "set kv_cache_dtype: auto",
            "coder.yaml",
        )
    return None


def rule_custom_all_reduce(card: Optional[CardSpec], tp: int, setting: Optional[bool]) -> Optional[RuleBreach]:
    """TP 2 over PCIe without NVLink needs --disable-custom-all-reduce (coder.yaml; vLLM disables it itself above two PCIe-only cards)."""
    if setting is not False or card is None or not rules.custom_all_reduce_must_be_disabled(tp, card.nvlink):
        return None
    return RuleBreach(
        f"custom all-reduce is on at tensor parallel {tp} without NVLink; it deadlocked after CUDA "
        "graph capture on this Volta/PCIe pair",
        "remove disable_custom_all_reduce (it defaults to on here) or set it to true",
        "coder.yaml",
    )


def rule_parallel_matches_cards(tp: int, pp: int, cards: int) -> Optional[RuleBreach]:
    """vLLM starts TP x PP workers, one a card."""
    if rules.parallel_matches_cards(tp, pp, cards):
        return None
    return RuleBreach(
        f"tensor parallel {tp} x pipeline parallel {pp} = {tp * pp} workers, but the pod holds {cards} cards",
        f"set cards: {tp * pp}, or tensor_parallel_size x pipeline_parallel_size = {cards}",
        "seed 001 (ranks equal cards)",
    )


def rule_hybrid_on_volta_vllm(model_key: str, facts_: ModelFacts, card: Optional[CardSpec]) -> Optional[RuleBreach]:
    """vLLM's GatedDeltaNet kernels need sm75+ and the fla module (coder.yaml)."""
    if card is None or rules.gdn_runs_on_vllm(facts_.is_hybrid, card.sm):
        return None
    return RuleBreach(
        f"model {model_key} is hybrid (GatedDeltaNet); vLLM's GDN kernels need compute capability 7.5 "
        f"and the fla module, {card.product} is sm_{card.sm}",
        "serve it with server: candle-vllm on one card (clef-candle)",
        "coder.yaml",
    )



def rule_gpu_memory_utilization(value: float, enforce_eager: bool, overridden: bool) -> Optional[RuleBreach]:
    """--gpu-memory-utilization at most 0.95 unless --enforce-eager or a declared override
    (:func:`core.rules.gpu_memory_utilization_ok`; vllm-project/vllm #15598)."""
    if rules.gpu_memory_utilization_ok(value, enforce_eager=enforce_eager, overridden=overridden):
        return None
    ceiling = rules.GPU_MEMORY_UTILIZATION_CEILING
    return RuleBreach(
        f"gpu_memory_utilization {value} is above {ceiling}: vLLM then leaves the card too little room for "
        "CUDA graph capture and NCCL after the KV cache (0.98 ran out of memory in graph capture, "
        "vllm-project/vllm #15598)",
        f"lower it to at most {ceiling} (0.90 is vLLM's default), or set enforce_eager: true, or declare "
        "gpu_memory_utilization_override: {reason: ...} after measuring it",
    )


def rule_context_window(model_key: str, facts_: ModelFacts, max_model_len: int, rope_scaling: Any,
                        env: dict[str, str]) -> Optional[RuleBreach]:
    """max_model_len within the model's window, or rope scaling / VLLM_ALLOW_LONG_MAX_MODEL_LEN
    (:func:`core.rules.max_model_len_ok`, vLLM v0.11.0 ``_get_and_verify_max_len``)."""
    scaling = rope_scaling.as_config() if rope_scaling is not None else None
    allow = rules.env_flag_on(env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN"))
    if rules.max_model_len_ok(max_model_len, facts_.max_position_embeddings, scaling, allow):
        return None
    derived = rules.derived_max_model_len(facts_.max_position_embeddings, scaling)
    how = f"rope_scaling {json.dumps(scaling)} gives {derived:,}" if scaling else "no rope_scaling is set"
    return RuleBreach(
        f"max_model_len {max_model_len:,} is above model {model_key}'s max_position_embeddings "
        f"{facts_.max_position_embeddings:,} and {how}, so vLLM refuses to start (its derived max_model_len)",
        "set rope_scaling as the model card documents it (YaRN: {rope_type: yarn, factor: "
        f"{rules.yarn_factor_needed(max_model_len, facts_.max_position_embeddings)}, original_max_position_embeddings: "
        f"{facts_.max_position_embeddings}}}), or lower max_model_len to {derived:,}",
    )


def rule_memory_declared(resources: Any) -> Optional[RuleBreach]:
    """A GPU workload declares a memory request and limit (:func:`core.rules.gpu_memory_declared`)."""
    request, limit = resources.requests.memory, resources.limits.memory
    if rules.gpu_memory_declared(mib(request), mib(limit)):
        return None
    missing = "limits.memory" if request is not None else "requests.memory and no limits.memory"
    return RuleBreach(
        f"the workload holds cards but declares no {missing}: a pod without a memory request counts as 0 MiB "
        "on the node (node-memory-allocation, the scheduler) and one without a limit is bounded by nothing (issue 10)",
        "set resources: {requests: {memory: 12Gi}, limits: {memory: 40Gi}} or the figures measured for this "
        "server (coder.yaml: 12Gi / 40Gi for vLLM TP=2; weights stay on the card, so the request stays small)",
    )
