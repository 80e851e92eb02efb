"""The capacity estimator against the user's measured figures (spec "Measured figures").

Each test names the figure's source. vLLM figures must come out within 5%; candle-vllm's
MB-to-tokens step exactly as its code computes it. Where a figure and the engine's current
code disagree, the test states both numbers and the reason. No constant here is fitted to a
figure: every constant in core/capacity/estimator.py is cited from the engine's code or a public log
(tests/core/test_capacity_public.py checks the public figures).

Figures that changed when the estimate began to count the runtime memory, the sampler's sort and
the engine version, each test saying why: the vLLM pools lost the runtime memory beside the weights a rank now holds
(0.15 GiB at TP=1, 0.55 at TP=2 over PCIe: core.capacity.estimator.runtime_bytes), the default-limits
reasoning figure also the sort's transient buffers in the sampler warm-up (36 bytes a logit, not
26), and candle-vllm's pools the CUDA context and NCCL (0.35 + 0.4 GiB). Every measured figure
still holds within its tolerance, most closer than before.
"""

from __future__ import annotations

import pytest

from core.capacity import estimator as capacity
from core.capacity.estimator import GIB, MIB, estimate_candle, estimate_vllm, weights_per_card
from core.capacity.inventory import CardSpec
from core.catalog.modelfacts import CATALOG, ModelFacts

V100 = CardSpec(
    product="Tesla-V100-PCIE-32GB", memory_mib=32768, compute_capability="7.0", nvlink=False, hbm_bandwidth_gb_s=900
)
REASONING = CATALOG["Qwen/Qwen3-30B-A3B-GPTQ-Int4"]
CODER = CATALOG["ModelCloud/Qwen3-Coder-30B-A3B-Instruct-GPTQMODEL-W4A16-A"]
CODER_14B = CATALOG["Qwen/Qwen2.5-Coder-14B-Instruct"]

#: coder.yaml's scheduler limits (--max-num-seqs=4, --max-num-batched-tokens=8192).
CODER_YAML_LIMITS = {"max_num_seqs": 4, "max_num_batched_tokens": 8192}


def within(value: float, figure: float, tolerance: float) -> bool:
    return abs(value - figure) <= tolerance * figure


# --- the card --------------------------------------------------------------------------


def test_v100_budget_uses_the_memory_cuda_reports():
    """A V100 32 GB reports 34,089,730,048 bytes (32,510 MiB), not 32,768 MiB (CUDA deviceQuery)."""
    assert capacity.cuda_total_bytes(V100) == 34_089_730_048
    other = V100.model_copy(update={"product": "Some-Card-16GB", "memory_mib": 16384})
    assert capacity.cuda_total_bytes(other) == 16384 * MIB


# --- vLLM: Qwen3-30B-A3B-GPTQ-Int4, seed 002 reasoning.yaml ----------------------------


def test_reasoning_weights_match_the_measured_15_55_gib():
    """Seed 002 reasoning.yaml: "one V100-32GB, 64k context: 15.55 GiB of weights"."""
    weights = weights_per_card(REASONING, 1) / GIB
    assert within(weights, 15.55, 0.05), weights
    assert round(weights, 2) == 15.65


def test_reasoning_kv_tokens_and_concurrency_match_the_measured_figures():
    """Seed 002 reasoning.yaml: "137k tokens of KV cache, 2.09x concurrency at 65536 tokens".

    The seed shows the reasoning args only up to --kv-cache-dtype; the scheduler limits of
    the measured deployment are not in git. coder.yaml, the InferenceService the user built
    from it ("the same class as the Qwen3-30B-A3B already serving here, so it takes the proven
    code path"), sets --max-num-seqs=4 --max-num-batched-tokens=8192; with those the estimate
    is 134,736 tokens (-1.7%) and 2.06x (-1.6%). At vLLM's defaults see the next test.

    Changed when the runtime memory was counted: 136,384 before; the 0.15 GiB a V1 rank holds outside torch at TP=1
    (core.capacity.estimator.VLLM_RUNTIME_GIB, the llm-d report) is 1,648 tokens of 96 KiB.
    """
    e = estimate_vllm(REASONING, V100, max_model_len=65536, gpu_memory_utilization=0.90, **CODER_YAML_LIMITS)
    assert e.kv_tokens == 134_736
    assert e.runtime_gib == pytest.approx(0.15)
    assert within(e.kv_tokens, 137_000, 0.05)
    assert within(e.concurrency, 2.09, 0.05)
    assert e.kv_bytes_per_token == 2 * 48 * 4 * 128 * 2
    assert e.fits_kv and e.fits_weights


def test_reasoning_at_vllm_defaults_loses_the_sampler_warmup_to_activations():
    """Without --max-num-seqs vLLM's profile warms the sampler on 256 dummy rows of 151,936
    logits (1.38 GiB with the sort's buffers, topk_topp_sampler.py), so the prod stack's
    reasoning server (no max_num_seqs in Pulumi.prod.yaml) gets 124,400 tokens, 1.90x at 65,536:
    9% under the figure measured with few sequences. The difference is exactly the activation
    difference.

    Changed when the sampler's sort was counted: 129,984 / 1.98x / 1.022 GiB before. The warm-up's peak is during
    ``logits.sort()``, whose radix sort holds the input indices and its alternate key and value
    buffers beside the outputs: 36 bytes a logit beside the fp16 logits, not 26
    (core.capacity.estimator.VLLM_SAMPLER_BYTES_PER_LOGIT, checked on the llm-d report and
    vllm-project/vllm #13061 in tests/core/test_capacity_public.py); and the 0.15 GiB runtime."""
    default = estimate_vllm(REASONING, V100, max_model_len=65536)
    limited = estimate_vllm(REASONING, V100, max_model_len=65536, **CODER_YAML_LIMITS)
    assert default.kv_tokens == 124_400
    assert round(default.concurrency, 2) == 1.90
    assert default.activation_gib == pytest.approx(1.384, abs=0.001)
    assert (limited.kv_pool_gib - default.kv_pool_gib) == pytest.approx(default.activation_gib - limited.activation_gib)
    assert any("--max-num-seqs not given" in n for n in default.notes)


@pytest.mark.parametrize("seqs, tokens, within_5", [
    (4, 2048, True), (32, 2048, True), (64, 2048, True), (128, 2048, True), (256, 2048, False),
    (4, 8192, True), (64, 8192, True), (128, 8192, True), (256, 8192, False),
])
def test_reasoning_137k_holds_below_256_sequences_only(seqs, tokens, within_5):
    """What in v0.11.0's profile accounts for reasoning's -9.2%: the sampler warm-up alone. V1
    warms the sampler on min(max_num_seqs, max_num_batched_tokens) rows of the full vocabulary
    (sort path: VLLM_USE_FLASHINFER_SAMPLER=0 on sm_70, seed 002); the 2,048- or 8,192-token
    forward of this MoE is 0.11 / 0.44 GiB. The measured 137k
    is within 5% at any --max-num-seqs up to 128, whatever the batched tokens, and outside only
    at vLLM's default 256 (1.38 GiB of activation). The same image and card measured coder.yaml's
    Qwen3-Coder-30B-A3B at 4 / 8192 within 1.6% (the next section), so the profile holds at small
    limits; reasoning most likely ran with limits below 256 that its seed hunk does not show."""
    e = estimate_vllm(REASONING, V100, max_model_len=65536, max_num_seqs=seqs, max_num_batched_tokens=tokens,
                      version=(0, 11, 0))
    assert within(e.kv_tokens, 137_000, 0.05) is within_5
    rows = min(seqs, tokens)
    warm_up = capacity.vllm_sampler_bytes(REASONING, tokens, rows) / GIB
    forward = capacity.vllm_forward_bytes(REASONING, 1, tokens) / GIB
    assert e.activation_gib == pytest.approx(max(warm_up, forward))


# --- vLLM: Qwen3-Coder-30B-A3B GPTQ, coder.yaml ------------------------------------------


def test_coder_single_card_pool_matches_the_measured_132_672_tokens():
    """coder.yaml: "measured KV pool on a single V100 was 132,672 tokens" (its limits, TP=1).

    Changed when the runtime memory was counted: 136,384 (+2.8%) before, 134,736 (+1.6%) with the 0.15 GiB runtime."""
    e = estimate_vllm(CODER, V100, tp=1, max_model_len=262144, **CODER_YAML_LIMITS)
    assert within(e.kv_tokens, 132_672, 0.05), e.kv_tokens
    assert e.kv_tokens == 134_736


def test_coder_tp2_weights_match_the_measured_7_8_gib_a_card():
    """coder.yaml: "TP=2 halves the weights per card (7.8 GiB each)": the experts and
    attention split, the vocabulary splits (vLLM VocabParallelEmbedding), routers stay whole."""
    weights = weights_per_card(CODER, 2) / GIB
    assert within(weights, 7.8, 0.05), weights
    assert weights > weights_per_card(CODER, 1) / GIB / 2  # the replicated routers


def test_coder_262k_fits_at_tp2_and_not_at_tp1():
    """History (coder.yaml): 262,144 tokens on one V100 cannot be held; TP=2 frees the room.

    Changed when the runtime memory was counted: 444,464 tokens at TP=2 before; each rank now also holds 0.55 GiB of
    runtime (0.15 + NCCL's 0.4 over PCIe, core.capacity.estimator.runtime_bytes)."""
    one = estimate_vllm(CODER, V100, tp=1, max_model_len=262144, **CODER_YAML_LIMITS)
    two = estimate_vllm(CODER, V100, tp=2, max_model_len=262144, **CODER_YAML_LIMITS)
    assert not one.fits_kv and one.kv_tokens < 262_144
    assert two.fits_kv and two.kv_tokens >= 262_144
    assert two.kv_tokens == 432_448  # 2 KV heads a rank: half the bytes a token, more room
    assert two.kv_bytes_per_token * 2 == one.kv_bytes_per_token


def test_gpu_memory_utilization_scales_the_pool():
    low = estimate_vllm(REASONING, V100, max_model_len=65536, gpu_memory_utilization=0.80, **CODER_YAML_LIMITS)
    high = estimate_vllm(REASONING, V100, max_model_len=65536, gpu_memory_utilization=0.90, **CODER_YAML_LIMITS)
    assert (high.kv_pool_gib - low.kv_pool_gib) == pytest.approx(0.10 * high.card_memory_gib)


def test_fp8_kv_cache_halves_the_bytes_a_token():
    e = estimate_vllm(REASONING, V100, max_model_len=65536, kv_cache_dtype="fp8", **CODER_YAML_LIMITS)
    assert e.kv_bytes_per_token == 2 * 48 * 4 * 128
    assert e.kv_tokens == pytest.approx(2 * 134_736, abs=16)


def test_tokens_are_whole_blocks():
    e = estimate_vllm(REASONING, V100, max_model_len=65536, block_size=32, **CODER_YAML_LIMITS)
    assert e.kv_tokens % 32 == 0 and e.kv_tokens == e.kv_blocks * 32


@pytest.mark.parametrize("util, mml", [(0.0, 1024), (1.5, 1024), (0.9, 0)])
def test_vllm_refuses_impossible_settings(util, mml):
    with pytest.raises(ValueError):  # noqa: PT011
        estimate_vllm(REASONING, V100, max_model_len=mml, gpu_memory_utilization=util)


def test_bf16_coder_never_fits_one_card():
    """coder.yaml: "Qwen ships this model only as BF16 (61.1 GB) ... 4-bit GPTQ is the only form
    that fits one 32 GB card"."""
    bf16 = CATALOG["Qwen/Qwen3-Coder-30B-A3B-Instruct"]
    assert weights_per_card(bf16, 1) == pytest.approx(61.06e9, rel=0.01)
    e = estimate_vllm(bf16, V100, max_model_len=32768)
    assert not e.fits_weights and e.kv_tokens == 0


# --- candle-vllm: Qwen2.5-Coder-14B fp16, TP=2, --kv-fraction 0.85 (seed 001) ------------


def test_candle_mb_to_tokens_is_candle_vllms_integer_arithmetic():
    """Seed 001 coder-14b-fp16.yaml: "KV capacity is 11635 MB per rank, about 59K context tokens".

    candle-vllm's get_cache_config (src/lib.rs): 11,635 x 2^20 // (2 bytes x 64 block x 4 KV
    heads a rank x 128 head_dim x 48 layers x 2) = 1,939 blocks; x 64 = 124,096 tokens.

    The user's 59K disagrees: 11,635 x 10^6 bytes / 196,608 bytes (2 x 48 x 8 KV heads x 128 x
    2, the whole model's KV heads) = 59,178. That divides one rank's budget by the size of a
    token on both ranks; candle-vllm holds 4 of the 8 KV heads on each rank, each rank holds
    its own 11,635 MB, so the same pool holds 124,096 tokens (the log's "Total KV cache tokens").
    """
    blocks = capacity.candle_kv_blocks(CODER_14B, 11635, tp=2, block_size=64, kv_dtype_bytes=2)
    assert blocks == 1939
    assert blocks * 64 == 124_096
    assert int(11_635e6 // capacity.kv_bytes_per_token(CODER_14B, 1)) == 59_178  # the user's arithmetic
    assert capacity.candle_kv_blocks(CODER_14B, 11635, tp=1) * 64 == 62_016  # unsharded heads: 2x fewer


def test_candle_kv_fraction_to_mb_states_where_the_code_and_the_figure_part():
    """Seed 001: --kv-fraction 0.85 gave "11635 MB per rank". candle-vllm's current code
    (src/main.rs, src/lib.rs): free after load x 0.85 - 256 MiB workspace reserve. A rank holds
    15.21 GiB of weights (the embedding and LM head whole, qwen.rs) and, from public figures,
    0.75 GiB of runtime (the CUDA context and kernels 0.35, vllm-project/vllm #10517; NCCL over
    PCIe 0.4, vllm-project/vllm #13061): free 15.79 GiB, budget 13,489 MB, 15.9% above the user's figure.

    Changed when the runtime memory was counted: 14,142 MB (+21.5%) before, when nothing beside the weights was
    counted. The user's figure implies 13.66 GiB free, i.e. 2.9 GiB a rank besides the weights.
    Checked against independent figures, not fitted: about 2 GiB a rank at TP>=2 over NVLink
    (llm-d report; 1.79-3.58 GiB in vllm-project/vllm PR #10511) plus the context would bracket
    it (-7.9% .. +5.5%), but worker-1's V100s have no NVLink, and the one public TP=2 PCIe figure
    (vllm-project/vllm #13061) is 0.55 GiB in all. NCCL itself holds 52-100 MB a group (8-16
    channels: vllm-project/vllm PR #18242), so it does not explain the gap either. So 2.15 GiB a
    rank stays unexplained; the estimate remains an upper bound and takes a measured
    ``runtime_reserve_mib``.
    """
    e = estimate_candle(CODER_14B, V100, tp=2, kv_fraction=0.85)
    assert round(e.weights_gib_per_card, 2) == 15.21
    assert e.activation_gib == 0.25  # max(2 x 8192 x 5120 x 2 bytes, 256 MiB)
    assert round(e.runtime_gib, 2) == 0.75
    assert e.kv_pool_mib == 13_489
    assert e.kv_pool_mib / 11_635 - 1 == pytest.approx(0.1593, abs=0.001)
    implied_free_gib = (11_635 * MIB + 256 * MIB) / 0.85 / GIB
    assert round(e.card_memory_gib - e.weights_gib_per_card - implied_free_gib, 1) == 2.9
    nvlink = [estimate_candle(CODER_14B, V100.model_copy(update={"nvlink": True}), tp=2, kv_fraction=0.85,
                              runtime_reserve_mib=round((low + capacity.CANDLE_RUNTIME_GIB) * 1024)).kv_pool_mib
              for low in (3.58, 1.79)]
    assert nvlink[0] < 11_635 < nvlink[1]  # the NVLink range brackets the measured figure
    declared = estimate_candle(CODER_14B, V100, tp=2, kv_fraction=0.85, runtime_reserve_mib=2970)
    assert within(declared.kv_pool_mib, 11_635, 0.01)  # with the gap declared, the code's arithmetic agrees
    assert any("as measured" in n for n in declared.notes)


def test_candle_default_fraction_and_ignored_mem():
    """src/main.rs: --kv-fraction defaults to 0.6; --mem is only the fallback of auto sizing."""
    e = estimate_candle(CODER_14B, V100, tp=2, mem_mib=4096)
    runtime = capacity.runtime_bytes("candle-vllm", 2, V100)
    assert e.kv_pool_mib == capacity.candle_budget_mib(
        34_089_730_048 - weights_per_card(CODER_14B, 2, engine="candle-vllm", dtype="f16") - runtime, 0.6, 256 * MIB
    )
    assert any("--mem 4096 is ignored" in n for n in e.notes)
    assert any("default 0.6" in n for n in e.notes)


def test_candle_caps_the_context_at_the_pool():
    """PipelineConfig::apply_kv_cache_limit: max_model_len = min(model window, KV tokens)."""
    e = estimate_candle(CODER_14B, V100, tp=2, kv_fraction=0.05)
    assert 0 < e.kv_tokens < CODER_14B.max_position_embeddings
    assert e.max_model_len == e.kv_tokens and e.concurrency == 1.0


def test_candle_fraction_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match="kv_fraction must be in"):
        estimate_candle(CODER_14B, V100, tp=2, kv_fraction=1.5)


def test_candle_hybrid_reserves_gdn_state_and_counts_only_full_attention_layers():
    """Seed 003 clef-flash: 8 full-attention of 32 layers hold KV; candle-vllm reserves 15%
    of the budget for GDN state (DEFAULT_HYBRID_MAMBA_FRACTION). The facts are placeholders
    ("to confirm"), so the user's "about 66.8K KV tokens" is not claimed: with them the pool is
    448,512 tokens, which says the placeholder facts are not clef-flash's.

    Changed when the runtime memory was counted: 454,336 before; the 0.35 GiB runtime of a TP=1 rank is now counted.
    The placeholder facts carry no linear-attention dimensions, so the slot floor is not computed
    (tests/core/test_capacity_public.py checks it with them)."""
    clef = ModelFacts(
        architecture="Qwen3_5ForCausalLM", num_hidden_layers=32, full_attention_layers=8, num_attention_heads=16,
        num_key_value_heads=2, head_dim=256, hidden_size=2048, intermediate_size=6144, vocab_size=151936,
        max_position_embeddings=262144, parameters=2.0e9,
    )
    e = estimate_candle(clef, V100, kv_fraction=0.30, prefill_chunk_size=1024)
    assert e.kv_bytes_per_token == 2 * 8 * 2 * 256 * 2
    full = capacity.candle_budget_mib(
        34_089_730_048 - weights_per_card(clef, 1, engine="candle-vllm", dtype="f16")
        - capacity.runtime_bytes("candle-vllm", 1, V100), 0.30, 256 * MIB
    )
    assert e.kv_pool_mib == full - -(-round(full * MIB * 0.15) // MIB)
    assert e.kv_tokens == 448_512
    assert any("slot floor is not computed" in n for n in e.notes)


# --- weights ---------------------------------------------------------------------------


def test_candle_keeps_the_vocabulary_whole_on_every_rank():
    """qwen.rs: embedding and ReplicatedLinear lm_head are whole on each rank; vLLM splits them."""
    vocab = 2 * 152064 * 5120 * 2
    candle = weights_per_card(CODER_14B, 2, engine="candle-vllm")
    vllm = weights_per_card(CODER_14B, 2, engine="vllm")
    assert candle - vllm == vocab // 2


def test_structural_parameters_match_the_published_count():
    """Qwen2.5-Coder-14B-Instruct: 14,770,033,664 parameters; the shapes explain all but the
    840,704 norm and bias parameters."""
    assert CODER_14B.parameters - CODER_14B.structural_parameters() == 840_704


def test_pipeline_parallel_stage_holds_half_the_layers_and_one_vocab_matrix():
    """A PP=2 stage: 24 of 48 layers plus the larger of embedding and LM head (the 14B's are
    equal, so exactly half); norms and biases (the 840,704 remainder) split with their layers."""
    vocab = 152064 * 5120 * 2
    rest = 840_704 * 2
    one = weights_per_card(CODER_14B, 1, pp=1)
    two = weights_per_card(CODER_14B, 1, pp=2)
    assert two == (one - 2 * vocab - rest) // 2 + vocab + rest // 2


@pytest.mark.parametrize("tp, pp", [(0, 1), (1, 0)])
def test_weights_refuse_zero_parallelism(tp, pp):
    with pytest.raises(ValueError):  # noqa: PT011
        weights_per_card(CODER_14B, tp, pp=pp)


def test_unknown_dtype_is_refused():
    with pytest.raises(ValueError, match="unknown dtype"):
        capacity.dtype_bytes("int3")
