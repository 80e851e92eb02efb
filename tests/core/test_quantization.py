"""Quantization formats of current checkpoints: config.json's
quantization_config read for the weights estimate and the per-card rules; an unknown method is
a stack-file problem with its key path (exit 2), not three mandatory violations."""

from __future__ import annotations

import copy
import json

import pytest

from core.capacity import estimator as capacity
from core.capacity.inventory import CardSpec
from core.catalog import cards, modelfacts
from core.engines.config import ServerSettings
from core.judging.problems import ConfigError
from stackfile.loader import load_stack_config
from tests.paths import PROD_STACK_FILE, ROOT
from tests.policy_harness import DEFAULT_STACK_FILE
from tools.offline.manifests import load_stack_file

GPT_OSS = ROOT / "policies" / "fixtures" / "gpt-oss-120b.config.json"
H200 = CardSpec(product="NVIDIA-H200", memory_mib=143771, compute_capability="9.0", nvlink=True, hbm_bandwidth_gb_s=4800)


def _gpt_oss() -> dict:
    return json.loads(GPT_OSS.read_text())


def test_gpt_oss_120b_mxfp4_fits_one_141_gb_card():
    facts = modelfacts.facts_from_config_json(_gpt_oss())
    assert facts.quantization == modelfacts.Quantization(method="mxfp4", bits=4, group_size=32, experts_only=True)
    assert (facts.num_experts, facts.moe_intermediate_size, facts.is_hybrid) == (128, 2880, False)
    assert round(facts.parameters / 1e9, 1) == 116.8
    e = capacity.estimate(facts, H200, ServerSettings("vllm"))
    # The published checkpoint is 60.8 GiB; unquantized it would be 217 GiB.
    assert round(e.weights_gib_per_card, 1) == 60.7
    assert e.fits_weights and e.fits_kv


def test_mxfp4_needs_sm80_and_runs_on_hopper():
    assert cards.quantization_min_sm("mxfp4") == 80
    assert cards.quantization_runs_on("mxfp4", 90) and not cards.quantization_runs_on("mxfp4", 70)


@pytest.mark.parametrize(
    "config, expected",
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}, ("gptq", 4, 128)),
        ({"quant_method": "awq", "w_bit": 4, "q_group_size": 64, "version": "gemm"}, ("awq", 4, 64)),
        ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, ("fp8", 8, -1)),
        ({"quant_method": "compressed-tensors", "format": "pack-quantized",
          "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128,
                                                                            "strategy": "group"}}}}, ("compressed-tensors", 4, 128)),
        ({"quant_method": "compressed-tensors", "format": "float-quantized",
          "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}},
         ("compressed-tensors", 8, -1)),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, ("bitsandbytes", 4, 64)),
        ({"quant_method": "bitsandbytes", "load_in_8bit": True}, ("bitsandbytes", 8, -1)),
    ],
)
def test_each_method_is_read_from_config_json(config, expected):
    q = modelfacts.quantization_from_config(config)
    assert (q.method, q.bits, q.group_size) == expected


def _dense(quant: dict) -> modelfacts.ModelFacts:
    raw = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256,
           "max_position_embeddings": 131072, "quantization_config": quant}
    return modelfacts.facts_from_config_json(raw)


def test_weights_shrink_by_the_bits_of_each_method():
    bf16 = modelfacts.facts_from_config_json({k: v for k, v in {
        "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072}.items()})
    gib = {name: capacity.weights_per_card(f) / 2**30 for name, f in {
        "bf16": bf16,
        "fp8": _dense({"quant_method": "fp8"}),
        "int4-ct": _dense({"quant_method": "compressed-tensors",
                           "config_groups": {"g": {"weights": {"num_bits": 4, "group_size": 128}}}}),
        "nf4": _dense({"quant_method": "bitsandbytes", "load_in_4bit": True}),
        "awq": _dense({"quant_method": "awq", "bits": 4, "group_size": 128}),
    }.items()}
    assert round(gib["bf16"], 2) == 14.96  # Llama-3.1-8B: 8.03e9 parameters x 2 bytes
    # Linear layers: 32 x 218.1e6 = 6.98e9 parameters at one byte (6.50 GiB); embeddings and LM
    # head (2 x 525.3e6) stay 16-bit (1.96 GiB).
    assert round(gib["fp8"], 2) == 8.46
    assert 5.0 < gib["int4-ct"] < 5.8 and 5.0 < gib["nf4"] < 5.8 and 5.0 < gib["awq"] < 5.8


def test_an_unknown_method_names_its_key_path():
    with pytest.raises(ValueError, match=r"quantization_config.quant_method is 'hqq', which the weights estimate does not know"):
        modelfacts.quantization_from_config({"quant_method": "hqq"})


def test_an_unknown_method_in_config_json_is_a_stack_file_problem(tmp_path):
    raw = _gpt_oss()
    raw["quantization_config"] = {"quant_method": "hqq", "nbits": 4}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(raw))
    config = copy.deepcopy(load_stack_file(DEFAULT_STACK_FILE))
    models = dict(config["llm-serving:models"])
    models["odd"] = {"config_json": str(path), "hf_id": "someone/odd"}
    config["llm-serving:models"] = models
    config.setdefault("llm-serving:namespace", "llm-serving")
    with pytest.raises(ConfigError) as err:
        load_stack_config(config)
    (problem,) = [p for p in err.value.problems if "models.odd" in p.path]
    assert problem.path == "llm-serving:models.odd.config_json"
    assert "quantization_config.quant_method is 'hqq'" in problem.rule


def test_the_gpt_oss_config_json_loads_in_a_stack_file():
    """Given as config_json, gpt-oss's config.json (quant_method mxfp4) is understood, not
    three 'cannot judge' violations: the prod stack file with it added loads."""
    config = copy.deepcopy(load_stack_file(PROD_STACK_FILE))
    config["llm-serving:models"]["gpt-oss"] = {"config_json": str(GPT_OSS), "hf_id": "openai/gpt-oss-120b"}
    loaded = load_stack_config(config)
    assert loaded.model_facts("gpt-oss").quantization.method == "mxfp4"


def test_analyze_refuses_an_inventory_with_an_unknown_quantization_with_its_key_path(tmp_path, capsys):
    """Exit 2 with the key path, nothing judged."""
    import yaml

    from tools import analyze

    raw = _gpt_oss()
    raw["quantization_config"] = {"quant_method": "hqq"}
    (tmp_path / "config.json").write_text(json.dumps(raw))
    inventory = load_stack_file(ROOT / "policies" / "fixtures" / "Pulumi.public.yaml")
    inventory["llm-serving:models"] = {"odd": {"config_json": str(tmp_path / "config.json"), "hf_id": "someone/odd"}}
    (tmp_path / "Pulumi.odd.yaml").write_text(yaml.safe_dump({"config": inventory}))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "d.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert analyze.main(["--manifests", str(tmp_path / "m"), "--inventory", str(tmp_path / "Pulumi.odd.yaml")]) == 2
    err = capsys.readouterr().err
    assert "llm-serving:models.odd.config_json" in err
    assert "quantization_config.quant_method is 'hqq'" in err and "Traceback" not in err
