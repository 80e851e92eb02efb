"""The capacity estimator against public vLLM startup logs of MLA and MoE models, new cards and
releases, none used for a constant unless its test says so.

Sources (each test names its own):

- the llm-d planner's accuracy sweep, vLLM v0.19.0 on an H100-80GB (NVLink),
  https://github.com/llm-d-incubation/llm-d-planner/tree/d3121e059da88662db39a926a3ead964be97359b/accuracy/results/v0.19.0/logs
  (Apache-2.0): every run ``vllm serve <model> --gpu-memory-utilization 0.95 --max-model-len 8192``,
  bf16, v0.19's 8192 batched tokens / 1,024 sequences on an 80 GB card;
- vllm-project/vllm PR #20665 (https://github.com/vllm-project/vllm/pull/20665, the reproducer
  of 2025-07-09, vLLM 0.9.2 dev): DeepSeek-V2-Lite on 4 x L4, TP=2 PP=2;
- vllm-project/vllm PR #2031 (https://github.com/vllm-project/vllm/pull/2031, 2023-12-12, the
  profiling change released in vLLM 0.2.5): Llama-2-7B on one A100-80GB;
- vllm-project/vllm PR #14447 (https://github.com/vllm-project/vllm/pull/14447, a comment of
  2025-04-12, vLLM 0.8.3rc2, V0 engine): DeepSeek-V3-0324-AWQ on 16 x RTX 3090, TP=16;
- vllm-project/vllm #15607 (https://github.com/vllm-project/vllm/issues/15607, vLLM 0.8.2):
  DeepSeek-Coder-V2-Lite at TP=4, weights only.

The models' facts are their config.json fields as Hugging Face publishes them (``CONFIGS``,
trimmed to what the estimate reads), through :func:`core.catalog.modelfacts.facts_from_config_json`, so
the reader is checked with them: DeepSeek's ``n_routed_experts`` / ``n_shared_experts`` /
``first_k_dense_replace`` and MLA's ``kv_lora_rank`` / ``qk_rope_head_dim``, Qwen2-MoE's
``shared_expert_intermediate_size``, Kimi-VL's nested ``text_config``.
"""

from __future__ import annotations

import pytest

from core.capacity import estimator as capacity
from core.capacity.estimator import GIB, estimate, estimate_vllm
from core.capacity.inventory import CardSpec
from core.catalog.modelfacts import ModelFacts, facts_from_config_json
from core.engines.config import ServerSettings

LLM_D = ("https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/"
         "accuracy/results/v0.19.0/logs/")

H100 = CardSpec(product="NVIDIA-H100-80GB-HBM3", memory_mib=81920, compute_capability="9.0", nvlink=True,
                hbm_bandwidth_gb_s=3350)
L4 = CardSpec(product="NVIDIA-L4", memory_mib=24576, compute_capability="8.9", nvlink=False, hbm_bandwidth_gb_s=300)
A100 = CardSpec(product="NVIDIA-A100-SXM4-80GB", memory_mib=81920, compute_capability="8.0", nvlink=True,
                hbm_bandwidth_gb_s=2039)
RTX_3090 = CardSpec(product="NVIDIA-GeForce-RTX-3090", memory_mib=24576, compute_capability="8.6", nvlink=False,
                    hbm_bandwidth_gb_s=936)

_DEEPSEEK_V2_LITE = {
    # https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite-Chat/blob/main/config.json (DeepSeek-V2-Lite's is the same)
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048,
    "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 10944,
    "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": None,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400,
    "max_position_embeddings": 163840, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096},
}
CONFIGS: dict[str, dict] = {
    "deepseek-ai/DeepSeek-V2-Lite-Chat": _DEEPSEEK_V2_LITE,
    # https://huggingface.co/Qwen/Qwen1.5-MoE-A2.7B/blob/main/config.json
    "Qwen/Qwen1.5-MoE-A2.7B": {
        "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048,
        "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
        "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts": 60,
        "num_experts_per_tok": 4, "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936,
        "max_position_embeddings": 8192, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    },
    # https://huggingface.co/mistralai/Mixtral-8x7B-Instruct-v0.1/blob/main/config.json
    "mistralai/Mixtral-8x7B-Instruct-v0.1": {
        "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
        "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000, "max_position_embeddings": 32768,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    },
    # https://huggingface.co/moonshotai/Kimi-VL-A3B-Instruct/blob/main/config.json: a MoonViT vision tower
    # and a DeepSeek-V3 text model (the text_config the estimate reads).
    "moonshotai/Kimi-VL-A3B-Instruct": {
        "architectures": ["KimiVLForConditionalGeneration"], "model_type": "kimi_vl",
        "text_config": {
            "model_type": "deepseek_v3", "hidden_size": 2048, "num_hidden_layers": 27, "num_attention_heads": 16,
            "num_key_value_heads": 16, "intermediate_size": 11264, "moe_intermediate_size": 1408,
            "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
            "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
            "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 163840, "max_position_embeddings": 131072,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        },
    },
    # https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json
    "meta-llama/Llama-2-7b-hf": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
        "max_position_embeddings": 4096, "tie_word_embeddings": False, "torch_dtype": "float16",
    },
    # https://huggingface.co/deepseek-ai/DeepSeek-V3-0324/blob/main/config.json (the architecture; the MTP
    # layer beyond num_hidden_layers is not loaded); cognitivecomputations/DeepSeek-V3-0324-AWQ quantizes
    # it AWQ 4-bit, group 128.
    "cognitivecomputations/DeepSeek-V3-0324-AWQ": {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
        "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
        "first_k_dense_replace": 3, "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
        "max_position_embeddings": 163840, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
    },
}
FACTS: dict[str, ModelFacts] = {name: facts_from_config_json(raw) for name, raw in CONFIGS.items()}


def within(value: float, figure: float, tolerance: float = 0.05) -> bool:
    return abs(value - figure) <= tolerance * figure


def llm_d(model: str, tp: int = 1) -> capacity.Estimate:
    return estimate(FACTS[model], H100, ServerSettings("vllm", tp=tp, dtype="bfloat16", gpu_memory_utilization=0.95,
                                                        max_model_len=8192, image="vllm/vllm-openai:v0.19.0"))


# --- the model facts as vLLM reads config.json --------------------------------------------------


def test_deepseek_config_reads_mla_routed_and_shared_experts_and_dense_layers():
    """As vLLM's deepseek_v2.py reads them: ``n_routed_experts`` experts in every layer from ``first_k_dense_replace``
    on, ``n_shared_experts`` x ``moe_intermediate_size`` of shared MLP beside them, MLA attention
    (``ModelConfig.is_deepseek_mla``: a deepseek_v2/v3 model type with a ``kv_lora_rank``)."""
    lite = FACTS["deepseek-ai/DeepSeek-V2-Lite-Chat"]
    assert (lite.num_experts, lite.n_shared_experts, lite.moe_layers, lite.dense_mlp_layers) == (64, 2, 26, 1)
    assert lite.is_mla and lite.mla_cache_width == 512 + 64 and lite.qk_head_dim == 192
    assert lite.shared_expert_width == 2 * 1408
    assert round(lite.structural_parameters() / 1e9, 2) == 15.71  # "15.7B total parameters" (model card)
    v3 = FACTS["cognitivecomputations/DeepSeek-V3-0324-AWQ"]
    assert (v3.dense_mlp_layers, v3.q_lora_rank, v3.num_experts) == (3, 1536, 256)
    assert round(v3.structural_parameters() / 1e9) == 671  # "671B total parameters" (model card)
    kimi = FACTS["moonshotai/Kimi-VL-A3B-Instruct"]
    assert kimi.is_mla and kimi.vocab_size == 163840  # from the nested text_config
    # A kv_lora_rank on a model type vLLM does not treat as MLA is not read as MLA.
    assert not facts_from_config_json({**_DEEPSEEK_V2_LITE, "model_type": "llama"}).is_mla


def test_qwen2_moe_reads_its_shared_expert():
    """As vLLM's qwen2_moe.py ``Qwen2MoeSparseMoeBlock`` builds it: one shared expert of
    ``shared_expert_intermediate_size`` and its 1-output gate beside the routed experts."""
    qwen = FACTS["Qwen/Qwen1.5-MoE-A2.7B"]
    assert (qwen.num_experts, qwen.shared_expert_width, qwen.moe_layers) == (60, 5632, 24)
    assert round(qwen.structural_parameters() / 1e9, 2) == 14.32  # "14.3B in total" (model card)


def test_mla_caches_the_latent_not_heads_times_head_dim():
    """As vLLM v0.11.0's ``ModelConfig.get_head_size`` with ``use_mla`` has it: kv_lora_rank + qk_rope_head_dim, one
    KV head, no factor 2 (``MLAAttentionSpec``); DeepSeek-V2-Lite 27 x 576 x 2 = 31,104 bytes a token on
    every rank. Before v0.7.1 (or with VLLM_MLA_DISABLE=1) each of the 16 heads caches K and V of 192:
    10.7 times as much. Before the facts knew MLA the estimate took 16 heads of hidden / heads = 128
    (221,184 bytes, 7.1 times the latent: 86% too few tokens)."""
    lite = FACTS["deepseek-ai/DeepSeek-V2-Lite-Chat"]
    assert capacity.kv_bytes_per_token(lite) == 27 * 576 * 2 == capacity.kv_bytes_per_token(lite, 4)
    assert capacity.kv_bytes_per_token(lite, latent=False) == 2 * 27 * 16 * 192 * 2
    old = estimate_vllm(lite, H100, max_model_len=8192, dtype="bfloat16", version=(0, 6, 6))
    new = estimate_vllm(lite, H100, max_model_len=8192, dtype="bfloat16", version=(0, 7, 1))
    assert old.kv_bytes_per_token == 2 * 27 * 16 * 192 * 2 and new.kv_bytes_per_token == 31_104
    assert any("MLA model on vLLM before 0.7.1" in n for n in old.notes)
    assert 1 - capacity.kv_bytes_per_token(lite) / (2 * 27 * 16 * lite.head_dim * 2) > 0.85


# --- llm-d v0.19.0 on an H100-80GB ------------------------------------------------------------


def test_deepseek_v2_lite_chat_mla_moe_shared_experts():
    """llm-d v0.19.0, deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192.log: "Model loading took
    29.43 GiB", activation 1.93 GiB (results_raw.csv), "Available KV cache memory: 43.61 GiB", "GPU KV
    cache size: 1,505,552 tokens". The logged pool over its tokens is 31,103 bytes a token, the MLA
    latent's 31,104. Estimate: weights 29.26 (-0.6%), activation 1.94 (+0.6%: the 1,024-row sampler
    warm-up over the persistent MoE workspace), 1,514,896 tokens (+0.6%)."""
    e = llm_d("deepseek-ai/DeepSeek-V2-Lite-Chat")
    assert within(43.61 * GIB / 1_505_552, e.kv_bytes_per_token, 0.001)
    assert within(e.weights_gib_per_card, 29.43, 0.01)
    assert within(e.activation_gib, 1.93)
    assert within(e.kv_tokens, 1_505_552) and e.kv_tokens == 1_514_896
    assert e.unknowns == ()


def test_qwen1_5_moe_counts_its_shared_expert():
    """llm-d v0.19.0, qwen-qwen1-5-moe-a2-7b--h100-80gb--tp1pp1dp1--8192.log: weights 26.67 GiB,
    activation 2.47, KV 45.83 GiB = 250,304 tokens. Estimate 26.66 (-0.04%), 2.50, 250,752 tokens
    (+0.2%). Without the shared expert (5632 wide, every layer) the weights read 1.5 GiB low."""
    e = llm_d("Qwen/Qwen1.5-MoE-A2.7B")
    assert within(e.weights_gib_per_card, 26.67, 0.01)
    assert within(e.activation_gib, 2.47)
    assert within(e.kv_tokens, 250_304) and e.kv_tokens == 250_752
    raw = {k: v for k, v in CONFIGS["Qwen/Qwen1.5-MoE-A2.7B"].items() if k != "shared_expert_intermediate_size"}
    assert capacity.weights_per_card(facts_from_config_json(raw), dtype="bfloat16") / GIB < 26.67 - 1.5


def test_mixtral_8x7b_at_tp2():
    """llm-d v0.19.0, mistralai-mixtral-8x7b-i--h100-80gb--tp2pp1dp1--8192.log: weights 43.51 GiB a
    rank, activation 1.21, KV 28.44 GiB = 465,936 tokens. Estimate 43.50, 1.18 (-2.8%), 467,888 tokens
    (+0.4%). Its 2.07 GiB of non-torch memory at TP=2 is of the kind COMM_NVLINK_GIB was read from."""
    e = llm_d("mistralai/Mixtral-8x7B-Instruct-v0.1", tp=2)
    assert within(e.weights_gib_per_card, 43.51, 0.01)
    assert within(e.activation_gib, 1.21)
    assert within(e.kv_tokens, 465_936) and e.kv_tokens == 467_888


@pytest.mark.parametrize("tp, weights, tokens, estimated", [(1, 30.74, 1_426_368, 1_468_256),
                                                             (2, 15.53, 1_890_896, 1_918_800)])
def test_kimi_vl_a3b_deepseek_v3_text_model(tp, weights, tokens, estimated):
    """llm-d v0.19.0, moonshotai-kimi-vl-a3b-i--h100-80gb--tp{1,2}pp1dp1--8192.log: weights 30.74 /
    15.53 GiB, KV 1,426,368 / 1,890,896 tokens. The facts are the text model's (DeepSeek-V3 MLA and
    MoE); the MoonViT vision tower and projector (about 1 GiB) are not in them, so the weights read
    3.3% / 4.1% low and the pool +2.9% / +1.5% high: within 5%, the stated reason the vision tower."""
    e = llm_d("moonshotai/Kimi-VL-A3B-Instruct", tp=tp)
    assert within(e.weights_gib_per_card, weights) and e.weights_gib_per_card < weights
    assert within(e.kv_tokens, tokens) and e.kv_tokens == estimated


def test_moe_workspace_is_held_from_v0_19_only():
    """The fused-MoE workspace (core.capacity.estimator.VLLM_MOE_WORKSPACE_FROM) is counted on v0.19.0, not on
    v0.11.0 (the user's figures hold without it), and a release between them says it cannot know."""
    qwen = FACTS["Qwen/Qwen1.5-MoE-A2.7B"]
    assert round(capacity.vllm_moe_workspace_bytes(qwen, 1, 8192, dtype="bfloat16") / GIB, 2) == 0.3
    mid = estimate(qwen, H100, ServerSettings("vllm", dtype="bfloat16", max_model_len=8192, image="vllm/vllm-openai:v0.15.1"))
    assert any("fused-MoE workspace persists" in u for u in mid.unknowns)
    assert not llm_d("Qwen/Qwen1.5-MoE-A2.7B").unknowns


# --- other cards and releases --------------------------------------------------------------------


def test_20665_deepseek_v2_lite_on_four_l4_tp2_pp2():
    """vllm-project/vllm PR #20665: ``vllm serve deepseek-ai/DeepSeek-V2-Lite --max-model-len=1024
    --enforce-eager --tensor-parallel-size=2 --pipeline-parallel-size=2`` on 4 x L4 (vLLM 0.9.2 dev):
    "Available KV cache memory: 12.13 GiB" (ranks 0-1, the first stage's 14 layers) and "11.33 GiB"
    (ranks 2-3, 13 layers and the sampler), "GPU KV cache size: 807,792 tokens" (the first stage's
    pool: 12.13 GiB / (14 x 1,152 bytes)). Estimate: 11.82 and 11.07 GiB, 786,672 tokens (-2.6%);
    the L4's total is derived (core/data/cards.yaml) and the runtime over PCIe is vllm-project/vllm
    #13061's."""
    e = estimate(FACTS["deepseek-ai/DeepSeek-V2-Lite-Chat"], L4,
                 ServerSettings("vllm", tp=2, pp=2, dtype="bfloat16", max_model_len=1024, image="vllm/vllm-openai:v0.9.2"))
    assert capacity.pipeline_stage_layers(27, 2) == [14, 13]
    first, last = e.ranks
    assert within(first.kv_pool_gib, 12.13) and within(last.kv_pool_gib, 11.33)
    assert within(e.kv_tokens, 807_792) and e.kv_tokens == 786_672
    assert e.kv_blocks == first.kv_blocks < last.kv_blocks  # the 14-layer stage binds, as in the log


def test_2031_llama2_7b_on_an_a100_at_vllm_0_2_5_says_the_release_is_not_checked():
    """vllm-project/vllm PR #2031 (released in 0.2.5): Llama-2-7B, TP=1, one A100-80GB: "# GPU
    blocks: 7351" with the PR. Estimate: 7,434 blocks (+1.1%), and the release is older than any the
    estimate was checked on, which its unknowns (the capacity table's notes) say."""
    e = estimate(FACTS["meta-llama/Llama-2-7b-hf"], A100, ServerSettings("vllm", image="vllm/vllm-openai:v0.2.5"))
    assert within(e.kv_blocks, 7_351) and e.kv_blocks == 7_434
    assert any("older than the releases the estimate was checked on" in u for u in e.unknowns)


def test_14447_deepseek_v3_awq_on_sixteen_3090s_weights_and_its_stated_bound():
    """vllm-project/vllm PR #14447 (vLLM 0.8.3rc2, "Initializing a V0 LLM engine", awq_marlin, TP=16 on
    16 x RTX 3090 over PCIe, gpu-memory-utilization 0.99, max_seq_len 8192), a non-driver rank:
    "model weights take 21.21GiB; non_torch_memory takes 0.20GiB; PyTorch activation peak memory
    takes 0.37GiB; the rest of the memory reserved for KV Cache is 1.57GiB".

    Weights: 21.07 GiB (-0.7%), the MLA latent of 61 layers whole on each of the 16 ranks. The pool is
    outside 5% and its bound is stated: the estimate's is a lower bound. The reasons are the two
    terms no log gave it: the runtime of a 16-wide PCIe group (0.55 GiB taken, 0.20 logged, and the
    estimate's unknowns say TP=16 is not known) and the Marlin MoE kernel's forward at 8,192 tokens
    (1.33 GiB counted as fused_experts_impl's caches, 0.37 logged). The V0 engine is the log's, not
    0.8.3's default, so it is given (``v1=False``)."""
    v3 = FACTS["cognitivecomputations/DeepSeek-V3-0324-AWQ"]
    e = estimate_vllm(v3, RTX_3090, tp=16, gpu_memory_utilization=0.99, max_model_len=8192, dtype="bfloat16",
                      version=(0, 8, 3), v1=False)
    assert within(e.weights_gib_per_card, 21.21, 0.01)
    assert e.kv_bytes_per_token == 61 * 576 * 2
    other = e.ranks[1]
    assert other.kv_pool_gib < 1.57  # the stated bound: a lower bound
    unexplained = (other.runtime_gib - 0.20) + (other.activation_gib - 0.37) + (other.weights_gib - 21.21)
    assert abs(other.kv_pool_gib + unexplained - 1.57) < 0.01  # the gap is those terms, nothing else
    assert any("TP=16" in u for u in e.unknowns)
    assert any("against the release's default" in n for n in e.notes)


def test_15607_deepseek_coder_v2_lite_weights_at_tp4():
    """vllm-project/vllm #15607 (vLLM 0.8.2): DeepSeek-Coder-V2-Lite-Instruct (DeepSeek-V2-Lite's
    architecture) at TP=4: "Model loading took 7.3858 GB" a rank (GiB). Estimate 7.36 (-0.3%): the
    MLA's replicated kv_a projection and the experts split four ways."""
    lite = FACTS["deepseek-ai/DeepSeek-V2-Lite-Chat"]
    assert within(capacity.weights_per_card(lite, 4, dtype="bfloat16") / GIB, 7.3858, 0.01)


def test_candle_vllm_says_it_cannot_know_an_mla_cache():
    """candle-vllm's get_cache_config divides by KV heads x head_dim; for an MLA model that is not
    the latent, and the estimate says it cannot know which candle-vllm caches."""
    v100 = CardSpec(product="Tesla-V100-PCIE-32GB", memory_mib=32768, compute_capability="7.0", nvlink=False,
                    hbm_bandwidth_gb_s=900)
    e = capacity.estimate_candle(FACTS["deepseek-ai/DeepSeek-V2-Lite-Chat"], v100, tp=2, kv_fraction=0.5)
    assert any("MLA model on candle-vllm" in u for u in e.unknowns)
    assert not capacity.estimate_candle(FACTS["meta-llama/Llama-2-7b-hf"], v100, kv_fraction=0.5).unknowns
