"""GPU memory and KV-cache capacity of a model server, computed the way the engine computes it.

Plain module (no Pulumi, no pydantic models of its own): the program's preview, the policy
pack (``policies/policylib/capacity_helpers.py``) and the tests call it. Inputs are a
:class:`~core.catalog.modelfacts.ModelFacts` and a :class:`~core.capacity.inventory.CardSpec`.

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

vLLM by release (:func:`vllm_profile`, the release from the image tag)
    V0 (before 0.8.0; before 0.10.0 below sm_80) profiles ``max(max_model_len, 2048)``
    tokens (2048 with chunked prefill) and runs the sampler warm-up on the driver rank only,
    so the ranks' pools differ and the executor takes the smallest
    (``determine_num_available_blocks``); V1 profiles the scheduler's batch (defaults by card:
    8192 / 1024 on 70 GiB and larger cards, 2048 / 256 below) and every rank samples. The
    sampler warm-up's bytes a logit change at 0.17 (no sort). The non-torch memory a rank
    holds (the runtime, :func:`runtime_bytes`) is taken from public logs by engine, TP and
    interconnect; before 0.6.5 the profile counted the CUDA context too.

candle-vllm (``src/main.rs``, ``src/lib.rs`` of EricLBuehler/candle-vllm)
    After the model loads, each rank queries ``cuMemGetInfo`` and sizes its cache budget as
    ``round(free x kv_fraction) - workspace reserve`` (``detect_kvcache_mem_gpu_mb_for_devices_with_workspace``;
    ``--kv-fraction`` defaults to 0.6; ``--mem`` is only the fallback when auto sizing is
    unavailable). The workspace reserve (``compute_workspace_budget``) is ``max(2 x
    prefill_chunk_size x hidden_size x dtype bytes, 256 MiB)`` for a build without the
    flashinfer / cutlass / flash-attn features (none of which run on sm_70). A hybrid
    (GDN) model then reserves ``mamba_fraction`` (default 0.15, capped at 0.3) of that budget,
    but at least ``max(max_num_seqs, 8) x 3`` state slots, for the recurrent state
    (``plan_hybrid_mamba_cache_with_fraction``, :func:`candle_mamba_reserve_mib`). ``get_cache_config`` turns
    the MB budget into blocks: ``MB x 2^20 / (dtype bytes x block_size x KV heads a rank x
    head_dim x KV layers x 2)`` (integer division), ``block_size`` 64 on CUDA; tokens are
    blocks x block_size (``kv_cache_capacity_tokens``). A rank keeps the token embedding
    and the LM head whole (``embedding`` / ``ReplicatedLinear`` in
    ``src/openai/models/qwen.rs``) and shards the attention and MLP projections.

The card's total comes from the catalog (:mod:`core.catalog.cards`); the runtime from public figures,
not from the card itself (candle-vllm's coder-14b rank on worker-1 holds about 2.15 GiB more
than they explain: docs/capacity-model.md). Not modelled: vLLM's state pages for linear-attention
layers; candle-vllm's in-situ quantization (``--isq``) and its TurboQuant KV dtypes; a
``VLLM_USE_V1`` set against the release's default. Every estimate lists what it assumed or
left out in ``notes``, and what it cannot know (a release it was not checked on, a TP group wider
than any log, ...) in ``unknowns``, which the capacity table marks.

Model facts (:class:`~core.catalog.modelfacts.ModelFacts`) carry MLA (the latent every layer caches,
vLLM's ``ModelConfig.use_mla`` from v0.7.1) and shared experts (DeepSeek's ``n_shared_experts``,
Qwen2-MoE's ``shared_expert_intermediate_size``); docs/capacity-model.md has every term with its
source.

Units: bytes inside, GiB (2^30 bytes) and MiB (2^20, candle-vllm's "MB") in results, tokens
for KV capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from core.capacity.inventory import CardSpec
from core.catalog import cards, modelfacts
from core.catalog.images import parse_image
from core.catalog.modelfacts import ModelFacts
from core.engines import config, contracts
from core.engines.config import CandleConfig, ServerSettings

GIB = 1 << 30
MIB = 1 << 20

# --- the card ---------------------------------------------------------------------------

#: Memory ``cudaMemGetInfo`` reports as the card's total, by device-plugin product name, for
#: every card of the catalog (:mod:`core.catalog.cards`, each figure with its source). A V100 32 GB
#: reports 34,089,730,048 bytes (32,510 MiB) of its 32,768 MiB (CUDA deviceQuery). Both
#: engines budget from this figure.
CUDA_TOTAL_BYTES: dict[str, int] = {name: c.cuda_total_bytes for c in cards.CARDS for name in c.names}


def cuda_total_bytes(card: CardSpec) -> int:
    """Bytes the CUDA runtime reports as the card's total memory
    (:attr:`core.capacity.inventory.CardSpec.cuda_total_bytes`): the catalog's figure for
    ``card.product``, else ``card.memory_mib`` MiB (which overstates a card the driver
    reserves memory on, as the V100's 32,510 of 32,768 MiB shows)."""
    return card.cuda_total_bytes


def _card_notes(card: CardSpec) -> list[str]:
    if card.cuda_total_mib is not None:
        return [f"card {card.product}: CUDA total {card.cuda_total_bytes / GIB:.2f} GiB as measured (the inventory's cuda_total_mib)"]
    known = card.catalog
    if known is None:
        return [f"card {card.product} is not in core.catalog.cards: its total is taken as memory_mib "
                f"{card.memory_mib:,} MiB, which overstates what CUDA reports by 1-3%"]
    if not known.measured:
        return [f"card {card.product}: CUDA total {known.cuda_total_gib:.2f} GiB is derived, not measured ({known.source})"]
    return []


# --- memory beside the weights and the activations ---------------------------------------

#: GiB a vLLM rank counts outside torch at TP=1 before 0.6.5, whose profile took every byte on
#: the card outside torch's allocator as non-torch memory, the CUDA context and kernels
#: included: vllm-project/vllm #10517 (v0.6.4, RTX 3090, Llama-3.1-8B): "non_torch_memory=0.35GiB".
VLLM_RUNTIME_WITH_CONTEXT_GIB = 0.35
#: The release from which vLLM's ``memory_profiling`` counts only the growth since the worker's
#: start snapshot (the CUDA context excluded), in V0 and V1 alike.
VLLM_BASELINE_PROFILING_FROM = (0, 6, 5)
#: GiB a vLLM rank counts outside torch at TP=1 from then on (cuBLAS / Triton / kernel modules
#: loaded during the profile): the llm-d planner accuracy report (H100-80GB, Qwen3-14B, vLLM
#: 0.15-0.17): 0.14-0.15 GiB. Public TP=1 logs range 0.05-0.35 GiB.
VLLM_RUNTIME_GIB = 0.15
#: GiB a candle-vllm rank holds besides its weights at TP=1: it measures free memory after load
#: with no baseline, so the CUDA context and kernels count whole, as in vLLM before 0.6.5.
CANDLE_RUNTIME_GIB = VLLM_RUNTIME_WITH_CONTEXT_GIB
#: GiB more a rank holds at TP>=2 when the cards are linked by NVLink: NCCL's P2P / NVLS
#: buffers and vLLM's custom all-reduce (IPC buffers, registered CUDA-graph buffers). About 2
#: GiB a card in all at TP>=2 (llm-d planner accuracy report); vllm-project/vllm PR #10511
#: measured 1.79-3.58 GiB (v0.6.5). The same report's vLLM v0.19.0 logs (H100-80GB,
#: llm-d-incubation/llm-d-planner accuracy/results/v0.19.0) log 2.06-2.11 GiB of non-torch
#: memory at TP=2 and 2.13-2.21 at TP=4 against 0.24-0.27 at TP=1: 1.8-2.0 GiB for the
#: all-reduce, as in 0.6.5 and 0.15-0.17, so the figure is not split by release.
COMM_NVLINK_GIB = 1.85
#: GiB more a rank holds at TP>=2 over PCIe without NVLink (NCCL moves the data through host
#: shared memory, /dev/shm; vLLM turns custom all-reduce off without P2P): NCCL's kernels and
#: device-side channel state. Derived from vllm-project/vllm #13061 (2 x RTX 4090, TP=2,
#: vLLM 0.7): both ranks imply 0.56-0.59 GiB outside torch, 0.15 of which is the TP=1 figure.
COMM_PCIE_GIB = 0.4


def runtime_bytes(engine: str, tp: int, card: CardSpec, *, counts_context: bool = False) -> int:
    """Bytes one rank holds outside the weights and the profiled activations (the runtime):
    :data:`VLLM_RUNTIME_GIB` (vLLM from 0.6.5), :data:`VLLM_RUNTIME_WITH_CONTEXT_GIB`
    (``counts_context``: vLLM before 0.6.5) or :data:`CANDLE_RUNTIME_GIB` (``engine``
    ``candle-vllm``) at TP=1, plus at ``tp`` >= 2 the communication buffers:
    :data:`COMM_NVLINK_GIB` when ``card.nvlink``, else :data:`COMM_PCIE_GIB`. ``tp`` is the
    tensor-parallel group the all-reduce spans; pipeline stages add none: vLLM v0.19.0 logs
    0.07 GiB of non-torch memory a rank for Llama-3.1-8B at PP=2 and PP=4 (H100-80GB,
    llm-d-incubation/llm-d-planner accuracy/results/v0.19.0), the stages' send/receive buffers
    being allocated after the profile."""
    if engine == "candle-vllm":
        base = CANDLE_RUNTIME_GIB
    else:
        base = VLLM_RUNTIME_WITH_CONTEXT_GIB if counts_context else VLLM_RUNTIME_GIB
    comm = 0.0 if tp < 2 else (COMM_NVLINK_GIB if card.nvlink else COMM_PCIE_GIB)
    return round((base + comm) * GIB)


def _runtime_note(engine: str, tp: int, card: CardSpec, runtime: int) -> str:
    link = "NVLink" if card.nvlink else "PCIe"
    at = "TP=1" if tp < 2 else f"{tp} ranks over {link}"
    return (f"runtime memory beside the weights ({engine}, {at}): {runtime / GIB:.2f} GiB a rank from public logs "
            "(TP=1: 0.05-0.35 GiB; TP>=2 over NVLink about 2, 1.79-3.58 GiB), not measured on this card")


# --- dtypes -----------------------------------------------------------------------------

_DTYPE_BYTES = {
    "float16": 2, "half": 2, "f16": 2, "fp16": 2,
    "bfloat16": 2, "bf16": 2,
    "float32": 4, "float": 4, "f32": 4, "fp32": 4,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "u8": 1,
}


def dtype_bytes(name: str | None, default: str = "float16") -> int:
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
    if q.bits >= 8 and q.method in ("fp8", "compressed-tensors", "bitsandbytes"):
        return k * n  # one byte a weight (FP8 / INT8); per-channel or block scales are negligible
    if q.method == "mxfp4":
        return k * n // 2 + k * n // 32  # 4-bit E2M1 values and one E8M0 byte a 32-value block (OCP MX)
    if q.method == "bitsandbytes":
        return k * n // 2 + k * n // 64 * 4  # NF4 values and an fp32 absmax a 64-value block
    if q.method == "compressed-tensors":
        groups = math.ceil(k / (q.group_size if q.group_size > 0 else k))
        return k * n * q.bits // 8 + groups * n * 2  # pack-quantized values and bf16 scales, symmetric
    groups = math.ceil(k / (q.group_size if q.group_size > 0 else k))
    packed = k * n * q.bits // 8
    zeros = groups * n * q.bits // 8
    scales = groups * n * 2
    idx = 4 * k if (g_idx and q.method == "gptq") else 0
    return packed + zeros + scales + idx


def _linear_bytes(k: int, n: int, facts: ModelFacts, dt: int, *, g_idx: bool = True, expert: bool = False) -> int:
    """Bytes of one decoder linear ``k x n`` (quantized when the checkpoint is; with
    :attr:`~core.catalog.modelfacts.Quantization.experts_only`, only an ``expert``'s)."""
    q = facts.quantization
    if q is None or (q.experts_only and not expert):
        return k * n * dt
    return _quantized_linear_bytes(k, n, facts, g_idx=g_idx)


def kv_heads_per_rank(facts: ModelFacts, tp: int) -> int:
    """KV heads one rank holds: ``kv // tp``, at least 1 (heads are replicated when TP exceeds
    them: vLLM ``QKVParallelLinear``, candle-vllm ``kv_heads_per_shard``)."""
    return max(1, facts.num_key_value_heads // tp)


def _attention_layer_bytes(facts: ModelFacts, tp: int, dt: int) -> int:
    """q/k/v (column-parallel) and o (row-parallel) of one full-attention layer, one rank; for an
    MLA model its projections (:meth:`~core.catalog.modelfacts.ModelFacts.mla_projections`: the ``_a``
    projections whole on every rank, the others split by heads)."""
    if facts.is_mla:
        total = 0
        for k, n, parallel in facts.mla_projections():
            if parallel == "row":
                k = math.ceil(k / tp)
            elif parallel == "column":
                n = math.ceil(n / tp)
            total += _linear_bytes(k, n, facts, dt)
        return total
    h, d = facts.hidden_size, facts.head_dim
    q_heads = math.ceil(facts.num_attention_heads / tp)
    qkv = _linear_bytes(h, (q_heads + 2 * kv_heads_per_rank(facts, tp)) * d, facts, dt)
    o = _linear_bytes(q_heads * d, h, facts, dt)
    return qkv + o


def _dense_mlp_bytes(facts: ModelFacts, width: int, tp: int, dt: int) -> int:
    """A gate/up/down MLP of ``width`` split across ``tp`` ranks (vLLM ``MergedColumnParallelLinear``
    and ``RowParallelLinear``), one rank."""
    h, inter = facts.hidden_size, math.ceil(width / tp)
    return _linear_bytes(h, 2 * inter, facts, dt) + _linear_bytes(inter, h, facts, dt)


def _mlp_layer_bytes(facts: ModelFacts, tp: int, dt: int, *, moe: bool = True) -> int:
    """The MLP of one layer, one rank: a dense gate/up/down (``moe`` False, or a dense model), or
    every routed expert's slice, the router gate, which stays unquantized and replicated (vLLM
    qwen3_moe.py, deepseek_v2.py ``gate = ReplicatedLinear(..., quant_config=None)``), and the
    shared experts (:attr:`~core.catalog.modelfacts.ModelFacts.shared_expert_width`, a dense MLP split by
    TP; Qwen2-MoE's 1-output ``shared_expert_gate`` beside it)."""
    h = facts.hidden_size
    if moe and facts.num_experts and facts.moe_intermediate_size:
        inter = math.ceil(facts.moe_intermediate_size / tp)
        expert = (_linear_bytes(h, 2 * inter, facts, dt, g_idx=False, expert=True)
                  + _linear_bytes(inter, h, facts, dt, g_idx=False, expert=True))
        shared = _dense_mlp_bytes(facts, facts.shared_expert_width, tp, dt) if facts.shared_expert_width else 0
        gate = h * dt if facts.shared_expert_intermediate_size else 0
        return facts.num_experts * expert + h * facts.num_experts * dt + shared + gate
    return _dense_mlp_bytes(facts, facts.intermediate_size, tp, dt)


def _vocab_bytes(facts: ModelFacts, tp: int, dt: int, engine: str) -> tuple[int, int]:
    """(embedding, LM head) bytes one rank holds. vLLM splits the padded vocabulary across
    ranks; candle-vllm keeps both whole on every rank. A tied LM head adds nothing."""
    if engine == "vllm":  # noqa: SIM108
        rows = math.ceil(facts.vocab_size / VLLM_VOCAB_PADDING) * VLLM_VOCAB_PADDING // tp
    else:
        rows = facts.vocab_size
    embed = rows * facts.hidden_size * dt
    return embed, (0 if facts.tie_word_embeddings else embed)


def pipeline_stage_layers(layers: int, pp: int) -> list[int]:
    """Decoder layers of each pipeline stage, as vLLM splits them (vllm/distributed/utils.py
    ``get_pp_indices`` without ``VLLM_PP_LAYER_PARTITION``): ``layers // pp`` each, the remainder
    one more to each stage from the second-to-last backwards. 27 layers over 2 stages: [14, 13]."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


def stage_weights(
    facts: ModelFacts, tp: int = 1, *, pp: int = 1, engine: str = "vllm", dtype: str = "float16"
) -> list[int]:
    """Bytes of weights one card of each pipeline stage holds (:func:`weights_per_card` is the
    largest): the stage's layers (:func:`pipeline_stage_layers`; a MoE model's dense-MLP layers,
    DeepSeek's first ``first_k_dense_replace``, in the first stages) split by TP, the embedding on
    the first stage and the LM head on the last, and ``1 / pp`` of the parameters the shapes do
    not describe. Raises ValueError for ``tp`` or ``pp`` below 1."""
    if tp < 1 or pp < 1:
        raise ValueError(f"tensor parallel {tp} and pipeline parallel {pp} must be at least 1")
    dt = dtype_bytes(dtype)
    attention = _attention_layer_bytes(facts, tp, dt)
    moe_mlp = _mlp_layer_bytes(facts, tp, dt) if facts.moe_layers else 0
    dense_mlp = _mlp_layer_bytes(facts, tp, dt, moe=False)
    embed, head = _vocab_bytes(facts, tp, dt, engine)
    rest = max(0, int(facts.parameters) - facts.structural_parameters())
    rest_bytes = rest * dt // (tp * pp if facts.is_hybrid else pp)
    dense_left = facts.num_hidden_layers - facts.moe_layers
    out = []
    for i, n in enumerate(pipeline_stage_layers(facts.num_hidden_layers, pp)):
        dense = min(n, dense_left)
        dense_left -= dense
        kv = stage_kv_layers(facts, pp)[i]
        vocab = (embed if i == 0 else 0) + (head if i == pp - 1 else 0)
        out.append(kv * attention + dense * dense_mlp + (n - dense) * moe_mlp + vocab + rest_bytes)
    return out


def stage_kv_layers(facts: ModelFacts, pp: int = 1) -> list[int]:
    """Layers holding a KV cache in each pipeline stage: the stage's layers, or for a hybrid
    model its share of the full-attention layers (rounded up)."""
    parts = pipeline_stage_layers(facts.num_hidden_layers, pp)
    if not facts.is_hybrid:
        return parts
    return [math.ceil(facts.kv_layers * n / facts.num_hidden_layers) for n in parts]


def weights_per_card(
    facts: ModelFacts, tp: int = 1, *, pp: int = 1, engine: str = "vllm", dtype: str = "float16"
) -> int:
    """Bytes of weights one card holds: the busiest pipeline stage's layers split by TP
    (:func:`stage_weights`).

    Linear layers are quantized as the checkpoint is (:attr:`ModelFacts.quantization`);
    embeddings, LM head, norms and router gates are ``dtype`` (default float16, the
    ``--dtype`` both engines run on sm_70). ``engine`` is ``"vllm"`` (vocabulary split across
    ranks) or ``"candle-vllm"`` (embedding and LM head whole on each rank). Parameters the
    shapes do not describe (norms, biases, linear-attention projections, a vision tower:
    ``parameters - structural_parameters()``) are counted in ``dtype``, split by TP for a
    hybrid model (its GDN projections are sharded) and whole otherwise (norms). Raises
    ValueError for ``tp`` or ``pp`` below 1.
    """
    return max(stage_weights(facts, tp, pp=pp, engine=engine, dtype=dtype))


def kv_bytes_per_token(
    facts: ModelFacts, tp: int = 1, *, pp: int = 1, kv_dtype_bytes: int = 2, latent: bool | None = None,
) -> int:
    """KV-cache bytes one token takes on one card: 2 (K and V) x full-attention layers of the
    largest stage x KV heads a rank x head_dim x KV dtype bytes. Qwen3-30B-A3B at TP=1, fp16:
    2 x 48 x 4 x 128 x 2 = 98,304 bytes.

    An MLA model (:attr:`~core.catalog.modelfacts.ModelFacts.is_mla`) caching its latent (``latent``,
    default: whenever the model is MLA) takes layers x (kv_lora_rank + qk_rope_head_dim) x dtype
    bytes, whole on every rank: one KV head (vLLM v0.11.0 ``ModelConfig.get_num_kv_heads`` returns
    1 with ``use_mla``), ``get_head_size`` = kv_lora_rank + qk_rope_head_dim, and
    ``MLAAttentionSpec.page_size_bytes`` has no factor 2 (vllm/v1/kv_cache_interface.py).
    DeepSeek-V2-Lite: 27 x 576 x 2 = 31,104 bytes, as llm-d's v0.19.0 log has it (43.61 GiB for
    1,505,552 tokens). Without the latent (``latent`` False: vLLM before 0.7.1, or
    ``VLLM_MLA_DISABLE=1``) every query head caches K and V of qk_nope + qk_rope (V padded to it)."""
    layers = max(stage_kv_layers(facts, pp))
    if facts.is_mla:
        if latent is None or latent:
            return layers * facts.mla_cache_width * kv_dtype_bytes
        heads = max(1, facts.num_attention_heads // tp)
        return 2 * layers * heads * facts.qk_head_dim * kv_dtype_bytes
    return 2 * layers * kv_heads_per_rank(facts, tp) * facts.head_dim * kv_dtype_bytes


# --- the estimate -----------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """Capacity of one model server on one card: the rank with the smallest KV pool.

    ``weights_gib_per_card``, ``kv_pool_gib``, ``activation_gib`` (vLLM: profiled peak;
    candle-vllm: workspace reserve), ``runtime_gib`` (memory beside the weights outside the
    activations: :func:`runtime_bytes`) and ``budget_gib`` (vLLM: gpu_memory_utilization x
    total; candle-vllm: the card's total) are GiB, of the rank with the smallest pool (``ranks``
    lists each kind of rank); ``engine_version`` is the vLLM release the figures follow (None for
    candle-vllm); ``kv_pool_mib`` is the pool in MiB (candle-vllm logs it as "MB"). ``kv_tokens`` is the whole pool in tokens (``kv_blocks`` x
    ``block_size``); ``max_model_len`` the context one request may use (vLLM: as configured;
    candle-vllm: the model's window capped at the pool); ``concurrency`` how many requests of
    ``max_model_len`` fit at once. ``fits_weights``: the weights load and leave memory for a
    KV cache; ``fits_kv``: the engine starts with this ``max_model_len``. ``notes`` say what
    was assumed or left out; ``unknowns`` what the estimate cannot know, so its figures are
    indicative (the capacity table marks the row and prints them).
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
    runtime_gib: float = 0.0
    engine_version: tuple[int, ...] | None = None
    ranks: tuple[RankMemory, ...] = ()
    #: What the estimate cannot know (a release it does not model, a runtime no log gives, a card
    #: it does not know...), each a sentence; the capacity table marks the row and prints them.
    unknowns: tuple[str, ...] = ()


@dataclass(frozen=True)
class RankMemory:
    """One kind of rank of a server and its memory, GiB: ``who`` (``"every rank"``, ``"rank 0
    (driver: sampler)"``, ``"ranks 1-3"``), ``weights_gib``, ``activation_gib``, ``runtime_gib``
    and the ``kv_pool_gib`` / ``kv_blocks`` it leaves. Both engines size every rank's cache
    from the smallest rank's pool (vLLM V0 ``determine_num_available_blocks``: the minimum over
    workers; V1 ``get_kv_cache_configs``: the minimum; candle-vllm: the minimum over devices),
    which is the :class:`Estimate`'s."""

    who: str
    weights_gib: float
    activation_gib: float
    runtime_gib: float
    kv_pool_gib: float
    kv_blocks: int


# --- vLLM -------------------------------------------------------------------------------

#: vLLM's KV block size on CUDA when ``--block-size`` is not given
#: (vllm/platforms/cuda.py ``check_and_update_config``).
VLLM_BLOCK_SIZE = 16
#: ``--max-num-batched-tokens`` / ``--max-num-seqs`` defaults of the OpenAI server (V1) on a
#: GPU with less than 70 GiB (vllm/engine/arg_utils.py ``_set_default_args``: 2048 and 256).
VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048
VLLM_DEFAULT_MAX_NUM_SEQS = 256
#: The same defaults on a card of 70 GiB or more (CUDA total): 8192 and 1024 (arg_utils.py,
#: ``device_memory >= 70 * GiB_bytes``).
VLLM_LARGE_CARD_MAX_NUM_BATCHED_TOKENS = 8192
VLLM_LARGE_CARD_MAX_NUM_SEQS = 1024
VLLM_LARGE_CARD_GIB = 70
#: V0's batch when chunked prefill is on (vllm/config.py ``_DEFAULT_MAX_NUM_BATCHED_TOKENS``);
#: V0 turns chunked prefill on by default above a 32,768-token max_model_len
#: (arg_utils.py ``use_long_context``), and otherwise batches ``max(max_model_len, 2048)``.
VLLM_V0_CHUNKED_MAX_NUM_BATCHED_TOKENS = 2048
VLLM_V0_LONG_CONTEXT = 32768
#: Tokens one fused-MoE call processes at once (``VLLM_FUSED_MOE_CHUNK_SIZE``, vllm/envs.py).
VLLM_FUSED_MOE_CHUNK_SIZE = 32768
#: Bytes a logit element holds at the peak of the profile's dummy sampler run on the PyTorch
#: top-k/top-p path (V0's ``_apply_top_k_top_p``; V1 ``apply_top_k_top_p`` in
#: vllm/v1/sample/ops/topk_topp_sampler.py, which sm_70 takes with
#: VLLM_USE_FLASHINFER_SAMPLER=0), beside the model-dtype logits ``compute_logits`` returned:
#: during ``logits.sort()`` the float32 logits 4, the sorted values 4 and indices 8, the
#: indices the sort starts from 8, and the radix sort's alternate key and value buffers 4 + 8
#: = 36. Checked on two logs: the llm-d report's 5.64 GiB at 1,024 rows of 151,936 (vLLM
#: 0.15/0.16) and the 1.23 GiB between the two ranks of vllm-project/vllm #13061 (V0: 256
#: rows of 152,064 on the driver rank only).
VLLM_SAMPLER_BYTES_PER_LOGIT = 36
#: The same for releases whose top-k/top-p masking needs no sort (0.17 on): float32 logits
#: masked in place 4, the probabilities 4, the exponential noise of ``random_sample`` 4 and a
#: one-byte boolean mask 1 = 13. Measured, not only read: the logged activations imply 12.85
#: bytes a logit beyond the bf16 logits on vLLM 0.17 (the llm-d report: 2.23 GiB at 1,024 rows
#: of 151,936 with Qwen3-14B) and 12.9 on v0.19.0 (Llama-3.1-8B, Qwen2.5-7B, Qwen3-8B in
#: llm-d-incubation/llm-d-planner accuracy/results/v0.19.0); 12 (without the mask) put all four
#: about 6% low. The mask is the likely place of the 13th byte, not confirmed in the code.
VLLM_SORT_FREE_SAMPLER_BYTES_PER_LOGIT = 13
#: The release the formulas follow when the image's tag names none (``latest``, ``sm70``):
#: v0.11.0, the release the module docstring cites and the user's cluster runs.
VLLM_ASSUMED_VERSION = (0, 11, 0)
#: The first release whose sampler warm-up needs no sort (llm-d report: 0.17's activation
#: 2.23 GiB against 5.64 GiB for 0.15/0.16 on the same model and card).
VLLM_SORT_FREE_SAMPLER_FROM = (0, 17, 0)
#: The first release that caches DeepSeek's MLA latent instead of per-head K and V (vLLM v0.7.1,
#: "MLA support" in the release notes; ``ModelConfig.use_mla``). Before it a DeepSeek-V2/V3 rank
#: caches 2 x heads a rank x (qk_nope + qk_rope) a layer: 10.7 times DeepSeek-V2-Lite's latent.
VLLM_MLA_FROM = (0, 7, 1)
#: The release whose logs show the fused-MoE workspace held through the whole profile, so it sits
#: under the sampler warm-up's peak: v0.19.0 (llm-d-incubation/llm-d-planner
#: accuracy/results/v0.19.0: Qwen3-30B-A3B 2.68 GiB of activation, Qwen1.5-MoE-A2.7B 2.47,
#: DeepSeek-V2-Lite-Chat 1.93, Mixtral-8x7B at TP=2 1.21, each 0.3-0.7 GiB above its sampler
#: warm-up). v0.19.0's ``FusedMoEModularKernel`` takes ``workspace13`` (M x top-k x max(expert
#: width, hidden); ``fused_out`` shares it) and ``workspace2`` (M x top-k x max(2 x expert width,
#: hidden)) from the persistent ``WorkspaceManager`` (vllm/v1/worker/workspace.py), which keeps its
#: largest buffer for the process's life. v0.11.0's unquantized and GPTQ MoE call
#: ``fused_experts_impl``, whose caches are freed after each layer (the user's v0.11.0 figures
#: hold without the term); releases between them are not known, and the estimate says so.
VLLM_MOE_WORKSPACE_FROM = (0, 19, 0)
#: The newest release the estimate was checked on with public logs (v0.19.0, the llm-d sweep); a
#: newer one is estimated as this one, and the estimate says it cannot know the difference.
VLLM_NEWEST_CHECKED = (0, 19, 0)
#: The oldest release a public startup log checks the estimate on (vllm-project/vllm #10517,
#: v0.6.4); an older one is estimated by the V0 rules, and the estimate says it cannot know the difference.
VLLM_OLDEST_CHECKED = (0, 6, 4)
#: The widest tensor-parallel group public logs give the runtime of, by interconnect: over NVLink
#: TP=4 (llm-d v0.19.0: 2.13-2.21 GiB of non-torch memory a rank at TP=4, 2.06-2.11 at TP=2, against
#: 0.25-0.27 at TP=1, so 1.8-1.9 GiB for the all-reduce at both widths, which COMM_NVLINK_GIB's 1.85
#: meets within 0.06); over PCIe TP=2 (vllm-project/vllm #13061). A wider group's is not known: the
#: one wider log (vllm-project/vllm PR #14447, TP=16 over PCIe, V0) shows 0.20 GiB in all, below the
#: TP=2 figure, and no public TP=8 NVLink log was found.
VLLM_WIDEST_CHECKED_TP = {True: 4, False: 2}


@dataclass(frozen=True)
class VllmProfile:
    """How one vLLM release profiles a card: ``version`` (the image's, or
    :data:`VLLM_ASSUMED_VERSION` when ``version_known`` is False); ``v1`` (the V1 engine, else
    V0); ``max_num_batched_tokens`` (the profiled forward's tokens) and ``max_num_seqs`` (the
    sampler warm-up's rows), as given or the release's defaults for the card;
    ``sampler_bytes_per_logit`` beside the model-dtype logits; ``sampler_on_every_rank`` (V1
    gathers the logits on every rank; V0 on the driver rank only); ``notes``."""

    version: tuple[int, ...]
    version_known: bool
    v1: bool
    max_num_batched_tokens: int
    max_num_seqs: int
    sampler_bytes_per_logit: int
    sampler_on_every_rank: bool
    notes: tuple[str, ...] = ()
    #: The fused-MoE workspace persists through the profile (:data:`VLLM_MOE_WORKSPACE_FROM`).
    moe_workspace_persists: bool = False
    #: MLA models cache the latent (:data:`VLLM_MLA_FROM`).
    mla: bool = True


def vllm_profile(
    card: CardSpec,
    *,
    max_model_len: int,
    version: tuple[int, ...] | None = None,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    v1: bool | None = None,
    flashinfer_sampler: str | None = None,
) -> VllmProfile:
    """The profile of vLLM ``version`` (a tuple from :attr:`core.catalog.images.ImageRef.version`;
    None: :data:`VLLM_ASSUMED_VERSION`) on ``card``, with the scheduler limits given or the
    release's defaults:

    - V0 (before 0.8.0; before 0.10.0 on cards below sm_80): ``max_num_seqs`` 256;
      ``max_num_batched_tokens`` 2048 when chunked prefill is on by default (max_model_len above
      32,768), else ``max(max_model_len, 2048)``: the profile runs max_model_len tokens
      (vLLM V0 ``SchedulerConfig``); the sampler warm-up runs on the driver rank only.
    - V1: 8192 / 1024 on a card of 70 GiB or more (CUDA total), else 2048 / 256; every rank
      runs the sampler warm-up on ``min(max_num_seqs, max_num_batched_tokens)`` rows.
    - The sampler's bytes a logit: :data:`VLLM_SAMPLER_BYTES_PER_LOGIT` (the sort) before 0.17,
      :data:`VLLM_SORT_FREE_SAMPLER_BYTES_PER_LOGIT` from 0.17.

    ``v1``: the engine a log shows (``VLLM_USE_V1``, or a release's fallback to V0 for a feature
    V1 lacked); None: the release's default on the card.

    - The sampler's bytes a logit, by the path the warm-up takes in the release: for a release
      the engine contract covers (:func:`core.engines.contracts.release`, its sampler as
      topk_topp_sampler.py has it), :data:`VLLM_SORT_FREE_SAMPLER_BYTES_PER_LOGIT` when it takes
      FlashInfer's kernels (its default, or ``flashinfer_sampler`` ``1``, and not ``0``, on a card
      of sm_75 or more: V1 only) or masks without a sort from the rows it has (Triton), else
      :data:`VLLM_SAMPLER_BYTES_PER_LOGIT` (the sort); for other releases the sort before 0.17.
      ``flashinfer_sampler``: ``VLLM_USE_FLASHINFER_SAMPLER`` as the pod sets it (None: unset).
    """
    notes: list[str] = []
    known = version is not None
    ver = tuple(version) if version is not None else VLLM_ASSUMED_VERSION
    if not known:
        notes.append(f"vLLM release not named by the image tag: figures follow v{'.'.join(map(str, ver))}")
    if v1 is None:
        v1 = contracts.vllm_v1_by_default(ver, card.sm)
    elif v1 != contracts.vllm_v1_by_default(ver, card.sm):
        notes.append(f"the {'V1' if v1 else 'V0'} engine as given, against the release's default (VLLM_USE_V1)")
    if v1:
        large = card.cuda_total_bytes >= VLLM_LARGE_CARD_GIB * GIB
        tokens = VLLM_LARGE_CARD_MAX_NUM_BATCHED_TOKENS if large else VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS
        seqs = VLLM_LARGE_CARD_MAX_NUM_SEQS if large else VLLM_DEFAULT_MAX_NUM_SEQS
    else:
        chunked = max_model_len > VLLM_V0_LONG_CONTEXT
        tokens = VLLM_V0_CHUNKED_MAX_NUM_BATCHED_TOKENS if chunked else max(max_model_len, VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS)
        seqs = VLLM_DEFAULT_MAX_NUM_SEQS
    engine = "V1" if v1 else "V0"
    if max_num_batched_tokens is None:
        max_num_batched_tokens = tokens
        notes.append(f"--max-num-batched-tokens not given: vLLM {engine}'s default {tokens} on this card")
    if max_num_seqs is None:
        max_num_seqs = seqs
        notes.append(
            f"--max-num-seqs not given: vLLM {engine}'s default {seqs}, whose sampler warm-up "
            "is the largest activation term"
        )
    release = contracts.release(ver)
    sampler = release.sampler if release is not None else None
    if sampler is not None and sampler.flashinfer_by_default is not None:
        rows = min(max_num_seqs, max_num_batched_tokens)
        flashinfer = v1 and card.sm >= cards.SM_TURING and (
            flashinfer_sampler == "1" or (sampler.flashinfer_by_default and flashinfer_sampler != "0"))
        triton = sampler.sort_free_from_rows is not None and rows >= sampler.sort_free_from_rows
        sort_free = flashinfer or triton
        if flashinfer:
            notes.append(f"sampler warm-up: {release.label} samples with FlashInfer on sm_{card.sm} "  # type: ignore[union-attr]
                         f"(VLLM_USE_FLASHINFER_SAMPLER {'unset' if flashinfer_sampler is None else flashinfer_sampler}): no sort")
    else:
        sort_free = ver >= VLLM_SORT_FREE_SAMPLER_FROM
    per_logit = VLLM_SORT_FREE_SAMPLER_BYTES_PER_LOGIT if sort_free else VLLM_SAMPLER_BYTES_PER_LOGIT
    return VllmProfile(ver, known, v1, max_num_batched_tokens, max_num_seqs, per_logit, v1, tuple(notes),
                       moe_workspace_persists=ver >= VLLM_MOE_WORKSPACE_FROM, mla=ver >= VLLM_MLA_FROM)


def vllm_moe_workspace_bytes(facts: ModelFacts, tp: int, tokens: int, *, dtype: str = "float16") -> int:
    """Bytes of v0.19.0's persistent fused-MoE workspace on one rank (:data:`VLLM_MOE_WORKSPACE_FROM`):
    ``workspace13`` M x top-k x max(expert width a rank, hidden) and ``workspace2`` M x top-k x
    max(2 x expert width a rank, hidden), in the model dtype, M = min(``tokens``,
    :data:`VLLM_FUSED_MOE_CHUNK_SIZE`); 0 for a dense model. Qwen3-30B-A3B at 8192 tokens: 0.5 GiB."""
    if not (facts.moe_layers and facts.moe_intermediate_size and facts.num_experts_per_tok):
        return 0
    m, k, h = min(tokens, VLLM_FUSED_MOE_CHUNK_SIZE), facts.num_experts_per_tok, facts.hidden_size
    inter = math.ceil(facts.moe_intermediate_size / tp)
    return m * k * (max(inter, h) + max(2 * inter, h)) * dtype_bytes(dtype)


def vllm_forward_bytes(
    facts: ModelFacts, tp: int, tokens: int, *, dtype: str = "float16", moe_caches: bool = True,
) -> int:
    """Bytes of the torch peak of one forward pass of ``tokens`` tokens on one rank: residual and
    hidden state (2 x T x hidden) plus the larger of the attention block (q/k/v of the rank's
    heads, the attention output and o_proj's output, while q/k/v is still referenced) and the MLP
    (dense: gate/up, the activation and down_proj's output, while gate/up is still referenced:
    vLLM's ``LlamaMLP.forward`` keeps ``gate_up`` to the end; MoE: ``fused_experts_impl``'s
    ``cache13`` = M x top-k x max(2 x expert width a rank, hidden) and ``cache2`` = M x top-k x
    expert width a rank, plus the output; M = min(T, :data:`VLLM_FUSED_MOE_CHUNK_SIZE`),
    fused_moe.py; ``moe_caches`` False leaves them out, for a release that keeps them in a
    persistent workspace counted apart, :func:`vllm_moe_workspace_bytes`), and the shared experts'
    gate/up, activation and output beside them. An MLA layer's attention block holds q, the
    compressed kv_a, the expanded K/V of the prefill (heads a rank x (qk_nope + v)), the keys and
    the output (vLLM's MLA prefill path). vllm-project/vllm #10517 (V0 profiles max_model_len
    tokens): Llama-3.1-8B at 20,000 tokens: 2.06 GiB against the logged 2.07."""
    dt = dtype_bytes(dtype)
    t, h, d = tokens, facts.hidden_size, facts.head_dim
    q_heads = math.ceil(facts.num_attention_heads / tp)
    if facts.is_mla:
        v = facts.v_head_dim or 0
        per_token = (q_heads * facts.qk_head_dim * 2 + facts.mla_cache_width
                     + q_heads * ((facts.qk_nope_head_dim or 0) + v) + q_heads * v + h)
        attention = t * per_token * dt
    else:
        attention = t * (q_heads + 2 * kv_heads_per_rank(facts, tp)) * d * dt + t * q_heads * d * dt + t * h * dt
    if facts.moe_layers and facts.moe_intermediate_size and facts.num_experts_per_tok:
        m, k, inter = min(t, VLLM_FUSED_MOE_CHUNK_SIZE), facts.num_experts_per_tok, math.ceil(facts.moe_intermediate_size / tp)
        caches = m * k * max(2 * inter, h) * dt + m * k * inter * dt if moe_caches else 0
        shared = math.ceil(facts.shared_expert_width / tp)
        mlp = caches + t * h * dt + (t * 3 * shared * dt + t * h * dt if shared else 0)
    else:
        inter = math.ceil(facts.intermediate_size / tp)
        mlp = t * 2 * inter * dt + t * inter * dt + t * h * dt
    return 2 * t * h * dt + max(attention, mlp)


def vllm_sampler_bytes(
    facts: ModelFacts, tokens: int, rows: int, *, dtype: str = "float16",
    bytes_per_logit: int = VLLM_SAMPLER_BYTES_PER_LOGIT,
) -> int:
    """Bytes of the torch peak of the profile's sampler warm-up on one rank: the forward's
    ``tokens`` x hidden output, still held, plus ``rows`` x vocabulary logits at ``dtype`` bytes
    and ``bytes_per_logit`` more (:data:`VLLM_SAMPLER_BYTES_PER_LOGIT`). The logits are the whole
    vocabulary on a rank that samples (gathered across TP)."""
    dt = dtype_bytes(dtype)
    return tokens * facts.hidden_size * dt + rows * facts.vocab_size * (dt + bytes_per_logit)


def vllm_activation_bytes(
    facts: ModelFacts,
    tp: int = 1,
    *,
    max_num_batched_tokens: int = VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS,
    max_num_seqs: int = VLLM_DEFAULT_MAX_NUM_SEQS,
    dtype: str = "float16",
    sampler_bytes_per_logit: int = VLLM_SAMPLER_BYTES_PER_LOGIT,
    sampler: bool = True,
    moe_workspace: bool = False,
) -> int:
    """Bytes of the torch peak increase the profile records on one rank (vLLM V0
    ``ModelRunner.profile_run``, V1 ``GPUModelRunner.profile_run``): a forward pass of
    ``max_num_batched_tokens`` tokens (:func:`vllm_forward_bytes`), then, on a rank that samples
    (``sampler``), the sampler warm-up on ``min(max_num_seqs, max_num_batched_tokens)`` rows
    of full-vocabulary logits (:func:`vllm_sampler_bytes`); the peak is the larger of the two.
    With ``moe_workspace`` (:data:`VLLM_MOE_WORKSPACE_FROM`) the fused-MoE workspace
    (:func:`vllm_moe_workspace_bytes`) is held under both. Defaults: V1 on a card below 70 GiB
    (2048 tokens, 256 rows, the sort's 36 bytes a logit)."""
    held = vllm_moe_workspace_bytes(facts, tp, max_num_batched_tokens, dtype=dtype) if moe_workspace else 0
    forward = vllm_forward_bytes(facts, tp, max_num_batched_tokens, dtype=dtype, moe_caches=not held)
    if not sampler:
        return held + forward
    rows = min(max_num_seqs, max_num_batched_tokens)
    warm_up = vllm_sampler_bytes(facts, max_num_batched_tokens, rows, dtype=dtype, bytes_per_logit=sampler_bytes_per_logit)
    return held + max(forward, warm_up)


def estimate_vllm(
    facts: ModelFacts,
    card: CardSpec,
    *,
    tp: int = 1,
    pp: int = 1,
    gpu_memory_utilization: float = config.GPU_MEMORY_UTILIZATION_DEFAULT,
    max_model_len: int,
    kv_cache_dtype: str = "auto",
    dtype: str = "float16",
    block_size: int = VLLM_BLOCK_SIZE,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    version: tuple[int, ...] | None = None,
    v1: bool | None = None,
    flashinfer_sampler: str | None = None,
) -> Estimate:
    """Estimate vLLM's KV cache on each rank of a server on ``card`` (see the module docstring).

    A rank's pool = ``gpu_memory_utilization`` x :func:`cuda_total_bytes` -
    :func:`weights_per_card` - :func:`runtime_bytes` - its activation
    (:func:`vllm_activation_bytes` with the release's profile, :func:`vllm_profile`); the
    server's pool is the smallest rank's (V0: rank 0 runs the sampler warm-up, the others do
    not). Blocks = pool // (block page x KV layers); tokens = blocks x ``block_size`` (default
    16). ``max_model_len`` (tokens) is required: without ``--max-model-len`` vLLM uses the
    model's ``max_position_embeddings``, pass that. ``version``: the release, a tuple
    (:attr:`core.catalog.images.ImageRef.version`; None: :data:`VLLM_ASSUMED_VERSION`).
    ``max_num_batched_tokens`` / ``max_num_seqs``: None takes the release's defaults for the
    card; ``v1``: the engine, when a log shows one against the release's default
    (:func:`vllm_profile`). ``kv_cache_dtype`` ``auto`` uses ``dtype`` (float16); ``fp8*`` is one byte. Raises
    ValueError for a utilization outside (0, 1], a ``max_model_len`` below 1 or an unknown dtype.
    """
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu-memory-utilization {gpu_memory_utilization} is outside (0, 1]")
    if max_model_len < 1:
        raise ValueError(f"max-model-len {max_model_len} must be at least 1 token")
    prof = vllm_profile(card, max_model_len=max_model_len, version=version,
                        max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs, v1=v1,
                        flashinfer_sampler=flashinfer_sampler)
    notes = [*_card_notes(card), *prof.notes]
    total = cuda_total_bytes(card)
    requested = gpu_memory_utilization * total
    runtime = runtime_bytes("vllm", tp, card, counts_context=prof.version < VLLM_BASELINE_PROFILING_FROM)
    kv_bytes = kv_bytes_per_token(facts, tp, pp=pp, kv_dtype_bytes=dtype_bytes(kv_cache_dtype, dtype), latent=prof.mla)
    moe_workspace = bool(facts.moe_layers) and prof.moe_workspace_persists and facts.quantization is None
    uncertain = _vllm_unknowns(facts, card, tp, prof, kv_cache_dtype)
    if facts.is_mla:
        notes.append(f"MLA: {kv_bytes:,} bytes a token a rank, the latent (kv_lora_rank {facts.kv_lora_rank} + "
                     f"qk_rope_head_dim {facts.qk_rope_head_dim}) of {math.ceil(facts.kv_layers / pp)} layers, "
                     "whole on every rank; VLLM_MLA_DISABLE=1 would cache per-head K and V instead" if prof.mla else
                     f"MLA model on vLLM before {'.'.join(map(str, VLLM_MLA_FROM))}: K and V cached per head "
                     f"({kv_bytes:,} bytes a token a rank)")

    def act(sampler: bool) -> int:
        return vllm_activation_bytes(
            facts, tp, max_num_batched_tokens=prof.max_num_batched_tokens, max_num_seqs=prof.max_num_seqs,
            dtype=dtype, sampler_bytes_per_logit=prof.sampler_bytes_per_logit, sampler=sampler,
            moe_workspace=moe_workspace,
        )

    world = tp * pp
    weights_by_stage = stage_weights(facts, tp, pp=pp, engine="vllm", dtype=dtype)
    kv_by_stage = stage_kv_layers(facts, pp)
    per_layer = kv_bytes // max(kv_by_stage)  # one token, one layer
    if world == 1 or (prof.sampler_on_every_rank and pp == 1):
        kinds = [("every rank" if world > 1 else "the rank", 0, act(True))]
    elif prof.sampler_on_every_rank:
        kinds = [(f"ranks of pipeline stage {i}" + (" (sampler)" if i == pp - 1 else ""), i, act(i == pp - 1))
                 for i in range(pp)]
    else:
        kinds = [("rank 0 (V0 driver: gathers the logits, runs the sampler)", 0, act(True)),
                 (f"ranks 1-{world - 1}" if world > 2 else "rank 1", pp - 1, act(False))]
    ranks, pools = [], []
    for who, stage, activation in kinds:
        weights = weights_by_stage[stage]
        pool = requested - weights - runtime - activation
        stage_page = per_layer * kv_by_stage[stage] * block_size
        blocks = max(0, int(pool // stage_page)) if pool > 0 else 0
        ranks.append(RankMemory(who, weights / GIB, activation / GIB, runtime / GIB, max(0.0, pool) / GIB, blocks))
        pools.append((blocks, pool, activation, weights))
    blocks, pool, activation, weights = min(pools)
    weights = max(weights_by_stage)
    per_request = math.ceil(max_model_len / block_size)
    if len(ranks) > 1:
        notes.append(
            "the pool is the smallest rank's (" + "; ".join(f"{r.who}: {r.kv_pool_gib:.2f} GiB" for r in ranks) + ")"
        )
    if facts.is_hybrid:
        notes.append("linear-attention (GDN) state pages are not modelled; only full-attention layers hold KV")
    notes.append(_runtime_note("vllm", tp, card, runtime))
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
        fits_weights=weights + runtime + activation < requested,
        fits_kv=blocks >= per_request,
        notes=tuple(notes),
        runtime_gib=runtime / GIB,
        engine_version=prof.version,
        ranks=tuple(ranks),
        unknowns=tuple(uncertain),
    )


def _vllm_unknowns(facts: ModelFacts, card: CardSpec, tp: int, prof: VllmProfile, kv_cache_dtype: str) -> list[str]:
    """What the estimate of a vLLM server cannot know from the manifest and the facts, each a
    sentence for the capacity table's notes (:attr:`Estimate.unknowns`): a release the image tag
    does not name, one newer than :data:`VLLM_NEWEST_CHECKED` or older than :data:`VLLM_OLDEST_CHECKED`;
    a tensor-parallel group wider than :data:`VLLM_WIDEST_CHECKED_TP` for its interconnect (its
    runtime has no public figure); a card the catalog
    does not know (its total is the nameplate); a MoE model on a release between v0.11.0's
    per-layer caches and :data:`VLLM_MOE_WORKSPACE_FROM`'s persistent workspace, or quantized
    experts on a release that keeps the workspace (only unquantized ones were logged); an MLA
    model with an fp8 KV cache (vLLM's ``fp8_ds_mla`` layout differs by release)."""
    out = []
    release = "v" + ".".join(map(str, prof.version))
    if not prof.version_known:
        out.append(f"the image tag names no vLLM release; the figures follow {release}")
    elif prof.version > VLLM_NEWEST_CHECKED:
        out.append(f"vLLM {release} is newer than the releases the estimate was checked on (up to "
                   f"v{'.'.join(map(str, VLLM_NEWEST_CHECKED))}); its profile may differ")
    elif prof.version < VLLM_OLDEST_CHECKED:
        out.append(f"vLLM {release} is older than the releases the estimate was checked on (from "
                   f"v{'.'.join(map(str, VLLM_OLDEST_CHECKED))}); its profile may differ")
    widest = VLLM_WIDEST_CHECKED_TP[card.nvlink]
    if tp > widest:
        link = "NVLink" if card.nvlink else "PCIe"
        out.append(f"TP={tp} over {link}: no public log gives the runtime memory of a tensor-parallel group wider "
                   f"than {widest} over {link}; the figure of TP={widest} is taken, and the pool may differ")
    if card.cuda_total_mib is None and card.catalog is None:
        out.append(f"card {card.product} is not in the card catalog: its total is the nameplate, 1-3% above what CUDA reports")
    if facts.moe_layers:
        if (0, 11, 0) < prof.version < VLLM_MOE_WORKSPACE_FROM:
            out.append(f"MoE on vLLM {release}: whether the fused-MoE workspace persists through the profile (it does "
                       f"in v{'.'.join(map(str, VLLM_MOE_WORKSPACE_FROM))}, not in v0.11.0) is not known; it is not counted")
        elif prof.moe_workspace_persists and facts.quantization is not None:
            out.append(f"MoE with {facts.quantization.method} experts on vLLM {release}: only unquantized experts' "
                       "workspace was logged; it is not counted")
    if facts.is_mla and prof.mla and kv_cache_dtype.lower().startswith("fp8"):
        out.append("MLA with an fp8 KV cache: the latent's fp8 layout (fp8_ds_mla in newer releases) is not modelled; "
                   "one byte an element is taken")
    return out


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
#: The largest share candle-vllm gives GDN state, whatever ``--mamba-fraction`` asks
#: (``plan_hybrid_mamba_cache_with_fraction`` caps it at 0.3).
CANDLE_MAX_MAMBA_FRACTION = 0.3
#: The GDN slot floor, reserved before the fraction applies: ``max(max_num_seqs, 8) x 3``
#: state slots (``plan_hybrid_mamba_cache_with_fraction``).
CANDLE_MIN_MAMBA_SEQS = 8
CANDLE_MAMBA_SLOTS_PER_SEQ = 3
#: ``--max-num-seqs`` when not given: candle-vllm's own default (src/main.rs), as
#: :class:`core.engines.config.CandleConfig` declares it.
CANDLE_DEFAULT_MAX_NUM_SEQS: int = CandleConfig.model_fields["max_num_seqs"].default


def candle_mamba_reserve_mib(
    facts: ModelFacts, budget_mib: int, *, mamba_fraction: float | None = None,
    max_num_seqs: int | None = None, dtype: str = "f16",
) -> tuple[int, int | None, float]:
    """``(reserved MiB, slot floor MiB or None, fraction used)``: what candle-vllm's
    ``plan_hybrid_mamba_cache_with_fraction`` gives a hybrid model's GDN state out of a
    ``budget_mib`` cache budget. The fraction (``--mamba-fraction``, default 0.15) is capped at
    :data:`CANDLE_MAX_MAMBA_FRACTION`; the floor of ``max(max_num_seqs, 8) x 3`` state slots
    (one slot: :meth:`~core.catalog.modelfacts.ModelFacts.linear_state_bytes` at ``dtype``) is
    reserved first, so the reserve is the larger of the two. The floor is None when the
    facts lack the linear-attention dimensions; the reserve is then the fraction alone."""
    fraction = min(CANDLE_DEFAULT_MAMBA_FRACTION if mamba_fraction is None else mamba_fraction, CANDLE_MAX_MAMBA_FRACTION)
    by_fraction = math.ceil(round(budget_mib * MIB * fraction) / MIB)
    slot = facts.linear_state_bytes(dtype_bytes(dtype))
    if slot is None:
        return by_fraction, None, fraction
    seqs = CANDLE_DEFAULT_MAX_NUM_SEQS if max_num_seqs is None else max_num_seqs
    floor = math.ceil(max(seqs, CANDLE_MIN_MAMBA_SEQS) * CANDLE_MAMBA_SLOTS_PER_SEQ * slot / MIB)
    return max(floor, by_fraction), floor, fraction


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
    kv_fraction: float | None = None,
    mem_mib: int | None = None,
    dtype: str = "f16",
    kv_cache_dtype: str = "auto",
    block_size: int = CANDLE_BLOCK_SIZE,
    prefill_chunk_size: int | None = None,
    mamba_fraction: float | None = None,
    runtime_reserve_mib: int | None = None,
    max_num_seqs: int | None = None,
) -> Estimate:
    """Estimate candle-vllm's KV cache on one rank (see the module docstring).

    free = :func:`cuda_total_bytes` - :func:`weights_per_card` (embedding and LM head whole
    on every rank) - the runtime: ``runtime_reserve_mib`` MiB when measured, else
    :func:`runtime_bytes` (the CUDA context and kernels, plus NCCL at TP >= 2, from public
    figures); budget = :func:`candle_budget_mib`; a hybrid model gives
    :func:`candle_mamba_reserve_mib` of it to GDN state (``max_num_seqs`` default 16);
    blocks = :func:`candle_kv_blocks`. Every rank holds the same weights and runtime, so the
    smallest rank's pool, which candle-vllm takes, is any rank's. ``kv_fraction`` defaults to
    0.6 as in src/main.rs; ``mem_mib`` (``--mem``) is only recorded, since candle-vllm uses it
    just when auto sizing fails, which it does not on CUDA. ``max_model_len`` is the model's
    window capped at the pool (``PipelineConfig::apply_kv_cache_limit``). Raises ValueError for
    a fraction outside (0, 1] or an unknown dtype.
    """
    notes: list[str] = _card_notes(card)
    if kv_fraction is None:
        kv_fraction = CANDLE_DEFAULT_KV_FRACTION
        notes.append(f"--kv-fraction not given: candle-vllm's default {CANDLE_DEFAULT_KV_FRACTION}")
    if mem_mib is not None:
        notes.append(f"--mem {mem_mib} is ignored on CUDA: candle-vllm sizes the cache from --kv-fraction")
    chunk = prefill_chunk_size or CANDLE_DEFAULT_PREFILL_CHUNK
    total = cuda_total_bytes(card)
    weights = weights_per_card(facts, tp, engine="candle-vllm", dtype=dtype)
    workspace = candle_workspace_bytes(facts, prefill_chunk_size=chunk, dtype=dtype)
    runtime = runtime_bytes("candle-vllm", tp, card) if runtime_reserve_mib is None else runtime_reserve_mib * MIB
    free = total - weights - runtime
    budget = candle_budget_mib(free, kv_fraction, workspace)
    if facts.is_hybrid and budget:
        reserved, floor, fraction = candle_mamba_reserve_mib(
            facts, budget, mamba_fraction=mamba_fraction, max_num_seqs=max_num_seqs, dtype=dtype)
        budget = max(0, budget - reserved)
        floor_text = (f"the slot floor max(max_num_seqs, 8) x 3 is {floor} MiB" if floor is not None else
                      "the slot floor is not computed: the facts lack the linear-attention dimensions "
                      "(linear_num_key_heads ... from config.json)")
        asked = "" if mamba_fraction is None or mamba_fraction <= fraction else f" of the {mamba_fraction} asked"
        notes.append(f"hybrid model: {reserved} MiB of the budget reserved for GDN state (fraction {fraction:.0%}{asked}, "
                     f"capped at {CANDLE_MAX_MAMBA_FRACTION:.0%}; {floor_text}; the state is counted in {dtype})")
    kv_bytes_dt = dtype_bytes(kv_cache_dtype, dtype)
    blocks = candle_kv_blocks(facts, budget, tp=tp, block_size=block_size, kv_dtype_bytes=kv_bytes_dt)
    tokens = blocks * block_size
    window = min(facts.max_position_embeddings, tokens) if tokens else facts.max_position_embeddings
    if runtime_reserve_mib is None:
        notes.append(_runtime_note("candle-vllm", tp, card, runtime) + "; memory in use beyond this is not modelled, so the pool is an upper bound")
    else:
        notes.append(f"runtime memory beside the weights: {runtime_reserve_mib} MiB a rank, as measured")
    rank = RankMemory("every rank" if tp > 1 else "the rank", weights / GIB, workspace / GIB, runtime / GIB,
                      budget * MIB / GIB, blocks)
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
        fits_weights=weights + runtime < total,
        fits_kv=blocks > 0,
        notes=tuple(notes),
        runtime_gib=runtime / GIB,
        ranks=(rank,),
        unknowns=tuple(_candle_unknowns(facts, card)),
    )


def _candle_unknowns(facts: ModelFacts, card: CardSpec) -> list[str]:
    """What a candle-vllm estimate cannot know (:attr:`Estimate.unknowns`): an MLA model's cache
    layout (``get_cache_config`` divides by KV heads x head_dim; whether candle-vllm caches the
    latent is not read from its code here) and a card the catalog does not know."""
    out = []
    if facts.is_mla:
        out.append("MLA model on candle-vllm: its cache is sized as KV heads x head_dim; whether candle-vllm "
                   "caches the latent is not modelled")
    if card.cuda_total_mib is None and card.catalog is None:
        out.append(f"card {card.product} is not in the card catalog: its total is the nameplate, 1-3% above what CUDA reports")
    return out


# --- one entry point for both sides -----------------------------------------------------

def engine_dtype(value: str | None, default: str) -> str:
    """A dtype name the estimator knows, else ``default`` (None and ``auto`` -> ``default``)."""
    if value is None or value.lower() == "auto":
        return default
    try:
        dtype_bytes(value)
    except ValueError:
        return default
    return value


@lru_cache(maxsize=4096)
def estimate(facts: ModelFacts, card: CardSpec, settings: ServerSettings) -> Estimate:
    """The :class:`Estimate` of one server from its typed engine settings, with the engines'
    defaults for what is None: the one call the stack-file checks (``stackfile/checks.py``,
    :meth:`core.engines.config.VllmConfig.settings` of the workload) and the policy pack
    (``policies/policylib/capacity_helpers.py``, :meth:`core.engines.config.VllmConfig.read` of the
    rendered argv) both make, so they judge ``fits_weights`` / ``fits_kv`` on the same figures.

    ``settings.engine``: ``vllm`` (:func:`estimate_vllm`; dtype default float16, the KV cache the
    dtype, utilization 0.9, ``max_model_len`` default the window vLLM derives from the model's
    max_position_embeddings and its config.json rope_scaling (:func:`core.catalog.modelfacts.derived_max_model_len`),
    block size 16; a utilization above :data:`core.engines.config.GPU_MEMORY_UTILIZATION_CEILING` is
    credited at the ceiling, with a note, so the estimate never rewards it) or ``candle-vllm``
    (:func:`estimate_candle`; dtype f16, block size 64, ``kv_cache_dtype`` ``fp8`` for
    ``--fp8-kvcache``). ``settings.image``: the server's image; a vLLM release in its tag
    (``vllm/vllm-openai:v0.11.0``, :func:`core.catalog.images.parse_image`) selects the release's
    profile (:func:`vllm_profile`), None or a tag naming no release assumes
    :data:`VLLM_ASSUMED_VERSION`. ``max_num_seqs`` also sizes candle-vllm's GDN slot floor.
    Raises ValueError for a setting the estimator refuses (a utilization outside (0, 1], a
    fraction of 0). Cached (the arguments are frozen): a server the stack-file checks estimated
    is not estimated again for the preview's table or by the pack's policies in the same process.
    """
    if settings.engine == "vllm":
        vdtype = engine_dtype(settings.dtype, "float16")
        util = (config.GPU_MEMORY_UTILIZATION_DEFAULT if settings.gpu_memory_utilization is None
                else settings.gpu_memory_utilization)
        # Never credit a utilization above the ceiling (core.rulebook, vllm-project/vllm #15598): the
        # table must not show more room for 0.98 than for 0.95. estimate_vllm stays the engine's formula.
        credited = config.gpu_memory_utilization_credited(util) if 0 < util <= 1 else util
        est = estimate_vllm(
            facts,
            card,
            tp=settings.tp,
            pp=settings.pp,
            gpu_memory_utilization=credited,
            max_model_len=settings.max_model_len or modelfacts.derived_max_model_len(
                facts.max_position_embeddings, facts.window_rope_scaling()),
            kv_cache_dtype=engine_dtype(settings.kv_cache_dtype, vdtype),
            dtype=vdtype,
            block_size=settings.block_size or VLLM_BLOCK_SIZE,
            max_num_batched_tokens=settings.max_num_batched_tokens,
            max_num_seqs=settings.max_num_seqs,
            version=parse_image(settings.image).version if settings.image else None,
            flashinfer_sampler=settings.flashinfer_sampler,
        )
        if credited != util:
            est = replace(est, notes=est.notes + (
                f"--gpu-memory-utilization {util} is above the {credited} ceiling; the estimate credits {credited}",))
        return est
    cdtype = engine_dtype(settings.dtype, "f16")
    return estimate_candle(
        facts,
        card,
        tp=settings.tp,
        kv_fraction=settings.kv_fraction,
        mem_mib=settings.mem_mib,
        dtype=cdtype,
        kv_cache_dtype=settings.kv_cache_dtype if settings.kv_cache_dtype == "fp8" else engine_dtype(settings.kv_cache_dtype, cdtype),
        block_size=settings.block_size or CANDLE_BLOCK_SIZE,
        prefill_chunk_size=settings.prefill_chunk_size,
        mamba_fraction=settings.mamba_fraction,
        max_num_seqs=settings.max_num_seqs,
    )
