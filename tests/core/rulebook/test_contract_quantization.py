"""The engine contract's value rules read from each release (core/data/vllm_releases.json):
--quantization against the checkpoint's quant_method and the method's activation dtypes, and
the dtype and quantization capability of the card as the release resolves auto. Argv in the forms
the public reports show (vllm/vllm-project recipes, intel/auto-round 2242, vllm 28857)."""

from __future__ import annotations

from core.engines import contracts
from core.rulebook import contract

GPTQ_MODEL = "Qwen/Qwen3-30B-A3B-GPTQ-Int4"  # core/data/models.yaml: quant_method gptq, torch_dtype float16
BF16_MODEL = "Qwen/Qwen3-14B"  # torch_dtype bfloat16, unquantized


def _found(release: str, argv: list[str]) -> list[str]:
    flags: dict[str, tuple[str, ...]] = {}
    for token in argv:
        if token.startswith("--"):
            name, _, value = token.partition("=")
            flags[name] = (value,) if value else ()
    return [b.wrong for b in contract.flag_breaches(contracts.release(release), flags, argv)]


def test_a_method_that_is_not_the_checkpoints_is_refused_naming_both():
    found = _found("0.11.0", [f"--model={GPTQ_MODEL}", "--quantization=auto-round"])
    assert len(found) == 1 and "quant_method gptq" in found[0] and "(auto-round)" in found[0]
    assert "vLLM 0.11.0" in found[0] and "ModelConfig._verify_quantization" in found[0]


def test_the_checkpoints_own_method_and_an_override_that_reads_it_pass():
    assert _found("0.11.0", [f"--model={GPTQ_MODEL}", "--quantization=gptq"]) == []
    # gptq_marlin's override_quantization_method accepts gptq_marlin for a gptq checkpoint
    assert _found("0.11.0", [f"--model={GPTQ_MODEL}", "--quantization=gptq_marlin"]) == []
    # moe_wna16 takes gptq and awq checkpoints when named
    assert _found("0.19.1", [f"--model={GPTQ_MODEL}", "--quantization=moe_wna16"]) == []


def test_a_model_outside_the_catalog_is_not_judged_for_its_format():
    assert _found("0.11.0", ["--model=/mnt/models", "--quantization=auto-round"]) == []


def test_the_stacks_own_model_facts_judge_a_weights_path():
    """A policy that knows the stack's models passes their facts for a path the catalog cannot name."""
    rel = contracts.release("0.11.0")
    argv = ["--model=/mnt/models/coder", "--quantization=auto-round"]
    flags = {"--model": ("/mnt/models/coder",), "--quantization": ("auto-round",)}
    found = contract.flag_breaches(rel, flags, argv, contract.catalog_model(GPTQ_MODEL))
    assert len(found) == 1 and "quant_method gptq" in found[0].wrong and "(auto-round)" in found[0].wrong
    assert contract.flag_breaches(rel, flags, argv) == []  # the catalog names no model at that path


def test_awq_with_bfloat16_is_refused_by_its_act_dtypes():
    found = _found("0.11.0", ["--model=/mnt/models", "--quantization=awq", "--dtype=bfloat16"])
    assert len(found) == 1 and "AWQConfig runs float16 only" in found[0]
    assert "torch.bfloat16 is not supported for quantization method awq" in found[0]
    assert _found("0.11.0", ["--model=/mnt/models", "--quantization=awq", "--dtype=half"]) == []
    # awq_marlin runs bfloat16 (get_supported_act_dtypes: [torch.half, torch.bfloat16])
    assert _found("0.11.0", ["--model=/mnt/models", "--quantization=awq_marlin", "--dtype=bfloat16"]) == []


def test_gptq_with_bfloat16_is_judged_only_where_no_override_may_take_gptq():
    argv = ["--model=/mnt/models", "--quantization=gptq", "--dtype=bfloat16"]
    # 0.11.0: bitblas and gptq_marlin_24 take --quantization gptq for their checkpoint formats, unread
    assert _found("0.11.0", argv) == []
    # 0.19.1 dropped both: gptq runs float16 only
    assert any("GPTQConfig runs float16 only" in f for f in _found("0.19.1", argv))


def test_auto_on_a_bfloat16_checkpoint_falls_back_on_a_t4_as_the_release_resolves_it():
    rel = contracts.release("0.11.0")
    model = contract.catalog_model(BF16_MODEL)
    assert contract.card_capability(rel, None, None, 75, "T4", model) is None
    hit = contract.card_capability(rel, "bfloat16", None, 75, "T4", model)
    assert hit is not None and "refuses it below sm_80 and the T4 is sm_75" in hit.wrong
    # a release whose auto kept the checkpoint's dtype would refuse it at start
    keeps = rel.model_copy(update={"dtype": rel.dtype.model_copy(update={"auto_falls_back": False})})
    hit = contract.card_capability(keeps, None, None, 75, "T4", model)
    assert hit is not None and "--dtype auto on a checkpoint of torch_dtype bfloat16" in hit.wrong
    assert "check_if_supports_dtype" in hit.wrong


def _checkpoint_of(method: str):
    base = contract.catalog_model(BF16_MODEL)
    quant = contract.catalog_model(GPTQ_MODEL).quantization.model_copy(update={"method": method})
    return base.model_copy(update={"quantization": quant})


def test_a_checkpoints_own_method_below_its_capability_is_refused_unless_an_override_may_take_it():
    fbgemm = _checkpoint_of("fbgemm_fp8")
    hit = contract.card_capability(contracts.release("0.19.1"), None, None, 75, "T4", fbgemm)
    assert hit is not None and "quant_method fbgemm_fp8" in hit.wrong and "sm_80" in hit.wrong
    # 0.11.0: bitblas's override takes any checkpoint it reads by checkpoint_format (not literal): not judged
    assert contract.card_capability(contracts.release("0.11.0"), None, None, 75, "T4", fbgemm) is None
    # fp8: Fp8Config.get_min_capability is 75 in 0.19.1
    assert contract.card_capability(contracts.release("0.19.1"), None, None, 75, "T4", _checkpoint_of("fp8")) is None
