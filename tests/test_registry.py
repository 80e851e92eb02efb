"""The rule registry: one record a rule, one wording rendered in both audiences' terms."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core import registry, rulebook
from core.modelfacts import CATALOG

V100 = SimpleNamespace(sm=70, product="Tesla-V100-PCIE-32GB", nvlink=False)


def test_every_rule_registered_once_with_source_and_title():
    from policylib.pack import policies  # noqa: PLC0415 - the pack's policies, for their names

    rules = registry.register_all()
    names = {p.name for p in policies()}
    assert len(rules) >= 25
    for rule in rules.values():
        assert rule.title and rule.source, rule.id
        assert rule.policy is None or rule.policy in names, (rule.id, rule.policy)
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(registry.Rule("vllm-context-window", "t", "s", lambda: None))


def test_one_wording_two_audiences_context_window():
    breach = registry.RULES["vllm-context-window"]("qwen3-30b-a3b", 40960, 65536, None, False)
    wrong, fix = breach.render(registry.STACK)
    assert wrong.startswith("max_model_len 65,536 is above model qwen3-30b-a3b's max_position_embeddings 40,960")
    assert fix.endswith("or lower max_model_len to 40,960")
    assert "rope_scaling: {rope_type: yarn, factor: 1.6, original_max_position_embeddings: 40960}" in fix
    wrong, fix = breach.render(registry.MANIFEST)
    assert wrong.startswith("--max-model-len 65,536 is above")
    assert '--hf-overrides={"rope_scaling":{"rope_type":"yarn","factor":1.6,"original_max_position_embeddings":40960}}' in fix
    assert breach.source.startswith("vLLM v0.11.0 _get_and_verify_max_len")


def test_text_for_one_audience_only():
    breach = rulebook.startup_budget(600, 10, 30)
    assert breach.render(registry.STACK)[1] == (
        "raise startup_probe.failure_threshold to at least 61 at a 10 s period, "
        "or leave it unset for 3 x cold_start_seconds")
    assert breach.render(registry.MANIFEST)[1] == "raise startupProbe.failureThreshold to at least 61 at a 10 s period"


def test_finding_and_problem_forms():
    breach = rulebook.half_dtype(V100, "bf16", "candle-vllm")
    finding = breach.finding("Deployment clef-candle, container candle")
    assert finding.render() == ("Deployment clef-candle, container candle: --dtype bf16 needs compute capability 8.0; "
                                "Tesla-V100-PCIE-32GB is sm_70. Fix: set --dtype=f16. Source: seed 001 and coder.yaml.")
    assert "Fix: set dtype: f16 under llm-serving:workloads.clef-candle." in finding.render(
        stack_key="llm-serving:workloads.clef-candle")
    problem = breach.problem("llm-serving:workloads.clef-candle.dtype", "bf16")
    assert (problem.rule, problem.fix) == ("dtype bf16 needs compute capability 8.0; Tesla-V100-PCIE-32GB is sm_70",
                                           "set dtype: f16")


def test_passing_values_give_no_breach():
    qwen = CATALOG["qwen3-30b-a3b-gptq-int4"] if "qwen3-30b-a3b-gptq-int4" in CATALOG else next(iter(CATALOG.values()))
    assert rulebook.context_window("m", 40960, 40960, None, False) is None
    assert rulebook.startup_budget(600, 10, 61) is None
    assert rulebook.half_dtype(V100, "f16", "candle-vllm") is None
    assert rulebook.tp_divides("m", qwen, 1) is None
    assert rulebook.custom_all_reduce(V100, 2, None) is None
