"""Measured figures as input (core/capacity/measured.py, core/capacity/comparison.py), a card's measured CUDA total, and the
checkpoint's own rope_scaling in the window vLLM derives (vLLM v0.11.0 ``_get_and_verify_max_len``).

Sources: seed 002 reasoning.yaml (15.55 GiB, 137k tokens, 2.09x), seed 000 clef-candle.yaml
("About 66.8K KV tokens"), seed 001 coder-14b-fp16.yaml (11635 MB a rank); vLLM's
``_get_and_verify_max_len`` for the window.
"""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from core import rulebook
from core.capacity import comparison as capacity_measured
from core.capacity import estimator as capacity
from core.capacity.inventory import CardSpec, ClusterInventory
from core.capacity.measured import Measured
from core.catalog import modelfacts
from core.catalog.modelfacts import CATALOG, CheckpointRopeScaling, ModelEntry, ModelFacts, facts_from_config_json
from core.engines.config import ServerSettings
from tests.paths import PROD_STACK_FILE, ROOT
from tests.policy_harness import FIXTURES
from tools.offline.manifests import load_manifest_dir, load_stack_file
from tools.offline.summary import capacity_section, inventory_of

V100 = CardSpec(product="Tesla-V100-PCIE-32GB", memory_mib=32768, compute_capability="7.0", nvlink=False,
                hbm_bandwidth_gb_s=900)
REASONING = CATALOG["Qwen/Qwen3-30B-A3B-GPTQ-Int4"]
REASONING_SETTINGS = ServerSettings(engine="vllm", tp=1, gpu_memory_utilization=0.9, max_model_len=65536,
                                    dtype="float16", image="vllm/vllm-openai:v0.11.0")
SEED_002 = Measured(weights_gib=15.55, kv_tokens=137000, concurrency=2.09, engine_version="v0.11.0",
                    source="seed 002 reasoning.yaml")


# --- the checkpoint's rope_scaling -----------------------------------------------------------

def _config(rope, arch="LlamaForCausalLM", max_pos=4096):
    return {"architectures": [arch], "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "hidden_size": 4096, "intermediate_size": 11008, "vocab_size": 32000, "max_position_embeddings": max_pos,
            "rope_scaling": rope}


@pytest.mark.parametrize(("rope", "window"), [  # noqa: PT006
    ({"type": "linear", "factor": 4.0}, 16384),                      # linear x4: four times max_position_embeddings
    ({"rope_type": "dynamic", "factor": 2.0}, 8192),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 2048}, 8192),  # from the original
    ({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}, 4096),  # left as it is
    ({"rope_type": "longrope", "factor": 32.0}, 4096),
    (None, 4096),
])
def test_the_checkpoints_rope_scaling_sets_the_window_vllm_derives(rope, window):
    facts = facts_from_config_json(_config(rope))
    assert modelfacts.derived_max_model_len(facts.max_position_embeddings, facts.window_rope_scaling()) == window


def test_vllm_context_window_accepts_what_the_checkpoints_linear_x4_allows():
    facts = facts_from_config_json(_config({"type": "linear", "factor": 4.0}))
    rope = facts.window_rope_scaling()
    assert rulebook.context_window("m", 4096, 16384, rope, False, from_checkpoint=True) is None
    breach = rulebook.context_window("m", 4096, 16385, rope, False, from_checkpoint=True)
    assert breach is not None
    assert "its config.json's rope scaling {\"rope_type\":\"linear\",\"factor\":4.0} stretches that to 16,384" in breach.wrong


def test_a_manifests_rope_scaling_replaces_the_checkpoints_whole():
    facts = facts_from_config_json(_config({"type": "linear", "factor": 4.0}))
    override = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4096}
    assert modelfacts.derived_max_model_len(4096, facts.window_rope_scaling(override)) == 8192


def test_gemma3_window_is_already_scaled():
    """VLLM skips rope scaling for the gemma3 model type: max_position_embeddings 131,072 is the window."""
    facts = facts_from_config_json(_config({"rope_type": "linear", "factor": 8.0}, "Gemma3ForCausalLM", 131072))
    assert facts.rope_scaling == CheckpointRopeScaling(rope_type="linear", factor=8.0)
    assert facts.window_rope_scaling() is None
    assert facts.window_rope_scaling({"rope_type": "linear", "factor": 2.0}) is None


def test_a_rope_scaling_without_a_type_is_refused():
    with pytest.raises(ValueError, match="rope_type"):
        facts_from_config_json(_config({"factor": 4.0}))


def test_the_catalogs_qwen_models_carry_no_rope_scaling():
    """config.json rope_scaling null for every catalog entry (coder.yaml: "rope_scaling is null")."""
    assert all(f.rope_scaling is None for f in CATALOG.values())


def test_vllm_without_max_model_len_takes_the_derived_window():
    facts = ModelFacts.model_validate({**REASONING.model_dump(), "rope_scaling": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}})
    e = capacity.estimate(facts, V100, ServerSettings(engine="vllm", tp=1, dtype="float16"))
    assert e.max_model_len == 131072


# --- measured figures ------------------------------------------------------------------------

def test_a_measurement_gives_at_least_one_figure_and_a_source():
    with pytest.raises(ValidationError, match="at least one of kv_tokens"):
        Measured(source="x")
    with pytest.raises(ValidationError):
        Measured(kv_tokens=1)  # no source
    with pytest.raises(ValidationError):
        Measured(kv_tokens=1, source="x", date="4 Nov")


def test_reasoning_measured_beside_the_estimate_at_vllms_defaults():
    """Seed 002: 137k tokens, 2.09x; the estimate at vLLM's defaults 124,400 and 1.90x (-9.2%), weights +0.6%."""
    e = capacity.estimate(REASONING, V100, REASONING_SETTINGS)
    figures = {f.name: f for f in capacity_measured.compare(SEED_002, e)}
    assert figures["weights/card GiB"].estimated == pytest.approx(15.65, abs=0.01)
    assert not figures["weights/card GiB"].disagrees
    assert figures["KV tokens"].estimated == 124400 and figures["KV tokens"].disagrees
    assert round(figures["KV tokens"].delta, 3) == -0.092
    assert figures["concurrency"].disagrees
    assert "vllm 0.11.0" in capacity_measured.assumptions(e) and "31.75 GiB" in capacity_measured.assumptions(e)


def test_kv_gib_counts_in_whole_blocks():
    """Seed 001: 11635 MB a rank is 1,939 blocks of 64 tokens (4 KV heads a rank), 124,096 tokens."""
    e = capacity.estimate(CATALOG["Qwen/Qwen2.5-Coder-14B-Instruct"], V100,
                          ServerSettings(engine="candle-vllm", tp=2, kv_fraction=0.85, dtype="f16"))
    assert capacity_measured.kv_tokens(Measured(kv_gib=11635 / 1024, source="001"), e) == 124096


def test_vllm_is_judged_against_the_measured_pool():
    e = capacity.estimate(REASONING, V100, REASONING_SETTINGS)
    low = capacity_measured.judged(e, Measured(kv_tokens=60000, source="a log"))
    assert low.kv_tokens == 60000 and not low.fits_kv
    breach = rulebook.capacity.kv_cache_fits("qwen3", low)
    assert breach is not None and "about 60,000 tokens" in breach.wrong
    high = capacity_measured.judged(e, SEED_002)
    assert high.fits_kv and high.concurrency == pytest.approx(137000 / 65536, abs=0.01)
    assert capacity_measured.judged(e, None) is e


def test_candle_clamps_clef_flash_to_the_measured_66_8k():
    """Seed 000: "About 66.8K KV tokens"; candle-vllm caps the context at the pool and starts."""
    prod = load_stack_file(PROD_STACK_FILE)
    clef = ModelEntry.model_validate(prod["llm-serving:models"]["clef-flash"]).resolve(ROOT)
    e = capacity.estimate(clef, V100, ServerSettings(engine="candle-vllm", tp=1, kv_fraction=0.3, dtype="f16",
                                                     max_num_seqs=4, prefill_chunk_size=1024))
    assert e.kv_tokens == 448512 and e.max_model_len == 262144
    j = capacity_measured.judged(e, Measured(kv_tokens=66800, source="000", facts_confirmed=False))
    assert j.max_model_len == 66800 and j.fits_kv


def test_a_cards_measured_cuda_total_wins():
    card = V100.model_copy(update={"cuda_total_mib": 32000})
    assert card.cuda_total_bytes == 32000 * 2**20
    e = capacity.estimate(REASONING, card, REASONING_SETTINGS)
    assert e.card_memory_gib == pytest.approx(31.25)
    assert any("as measured" in n for n in e.notes)


def test_the_inventory_takes_the_workloads_measured_figures():
    prod = load_stack_file(PROD_STACK_FILE)
    inv = ClusterInventory.model_validate(prod["llm-serving:cluster"])
    merged = inv.with_workloads_measured(prod["llm-serving:workloads"])
    assert sorted(merged.measured) == ["candle-vllm", "clef-candle", "reasoning"]
    assert merged.measured["reasoning"].kv_tokens == 137000
    with pytest.raises(ValueError):  # noqa: PT011
        inv.with_workloads_measured({"x": {"measured": {"source": "no figure"}}})


def test_the_preview_shows_prods_measurements_beside_the_estimates():
    config = copy.deepcopy(load_stack_file(PROD_STACK_FILE))
    fixtures = FIXTURES / "kv-cache-fits-max-model-len" / "allowed"
    resources = [r for n in ("candle-vllm-14b-tp2.yaml", "clef-candle.yaml", "reasoning-64k.yaml")
                 for r in load_manifest_dir(fixtures / n)]
    lines = capacity_section(resources, config, inventory_of(config), ROOT)
    text = "\n".join(lines)
    assert "measured reasoning (v0.11.0): weights/card GiB 15.55 measured, 15.65 estimated (+0.6%)" in text
    assert "KV tokens 137,000 measured, 124,400 estimated (-9.2%)" in text
    assert "candle-vllm clamps the context to the measured pool: 66,800 tokens, not 262,144" in text
    assert "the model's facts are unconfirmed" in text


def test_the_pack_judges_a_vllm_server_against_its_measured_pool():
    """kv-cache-fits-max-model-len reads the workloads' measured figures beside the inventory: a
    measured pool below max-model-len is refused (vLLM refuses to start), whatever the estimate."""
    from policylib.pack import policy
    from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config

    text = (FIXTURES / "kv-cache-fits-max-model-len" / "allowed" / "reasoning-64k.yaml").read_text(encoding="utf-8")
    config = copy.deepcopy(load_stack_file(DEFAULT_STACK_FILE))
    try:
        use_stack_config(config)
        assert run_policy(policy("kv-cache-fits-max-model-len"), manifests(text)) == []
        config["llm-serving:workloads"] = {"reasoning": {"measured": {"kv_tokens": 60000, "source": "a log"}}}
        use_stack_config(config)
        (violation,) = run_policy(policy("kv-cache-fits-max-model-len"), manifests(text))
        assert "the pool holds about 60,000 tokens" in violation.message
    finally:
        use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
