"""The capacity estimator against public vLLM v0.19.0 startup logs not used for any constant.

Source: the llm-d planner's accuracy sweep, vLLM v0.19.0 on an H100-80GB (NVLink), each run's
startup log in https://github.com/llm-d-incubation/llm-d-planner/tree/d3121e059da88662db39a926a3ead964be97359b/accuracy/results/v0.19.0/logs
and its figures in ``results_raw.csv`` beside them: "Model loading took X GiB" (weights),
"Available KV cache memory", "GPU KV cache size: N tokens". Every run is ``vllm serve <model>
--gpu-memory-utilization 0.95 --max-model-len 8192`` (bf16, no ``--max-num-seqs`` /
``--max-num-batched-tokens``: v0.19's 8192 / 1024 on an 80 GB card), unless the case says
otherwise. Earlier constants came from this project's 0.15-0.17 version sweep of Qwen3-14B
(tests/core/test_capacity_public.py); none of these models or this release was used for one. The
TP >= 2 runs' non-torch memory is of the kind COMM_NVLINK_GIB was read from (this report's
"about 2 GiB a card"), so they check the split of weights and KV across ranks, not the runtime.

The models' facts are their config.json shapes (Hugging Face, ``config.json`` of each repo);
the parameter count is the shapes' (norms and biases left out, under 0.1%).
"""

from __future__ import annotations

import pytest

from core.capacity import estimator as capacity
from core.capacity.estimator import GIB, estimate
from core.capacity.inventory import CardSpec
from core.catalog.modelfacts import CATALOG, ModelFacts, Quantization, facts_from_config_json
from core.engines.config import ServerSettings

LOGS = ("https://github.com/llm-d-incubation/llm-d-planner/blob/d3121e059da88662db39a926a3ead964be97359b/"
        "accuracy/results/v0.19.0/logs/")
H100 = CardSpec(product="NVIDIA-H100-80GB-HBM3", memory_mib=81920, compute_capability="9.0", nvlink=True,
                hbm_bandwidth_gb_s=3350)


def config(arch: str, layers: int, hidden: int, heads: int, kv: int, inter: int, vocab: int, window: int,
           *, tie: bool = False, head_dim: int | None = None) -> ModelFacts:
    raw = {"architectures": [arch], "num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
           "num_key_value_heads": kv, "intermediate_size": inter, "vocab_size": vocab,
           "max_position_embeddings": window, "tie_word_embeddings": tie, "torch_dtype": "bfloat16"}
    if head_dim:
        raw["head_dim"] = head_dim
    return facts_from_config_json(raw)


LLAMA_8B = CATALOG["meta-llama/Llama-3.1-8B-Instruct"]
MODELS: dict[str, ModelFacts] = {
    "meta-llama/Llama-3.1-8B-Instruct": LLAMA_8B,
    "Qwen/Qwen2.5-7B-Instruct": config("Qwen2ForCausalLM", 28, 3584, 28, 4, 18944, 152064, 32768),
    "Qwen/Qwen3-8B": config("Qwen3ForCausalLM", 36, 4096, 32, 8, 12288, 151936, 40960, head_dim=128),
    "codellama/CodeLlama-7b-hf": config("LlamaForCausalLM", 32, 4096, 32, 32, 11008, 32016, 16384),
    "microsoft/phi-4": config("Phi3ForCausalLM", 40, 5120, 40, 10, 17920, 100352, 16384),
    "ibm-granite/granite-3.1-8b-instruct": config("GraniteForCausalLM", 40, 4096, 32, 8, 12800, 49155, 131072, tie=True),
    # The reasoning workload's architecture (seed 002 reasoning.yaml), unquantized.
    "Qwen/Qwen3-30B-A3B": CATALOG["Qwen/Qwen3-30B-A3B-GPTQ-Int4"].model_copy(update={"quantization": None}),
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16: GPTQ 4-bit, group 128, run in float16.
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16": LLAMA_8B.model_copy(update={
        "quantization": Quantization(method="gptq", bits=4, group_size=128), "torch_dtype": "float16"}),
}

#: (log file, model, TP, PP, extra settings, logged weights GiB, logged KV tokens, the estimate's tokens).
RUNS = [
    ("meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192.log", "meta-llama/Llama-3.1-8B-Instruct", 1, 1, {},
     14.99, 476_016, 476_976),
    ("meta-llama-llama-3-1-8b---h100-80gb--tp2pp1dp1--8192.log", "meta-llama/Llama-3.1-8B-Instruct", 2, 1, {},
     7.51, 1_044_688, 1_046_176),
    ("meta-llama-llama-3-1-8b---h100-80gb--tp4pp1dp1--8192.log", "meta-llama/Llama-3.1-8B-Instruct", 4, 1, {},
     3.77, 2_209_792, 2_214_896),
    ("meta-llama-llama-3-1-8b---h100-80gb--tp1pp2dp1--8192.log", "meta-llama/Llama-3.1-8B-Instruct", 1, 2, {},
     7.51, 1_075_312, 1_076_496),
    ("meta-llama-llama-3-1-8b---h100-80gb--tp1pp4dp1--8192.log", "meta-llama/Llama-3.1-8B-Instruct", 1, 4, {},
     4.26, 2_257_264, 2_259_504),
    ("meta-llama---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8.log", "meta-llama/Llama-3.1-8B-Instruct", 1, 1,
     {"kv_cache_dtype": "fp8"}, 14.99, 952_032, 953_968),
    ("qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--8192.log", "Qwen/Qwen2.5-7B-Instruct", 1, 1, {},
     14.25, 1_096_000, 1_098_480),
    ("qwen-qwen2-5-7b-instruct--h100-80gb--tp2pp1dp1--8192.log", "Qwen/Qwen2.5-7B-Instruct", 2, 1, {},
     7.12, 2_390_592, 2_393_296),
    ("qwen-qwen2-5-7b-instruct--h100-80gb--tp4pp1dp1--8192.log", "Qwen/Qwen2.5-7B-Instruct", 4, 1, {},
     3.55, 5_043_280, 5_052_208),
    ("qwen-qwen3-8b--h100-80gb--tp1pp1dp1--8192.log", "Qwen/Qwen3-8B", 1, 1, {}, 15.27, 418_688, 419_344),
    ("codellama-codellama-7b-h--h100-80gb--tp1pp1dp1--8192.log", "codellama/CodeLlama-7b-hf", 1, 1, {},
     12.56, 126_256, 126_640),
    ("microsoft-phi-4--h100-80gb--tp1pp1dp1--8192.log", "microsoft/phi-4", 1, 1, {}, 27.39, 241_568, 242_544),
    ("granite-3-1-8b--h100-80gb--tp1pp1dp1--8192.log", "ibm-granite/granite-3.1-8b-instruct", 1, 1, {},
     15.25, 384_432, 387_232),
    ("qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192.log", "Qwen/Qwen3-30B-A3B", 1, 1, {}, 56.88, 168_288, 169_344),
    ("w4a16-redhatai-lla--h100-80gb--tp1pp1dp1--8192-dtf16.log", "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16",
     1, 1, {"dtype": "float16"}, 5.38, 554_704, 555_776),
]


def run_estimate(model: str, tp: int, pp: int, extra: dict):
    settings = {"dtype": "bfloat16", **extra}
    return estimate(MODELS[model], H100, ServerSettings("vllm", tp=tp, pp=pp, gpu_memory_utilization=0.95,
                                                        max_model_len=8192, image="vllm/vllm-openai:v0.19.0", **settings))


@pytest.mark.parametrize("log, model, tp, pp, extra, weights, tokens, estimated", RUNS, ids=[r[0] for r in RUNS])
def test_v0_19_startup_logs_within_5_percent(log, model, tp, pp, extra, weights, tokens, estimated):
    """Weights within 1% of "Model loading took", the KV cache within 5% of "GPU KV cache size"
    (the pinned figure is the estimate's today, so a change to it shows here)."""
    e = run_estimate(model, tp, pp, extra)
    assert e.engine_version == (0, 19, 0) and round(e.card_memory_gib, 2) == 79.19
    assert abs(e.weights_gib_per_card - weights) <= 0.01 * weights, LOGS + log
    assert abs(e.kv_tokens - tokens) <= 0.05 * tokens, LOGS + log
    assert e.kv_tokens == estimated


def test_share_within_5_percent_is_every_run():
    """The share recorded in docs/capacity.md: 15 of 15 runs within 5%, every one within 0.8%.

    Changed on evidence (docs/capacity-model.md names both terms): Qwen3-30B-A3B was the largest
    miss (+4.8%) while the estimate took its activation as the sampler warm-up alone (2.06 GiB
    against the logged 2.68); v0.19.0 keeps the fused-MoE workspace (0.5 GiB at 8,192 tokens)
    under the warm-up, and the sort-free sampler holds 13 bytes a logit, not 12: 2.70 GiB (+0.7%)
    and +0.6% of the logged KV tokens."""
    misses = {r[1] + f" TP={r[2]} PP={r[3]}" + str(r[4]): run_estimate(r[1], r[2], r[3], r[4]).kv_tokens / r[6] - 1
              for r in RUNS}
    assert all(abs(m) <= 0.008 for m in misses.values()), misses
    moe = run_estimate("Qwen/Qwen3-30B-A3B", 1, 1, {})
    assert abs(moe.activation_gib - 2.68) <= 0.01 * 2.68
    assert round(capacity.vllm_moe_workspace_bytes(MODELS["Qwen/Qwen3-30B-A3B"], 1, 8192, dtype="bfloat16") / GIB, 2) == 0.5


def test_pipeline_stages_add_no_all_reduce_buffers():
    """The PP=2 / PP=4 logs show 0.07 GiB of non-torch memory a rank, the TP=2 / TP=4 ones
    2.07-2.13: only tensor parallelism adds NCCL / custom all-reduce buffers
    (core.capacity.estimator.runtime_bytes takes the TP group)."""
    pp2 = run_estimate("meta-llama/Llama-3.1-8B-Instruct", 1, 2, {})
    tp2 = run_estimate("meta-llama/Llama-3.1-8B-Instruct", 2, 1, {})
    assert round(pp2.runtime_gib, 2) == 0.15 and round(tp2.runtime_gib, 2) == 2.0


#: The non-torch memory a rank's profile logged (results_raw.csv ``non_torch_forward_gib``), by TP
#: width, over every run of the sweep that started: TP=1 0.24-0.27 (39 of 42 runs), TP=2 2.06-2.11
#: (10 runs), TP=4 2.13-2.21 (5 runs).
NON_TORCH_BY_TP = {1: (0.24, 0.27), 2: (2.06, 2.11), 4: (2.13, 2.21)}


@pytest.mark.parametrize("tp", sorted(NON_TORCH_BY_TP))
def test_runtime_by_tp_width_over_nvlink_meets_every_logged_run(tp):
    """core.capacity.estimator.runtime_bytes by TP width over NVLink against the sweep's logged non-torch memory:
    the all-reduce adds 1.8-1.9 GiB at TP=2 and TP=4 alike (over 0.24-0.27 at TP=1), which the one
    figure COMM_NVLINK_GIB (1.85) over the TP=1 figure (0.15, from vLLM 0.15-0.17) puts at most 0.21
    GiB under every logged run (TP=4's 2.21), never above: 0.3% of the card's budget. A wider group
    (TP=8) is not known and the estimate says so."""
    low, high = NON_TORCH_BY_TP[tp]
    runtime = capacity.runtime_bytes("vllm", tp, H100) / GIB
    assert runtime <= low and high - runtime <= 0.21 + 1e-9
    wide = run_estimate("meta-llama/Llama-3.1-8B-Instruct", 8, 1, {})
    assert any("TP=8 over NVLink" in u for u in wide.unknowns)
    assert not run_estimate("meta-llama/Llama-3.1-8B-Instruct", 4, 1, {}).unknowns
