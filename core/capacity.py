"""GPU memory and KV-cache capacity of a model server, computed the way the engine computes it.

Plain module (no Pulumi, no pydantic models of its own): the program's preview, the policy
pack (``policies/policylib/capacity_helpers.py``) and the tests call it. Inputs are a
:class:`~core.modelfacts.ModelFacts` and a :class:`~core.inventory.CardSpec`.

Two engines, each formula taken from the engine's code (paths are in the engines' repositories):

vLLM v0.11.0 (``vllm/v1/worker/gpu_worker.py``)
    ``Worker.init_device`` sets ``requested_memory = total_memory x gpu_memory_utilization``
    (``total_memory`` is what ``cudaMemGetInfo`` reports: :func:`cuda_total_bytes`).
    ``Worker.determine_available_memory`` runs ``GPUModelRunner.profile_run`` inside
    ``memory_profiling`` (``vllm/utils``) and returns ``requested_memory -
    non_kv_cache_memory``, where ``non_kv_cache_memory = weights + torch peak increase +
    non-torch increase``. The KV pool is split into blocks of ``block_size`` tokens
    (``vllm/v1/core/kv_cache_utils.py`` ``get_num_blocks``: ``available // page_size //
    num_layers``; ``vllm/v1/kv_cache_interface.py`` ``AttentionSpec.page_size_bytes = 2 x
    block_size x num_kv_heads x head_size x dtype_size``). ``check_enough_kv_cache_memory``
    refuses to start when one request of ``max_model_len`` tokens does not fit, and
    ``get_max_concurrency_for_kv_cache_config`` reports ``num_blocks / cdiv(max_model_len,
    block_size)`` as the maximum concurrency. CUDA graphs are captured after the KV cache is
    allocated (``compile_or_warm_up_model``), from the ``1 - gpu_memory_utilization``
    headroom, so they are not subtracted.

candle-vllm (``src/main.rs``, ``src/lib.rs`` of EricLBuehler/candle-vllm)
    After the model loads, each rank queries ``cuMemGetInfo`` and sizes its cache budget as
    ``round(free x kv_fraction) - workspace reserve`` (``detect_kvcache_mem_gpu_mb_for_devices_with_workspace``;
    ``--kv-fraction`` defaults to 0.6; ``--mem`` is only the fallback when auto sizing is
    unavailable). The workspace reserve (``compute_workspace_budget``) is ``max(2 x
    prefill_chunk_size x hidden_size x dtype bytes, 256 MiB)`` for a build without the
    flashinfer / cutlass / flash-attn features (none of which run on sm_70). A hybrid
    (GDN) model then reserves ``mamba_fraction`` (default 0.15) of that budget for the
    recurrent state (``plan_hybrid_mamba_cache_with_fraction``). ``get_cache_config`` turns
    the MB budget into blocks: ``MB x 2^20 / (dtype bytes x block_size x KV heads a rank x
    head_dim x KV layers x 2)`` (integer division), ``block_size`` 64 on CUDA; tokens are
    blocks x block_size (``kv_cache_capacity_tokens``). A rank keeps the token embedding
    and the LM head whole (``embedding`` / ``ReplicatedLinear`` in
    ``src/openai/models/qwen.rs``) and shards the attention and MLP projections.

What is not modelled, and which way it errs: the CUDA context, NCCL communicators and
allocator caches that occupy a card besides the weights (the estimate of candle-vllm's free
memory is high by that much; vLLM's snapshot is taken after them, so they only eat its
headroom); vLLM's non-torch memory increase during profiling (cuBLAS / Triton module loads,
typically well under 0.2 GiB) and the scratch space of the sampler's sort; vLLM's state
pages for linear-attention layers; candle-vllm's in-situ quantization (``--isq``) and its
TurboQuant KV dtypes. Every estimate lists what it left out in ``notes``.

Units: bytes inside, GiB (2^30 bytes) and MiB (2^20, candle-vllm's "MB") in results, tokens
for KV capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

from core import rules
from core.inventory import CardSpec
from core.modelfacts import ModelFacts

GIB = 1 << 30
MIB = 1 << 20

# --- the card ---------------------------------------------------------------------------

#: Memory ``cudaMemGetInfo`` / ``cudaGetDeviceProperties`` report as the card's total, by
#: device-plugin product name. A V100 32 GB reports 34,089,730,048 bytes (32,510 MiB) of its
#: 32,768 MiB; source: CUDA deviceQuery on a Tesla V100-PCIE-32GB ("Total amount of global
#: memory: 32510 MBytes (34089730048 bytes)"). Both engines budget from this figure.
CUDA_TOTAL_BYTES: dict[str, int] = {
    "Tesla-V100-PCIE-32GB": 34_089_730_048,
    "Tesla-V100-SXM2-32GB": 34_089_730_048,
}


def cuda_total_bytes(card: CardSpec) -> int:
    """Bytes the CUDA runtime reports as the card's total memory.

    The known figure for ``card.product`` (:data:`CUDA_TOTAL_BYTES`), else
    ``card.memory_mib`` MiB (which overstates a card that reserves memory, as the V100 does).
    """
    return CUDA_TOTAL_BYTES.get(card.product, card.memory_mib * MIB)


# --- dtypes -----------------------------------------------------------------------------

_DTYPE_BYTES = {
    "float16": 2, "half": 2, "f16": 2, "fp16": 2,
    "bfloat16": 2, "bf16": 2,
    "float32": 4, "float": 4, "f32": 4, "fp32": 4,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "u8": 1,
}


def dtype_bytes(name: Optional[str], default: str = "float16") -> int:
    """Bytes per element of a dtype as the engines spell it (``float16``, ``half``, ``f16``,
    ``bf16``, ``float32``, ``fp8``...). ``None`` or ``auto`` use ``default``. Raises
    ValueError for an unknown name."""
    key = (name or "auto").lower()
    if key == "auto":
        key = default.lower()
    if key not in _DTYPE_BYTES:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(sorted(_DTYPE_BYTES))}, auto")
    return _DTYPE_BYTES[key]


# --- weights ----------------------------------------------------------------------------

#: vLLM pads the vocabulary of ``VocabParallelEmbedding`` / ``ParallelLMHead`` to a multiple
#: of 64 before splitting it across ranks (``DEFAULT_VOCAB_PADDING_SIZE``,
#: vllm/model_executor/layers/vocab_parallel_embedding.py).
VLLM_VOCAB_PADDING = 64


def _quantized_linear_bytes(k: int, n: int, facts: ModelFacts, *, g_idx: bool) -> int:
    """Bytes of one quantized ``k x n`` linear: packed ``qweight`` (bits/8 a weight, int32
    words), ``qzeros`` (bits/8 per group and output), fp16 ``scales`` (2 bytes per group and
    output) and, for GPTQ dense layers, the int32 ``g_idx`` of the input
    (vllm/model_executor/layers/quantization/gptq.py ``GPTQLinearMethod.create_weights``;
    MoE experts in moe_wna16.py carry no g_idx)."""
    q = facts.quantization
    assert q is not None
    if q.method == "fp8":
        return k * n  # one byte a weight; per-channel scales are negligible
    groups = math.ceil(k / (q.group_size if q.group_size > 0 else k))
    packed = k * n * q.bits // 8
    zeros = groups * n * q.bits // 8
    scales = groups * n * 2
    idx = 4 * k if (g_idx and q.method == "gptq") else 0
    return packed + zeros + scales + idx


def _linear_bytes(k: int, n: int, facts: ModelFacts, dt: int, *, g_idx: bool = True) -> int:
    """Bytes of one decoder linear ``k x n`` (quantized when the checkpoint is)."""
    if facts.quantization is None:
        return k * n * dt
    return _quantized_linear_bytes(k, n, facts, g_idx=g_idx)


def kv_heads_per_rank(facts: ModelFacts, tp: int) -> int:
    """KV heads one rank holds: ``kv // tp``, at least 1 (heads are replicated when TP exceeds
    them: vLLM ``QKVParallelLinear``, candle-vllm ``kv_heads_per_shard``)."""
    return max(1, facts.num_key_value_heads // tp)


def _attention_layer_bytes(facts: ModelFacts, tp: int, dt: int) -> int:
    """q/k/v (column-parallel) and o (row-parallel) of one full-attention layer, one rank."""
    h, d = facts.hidden_size, facts.head_dim
    q_heads = math.ceil(facts.num_attention_heads / tp)
    qkv = _linear_bytes(h, (q_heads + 2 * kv_heads_per_rank(facts, tp)) * d, facts, dt)
    o = _linear_bytes(q_heads * d, h, facts, dt)
    return qkv + o


def _mlp_layer_bytes(facts: ModelFacts, tp: int, dt: int) -> int:
    """The MLP of one layer, one rank: a dense gate/up/down, or every expert's slice plus the
    router gate, which stays unquantized and replicated (vLLM qwen3_moe.py ``gate =
    ReplicatedLinear(..., quant_config=None)``)."""
    h = facts.hidden_size
    if facts.num_experts and facts.moe_intermediate_size:
        inter = math.ceil(facts.moe_intermediate_size / tp)
        expert = _linear_bytes(h, 2 * inter, facts, dt, g_idx=False) + _linear_bytes(inter, h, facts, dt, g_idx=False)
        return facts.num_experts * expert + h * facts.num_experts * dt
    inter = math.ceil(facts.intermediate_size / tp)
    return _linear_bytes(h, 2 * inter, facts, dt) + _linear_bytes(inter, h, facts, dt)


def _vocab_bytes(facts: ModelFacts, tp: int, dt: int, engine: str) -> tuple[int, int]:
    """(embedding, LM head) bytes one rank holds. vLLM splits the padded vocabulary across
    ranks; candle-vllm keeps both whole on every rank. A tied LM head adds nothing."""
    if engine == "vllm":
        rows = math.ceil(facts.vocab_size / VLLM_VOCAB_PADDING) * VLLM_VOCAB_PADDING // tp
    else:
        rows = facts.vocab_size
    embed = rows * facts.hidden_size * dt
    return embed, (0 if facts.tie_word_embeddings else embed)


def weights_per_card(
    facts: ModelFacts, tp: int = 1, *, pp: int = 1, engine: str = "vllm", dtype: str = "float16"
) -> int:
    """Bytes of weights one card holds: the busiest pipeline stage's layers split by TP.

    Linear layers are quantized as the checkpoint is (:attr:`ModelFacts.quantization`);
    embeddings, LM head, norms and router gates are ``dtype`` (default float16, the
    ``--dtype`` both engines run on sm_70). ``engine`` is ``"vllm"`` (vocabulary split across
    ranks) or ``"candle-vllm"`` (embedding and LM head whole on each rank). Parameters the
    shapes do not describe (norms, biases, linear-attention projections:
    ``parameters - structural_parameters()``) are counted in ``dtype``, split by TP for a
    hybrid model (its GDN projections are sharded) and whole otherwise (norms). With
    ``pp > 1`` a stage holds ``ceil(layers / pp)`` layers plus the larger of embedding and LM
    head. Raises ValueError for ``tp`` or ``pp`` below 1.
    """
    if tp < 1 or pp < 1:
        raise ValueError(f"tensor parallel {tp} and pipeline parallel {pp} must be at least 1")
    dt = dtype_bytes(dtype)
    stage_layers = math.ceil(facts.num_hidden_layers / pp)
    stage_kv_layers = math.ceil(facts.kv_layers / pp)
    layers = stage_kv_layers * _attention_layer_bytes(facts, tp, dt) + stage_layers * _mlp_layer_bytes(facts, tp, dt)
    embed, head = _vocab_bytes(facts, tp, dt, engine)
    vocab = embed + head if pp == 1 else max(embed, head)
    rest = max(0, int(facts.parameters) - facts.structural_parameters())
    rest_bytes = rest * dt // (tp * pp if facts.is_hybrid else pp)
    return layers + vocab + rest_bytes


def kv_bytes_per_token(facts: ModelFacts, tp: int = 1, *, pp: int = 1, kv_dtype_bytes: int = 2) -> int:
    """KV-cache bytes one token takes on one card: 2 (K and V) x full-attention layers of the
    stage x KV heads a rank x head_dim x KV dtype bytes. Qwen3-30B-A3B at TP=1, fp16:
    2 x 48 x 4 x 128 x 2 = 98,304 bytes."""
    layers = math.ceil(facts.kv_layers / pp)
    return 2 * layers * kv_heads_per_rank(facts, tp) * facts.head_dim * kv_dtype_bytes


# --- the estimate -----------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """Capacity of one model server on one card (a rank; every rank of a TP group is alike).

    ``weights_gib_per_card``, ``kv_pool_gib``, ``activation_gib`` (vLLM: profiled peak;
    candle-vllm: workspace reserve) and ``budget_gib`` (vLLM: gpu_memory_utilization x total;
    candle-vllm: the card's total) are GiB; ``kv_pool_mib`` is the pool in MiB (candle-vllm
    logs it as "MB"). ``kv_tokens`` is the whole pool in tokens (``kv_blocks`` x
    ``block_size``); ``max_model_len`` the context one request may use (vLLM: as configured;
    candle-vllm: the model's window capped at the pool); ``concurrency`` how many requests of
    ``max_model_len`` fit at once. ``fits_weights``: the weights load and leave memory for a
    KV cache; ``fits_kv``: the engine starts with this ``max_model_len``. ``notes`` say what
    was assumed or left out.
    """

    engine: str
    card: str
    tp: int
    pp: int
    card_memory_gib: float
    budget_gib: float
    weights_gib_per_card: float
    activation_gib: float
    kv_pool_gib: float
    kv_pool_mib: int
    kv_bytes_per_token: int
    block_size: int
    kv_blocks: int
    kv_tokens: int
    max_model_len: int
    concurrency: float
    fits_weights: bool
    fits_kv: bool
    notes: tuple[str, ...] = ()


# --- vLLM -------------------------------------------------------------------------------

#: vLLM's KV block size on CUDA when ``--block-size`` is not given
#: (vllm/platforms/cuda.py ``check_and_update_config``).
VLLM_BLOCK_SIZE = 16
#: ``--max-num-batched-tokens`` / ``--max-num-seqs`` defaults of the OpenAI server on a GPU
#: with less than 70 GiB (vllm/engine/arg_utils.py ``_set_default_args``: 2048 and 256).
VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048
VLLM_DEFAULT_MAX_NUM_SEQS = 256
#: Tokens one fused-MoE call processes at once (``VLLM_FUSED_MOE_CHUNK_SIZE``, vllm/envs.py).
VLLM_FUSED_MOE_CHUNK_SIZE = 32768
#: Bytes a logit element holds at the peak of the profile's dummy sampler run with
#: VLLM_USE_FLASHINFER_SAMPLER=0 (the PyTorch path, vllm/v1/sample/ops/topk_topp_sampler.py
#: ``apply_top_k_top_p``): float32 logits 4 + sorted values 4 + sort indices 8 + top-k mask 1
#: + top-p probabilities 4 + top-p mask 1 + the re-scattered logits 4 = 26, plus the model
#: dtype logits ``compute_logits`` returned.
VLLM_SAMPLER_BYTES_PER_LOGIT = 26


def vllm_activation_bytes(
    facts: ModelFacts,
    tp: int = 1,
    *,
    max_num_batched_tokens: int = VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS,
    max_num_seqs: int = VLLM_DEFAULT_MAX_NUM_SEQS,
    dtype: str = "float16",
) -> int:
    """Bytes of the torch peak increase ``profile_run`` records on one rank.

    ``GPUModelRunner.profile_run`` (vllm/v1/worker/gpu_model_runner.py) runs a forward pass
    of ``max_num_batched_tokens`` tokens, then ``_dummy_sampler_run`` on
    ``min(max_num_seqs, max_num_batched_tokens)`` rows of full-vocabulary logits (gathered
    on every rank). The peak is the larger of:

    - forward: residual and hidden state (2 x T x hidden) plus the larger of the attention
      block (q/k/v and output of the rank's heads) and the MLP (dense: gate/up and the
      activation; MoE: ``fused_experts_impl``'s ``cache13`` = M x top-k x max(2 x expert
      width a rank, hidden) and ``cache2`` = M x top-k x expert width a rank, plus the
      output; M = min(T, :data:`VLLM_FUSED_MOE_CHUNK_SIZE`), fused_moe.py);
    - sampler: the T x hidden hidden states plus rows x vocab x (dtype bytes +
      :data:`VLLM_SAMPLER_BYTES_PER_LOGIT`).
    """
    dt = dtype_bytes(dtype)
    t, h, d = max_num_batched_tokens, facts.hidden_size, facts.head_dim
    q_heads = math.ceil(facts.num_attention_heads / tp)
    attention = t * (q_heads + 2 * kv_heads_per_rank(facts, tp)) * d * dt + t * q_heads * d * dt
    if facts.num_experts and facts.moe_intermediate_size and facts.num_experts_per_tok:
        m, k, inter = min(t, VLLM_FUSED_MOE_CHUNK_SIZE), facts.num_experts_per_tok, math.ceil(facts.moe_intermediate_size / tp)
        mlp = m * k * max(2 * inter, h) * dt + m * k * inter * dt + t * h * dt
    else:
        inter = math.ceil(facts.intermediate_size / tp)
        mlp = t * 2 * inter * dt + t * inter * dt
    forward = 2 * t * h * dt + max(attention, mlp)
    rows = min(max_num_seqs, t)
    sampler = t * h * dt + rows * facts.vocab_size * (dt + VLLM_SAMPLER_BYTES_PER_LOGIT)
    return max(forward, sampler)


def estimate_vllm(
    facts: ModelFacts,
    card: CardSpec,
    *,
    tp: int = 1,
    pp: int = 1,
    gpu_memory_utilization: float = 0.9,
    max_model_len: int,
    kv_cache_dtype: str = "auto",
    dtype: str = "float16",
    block_size: int = VLLM_BLOCK_SIZE,
    max_num_batched_tokens: Optional[int] = None,
    max_num_seqs: Optional[int] = None,
) -> Estimate:
    """Estimate vLLM v0.11's KV cache on one card of ``card`` (see the module docstring).

    KV pool = ``gpu_memory_utilization`` x :func:`cuda_total_bytes` - :func:`weights_per_card`
    - :func:`vllm_activation_bytes`; blocks = pool // (block page x KV layers); tokens =
    blocks x ``block_size`` (default 16). ``max_model_len`` (tokens) is required: without
    ``--max-model-len`` vLLM uses the model's ``max_position_embeddings``, pass that.
    ``max_num_batched_tokens`` / ``max_num_seqs`` default to vLLM's 2048 / 256.
    ``kv_cache_dtype`` ``auto`` uses ``dtype`` (float16); ``fp8*`` is one byte. Raises
    ValueError for a utilization outside (0, 1], a ``max_model_len`` below 1 or an unknown dtype.
    """
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu-memory-utilization {gpu_memory_utilization} is outside (0, 1]")
    if max_model_len < 1:
        raise ValueError(f"max-model-len {max_model_len} must be at least 1 token")
    notes: list[str] = []
    if max_num_batched_tokens is None:
        max_num_batched_tokens = VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS
        notes.append(f"--max-num-batched-tokens not given: vLLM's default {VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS}")
    if max_num_seqs is None:
        max_num_seqs = VLLM_DEFAULT_MAX_NUM_SEQS
        notes.append(
            f"--max-num-seqs not given: vLLM's default {VLLM_DEFAULT_MAX_NUM_SEQS}, whose sampler warm-up "
            "is the largest activation term"
        )
    total = cuda_total_bytes(card)
    requested = gpu_memory_utilization * total
    weights = weights_per_card(facts, tp, pp=pp, engine="vllm", dtype=dtype)
    activation = vllm_activation_bytes(
        facts, tp, max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, dtype=dtype
    )
    kv_bytes = kv_bytes_per_token(facts, tp, pp=pp, kv_dtype_bytes=dtype_bytes(kv_cache_dtype, dtype))
    pool = requested - weights - activation
    blocks = max(0, int(pool // (kv_bytes * block_size))) if pool > 0 else 0
    per_request = math.ceil(max_model_len / block_size)
    if facts.is_hybrid:
        notes.append("linear-attention (GDN) state pages are not modelled; only full-attention layers hold KV")
    notes.append("non-torch memory growth during profiling (cuBLAS, Triton modules) is not modelled")
    return Estimate(
        engine="vllm",
        card=card.product,
        tp=tp,
        pp=pp,
        card_memory_gib=total / GIB,
        budget_gib=requested / GIB,
        weights_gib_per_card=weights / GIB,
        activation_gib=activation / GIB,
        kv_pool_gib=max(0.0, pool) / GIB,
        kv_pool_mib=int(max(0.0, pool) // MIB),
        kv_bytes_per_token=kv_bytes,
        block_size=block_size,
        kv_blocks=blocks,
        kv_tokens=blocks * block_size,
        max_model_len=max_model_len,
        concurrency=blocks / per_request,
        fits_weights=weights + activation < requested,
        fits_kv=blocks >= per_request,
        notes=tuple(notes),
    )


# --- candle-vllm ------------------------------------------------------------------------

#: ``--kv-fraction`` when not given (src/main.rs: ``args.kv_fraction.unwrap_or(0.6)``).
CANDLE_DEFAULT_KV_FRACTION = 0.6
#: ``--block-size`` on a CUDA build (src/main.rs: 64 with the ``cuda`` feature).
CANDLE_BLOCK_SIZE = 64
#: ``--prefill-chunk-size`` when not given, as the workspace reserve sizes it (src/main.rs).
CANDLE_DEFAULT_PREFILL_CHUNK = 8192
#: Floor of the workspace reserve (src/lib.rs ``MIN_ACTIVATION_RESERVE_BYTES``, 256 MB).
CANDLE_MIN_WORKSPACE_BYTES = 256 * MIB
#: Share of the cache budget a hybrid model reserves for GDN state (src/lib.rs
#: ``DEFAULT_HYBRID_MAMBA_FRACTION``), unless ``--mamba-fraction`` says otherwise.
CANDLE_DEFAULT_MAMBA_FRACTION = 0.15


def candle_workspace_bytes(facts: ModelFacts, *, prefill_chunk_size: int = CANDLE_DEFAULT_PREFILL_CHUNK, dtype: str = "f16") -> int:
    """candle-vllm's workspace reserve (src/lib.rs ``compute_workspace_budget``) on a build
    without flashinfer, cutlass or flash-attn: ``max(2 x prefill_chunk_size x hidden_size x
    dtype bytes, 256 MiB)``. The 14B (hidden 5120) at the default chunk 8192: 160 MiB, so 256 MiB."""
    transient = 2 * prefill_chunk_size * facts.hidden_size * dtype_bytes(dtype)
    return max(transient, CANDLE_MIN_WORKSPACE_BYTES)


def candle_kv_blocks(facts: ModelFacts, mem_mib: int, *, tp: int = 1, block_size: int = CANDLE_BLOCK_SIZE, kv_dtype_bytes: int = 2) -> int:
    """Blocks of a ``mem_mib`` MB (MiB) budget exactly as candle-vllm's ``get_cache_config``
    (src/lib.rs) computes them: ``mem_mib x 2^20 // (kv_dtype_bytes x block_size x KV heads a
    rank x head_dim x KV layers x 2)``. Tokens are blocks x ``block_size``."""
    per_block = kv_dtype_bytes * block_size * kv_heads_per_rank(facts, tp) * facts.head_dim * facts.kv_layers * 2
    return mem_mib * MIB // per_block


def candle_budget_mib(free_bytes: int, kv_fraction: float, workspace_bytes: int) -> int:
    """candle-vllm's per-rank cache budget in MB (MiB): ``(round(free x kv_fraction) -
    workspace) // 2^20`` (src/lib.rs ``detect_kvcache_mem_gpu_mb_for_devices_with_workspace``).
    Raises ValueError for a fraction outside (0, 1] (candle-vllm refuses it too)."""
    if not 0 < kv_fraction <= 1:
        raise ValueError(f"kv_fraction must be in (0, 1], got {kv_fraction}")
    usable = round(max(0, free_bytes) * kv_fraction)
    return max(0, usable - workspace_bytes) // MIB


def estimate_candle(
    facts: ModelFacts,
    card: CardSpec,
    *,
    tp: int = 1,
    kv_fraction: Optional[float] = None,
    mem_mib: Optional[int] = None,
    dtype: str = "f16",
    kv_cache_dtype: str = "auto",
    block_size: int = CANDLE_BLOCK_SIZE,
    prefill_chunk_size: Optional[int] = None,
    mamba_fraction: Optional[float] = None,
    runtime_reserve_mib: int = 0,
) -> Estimate:
    """Estimate candle-vllm's KV cache on one rank (see the module docstring).

    free = :func:`cuda_total_bytes` - :func:`weights_per_card` (embedding and LM head whole
    on every rank) - ``runtime_reserve_mib`` (memory the process holds besides weights, which
    no engine code sizes; default 0, so the estimate is an upper bound); budget =
    :func:`candle_budget_mib`; a hybrid model gives ``mamba_fraction`` (default 0.15) of it
    to GDN state; blocks = :func:`candle_kv_blocks`. ``kv_fraction`` defaults to 0.6 as in
    src/main.rs; ``mem_mib`` (``--mem``) is only recorded, since candle-vllm uses it just when
    auto sizing fails, which it does not on CUDA. ``max_model_len`` is the model's window
    capped at the pool (``PipelineConfig::apply_kv_cache_limit``). Raises ValueError for a
    fraction outside (0, 1] or an unknown dtype.
    """
    notes: list[str] = []
    if kv_fraction is None:
        kv_fraction = CANDLE_DEFAULT_KV_FRACTION
        notes.append(f"--kv-fraction not given: candle-vllm's default {CANDLE_DEFAULT_KV_FRACTION}")
    if mem_mib is not None:
        notes.append(f"--mem {mem_mib} is ignored on CUDA: candle-vllm sizes the cache from --kv-fraction")
    chunk = prefill_chunk_size or CANDLE_DEFAULT_PREFILL_CHUNK
    total = cuda_total_bytes(card)
    weights = weights_per_card(facts, tp, engine="candle-vllm", dtype=dtype)
    workspace = candle_workspace_bytes(facts, prefill_chunk_size=chunk, dtype=dtype)
    free = total - weights - runtime_reserve_mib * MIB
    budget = candle_budget_mib(free, kv_fraction, workspace)
    if facts.is_hybrid and budget:
        fraction = CANDLE_DEFAULT_MAMBA_FRACTION if mamba_fraction is None else mamba_fraction
        reserved = math.ceil(round(budget * MIB * fraction) / MIB)
        budget = budget - reserved if reserved < budget else budget
        notes.append(
            f"hybrid model: {reserved} MiB ({fraction:.0%}) of the budget reserved for GDN state; the "
            "minimum-slot floor of plan_hybrid_mamba_cache_with_fraction is not modelled"
        )
    kv_bytes_dt = dtype_bytes(kv_cache_dtype, dtype)
    blocks = candle_kv_blocks(facts, budget, tp=tp, block_size=block_size, kv_dtype_bytes=kv_bytes_dt)
    tokens = blocks * block_size
    window = min(facts.max_position_embeddings, tokens) if tokens else facts.max_position_embeddings
    notes.append("CUDA context, NCCL and allocator memory after load are not modelled (free memory is an upper bound)")
    return Estimate(
        engine="candle-vllm",
        card=card.product,
        tp=tp,
        pp=1,
        card_memory_gib=total / GIB,
        budget_gib=total / GIB,
        weights_gib_per_card=weights / GIB,
        activation_gib=workspace / GIB,
        kv_pool_gib=budget * MIB / GIB,
        kv_pool_mib=budget,
        kv_bytes_per_token=kv_bytes_per_token(facts, tp, kv_dtype_bytes=kv_bytes_dt),
        block_size=block_size,
        kv_blocks=blocks,
        kv_tokens=tokens,
        max_model_len=window,
        concurrency=tokens / window if window else 0.0,
        fits_weights=weights < total,
        fits_kv=blocks > 0,
        notes=tuple(notes),
    )


# --- one entry point for both sides -----------------------------------------------------

def engine_dtype(value: Optional[str], default: str) -> str:
    """A dtype name the estimator knows, else ``default`` (None and ``auto`` -> ``default``)."""
    if value is None or value.lower() == "auto":
        return default
    try:
        dtype_bytes(value)
    except ValueError:
        return default
    return value


def estimate(
    engine: str,
    facts: ModelFacts,
    card: CardSpec,
    *,
    tp: int = 1,
    pp: int = 1,
    dtype: Optional[str] = None,
    kv_cache_dtype: Optional[str] = None,
    gpu_memory_utilization: Optional[float] = None,
    max_model_len: Optional[int] = None,
    max_num_batched_tokens: Optional[int] = None,
    max_num_seqs: Optional[int] = None,
    block_size: Optional[int] = None,
    kv_fraction: Optional[float] = None,
    mem_mib: Optional[int] = None,
    prefill_chunk_size: Optional[int] = None,
    mamba_fraction: Optional[float] = None,
) -> Estimate:
    """The :class:`Estimate` of one server from its engine settings as plain values, with the
    engines' defaults for what is None: the one call the stack-file checks
    (``components/config.py``, from the workload's fields) and the policy pack
    (``policies/policylib/capacity_helpers.py``, from the rendered argv) both make, so they
    judge ``fits_weights`` / ``fits_kv`` on the same figures.

    ``engine``: ``vllm`` (:func:`estimate_vllm`; dtype default float16, the KV cache the
    dtype, utilization 0.9, ``max_model_len`` default the model's max_position_embeddings,
    block size 16; a utilization above :data:`core.rules.GPU_MEMORY_UTILIZATION_CEILING` is credited
    at the ceiling, with a note, so the estimate never rewards it) or ``candle-vllm`` (:func:`estimate_candle`; dtype f16, block size 64,
    ``kv_cache_dtype`` ``fp8`` for ``--fp8-kvcache``). Raises ValueError for a setting the
    estimator refuses (a utilization outside (0, 1], a fraction of 0).
    """
    if engine == "vllm":
        vdtype = engine_dtype(dtype, "float16")
        util = 0.9 if gpu_memory_utilization is None else gpu_memory_utilization
        # Never credit a utilization above the ceiling (core.rules, vllm-project/vllm #15598): the
        # table must not show more room for 0.98 than for 0.95. estimate_vllm stays the engine's formula.
        credited = rules.gpu_memory_utilization_credited(util) if 0 < util <= 1 else util
        est = estimate_vllm(
            facts,
            card,
            tp=tp,
            pp=pp,
            gpu_memory_utilization=credited,
            max_model_len=max_model_len or facts.max_position_embeddings,
            kv_cache_dtype=engine_dtype(kv_cache_dtype, vdtype),
            dtype=vdtype,
            block_size=block_size or VLLM_BLOCK_SIZE,
            max_num_batched_tokens=max_num_batched_tokens,
            max_num_seqs=max_num_seqs,
        )
        if credited != util:
            est = replace(est, notes=est.notes + (
                f"--gpu-memory-utilization {util} is above the {credited} ceiling; the estimate credits {credited}",))
        return est
    cdtype = engine_dtype(dtype, "f16")
    return estimate_candle(
        facts,
        card,
        tp=tp,
        kv_fraction=kv_fraction,
        mem_mib=mem_mib,
        dtype=cdtype,
        kv_cache_dtype=kv_cache_dtype if kv_cache_dtype == "fp8" else engine_dtype(kv_cache_dtype, cdtype),
        block_size=block_size or CANDLE_BLOCK_SIZE,
        prefill_chunk_size=prefill_chunk_size,
        mamba_fraction=mamba_fraction,
    )
