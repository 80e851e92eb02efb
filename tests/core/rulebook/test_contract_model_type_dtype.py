"""The engine contract's model_type dtype rule (core/data/vllm_releases.json ``refused_by_model_type``,
read from each release's ``_check_valid_dtype``): float16 written for a gemma2/gemma3/glm4/plamo2 model
is refused at start on any card, the fix named by the card; auto is not refused (the release's
``_resolve_auto_dtype`` leaves float16 out for those types). Source: intel/llm-scaler 270."""

from __future__ import annotations

from core.catalog import modelfacts
from core.engines import contracts
from core.rulebook import contract

#: A config.json in the form of google/gemma-3-27b-it's (text_config nested, model_type gemma3 at the top).
GEMMA3 = {
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {"model_type": "gemma3_text", "num_hidden_layers": 62, "num_attention_heads": 32,
                    "num_key_value_heads": 16, "head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
                    "vocab_size": 262208, "max_position_embeddings": 131072},
}


def _facts(model_type: str | None = "gemma3", torch_dtype: str = "bfloat16") -> modelfacts.ModelFacts:
    raw = {**GEMMA3, "torch_dtype": torch_dtype}
    if model_type is None:
        raw.pop("model_type")
    else:
        raw["model_type"] = model_type
    return modelfacts.facts_from_config_json(raw)


def test_config_json_gives_the_top_level_model_type():
    assert _facts().model_type == "gemma3"
    assert _facts(None).model_type is None
    assert modelfacts.CATALOG["Qwen/Qwen2.5-Coder-14B-Instruct"].model_type is None  # the catalog's stays unknown


def test_written_float16_is_refused_naming_the_release_its_function_and_the_card():
    rel = contracts.release("0.11.0")
    for written in ("float16", "half"):
        hit = contract.model_type_dtype(rel, written, _facts(), 75, "Tesla-T4")
        assert hit is not None
        assert f"--dtype {written} on a model of model_type gemma3: vLLM 0.11.0 refuses float16" in hit.wrong
        assert "vllm/config/model.py _check_valid_dtype" in hit.wrong and "Numerical instability" in hit.wrong
        assert "sm_75, below bfloat16's sm_80" in hit.fix and "cannot run this model in 16 bits" in hit.fix
        assert "--dtype float32" in hit.fix
    on_v100 = contract.model_type_dtype(rel, "half", _facts(), 70, "Tesla-V100-PCIE-32GB")
    assert on_v100 is not None and "Tesla-V100-PCIE-32GB is sm_70" in on_v100.fix


def test_on_a_bfloat16_card_the_fix_is_bfloat16_and_bfloat16_itself_passes():
    rel = contracts.release("0.19.1")
    hit = contract.model_type_dtype(rel, "float16", _facts("gemma2"), 80, "A100-SXM4-80GB")
    assert hit is not None and hit.fix == "set --dtype bfloat16 (the A100-SXM4-80GB is sm_80)"
    assert contract.model_type_dtype(rel, "bfloat16", _facts("gemma2"), 80, "A100-SXM4-80GB") is None
    no_card = contract.model_type_dtype(rel, "float16", _facts("glm4"), None, None)
    assert no_card is not None and "bfloat16 on a card of sm_80 or newer" in no_card.fix


def test_auto_on_a_card_without_bfloat16_is_not_refused():
    """Auto on sm_70/sm_75: the release's supported dtypes less float16 for the type leave float32."""
    rel = contracts.release("0.11.0")
    for sm in (70, 75):
        assert contract.model_type_dtype(rel, "auto", _facts(), sm, "card") is None
        assert contract.model_type_dtype(rel, None, _facts(torch_dtype="float32"), sm, "card") is None


def test_a_type_not_in_the_list_or_not_known_is_not_judged():
    rel = contracts.release("0.11.0")
    assert contract.model_type_dtype(rel, "half", _facts("qwen3"), 70, "card") is None
    assert contract.model_type_dtype(rel, "half", _facts(None), 70, "card") is None
    assert contract.model_type_dtype(rel, "half", None, 70, "card") is None


def test_a_release_whose_list_lacks_the_type_is_not_judged():
    # 0.10.1.1's _FLOAT16_NOT_SUPPORTED_MODELS has gemma3 but not gemma3_text (0.11.0 added it)
    old, new = contracts.release("0.10.1.1"), contracts.release("0.11.0")
    assert contract.model_type_dtype(old, "half", _facts("gemma3_text"), 75, "Tesla-T4") is None
    assert contract.model_type_dtype(new, "half", _facts("gemma3_text"), 75, "Tesla-T4") is not None
