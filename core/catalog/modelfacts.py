"""Model facts as typed data, a small catalog of the user's public models, and model entries.

A stack names its models under the config key ``llm-serving:models``: a map from a model key
(what workloads refer to) to a :class:`ModelEntry`, which gives the model's facts one of
three ways: a ``catalog`` name (see :data:`CATALOG`), inline ``facts``, or a ``config_json``
file (a Hugging Face config.json). ``hf_id`` and ``weights_path`` are how the policy pack
recognises the model in a server's arguments (vLLM ``--model``, candle-vllm ``--w``).

The catalog is data, ``core/data/models.yaml`` (one entry per model, with its ``source``),
validated at import by :class:`CatalogEntry` (:mod:`core.catalog.datafile`; its schema:
``core/data/models.schema.json``).

Plain pydantic, no Pulumi import; the program, the policy pack and the capacity estimator
(:mod:`core.capacity.estimator`) read it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

from core.base import facts, inputs
from core.base.facts import MOST_TOKENS
from core.base.stackkeys import MODELS_CONFIG_KEY as MODELS_CONFIG_KEY  # re-exported: read where the models are
from core.catalog import datafile
from core.k8s.values import Int, Real, rule_error

# --- the context window -----------------------------------------------------------------------

#: RoPE types vLLM does not scale the derived window by (vLLM v0.11.0 ``_get_and_verify_max_len``
#: in vllm/config/model.py: ``su``/``longrope`` carry their own window, ``llama3`` keeps it).
ROPE_TYPES_NOT_SCALING_WINDOW = ("su", "longrope", "llama3")


def derived_max_model_len(max_position_embeddings: int, rope_scaling: Mapping[str, Any] | None = None) -> int:
    """The longest ``--max-model-len`` vLLM accepts without ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``, in
    tokens, as vLLM v0.11.0 derives it (``_get_and_verify_max_len``): the model's
    ``max_position_embeddings``; with ``rope_scaling`` (config.json's, or ``--hf-overrides``
    ``{"rope_scaling": ...}``) of a scaling type, times ``factor``, YaRN counting from its
    ``original_max_position_embeddings``. Qwen3-30B-A3B (40,960) with the Qwen3 card's YaRN
    ``{"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32768}``: 65,536.
    A rope_scaling without a numeric factor leaves the window as it is."""
    derived = max_position_embeddings
    if not rope_scaling:
        return derived
    rope_type = str(rope_scaling.get("rope_type") or rope_scaling.get("type") or "")
    factor = rope_scaling.get("factor")
    if (rope_type in ROPE_TYPES_NOT_SCALING_WINDOW or isinstance(factor, bool) or not isinstance(factor, (int, float))
            or not math.isfinite(factor) or factor <= 0):
        return derived  # no usable factor (an infinite or NaN one from JSON's 1e400 / NaN included)
    if rope_type == "yarn" and isinstance(rope_scaling.get("original_max_position_embeddings"), (int, float)):
        derived = int(rope_scaling["original_max_position_embeddings"])
    scaled = derived * factor
    return int(scaled) if scaled <= MOST_TOKENS else max_position_embeddings  # beyond int32: no usable factor


def yarn_factor_needed(max_model_len: int, window: int) -> float:
    """The YaRN factor that stretches a ``window`` of tokens to at least ``max_model_len``, rounded
    up to one decimal (65,536 over Qwen3's 32,768 original: 2.0), for fixes that name it; whether
    the model supports YaRN at all is its model card's to say."""
    return math.ceil(max_model_len / window * 10) / 10


def max_model_len_ok(max_model_len: int, max_position_embeddings: int,
                     rope_scaling: Mapping[str, Any] | None = None, allow_long: bool = False) -> bool:
    """VLLM starts with ``max_model_len`` (tokens) only when it is at most
    :func:`derived_max_model_len`, or when ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is set (vLLM then
    warns that outputs may be wrong or the kernels may fail)."""
    return allow_long or max_model_len <= derived_max_model_len(max_position_embeddings, rope_scaling)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: Quantization methods the weights estimate and the per-card rules understand, as config.json's
#: ``quantization_config.quant_method`` (and vLLM's ``--quantization``) name them.
QUANT_METHODS = ("gptq", "awq", "fp8", "mxfp4", "compressed-tensors", "marlin", "bitsandbytes")


class Quantization(_Strict):
    """How the checkpoint's linear weights are quantized.

    ``bits``: bits per quantized weight value (GPTQ Int4: 4; FP8: 8; MXFP4: 4, with one 8-bit
    scale per 32 values); ``group_size``: values sharing a scale (-1: per channel);
    ``experts_only``: only the MoE experts are quantized, attention, router, embeddings and LM
    head stay in the checkpoint dtype (gpt-oss MXFP4: ``modules_to_not_convert``).
    """

    method: Literal["gptq", "awq", "fp8", "mxfp4", "compressed-tensors", "marlin", "bitsandbytes"] = Field(
        description="Quantization method as vLLM's --quantization names it."
    )
    bits: Int = Field(ge=1, le=16, description="Bits per quantized weight (GPTQ Int4: 4).")
    group_size: Int = Field(default=128, ge=-1, description="Quantization group size (-1: per channel).")
    experts_only: bool = Field(default=False, description="Only the MoE experts are quantized (gpt-oss MXFP4).")


def _first_int(raw: dict, *keys: str, default: int) -> int:
    """The first of ``keys`` present in ``raw``, as an int; ``default`` when none is."""
    for key in keys:
        if raw.get(key) is not None:
            return int(raw[key])
    return default


def quantization_from_config(q: dict, where: str = "quantization_config") -> Quantization:
    """:class:`Quantization` from config.json's ``quantization_config`` (``where`` is its key path,
    for errors), as each method writes it:

    - ``gptq`` / ``awq`` / ``marlin``: ``bits`` (AWQ also ``w_bit``), ``group_size`` (``q_group_size``);
    - ``fp8``: 8 bits, per-channel or block scales;
    - ``mxfp4`` (gpt-oss): 4-bit values, one scale per 32; the modules in
      ``modules_to_not_convert`` (attention, router, embeddings, LM head) stay unquantized, so
      ``experts_only`` when attention is among them;
    - ``compressed-tensors``: the first ``config_groups`` entry's ``weights`` ``num_bits`` and
      ``group_size`` (``strategy: channel``: per channel);
    - ``bitsandbytes``: ``load_in_4bit`` (4 bits, a scale per 64) or ``load_in_8bit``.

    Raises ValueError naming ``<where>.quant_method`` for any other method (hqq, gguf, exl2,
    aqlm, ...), which the weights estimate does not know.
    """
    method = str(q.get("quant_method", "gptq")).lower().replace("_", "-")
    if method in ("gptq", "awq", "marlin"):
        bits = _first_int(q, "bits", "w_bit", default=4)
        group = _first_int(q, "group_size", "q_group_size", default=128)
        return Quantization(method=method, bits=bits, group_size=group)
    if method == "fp8":
        return Quantization(method="fp8", bits=8, group_size=-1)
    if method == "mxfp4":
        skipped = " ".join(str(m) for m in q.get("modules_to_not_convert") or ())
        return Quantization(method="mxfp4", bits=4, group_size=32, experts_only="attn" in skipped)
    if method == "compressed-tensors":
        groups = q.get("config_groups") or {}
        first: dict = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
        weights = (first or {}).get("weights") or {}
        bits = int(weights.get("num_bits", 8))
        group = -1 if weights.get("strategy") in ("channel", "tensor") else int(weights.get("group_size") or 128)
        return Quantization(method="compressed-tensors", bits=bits, group_size=group)
    if method == "bitsandbytes":
        four = bool(q.get("load_in_4bit")) or not q.get("load_in_8bit")
        return Quantization(method="bitsandbytes", bits=4 if four else 8, group_size=64 if four else -1)
    raise ValueError(
        f"{where}.quant_method is {q.get('quant_method')!r}, which the weights estimate does not know; "
        f"known: {', '.join(QUANT_METHODS)}"
    )


#: The rope_scaling types vLLM builds a rotary embedding for (vllm/model_executor/layers/rotary_embedding
#: ``get_rope``, v0.11.0; ``su`` and ``mrope`` are the older names ``patch_rope_scaling`` renames).
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "deepseek_yarn", "llama3", "longrope", "su", "mrope", "llama4")

class CheckpointRopeScaling(_Strict):
    """The ``rope_scaling`` object of a checkpoint's config.json, as far as the context window
    needs it: ``rope_type`` (older files say ``type``; vLLM's ``patch_rope_scaling`` reads both),
    ``factor`` (absent for ``default``: 1.0) and, for YaRN, ``original_max_position_embeddings``.
    Other keys (llama3's ``low_freq_factor``, longrope's ``long_factor``...) are not kept."""

    rope_type: str = Field(min_length=1, description="linear, dynamic, yarn, llama3, longrope, su, default, mrope.")
    factor: Real | None = Field(default=None, ge=1, description="Context multiplier (None: 1.0); transformers' rope "
                                                               "validation refuses a factor below 1.")
    original_max_position_embeddings: Int | None = Field(
        default=None, gt=0, description="YaRN / longrope: the window the model was trained on.")

    @classmethod
    def from_config(cls, raw: object) -> CheckpointRopeScaling | None:
        """From config.json's ``rope_scaling`` (None, or not an object: None). Raises
        ValueError when it names no type."""
        if not isinstance(raw, dict):
            return None
        rope_type = raw.get("rope_type") or raw.get("type")
        if not rope_type:
            raise ValueError("config.json rope_scaling has no rope_type (or type)")
        factor = raw.get("factor")
        original = raw.get("original_max_position_embeddings")
        return cls(rope_type=str(rope_type), factor=factor if isinstance(factor, (int, float)) else None,
                   original_max_position_embeddings=original if isinstance(original, int) else None)

    @field_validator("rope_type")
    @classmethod
    def _known_type(cls, v: str) -> str:
        if v not in ROPE_TYPES:
            raise ValueError(f"rope_type {v!r} is not one vLLM's get_rope builds (\"Unknown RoPE scaling type\"); "
                             f"use one of {', '.join(ROPE_TYPES)}")
        return v

    def as_config(self) -> dict[str, object]:
        """The config.json object (unset fields left out)."""
        return self.model_dump(exclude_none=True)


class ModelFacts(_Strict):
    """Architecture facts of one checkpoint, in the names of Hugging Face config.json.

    Shapes are counts; ``head_dim`` is per head. ``full_attention_layers`` is set for hybrid
    models only: those layers hold a KV cache, the others (linear attention / GatedDeltaNet)
    hold a fixed recurrent state per sequence. Source of each catalog entry: the model's
    published config.json (see :data:`CATALOG`).
    """

    architecture: str = Field(description="config.json architectures[0], e.g. Qwen2ForCausalLM.")
    model_type: str | None = Field(
        default=None, description="config.json model_type (the top-level one, e.g. gemma3), which vLLM's per-model "
                                  "dtype rule reads; None: not known.")
    num_hidden_layers: Int = Field(gt=0)
    num_attention_heads: Int = Field(gt=0)
    num_key_value_heads: Int = Field(gt=0)
    head_dim: Int = Field(gt=0, description="Per-head dimension (hidden_size / heads when not given).")
    hidden_size: Int = Field(gt=0)
    intermediate_size: Int = Field(gt=0, description="Dense MLP width (MoE: the shared/dense width).")
    vocab_size: Int = Field(gt=0)
    max_position_embeddings: Int = Field(gt=0, description="Native context window in tokens.")
    rope_scaling: CheckpointRopeScaling | None = Field(
        default=None, description="config.json rope_scaling (None: null or absent); vLLM derives the window from it.")
    parameters: Real = Field(gt=0, description="Total parameter count (not billions), e.g. 14.77e9.")
    torch_dtype: Literal["float16", "bfloat16", "float32"] = Field(
        default="bfloat16", description="Dtype of the unquantized tensors in the checkpoint."
    )
    quantization: Quantization | None = Field(default=None, description="None for a dense checkpoint.")
    full_attention_layers: Int | None = Field(
        default=None, gt=0, description="Hybrid models: layers with a KV cache. None: every layer."
    )
    num_experts: Int | None = Field(default=None, gt=0, description="MoE: routed experts a layer.")
    num_experts_per_tok: Int | None = Field(default=None, gt=0, description="MoE: experts a token.")
    moe_intermediate_size: Int | None = Field(default=None, gt=0, description="MoE: expert MLP width.")
    tie_word_embeddings: bool = Field(default=False)
    linear_num_key_heads: int | None = Field(
        default=None, gt=0, description="Hybrid (GDN) models: key heads of a linear-attention layer."
    )
    linear_num_value_heads: int | None = Field(
        default=None, gt=0, description="Hybrid (GDN) models: value heads of a linear-attention layer."
    )
    linear_key_head_dim: int | None = Field(default=None, gt=0, description="Hybrid (GDN) models: key head dim.")
    linear_value_head_dim: int | None = Field(default=None, gt=0, description="Hybrid (GDN) models: value head dim.")
    linear_conv_kernel_dim: int | None = Field(
        default=None, gt=0, description="Hybrid (GDN) models: the short convolution's kernel width (Qwen3-Next: 4)."
    )
    kv_lora_rank: Int | None = Field(
        default=None, gt=0, description=(
            "MLA (DeepSeek-V2/V3, Kimi): rank of the compressed KV latent every attention layer caches "
            "(config.json kv_lora_rank; DeepSeek-V2-Lite and V3: 512). None: not MLA."))
    qk_rope_head_dim: Int | None = Field(
        default=None, gt=0, description="MLA: the rotary part of a query/key head, cached beside the latent (64).")
    qk_nope_head_dim: Int | None = Field(
        default=None, gt=0, description="MLA: the non-rotary part of a query/key head (128).")
    v_head_dim: Int | None = Field(default=None, gt=0, description="MLA: the value head dim (128).")
    q_lora_rank: Int | None = Field(
        default=None, gt=0, description="MLA: rank of the query's low-rank projection (V3: 1536; None: a full q_proj).")
    n_shared_experts: Int | None = Field(
        default=None, gt=0, description=(
            "DeepSeek MoE: shared experts every token runs, each moe_intermediate_size wide "
            "(config.json n_shared_experts; V2-Lite 2, V3 1)."))
    shared_expert_intermediate_size: Int | None = Field(
        default=None, gt=0, description=(
            "Qwen2-MoE: the width of the one shared expert every token runs, with its 1-output gate "
            "(config.json shared_expert_intermediate_size; Qwen1.5-MoE-A2.7B: 5632)."))
    dense_mlp_layers: Int = Field(
        default=0, ge=0, description=(
            "MoE models: layers with a dense MLP of intermediate_size instead of experts (DeepSeek "
            "first_k_dense_replace: V2-Lite 1, V3 3; Qwen2-MoE: len(mlp_only_layers)). 0: every layer has experts."))

    @property
    def is_mla(self) -> bool:
        """True for a multi-head latent attention model (``kv_lora_rank`` given): vLLM's
        ``ModelConfig.is_deepseek_mla`` (v0.11.0 vllm/config/model.py: a DeepSeek-V2/V3, Kimi-K2 or
        MTP model type whose config.json has a ``kv_lora_rank``)."""
        return self.kv_lora_rank is not None

    @property
    def mla_cache_width(self) -> int:
        """Elements one token caches a layer under MLA: ``kv_lora_rank + qk_rope_head_dim`` (vLLM
        ``ModelConfig.get_head_size`` with ``use_mla``; one KV head: ``get_num_kv_heads``). 0 for a
        model that is not MLA."""
        return (self.kv_lora_rank or 0) + (self.qk_rope_head_dim or 0) if self.is_mla else 0

    @property
    def qk_head_dim(self) -> int:
        """A query/key head's width: ``qk_nope_head_dim + qk_rope_head_dim`` for MLA (vLLM's
        ``get_head_size`` without MLA), else ``head_dim``."""
        if self.is_mla and self.qk_nope_head_dim and self.qk_rope_head_dim:
            return self.qk_nope_head_dim + self.qk_rope_head_dim
        return self.head_dim

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is routed experts: every layer but :attr:`dense_mlp_layers` (0 for a dense model)."""
        if not (self.num_experts and self.moe_intermediate_size):
            return 0
        return max(0, self.num_hidden_layers - self.dense_mlp_layers)

    @property
    def shared_expert_width(self) -> int:
        """The width of the MLP every token of a MoE layer runs beside the routed experts: DeepSeek's
        ``n_shared_experts x moe_intermediate_size`` (one merged MLP, vLLM deepseek_v2.py
        ``DeepseekV2MoE.shared_experts``) or Qwen2-MoE's ``shared_expert_intermediate_size``
        (qwen2_moe.py ``Qwen2MoeSparseMoeBlock.shared_expert``); 0 without shared experts."""
        if self.shared_expert_intermediate_size:
            return self.shared_expert_intermediate_size
        if self.n_shared_experts and self.moe_intermediate_size:
            return self.n_shared_experts * self.moe_intermediate_size
        return 0

    @property
    def kv_layers(self) -> int:
        """Layers that hold a KV cache (all, unless the model is hybrid)."""
        return self.full_attention_layers or self.num_hidden_layers

    def linear_state_bytes(self, dtype_bytes: int = 2) -> int | None:
        """Bytes of one sequence's recurrent state over every linear-attention (GDN) layer:
        per layer the delta-rule state (value heads x key dim x value dim) and the short
        convolution's state ((2 x key heads x key dim + value heads x value dim) x (kernel - 1)),
        in ``dtype_bytes``. None for a model that is not hybrid or whose config.json fields
        (``linear_num_key_heads`` ...) are not given."""
        dims = (self.linear_num_key_heads, self.linear_num_value_heads, self.linear_key_head_dim,
                self.linear_value_head_dim, self.linear_conv_kernel_dim)
        if not self.is_hybrid or any(d is None for d in dims):
            return None
        nk, nv, dk, dv, kernel = (int(d) for d in dims)  # type: ignore[arg-type]
        per_layer = nv * dk * dv + (2 * nk * dk + nv * dv) * (kernel - 1)
        return (self.num_hidden_layers - self.kv_layers) * per_layer * dtype_bytes

    @property
    def rope_already_in_window(self) -> bool:
        """True for Gemma 3 (``Gemma3ForCausalLM``, ``Gemma3ForConditionalGeneration``): its
        ``max_position_embeddings`` (131,072) is already the scaled window, so vLLM v0.11.0's
        ``_get_and_verify_max_len`` skips every rope_scaling of a ``gemma3`` model type."""
        return self.architecture.startswith("Gemma3")

    def window_rope_scaling(self, override: Mapping[str, Any] | None = None) -> Mapping[str, Any] | None:
        """The rope_scaling vLLM derives the context window from: ``override`` (``--hf-overrides``
        ``{"rope_scaling": ...}``, which replaces config.json's object whole) else the
        checkpoint's :attr:`rope_scaling`; None when neither is set or for Gemma 3
        (:attr:`rope_already_in_window`)."""
        if self.rope_already_in_window:
            return None
        if override is not None:
            return override
        return self.rope_scaling.as_config() if self.rope_scaling is not None else None

    @property
    def is_hybrid(self) -> bool:
        """True when some layers are linear attention (GDN) with a recurrent state."""
        return self.full_attention_layers is not None and self.full_attention_layers < self.num_hidden_layers

    @model_validator(mode="after")
    def _consistent(self) -> ModelFacts:
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads {self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads {self.num_key_value_heads}"
            )
        if self.full_attention_layers is not None and self.full_attention_layers > self.num_hidden_layers:
            raise ValueError("full_attention_layers exceeds num_hidden_layers")
        if self.kv_lora_rank is not None and None in (self.qk_rope_head_dim, self.qk_nope_head_dim, self.v_head_dim):
            raise ValueError("an MLA model (kv_lora_rank given) needs qk_rope_head_dim, qk_nope_head_dim and v_head_dim")
        if self.dense_mlp_layers > self.num_hidden_layers:
            raise ValueError("dense_mlp_layers exceeds num_hidden_layers")
        factor = self.rope_scaling.factor if self.rope_scaling is not None else None
        if factor is not None and factor * self.max_position_embeddings > facts.MOST_TOKENS:
            raise ValueError(f"rope_scaling.factor {factor:g} x max_position_embeddings {self.max_position_embeddings:,} "
                             f"derives a window beyond {facts.MOST_TOKENS:,} tokens (vLLM's int32 sequence lengths); "
                             "copy rope_scaling from the checkpoint's config.json")
        return self

    def tp_divisibility_problems(self, tp: int, engine: str = "candle-vllm") -> list[str]:
        """Dimensions that do not divide by tensor parallel size ``tp``; empty when TP fits.

        ``engine`` ``candle-vllm`` (the default, the stricter rule): attention heads, KV heads,
        intermediate size and vocab must each divide by TP (seed 001: the 14B's 40, 8, 13824,
        152064 all divide by 2; candle-vllm divides heads with integer division, qwen.rs, and
        keeps the vocabulary whole). ``vllm``: the attention heads must divide (``divide`` in
        ``ModelConfig.verify_with_parallel_config``); KV heads divide by TP, or, when TP exceeds
        them, TP divides by them and each rank holds a replica (``QKVParallelLinear``:
        ``num_kv_head_replicas = divide(tp_size, total_num_kv_heads)``); the vocabulary is padded
        to a multiple of 64 x TP (``VocabParallelEmbedding``), so it is free; a dense MLP's
        intermediate size divides (``MergedColumnParallelLinear``). MoE models also split
        each expert's ``moe_intermediate_size`` across the ranks (vLLM FusedMoE, candle-vllm
        moe.rs). For a GPTQ/AWQ checkpoint, the input width a rank holds of a dense
        row-parallel projection (o_proj; down_proj of a dense MLP) must be a whole number of
        quantization groups: vLLM's ``GPTQLinearMethod.create_weights`` raises "The input size
        is not aligned with the quantized weight shape" otherwise
        (vllm/model_executor/layers/quantization/gptq.py). MoE experts are laxer: vLLM's
        ``MoeWNA16Method.create_weights`` halves the group size until it divides the
        per-rank ``moe_intermediate_size`` and asserts it stays at least 32
        (vllm/model_executor/layers/quantization/moe_wna16.py), so that width must be a
        multiple of 32. Returns messages like ``"num_attention_heads 40 % 3 = 1"``; ``tp``
        below 2 never fails.
        """
        if tp < 2:
            return []
        if engine == "vllm":
            fields = ["num_attention_heads"] + ([] if self.num_experts else ["intermediate_size"])
        else:
            fields = ["num_attention_heads", "num_key_value_heads", "intermediate_size", "vocab_size"]
        if self.moe_intermediate_size is not None:
            fields.append("moe_intermediate_size")
        problems = [f"{f} {getattr(self, f)} % {tp} = {getattr(self, f) % tp}" for f in fields if getattr(self, f) % tp]
        kv = self.num_key_value_heads
        if engine == "vllm" and tp <= kv and kv % tp:
            problems.append(f"num_key_value_heads {kv} % {tp} = {kv % tp}")
        elif engine == "vllm" and tp > kv and tp % kv:
            problems.append(f"tensor parallel {tp} is above num_key_value_heads {kv} and not a multiple of it "
                            f"({tp} % {kv} = {tp % kv}), so vLLM cannot replicate the KV heads evenly")
        q = self.quantization
        if q is None or q.group_size <= 0 or q.method not in ("gptq", "awq", "marlin"):
            return problems
        dense = {"o_proj input (num_attention_heads x head_dim)": self.num_attention_heads * self.head_dim}
        if not self.moe_intermediate_size:
            dense["down_proj input (intermediate_size)"] = self.intermediate_size
        for label, full in dense.items():
            if full % tp == 0 and (full // tp) % q.group_size:
                problems.append(
                    f"{label} {full} / {tp} = {full // tp} is not a multiple of the "
                    f"quantization group size {q.group_size}"
                )
        moe = self.moe_intermediate_size
        if moe and moe % tp == 0 and (moe // tp) % min(32, q.group_size):
            problems.append(
                f"expert down_proj input (moe_intermediate_size) {moe} / {tp} = {moe // tp} is not a "
                "multiple of 32, the smallest quantization group vLLM's MoE kernel accepts"
            )
        return problems

    def structural_parameters(self) -> int:
        """Parameters implied by the shapes alone: embeddings, the LM head (unless tied),
        q/k/v/o of the full-attention layers, the MLP or experts plus router of every layer.

        Excludes norms, biases and linear-attention (GDN) projections, which the shapes here
        do not describe; :attr:`parameters` minus this is that remainder (core/capacity/estimator.py
        counts it unquantized). Qwen2.5-Coder-14B-Instruct: 14,769,192,960 of 14,770,033,664.
        """
        h, d = self.hidden_size, self.head_dim
        embed = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        if self.is_mla:
            attn = sum(k * n for k, n, _ in self.mla_projections())
        else:
            attn = h * self.num_attention_heads * d * 2 + h * self.num_key_value_heads * d * 2
        dense = 3 * h * self.intermediate_size
        if self.moe_layers:
            shared = self.shared_expert_width
            moe = (self.num_experts or 0) * (3 * h * (self.moe_intermediate_size or 0) + h) + 3 * h * shared
            if self.shared_expert_intermediate_size:
                moe += h  # Qwen2-MoE's shared_expert_gate (hidden -> 1)
            mlp = self.moe_layers * moe + (self.num_hidden_layers - self.moe_layers) * dense
        else:
            mlp = self.num_hidden_layers * dense
        return embed + self.kv_layers * attn + mlp

    def mla_projections(self) -> list[tuple[int, int, str]]:
        """``(in, out, parallel)`` of an MLA layer's linears, ``parallel`` as vLLM shards them:
        ``"replicated"``, ``"column"`` (the output split across tensor-parallel ranks) or ``"row"``
        (the input split), as vLLM's ``DeepseekV2MLAAttention`` builds them
        (vllm/model_executor/models/deepseek_v2.py): ``q_a_proj`` (hidden -> q_lora_rank) and
        ``q_b_proj`` (q_lora_rank -> heads x qk_head_dim), or ``q_proj`` without a q_lora_rank;
        ``kv_a_proj_with_mqa`` (hidden -> kv_lora_rank + qk_rope_head_dim); ``kv_b_proj``
        (kv_lora_rank -> heads x (qk_nope_head_dim + v_head_dim)); ``o_proj`` (heads x v_head_dim
        -> hidden). The two ``_a`` projections are ``ReplicatedLinear`` (whole on every rank),
        ``q_b_proj`` / ``q_proj`` and ``kv_b_proj`` column-parallel, ``o_proj`` row-parallel. [] for
        a model that is not MLA."""
        if not self.is_mla:
            return []
        h, heads = self.hidden_size, self.num_attention_heads
        rank, rope = int(self.kv_lora_rank or 0), int(self.qk_rope_head_dim or 0)
        nope, v = int(self.qk_nope_head_dim or 0), int(self.v_head_dim or 0)
        q = ([(h, self.q_lora_rank, "replicated"), (self.q_lora_rank, heads * (nope + rope), "column")]
             if self.q_lora_rank else [(h, heads * (nope + rope), "column")])
        return [*q, (h, rank + rope, "replicated"), (rank, heads * (nope + v), "column"), (heads * v, h, "row")]


class CatalogEntry(ModelFacts):
    """One entry of the model catalog file ``core/data/models.yaml``: the model's facts and where
    they come from (the file's header says how each entry was checked against its config.json)."""

    source: str = Field(min_length=1, description="Where the figures come from: the config.json's address.")
    note: str = Field(default="", description="What a reader needs beside the figures (a derived value, why it is here).")

    def facts(self) -> ModelFacts:
        """The :class:`ModelFacts` of this entry (the fields the file gives, without source and note)."""
        return ModelFacts.model_validate(self.model_dump(exclude={"source", "note"}, exclude_unset=True))


#: The model catalog's file, ``core/data/models.yaml`` (:mod:`core.catalog.datafile`).
CATALOG_FILE = datafile.Catalog(
    "models", TypeAdapter(dict[str, CatalogEntry]), "The model catalog (core/data/models.yaml)",
    "The user's public models by Hugging Face repository id: each checkpoint's config.json facts, "
    "their source and a note.")

#: The user's public models by Hugging Face repository id, from ``core/data/models.yaml`` (each
#: entry's figures are its published config.json's, with the address as ``source``).
CATALOG: dict[str, ModelFacts] = {key: entry.facts() for key, entry in CATALOG_FILE.load().items()}


class ModelEntry(_Strict):
    """One model of the stack: how it is recognised and where its facts come from.

    Exactly one of ``catalog``, ``facts`` and ``config_json`` is given.
    """

    hf_id: str | None = Field(
        default=None, description="Hugging Face id as vLLM's --model names it, e.g. Qwen/Qwen3-30B-A3B-GPTQ-Int4."
    )
    weights_path: str | None = Field(
        default=None, description="Path of the weights on the models PVC, e.g. /mnt/models/coder-14b-fp16."
    )
    catalog: str | None = Field(default=None, description="A key of the built-in catalog.")
    facts: ModelFacts | None = Field(default=None, description="Facts given inline (clef-flash).")
    config_json: str | None = Field(
        default=None, description="Path to a Hugging Face config.json, relative to the project directory (where Pulumi.yaml is)."
    )
    provisional: bool = Field(
        default=False,
        description=(
            "The facts are not yet confirmed from the checkpoint's config.json; capacity figures built "
            "on them are indicative."
        ),
    )

    @model_validator(mode="after")
    def _one_source(self) -> ModelEntry:
        given = [k for k in ("catalog", "facts", "config_json") if getattr(self, k) is not None]
        if len(given) != 1:
            raise rule_error(
                "give the model's facts exactly one way: catalog, facts or config_json "
                f"(given: {', '.join(given) or 'none'})",
                (f"keep one of {', '.join(given)}" if given else
                 "add catalog: <a model of docs/catalog.md>, config_json: <path to the checkpoint's config.json> "
                 "(e.g. models/<name>.config.json), or facts: {...} inline (docs/adding-a-model.md)"),
            )
        if self.catalog is not None and self.catalog not in CATALOG:
            raise rule_error(
                f"catalog {self.catalog!r} is not in the catalog (docs/catalog.md)",
                f"use one of {', '.join(sorted(CATALOG))}; for a model not listed, replace catalog with "
                "config_json or facts",
            )
        if self.hf_id is None and self.weights_path is None:
            raise rule_error(
                "the model names neither hf_id nor weights_path, so no server's arguments can be matched to it",
                "add hf_id: <org/name> (what vLLM's --model names) or weights_path: /mnt/models/<dir> "
                "(what candle-vllm's --w names)",
            )
        return self

    def resolve(self, base_dir: Path | None = None) -> ModelFacts:
        """The model's facts. Raises ValueError when config_json cannot be read (not a regular
        file of at most :data:`core.base.inputs.MAX_INPUT_BYTES`, not UTF-8) or is not one JSON
        object with each key once (:mod:`core.base.inputs`)."""
        if self.facts is not None:
            return self.facts
        if self.catalog is not None:
            return CATALOG[self.catalog]
        path = Path(self.config_json or "")
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        try:
            raw = inputs.json_object(inputs.read_text(path, "config.json"), str(path))
        except inputs.InputFileError as err:
            raise ValueError(f"cannot read config_json {err}") from None
        return facts_from_config_json(raw)

    def matches(self, model_arg: str) -> bool:
        """Whether a server's model argument (``--model`` / ``--w``) names this model."""
        arg = model_arg.rstrip("/")
        return arg in {x.rstrip("/") for x in (self.hf_id, self.weights_path) if x}


#: config.json keys of a hybrid model's linear-attention (GDN) layers (Qwen3-Next, Qwen3.5).
_LINEAR_ATTENTION_KEYS = (
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim",
)


#: config.json ``model_type`` values whose ``kv_lora_rank`` makes vLLM cache the MLA latent
#: (v0.11.0 vllm/config/model.py ``ModelConfig.is_deepseek_mla``; Kimi-VL's text config is deepseek_v3).
MLA_MODEL_TYPES = ("deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_mtp", "kimi_k2", "longcat_flash")
#: config.json keys of an MLA model's attention, read as vLLM's deepseek_v2.py reads them.
_MLA_KEYS = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank")


def _dense_mlp_layers(text: dict, layers: int) -> int:
    """Layers with a dense MLP in a MoE config.json, as vLLM's model classes choose them: DeepSeek
    (deepseek_v2.py ``DeepseekV2DecoderLayer``): experts from layer ``first_k_dense_replace`` on,
    every ``moe_layer_freq``-th; Qwen2-MoE / Qwen3-MoE (qwen2_moe.py, qwen3_moe.py): experts unless
    the layer is in ``mlp_only_layers`` or ``(layer + 1) % decoder_sparse_step`` is not 0."""
    if text.get("n_routed_experts"):
        first, freq = int(text.get("first_k_dense_replace") or 0), int(text.get("moe_layer_freq") or 1)
        return sum(1 for i in range(layers) if not (i >= first and i % freq == 0))
    only = set(text.get("mlp_only_layers") or ())
    step = int(text.get("decoder_sparse_step") or 1)
    return sum(1 for i in range(layers) if i in only or (i + 1) % step)


def facts_from_config_json(raw: dict) -> ModelFacts:
    """Build :class:`ModelFacts` from a parsed Hugging Face config.json dict.

    MoE: ``num_experts`` / ``num_local_experts`` / DeepSeek's ``n_routed_experts``, the shared
    experts (``n_shared_experts``, ``shared_expert_intermediate_size``) and the dense layers
    (:func:`_dense_mlp_layers`); MLA: ``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``,
    ``v_head_dim``, ``q_lora_rank`` for a ``model_type`` of :data:`MLA_MODEL_TYPES`.
    ``parameters`` comes from ``num_parameters`` when the file has it, else from the shapes
    (:meth:`ModelFacts.structural_parameters`). The dtype is ``torch_dtype`` (or ``dtype``,
    the newer transformers name), default bfloat16. Raises ValueError (with the missing key)
    when a required field is absent.
    """
    text = raw.get("text_config", raw)  # multimodal configs nest the language model
    try:
        heads = int(text["num_attention_heads"])
        hidden = int(text["hidden_size"])
        layer_types = text.get("layer_types")
        full = None
        if isinstance(layer_types, list):
            # Sliding-window attention layers (gpt-oss) hold a KV cache too; counted in full here.
            full = sum(1 for t in layer_types if t in ("full_attention", "attention", "sliding_attention"))
        q = raw.get("quantization_config") or text.get("quantization_config")
        quant = quantization_from_config(q) if q else None
        # DeepSeek names its routed experts n_routed_experts (vLLM deepseek_v2.py DeepseekV2MoE).
        experts = text.get("num_experts") or text.get("num_local_experts") or text.get("n_routed_experts")
        mla = text.get("model_type") in MLA_MODEL_TYPES and text.get("kv_lora_rank") is not None
        layers = int(text["num_hidden_layers"])
        built = ModelFacts(
            architecture=(raw.get("architectures") or ["unknown"])[0],
            model_type=raw.get("model_type") if isinstance(raw.get("model_type"), str) else None,
            num_hidden_layers=int(text["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=int(text.get("num_key_value_heads", heads)),
            head_dim=int(text.get("head_dim") or hidden // heads),
            hidden_size=hidden,
            intermediate_size=int(text["intermediate_size"]),
            vocab_size=int(text["vocab_size"]),
            max_position_embeddings=int(text["max_position_embeddings"]),
            rope_scaling=CheckpointRopeScaling.from_config(text.get("rope_scaling")),
            parameters=float(raw.get("num_parameters") or text.get("num_parameters") or 1),
            torch_dtype=(
                text.get("torch_dtype") or text.get("dtype") or raw.get("torch_dtype") or raw.get("dtype") or "bfloat16"
            ),
            quantization=quant,
            full_attention_layers=full if full and full < int(text["num_hidden_layers"]) else None,
            num_experts=experts,
            num_experts_per_tok=text.get("num_experts_per_tok"),
            # Mixtral and gpt-oss give the expert width as intermediate_size.
            moe_intermediate_size=text.get("moe_intermediate_size") or (text["intermediate_size"] if experts else None),
            tie_word_embeddings=bool(text.get("tie_word_embeddings", False)),
            **{k: text[k] for k in _LINEAR_ATTENTION_KEYS if text.get(k) is not None},
            **({k: text[k] for k in _MLA_KEYS if text.get(k) is not None} if mla else {}),
            n_shared_experts=text.get("n_shared_experts") or None,
            shared_expert_intermediate_size=text.get("shared_expert_intermediate_size") or None,
            dense_mlp_layers=_dense_mlp_layers(text, layers) if experts else 0,
        )
    except KeyError as err:
        raise ValueError(f"config.json has no {err.args[0]!r}") from None
    except (TypeError, AttributeError, ZeroDivisionError) as err:
        raise ValueError(f"config.json has a value of the wrong type or zero ({err})") from None
    if not (raw.get("num_parameters") or text.get("num_parameters")):
        built = built.model_copy(update={"parameters": float(built.structural_parameters())})
    return built


@dataclass(frozen=True)
class Models:
    """The stack's model entries and their resolved facts, by model key."""

    entries: dict[str, ModelEntry]
    facts: dict[str, ModelFacts]
    _by_arg: dict[str, str] = field(default_factory=dict, repr=False)

    _by_hub: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for key, entry in self.entries.items():
            for name in (entry.hf_id, entry.weights_path):
                if name:
                    self._by_arg.setdefault(name.rstrip("/"), key)
            for hub in (entry.hf_id, entry.catalog):
                if hub:
                    self._by_hub.setdefault(hub.lower(), key)

    def find(self, model_arg: str | None) -> tuple[str, ModelFacts] | None:
        """(key, facts) of the model a server argument (``--model`` / ``--w``) names, or None.

        The first entry (in config order) whose ``hf_id`` or ``weights_path`` equals the argument
        (trailing ``/`` ignored), as :meth:`ModelEntry.matches`; else the model the argument names
        by its hub id (:func:`hub_ids`: ``hf://org/name``, a Hugging Face cache snapshot path, a
        directory named as the repository): a stack entry of that ``hf_id`` or ``catalog``, else the
        built-in :data:`CATALOG`'s entry (keyed by its hub id). Dict lookups, not a scan."""
        if not model_arg:
            return None
        key = self._by_arg.get(model_arg.rstrip("/"))
        if key is not None:
            return key, self.facts[key]
        for hub in hub_ids(model_arg):
            key = self._by_hub.get(hub.lower())
            if key is not None:
                return key, self.facts[key]
            known = _CATALOG_BY_HUB.get(hub.lower())
            if known is not None:
                return known, CATALOG[known]
        return None


#: The catalog's hub ids by their lower case, and by the repository name alone where that is one model's.
_CATALOG_BY_HUB: dict[str, str] = {k.lower(): k for k in CATALOG}
_NAMES: dict[str, list[str]] = {}
for _hub in CATALOG:
    _NAMES.setdefault(_hub.rsplit("/", 1)[-1].lower(), []).append(_hub)
_CATALOG_BY_NAME: dict[str, str] = {name: hubs[0] for name, hubs in _NAMES.items() if len(hubs) == 1}
#: ``models--Qwen--Qwen3-8B`` in a Hugging Face cache (``<HF_HOME>/hub/models--<org>--<name>/snapshots/<rev>``).
_CACHE_DIR = re.compile(r"models--([^/]+?)--([^/]+)")


def hub_ids(model_arg: str) -> list[str]:
    """The Hugging Face hub ids a server's model argument may name, most certain first (``[]``: none):

    - ``org/name`` itself (vLLM's ``--model Qwen/Qwen3-8B``);
    - ``hf://org/name`` (KServe's storageUri and vLLM's own hf:// form), a ``:revision`` dropped;
    - a cache path ``.../models--org--name/snapshots/<rev>`` (huggingface_hub's layout);
    - a local directory whose last part is a catalog repository's name (``/models/Qwen3-8B``, as
      ``huggingface-cli download --local-dir`` writes it), when one catalog model has that name.
    """
    arg = model_arg.strip().rstrip("/")
    if arg.lower().startswith("hf://"):
        arg = arg[5:].split(":", 1)[0].rstrip("/")
        return [arg] if arg.count("/") == 1 else []
    cached = _CACHE_DIR.search(arg)
    if cached:
        return [f"{cached[1]}/{cached[2]}"]
    if "://" in arg:
        return []
    if not arg.startswith(("/", ".", "~")) and arg.count("/") == 1:
        return [arg]
    named = _CATALOG_BY_NAME.get(arg.rsplit("/", 1)[-1].lower())
    return [named] if named else []
