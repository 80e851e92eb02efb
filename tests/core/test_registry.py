"""The rule registry: one record a rule, one wording rendered in both audiences' terms."""

from __future__ import annotations

import ast
import re
from types import SimpleNamespace

import pytest

from core import rulebook
from core.catalog.modelfacts import CATALOG
from core.engines.settings import S
from core.judging import registry
from tests.paths import PROD_STACK_FILE, ROOT

V100 = SimpleNamespace(sm=70, product="Tesla-V100-PCIE-32GB", nvlink=False)


def test_every_rule_registered_once_with_source_and_title():
    from policylib.pack import policies  # noqa: PLC0415 - the pack's policies, for their names

    rules = rulebook.register_all()
    names = {p.name for p in policies()}
    assert rules, "no rule registered"
    assert len(rules) == len({r.judge for r in rules.values()}), "a judge filed under two ids"
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


def test_a_policy_is_judged_by_its_registered_rules():
    """Each policy of the pack (its registry record) is judged by registered rules that name it; a rule
    filed under the policy's own name belongs to that policy. No hand list: every record is walked."""
    from policylib.pack import records  # noqa: PLC0415 - the pack's registry

    recs = records()
    assert recs, "no policy declared"
    for record in recs:
        assert record.rules, record.name
        own = registry.RULES.get(record.name)
        assert own is None or own.policy == record.name, record.name


# --- a reference both judge: the stack file's loader and the pack report one rule's breach --------
# (node listed, a Service's workload running: the loader refuses the stack file's reference, the pack
# the hand-written YAML's; the engine, card and capacity rules are the pack's alone,
# tests/stackfile/test_server_rules.py)

def _stack_change(workload: str, **fields):
    def change(config):
        config["llm-serving:workloads"][workload].update(fields)
        # A measurement holds for the settings it was taken at (docs/capacity.md): changed settings drop it.
        config["llm-serving:workloads"][workload].pop("measured", None)
    return change




@pytest.mark.parametrize("family, judge, change, fixture", [
    ("allocation", "node_listed", _stack_change("clef-candle", node="worker-2"),
     "gpu-card-allocation/disallowed/pinned-to-unknown-node.yaml"),
    ("services", "selects_running", lambda config: config["llm-serving:services"]["clef-serve"].update(selects="clef-serve"),
     "service-selector-uniqueness/disallowed/seed-000-selects-parked.yaml"),
], ids=lambda v: v if isinstance(v, str) and "/" not in v else None)
def test_the_stack_file_and_the_pack_judge_by_one_rule(monkeypatch, family, judge, change, fixture):
    """The loader's problem and the policy's finding are the same judge's breach, rendered for each audience."""
    import copy
    import importlib

    from policylib.pack import policies
    from stackfile import ConfigError, load_stack_config
    from tests.policy_harness import DEFAULT_STACK_FILE, FIXTURES, run_fixture, use_stack_config
    from tools.offline.manifests import load_stack_file

    module = importlib.import_module(f"core.rulebook.{family}")
    real, breaches = getattr(module, judge), []

    def spy(*args, **kwargs):
        breach = real(*args, **kwargs)
        if breach is not None:
            breaches.append(breach)
        return breach

    monkeypatch.setattr(module, judge, spy)
    config = copy.deepcopy(load_stack_file(PROD_STACK_FILE))
    change(config)
    with pytest.raises(ConfigError) as err:
        load_stack_config(config)
    assert breaches, judge
    assert breaches[0].render(registry.STACK)[0] in [p.rule for p in err.value.problems]
    breaches.clear()
    case = FIXTURES / fixture
    (policy,) = [p for p in policies() if p.name == case.parent.parent.name]
    try:
        messages = [v.message for v in run_fixture(policy, case)]
    finally:
        use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    assert breaches, fixture
    assert any(b.finding("").wrong in m for b in breaches for m in messages), messages


def test_each_policy_says_what_its_registered_text_says():
    """A policy's description and remediation are its rule family's record (worded once, beside
    its rules), and every record describes a policy of the pack."""
    from policylib.pack import policies  # noqa: PLC0415 - the pack's policies

    rulebook.register_all()
    pack = {p.name: p for p in policies()}
    assert pack and set(registry.POLICIES) == set(pack)
    for name, policy in pack.items():
        text = registry.POLICIES[name]
        assert (policy.description, policy.remediation_steps) == (text.description, text.remediation), name
        assert text.description and text.remediation, name
    assert registry.POLICIES["vllm-context-window"].description.startswith("vLLM --max-model-len is within")
    with pytest.raises(ValueError, match="declared twice"):
        registry.declare_policy("vllm-context-window", "another", "wording", kind="resource", level="mandatory",
                                severity="high", doc="vllm-context-window: again")


# --- wording as data, checked: a reference that names nothing fails here, not in a user's report ----

RULEBOOK = sorted((ROOT / "core" / "rulebook").glob("*.py"))
#: ``{name}`` left in a plain string: an f-string whose ``f`` was forgotten (``{key}`` is the one
#: placeholder a wording may carry: the stack-file key the finding is told under).
_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


@pytest.mark.parametrize("path", RULEBOOK, ids=lambda p: p.stem)
def test_every_wording_names_what_exists(path):
    """Walk each rule family's source: every ``S.<setting>`` is a declared setting, every ``only(...)``
    names an audience constant, and no string carries a ``{placeholder}`` but ``{key}``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "S":
            assert isinstance(getattr(S, node.attr, None), registry.Setting), f"{path.name}:{node.lineno}: S.{node.attr}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "only":
            audience = node.args[0]
            assert isinstance(audience, ast.Name) and audience.id in ("STACK", "MANIFEST"), f"{path.name}:{node.lineno}"
    skipped = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    # A template filled by str.format (waivers.WAIVED) names its fields on purpose.
    formatted = {n.func.value.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == "format" and isinstance(n.func.value, ast.Name)}
    skipped |= {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id in formatted for t in n.targets)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            stray = [m for m in _PLACEHOLDER.findall(node.value) if m != "{key}"]
            assert not stray, f"{path.name}:{node.lineno}: {stray} in {node.value!r} (an f-string without its f?)"


def test_every_setting_renders_for_both_audiences():
    rulebook.register_all()
    assert registry.SETTINGS
    for setting in registry.SETTINGS.values():
        for audience in (registry.STACK, registry.MANIFEST):
            assert registry.render_text(f"set {setting}", audience) == f"set {setting.name(audience)}", setting.id
            assert "\x1f" not in registry.render_text(f"{setting.to(1)}", audience), setting.id


def test_a_wording_typo_raises_instead_of_rendering_wrong_text():
    with pytest.raises(ValueError, match="the audience is 'stack' or 'manifest'"):
        registry.only("stak", "leave it unset")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="formatted with spec '>9'"):
        f"{S.max_model_len:>9}"  # noqa: B018
    with pytest.raises(ValueError, match="names setting 'max_model_lenn', which no Setting declares"):
        registry.render_text("lower \x1fmax_model_lenn\x1f", registry.STACK)
    with pytest.raises(ValueError, match="the id is a lowercase identifier"):
        registry.Setting("Max-Len", "max_len", "--max-len")
    assert registry.render_text(f"lower {S.max_model_len}", registry.MANIFEST) == "lower --max-model-len"
    assert _PLACEHOLDER.findall("raise {cap} for {key}, {reason: ...}") == ["{cap}", "{key}"]
