"""The capacity estimator against public vLLM startup logs, within 5% each.

Each test names its source in its docstring. The public figures check mechanisms, not fitted
numbers: the forward's activation (the profiled tokens x hidden and MLP widths), the sampler
warm-up (rows x vocabulary x the bytes a logit its code path holds), the vLLM release from the
image tag, the card's CUDA-visible total, and the minimum over ranks. Which constant of
core/capacity/estimator.py comes from which log is said where it is used; a figure that is a constant's
own source is not counted as reproduced.
"""

from __future__ import annotations

import pytest

from core.capacity import estimator as capacity
from core.capacity.estimator import GIB, MIB, estimate, estimate_candle, estimate_vllm
from core.capacity.inventory import CardSpec
from core.catalog import cards
from core.catalog.images import parse_image
from core.catalog.modelfacts import CATALOG, ModelFacts, facts_from_config_json
from core.engines.config import ServerSettings


def card(product: str, memory_mib: int, cc: str, nvlink: bool = False) -> CardSpec:
    return CardSpec(product=product, memory_mib=memory_mib, compute_capability=cc, nvlink=nvlink, hbm_bandwidth_gb_s=900)


RTX_3090 = card("NVIDIA-GeForce-RTX-3090", 24576, "8.6")
RTX_4090 = card("NVIDIA-GeForce-RTX-4090", 24576, "8.9")
H100 = card("NVIDIA-H100-80GB-HBM3", 81920, "9.0", nvlink=True)
V100 = card("Tesla-V100-PCIE-32GB", 32768, "7.0")
LLAMA_8B = CATALOG["meta-llama/Llama-3.1-8B-Instruct"]
QWEN3_14B = CATALOG["Qwen/Qwen3-14B"]
R1_14B = CATALOG["deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"]


def within(value: float, figure: float, tolerance: float = 0.05) -> bool:
    return abs(value - figure) <= tolerance * figure


# --- vllm-project/vllm #10517: RTX 3090, Llama-3.1-8B-Instruct, V0 ------------------------


def vllm_10517(max_model_len: int) -> capacity.Estimate:
    return estimate_vllm(LLAMA_8B, RTX_3090, gpu_memory_utilization=0.90, max_model_len=max_model_len,
                         dtype="bfloat16", version=parse_image("vllm/vllm-openai:v0.6.4").version)


def test_10517_llama_8b_on_a_3090_at_20000_tokens():
    """vllm-project/vllm #10517 (vLLM about 0.6.4, RTX 3090, Llama-3.1-8B-Instruct bf16, TP=1,
    gpu-memory-utilization 0.90, max_model_len 20,000): weights 14.99 GiB, non-torch 0.35,
    activation peak 2.07, KV cache 3.81 GiB = 1,952 blocks = 31,232 tokens.

    V0 profiles max_model_len tokens (chunked prefill is off below 32,768): 20,000 x (3 x 4096 +
    3 x 14336) x 2 bytes = 2.06 GiB, the MLP's gate/up, activation and output beside the
    residual. The 0.35 GiB non-torch figure is this log's (VLLM_RUNTIME_WITH_CONTEXT_GIB: before
    0.6.5 the profile counted the CUDA context), so it is not counted as reproduced."""
    e = vllm_10517(20_000)
    assert e.engine_version == (0, 6, 4) and e.card_memory_gib == pytest.approx(23.58, abs=0.005)
    assert within(e.weights_gib_per_card, 14.99)
    assert within(e.activation_gib, 2.07)
    assert round(e.runtime_gib, 2) == 0.35
    assert within(e.kv_pool_gib, 3.81)
    assert within(e.kv_blocks, 1_952) and within(e.kv_tokens, 31_232)
    assert (e.kv_blocks, e.kv_tokens) == (1_973, 31_568)  # +1.1%
    assert any("V0's default 20000" in n for n in e.notes)


def test_10517_the_same_at_29000_tokens_loses_what_the_longer_profile_takes():
    """vllm-project/vllm #10517, the same server at max_model_len 29,000: KV cache 2.89 GiB =
    1,478 blocks. Nothing else changed: V0's profile grows with max_model_len (29,000 tokens:
    2.99 GiB of activations), which no V1 release does."""
    e = vllm_10517(29_000)
    assert within(e.activation_gib, 2.07 + 0.92)  # 2.07 GiB x 29,000 / 20,000
    assert within(e.kv_pool_gib, 2.89)
    assert within(e.kv_blocks, 1_478)
    assert e.kv_blocks == 1_498  # +1.4%
    v1 = estimate_vllm(LLAMA_8B, RTX_3090, gpu_memory_utilization=0.90, max_model_len=29_000, dtype="bfloat16",
                       version=(0, 11, 0))
    assert v1.activation_gib < 1.5 and v1.kv_blocks > e.kv_blocks  # V1 profiles 2048 tokens, not 29,000


# --- the llm-d planner accuracy report: H100-80GB, Qwen3-14B ----------------------------------


@pytest.mark.parametrize("tag, activation, kv", [("v0.15.1", 5.64, 41.94), ("v0.16.0", 5.64, 41.94)])
def test_llm_d_qwen3_14b_on_an_h100_before_0_17(tag, activation, kv):
    """llm-d planner accuracy report: H100-80GB, Qwen3-14B bf16, TP=1, gpu-memory-utilization
    0.95, max_model_len 8,192, vLLM 0.15/0.16: activation 5.64 GiB, KV cache 41.94 GiB.

    An 80 GB card gets V1's large-card defaults (8192 batched tokens, 1,024 sequences); the
    sampler warm-up on 1,024 rows of 151,936 logits holds the sort's 36 bytes a logit beside
    the bf16 logits: 5.58 GiB (-1.0%). The 0.15 GiB runtime is this report's
    (VLLM_RUNTIME_GIB)."""
    e = estimate(QWEN3_14B, H100, ServerSettings("vllm", dtype="bfloat16", gpu_memory_utilization=0.95, max_model_len=8192,
                 image=f"vllm/vllm-openai:{tag}"))
    assert e.card_memory_gib == pytest.approx(79.19, abs=0.005)
    assert within(e.activation_gib, activation)
    assert within(e.kv_pool_gib, kv)
    assert round(e.kv_pool_gib, 2) == 41.99
    assert any("V1's default 8192" in n for n in e.notes) and any("V1's default 1024" in n for n in e.notes)


def test_llm_d_qwen3_14b_on_an_h100_at_0_17():
    """llm-d planner accuracy report, the same server on vLLM 0.17: activation 2.23 GiB, KV cache
    45.34 GiB. 0.17's top-k/top-p masking needs no sort: 13 bytes a logit beside the logits
    (float32 logits masked in place, probabilities, exponential noise, a one-byte mask) give
    2.25 GiB (+1.0%) and a KV cache of 45.32 GiB (-0.05%).

    Changed on evidence: the term was 12 bytes (2.11 GiB, 5.5% low, the pool 45.47); this log
    implies 12.85 bytes a logit and three v0.19.0 logs of the llm-d sweep 12.9
    (core.capacity.estimator.VLLM_SORT_FREE_SAMPLER_BYTES_PER_LOGIT), so this figure is one of the term's
    sources and no longer an independent check."""
    e = estimate(QWEN3_14B, H100, ServerSettings("vllm", dtype="bfloat16", gpu_memory_utilization=0.95, max_model_len=8192,
                 image="vllm/vllm-openai:v0.17.0"))
    assert capacity.VLLM_SORT_FREE_SAMPLER_BYTES_PER_LOGIT == 13
    assert within(e.activation_gib, 2.23, 0.015)
    assert within(e.kv_pool_gib, 45.34, 0.005)
    assert round(e.kv_pool_gib, 2) == 45.32
    implied = (2.23 * GIB - 8192 * QWEN3_14B.hidden_size * 2) / (1024 * QWEN3_14B.vocab_size) - 2
    assert 12.8 < implied < 12.9


# --- public logs not used for any constant ----------------------------------------------------


def test_10511_llama3_8b_on_an_h100_at_tp1():
    """https://github.com/vllm-project/vllm/pull/10511 (the sanity check of 2024-12-13, vLLM
    0.6.5 dev, V0): ``vllm serve meta-llama/Meta-Llama-3-8B`` on an H100-80GB, TP=1, gmu 0.90,
    max_model_len the model's 8,192: total_gpu_memory 79.22 GiB, weights 14.96 GiB, activation
    peak 1.26 GiB, non_torch_memory 1.79 GiB, available_kv_cache_memory 53.29 GiB. Meta-Llama-3-8B
    has Llama-3.1-8B's shapes. The estimate: weights 14.96 (exact), activation 1.22 (-3%), KV
    54.94 GiB (+3.1%): within 5%, though it counts 0.15 GiB of runtime where this build logged 1.79
    at TP=1 (the TP=2 figure of the same comment, 3.58, is a source of COMM_NVLINK_GIB and not
    counted here)."""
    e = estimate_vllm(LLAMA_8B, H100, gpu_memory_utilization=0.9, max_model_len=8192, dtype="bfloat16",
                      version=(0, 6, 5))
    assert within(e.weights_gib_per_card, 14.96, 0.005)
    assert within(e.activation_gib, 1.26)
    assert within(e.kv_pool_gib, 53.29)
    assert round(e.kv_pool_gib, 2) == 54.94


# --- vllm-project/vllm #13061: 2 x RTX 4090, TP=2, the smaller rank's pool ---------------------


def test_13061_tp2_on_two_4090s_takes_the_smaller_ranks_pool():
    """vllm-project/vllm #13061 (vLLM 0.7, V0; 2 x RTX 4090, DeepSeek-R1-Distill-Qwen-14B bf16,
    TP=2, gpu-memory-utilization 0.98, max_model_len 131,072): one rank logged 8.69 GiB of KV
    cache; the pool was 81,536 tokens, the smaller rank's.

    V0 gathers the logits on rank 0 only, which alone runs the sampler warm-up (256 rows of
    152,064 logits, 1.40 GiB with the sort's buffers); rank 1 only the 2,048-token forward
    (0.14 GiB). The ranks differ by 1.26 GiB, the log by 1.23 (8.69 GiB against 81,536 tokens x
    96 KiB = 7.46 GiB): an independent check of the sampler's 36 bytes a logit. The runtime over
    PCIe (0.15 + 0.4 GiB) is derived from this log (COMM_PCIE_GIB), so its pool is not an
    independent check of the runtime."""
    e = estimate_vllm(R1_14B, RTX_4090, tp=2, gpu_memory_utilization=0.98, max_model_len=131_072, dtype="bfloat16",
                      version=(0, 7, 2))
    driver, other = e.ranks
    assert driver.who.startswith("rank 0") and other.who == "rank 1"
    assert within(other.kv_pool_gib, 8.69)
    assert within(e.kv_tokens, 81_536)
    assert e.kv_tokens == 81_520  # -0.02%
    assert e.kv_blocks == driver.kv_blocks < other.kv_blocks
    logged_gap = 8.69 - 81_536 * capacity.kv_bytes_per_token(R1_14B, 2) / GIB
    assert within(other.kv_pool_gib - driver.kv_pool_gib, logged_gap)
    assert any("smallest rank's" in n for n in e.notes)


def test_v1_ranks_are_alike_every_rank_samples():
    """VLLM V1 gathers the logits on every rank (LogitsProcessor all-gather) and every rank runs
    the warm-up, so the same server on 0.11 has one kind of rank, the sampler's (on the PyTorch
    path, VLLM_USE_FLASHINFER_SAMPLER=0: the sort)."""
    e = estimate_vllm(R1_14B, RTX_4090, tp=2, gpu_memory_utilization=0.98, max_model_len=131_072, dtype="bfloat16",
                      version=(0, 11, 0), flashinfer_sampler="0")
    (rank,) = e.ranks
    assert rank.who == "every rank" and rank.activation_gib > 1.3


def test_the_sampler_warm_up_takes_the_path_of_the_release_and_card():
    """The engine contract (each release's vllm/v1/sample/ops/topk_topp_sampler.py): 0.11.0
    samples with FlashInfer unless VLLM_USE_FLASHINFER_SAMPLER=0, on cards FlashInfer supports
    (sm_75 on; docker/Dockerfile: "FlashInfer only supports sm75+"), so its warm-up holds no sort's
    buffers (12 bytes a logit, not 36); 0.14.1 samples with FlashInfer only when asked (the sort);
    0.19.1 masks without a sort from 8 rows (Triton). On a V100 every release sorts."""
    def per_logit(card_, version, env=None, seqs=256):
        return capacity.vllm_profile(card_, max_model_len=8192, version=version, max_num_seqs=seqs,
                                     flashinfer_sampler=env).sampler_bytes_per_logit
    sort, free = capacity.VLLM_SAMPLER_BYTES_PER_LOGIT, capacity.VLLM_SORT_FREE_SAMPLER_BYTES_PER_LOGIT
    assert per_logit(RTX_4090, (0, 11, 0)) == free
    assert per_logit(RTX_4090, (0, 11, 0), "0") == sort
    assert per_logit(V100, (0, 11, 0)) == sort
    assert per_logit(RTX_4090, (0, 14, 1)) == sort
    assert per_logit(RTX_4090, (0, 14, 1), "1") == free
    assert per_logit(RTX_4090, (0, 19, 1)) == free
    assert per_logit(RTX_4090, (0, 19, 1), seqs=4) == sort  # fewer rows than Triton's 8: the sort
    assert per_logit(RTX_4090, (0, 16, 0)) == sort  # not covered: the sort before 0.17
    with_sort = estimate_vllm(R1_14B, RTX_4090, tp=2, gpu_memory_utilization=0.98, max_model_len=131_072,
                              dtype="bfloat16", version=(0, 11, 0), flashinfer_sampler="0")
    flashinfer = estimate_vllm(R1_14B, RTX_4090, tp=2, gpu_memory_utilization=0.98, max_model_len=131_072,
                               dtype="bfloat16", version=(0, 11, 0))
    assert flashinfer.kv_pool_gib > with_sort.kv_pool_gib
    assert any("samples with FlashInfer on sm_89" in n for n in flashinfer.notes)


# --- the engine version and the card's defaults -----------------------------------------------


def test_the_release_comes_from_the_image_tag_and_an_unnamed_one_is_assumed():
    """core.catalog.images.ImageRef.version is the one tag parser; a tag naming no release (``sm70``,
    ``latest``) follows v0.11.0 and says so."""
    tagged = estimate(QWEN3_14B, H100, ServerSettings("vllm", max_model_len=8192, image="vllm/vllm-openai:v0.16.0@sha256:" + "a" * 64))
    moving = estimate(QWEN3_14B, H100, ServerSettings("vllm", max_model_len=8192, image="registry.local/vllm:sm70"))
    assert tagged.engine_version == (0, 16, 0) and moving.engine_version == capacity.VLLM_ASSUMED_VERSION
    assert any("not named by the image tag" in n for n in moving.notes)
    assert not any("not named by the image tag" in n for n in tagged.notes)


@pytest.mark.parametrize("product, mib, cc, tokens, seqs", [
    ("NVIDIA-H100-80GB-HBM3", 81920, "9.0", 8192, 1024),
    ("NVIDIA-A100-SXM4-80GB", 81920, "8.0", 8192, 1024),
    ("NVIDIA-A100-SXM4-40GB", 40960, "8.0", 2048, 256),
    ("Tesla-V100-PCIE-32GB", 32768, "7.0", 2048, 256),
])
def test_v1_defaults_depend_on_the_cards_cuda_total(product, mib, cc, tokens, seqs):
    """vllm/engine/arg_utils.py: 8192 batched tokens and 1,024 sequences on a card of 70 GiB or
    more, 2048 and 256 below."""
    prof = capacity.vllm_profile(card(product, mib, cc), max_model_len=8192, version=(0, 11, 0))
    assert (prof.v1, prof.max_num_batched_tokens, prof.max_num_seqs) == (True, tokens, seqs)


def test_v0_on_volta_until_0_10_and_v0_profiles_max_model_len_below_32k():
    """V1 is the default from 0.8.0, but its oracle fell back to V0 below sm_80 until 0.10.0;
    V0 batches max(max_model_len, 2048) tokens, 2048 with chunked prefill (on by default above
    32,768)."""
    assert not capacity.vllm_profile(V100, max_model_len=8192, version=(0, 9, 2)).v1
    assert capacity.vllm_profile(V100, max_model_len=8192, version=(0, 10, 0)).v1
    assert capacity.vllm_profile(H100, max_model_len=8192, version=(0, 8, 0)).v1
    assert capacity.vllm_profile(H100, max_model_len=20_000, version=(0, 7, 3)).max_num_batched_tokens == 20_000
    assert capacity.vllm_profile(H100, max_model_len=65_536, version=(0, 7, 3)).max_num_batched_tokens == 2048


def test_given_limits_override_the_release_defaults():
    prof = capacity.vllm_profile(H100, max_model_len=8192, version=(0, 11, 0), max_num_batched_tokens=4096,
                                 max_num_seqs=8)
    assert (prof.max_num_batched_tokens, prof.max_num_seqs) == (4096, 8)
    assert prof.notes == ("sampler warm-up: vLLM 0.11.0 samples with FlashInfer on sm_90 (VLLM_USE_FLASHINFER_SAMPLER "
                          "unset): no sort",)


# --- runtime memory beside the weights -------------------------------------------------------


def test_runtime_grows_at_tp2_more_over_nvlink_than_over_pcie():
    """TP=1: 0.15 GiB (vLLM from 0.6.5, llm-d report), 0.35 (before 0.6.5, which counted the CUDA
    context, #10517; candle-vllm counts it too). TP>=2: about 2 GiB a card over NVLink (llm-d
    report; 1.79-3.58 GiB in vllm-project/vllm PR #10511); over PCIe NCCL moves the data through
    host memory and custom all-reduce is off: 0.4 more (#13061)."""
    gib = {(e, tp, link): capacity.runtime_bytes(e, tp, card("x", 81920, "9.0", link)) / GIB
           for e in ("vllm", "candle-vllm") for tp in (1, 2) for link in (False, True)}
    assert gib[("vllm", 1, False)] == pytest.approx(0.15) == pytest.approx(gib[("vllm", 1, True)])
    assert gib[("vllm", 2, True)] == pytest.approx(2.0)
    assert 1.79 <= gib[("vllm", 2, True)] <= 3.58
    assert gib[("vllm", 2, False)] == pytest.approx(0.55)
    assert capacity.runtime_bytes("vllm", 1, V100, counts_context=True) / GIB == pytest.approx(0.35)
    assert gib[("candle-vllm", 1, False)] == pytest.approx(0.35) and gib[("candle-vllm", 2, False)] == pytest.approx(0.75)
    old = estimate_vllm(LLAMA_8B, RTX_3090, max_model_len=4096, version=(0, 6, 4))
    new = estimate_vllm(LLAMA_8B, RTX_3090, max_model_len=4096, version=(0, 7, 0))
    assert (round(old.runtime_gib, 2), round(new.runtime_gib, 2)) == (0.35, 0.15)  # both V0


def test_runtime_is_what_the_weights_policy_adds():
    """fits_weights counts the runtime: a server whose weights and activations fit the budget
    but not with the runtime does not fit."""
    e = estimate_vllm(QWEN3_14B, H100, tp=1, max_model_len=8192, dtype="bfloat16", version=(0, 11, 0),
                      gpu_memory_utilization=0.95)
    room = e.budget_gib - e.weights_gib_per_card - e.activation_gib
    assert e.runtime_gib < room
    tight = (e.weights_gib_per_card + e.activation_gib + e.runtime_gib / 2) / e.card_memory_gib
    assert not estimate_vllm(QWEN3_14B, H100, max_model_len=8192, dtype="bfloat16", version=(0, 11, 0),
                             gpu_memory_utilization=tight).fits_weights


# --- the card catalog ----------------------------------------------------------------------


@pytest.mark.parametrize("name, gib", [
    ("Tesla-V100-PCIE-32GB", 31.75), ("Tesla V100-SXM2-32GB", 31.75), ("NVIDIA-H100-80GB-HBM3", 79.19),
    ("NVIDIA GeForce RTX 3090", 23.58), ("nvidia-geforce-rtx-4090", 23.64), ("RTX-4090", 23.64),
    ("NVIDIA-A100-SXM4-80GB", 79.25), ("NVIDIA-A100-PCIE-40GB", 39.39), ("NVIDIA-L4", 22.05), ("Tesla-T4", 14.58),
    ("Tesla-V100-PCIE-16GB", 15.77), ("NVIDIA-A10G", 22.49), ("NVIDIA-A10", 22.18), ("NVIDIA-L40S", 44.53), ("NVIDIA-L40", 44.40),
    ("NVIDIA-RTX-6000-Ada-Generation", 44.43),
    ("NVIDIA-H100-PCIe", 79.19), ("NVIDIA-H200", 139.80),
])
def test_catalog_knows_common_cards_by_product_name(name, gib):
    """The CUDA-visible totals of the common serving cards (core/data/cards.yaml, each with its
    public source), under the device plugin's names and their usual spellings."""
    found = cards.lookup(name)
    assert found is not None and round(found.cuda_total_gib, 2) == gib


def test_catalog_entries_have_a_source_and_say_whether_measured():
    assert all(c.source and c.cuda_total_bytes < c.memory_mib * MIB for c in cards.CARDS)
    assert {c.product for c in cards.CARDS if not c.measured} == {"NVIDIA-L4", "NVIDIA-H100-PCIe", "NVIDIA-H200",
                                                                   "NVIDIA-RTX-A6000"}
    assert all("derived" in c.source for c in cards.CARDS if not c.measured)
    assert cards.lookup("NVIDIA-A10").product == "NVIDIA-A10" and cards.lookup("NVIDIA A10G").product == "NVIDIA-A10G"
    assert cards.lookup("NVIDIA L40").product == "NVIDIA-L40" and cards.lookup("NVIDIA-L40S").product == "NVIDIA-L40S"
    assert cards.lookup("Some-Card-16GB") is None


def test_card_spec_uses_the_catalog_and_falls_back_to_the_nameplate():
    assert V100.cuda_total_bytes == 34_089_730_048 and V100.catalog is not None
    unknown = card("Some-Card-16GB", 16384, "8.0")
    assert unknown.cuda_total_bytes == 16384 * MIB and unknown.catalog is None
    e = estimate_vllm(LLAMA_8B, unknown, max_model_len=4096)
    assert any("not in core.catalog.cards" in n for n in e.notes)
    l4 = estimate_vllm(LLAMA_8B, card("NVIDIA-L4", 24576, "8.9"), max_model_len=4096)
    assert any("derived, not measured" in n for n in l4.notes)


# --- candle-vllm on hybrid (GDN) models -------------------------------------------------------

#: A hybrid model with Qwen3-Next's linear-attention shape (its config.json: 16 key heads, 32
#: value heads, key and value head dim 128, conv kernel 4; one full-attention layer in four),
#: scaled to 32 layers for the test; not a published checkpoint.
HYBRID = ModelFacts(
    architecture="Qwen3NextForCausalLM", num_hidden_layers=32, full_attention_layers=8, num_attention_heads=16,
    num_key_value_heads=2, head_dim=256, hidden_size=2048, intermediate_size=6144, vocab_size=151936,
    max_position_embeddings=262144, parameters=2.0e9, linear_num_key_heads=16, linear_num_value_heads=32,
    linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
)


def test_gdn_state_slot_is_the_recurrent_and_conv_state_of_every_linear_layer():
    """Per GDN layer: 32 x 128 x 128 state plus (2 x 16 x 128 + 32 x 128) x 3 conv state, in f16;
    24 linear layers."""
    assert HYBRID.linear_state_bytes(2) == 24 * (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3) * 2
    assert CATALOG["Qwen/Qwen2.5-Coder-14B-Instruct"].linear_state_bytes() is None


def test_candle_mamba_fraction_is_capped_at_0_3():
    """candle-vllm plan_hybrid_mamba_cache_with_fraction: --mamba-fraction above 0.3
    is taken as 0.3."""
    reserved, _, fraction = capacity.candle_mamba_reserve_mib(HYBRID, 10_000, mamba_fraction=0.5, max_num_seqs=4)
    assert fraction == 0.3 and reserved == 3_000
    assert capacity.candle_mamba_reserve_mib(HYBRID, 10_000, mamba_fraction=0.2, max_num_seqs=4)[0] == 2_000
    e = estimate_candle(HYBRID, V100, kv_fraction=0.30, mamba_fraction=0.5, max_num_seqs=4)
    assert any("fraction 30% of the 0.5 asked" in n for n in e.notes)


def test_candle_slot_floor_is_reserved_first():
    """max(max_num_seqs, 8) x 3 state slots are reserved before the fraction: with 4 sequences the
    floor is 24 slots (below 15% of the budget, so the fraction rules); with 64 it is 192 slots,
    which exceed 15% and are what is reserved."""
    slot = HYBRID.linear_state_bytes(2)
    assert slot is not None
    small, floor_small, _ = capacity.candle_mamba_reserve_mib(HYBRID, 8_000, max_num_seqs=4)
    assert floor_small == -(-24 * slot // MIB) and small == 1_200
    large, floor_large, _ = capacity.candle_mamba_reserve_mib(HYBRID, 8_000, max_num_seqs=64)
    assert large == floor_large == -(-192 * slot // MIB) > 1_200
    e = estimate_candle(HYBRID, V100, kv_fraction=0.30, prefill_chunk_size=1024, max_num_seqs=64)
    budget = capacity.candle_budget_mib(
        V100.cuda_total_bytes - capacity.weights_per_card(HYBRID, 1, engine="candle-vllm", dtype="f16")
        - capacity.runtime_bytes("candle-vllm", 1, V100), 0.30, 256 * MIB)
    assert e.kv_pool_mib == budget - capacity.candle_mamba_reserve_mib(HYBRID, budget, max_num_seqs=64)[0]
    assert any(f"slot floor max(max_num_seqs, 8) x 3 is {floor_large} MiB" in n for n in e.notes)


def test_linear_attention_dims_come_from_config_json():
    """facts_from_config_json reads the linear_* keys of a hybrid checkpoint's config.json."""
    raw = {"architectures": ["Qwen3NextForCausalLM"], "num_hidden_layers": 4, "num_attention_heads": 16,
           "num_key_value_heads": 2, "head_dim": 256, "hidden_size": 2048, "intermediate_size": 5120,
           "vocab_size": 151936, "max_position_embeddings": 262144,
           "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
           "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
           "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4}
    facts = facts_from_config_json(raw)
    assert facts.is_hybrid and facts.linear_conv_kernel_dim == 4
    assert facts.linear_state_bytes(2) == 3 * (32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3) * 2


# --- the public models' facts ------------------------------------------------------------------


@pytest.mark.parametrize("key, rest", [
    ("meta-llama/Llama-3.1-8B-Instruct", 32 * 2 * 4096 + 4096),
    ("Qwen/Qwen3-14B", 40 * (2 * 5120 + 2 * 128) + 5120),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", 48 * (2 * 5120 + 5120 + 2 * 1024) + 5120),
])
def test_public_models_parameters_are_their_shapes_plus_norms_and_biases(key, rest):
    """The parameter counts of the catalog's public models (config.json shapes): everything but
    the norms (and Qwen2's q/k/v biases) is in the shapes."""
    facts = CATALOG[key]
    assert facts.parameters - facts.structural_parameters() == rest
