"""The rule registry: one record a rule, one wording rendered in both audiences' terms."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core import registry, rulebook
from core.modelfacts import CATALOG
from tests.paths import PROD_STACK_FILE

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


#: The policies whose checks are judges of core/rulebook/{allocation,capacity,pods,kserve}.py, of
#: core/rulebook/{servers,volta,candle,served_names,probes,endpoints}.py and of
#: core/rulebook/{services,network,pod_security}.py.
RULEBOOK_POLICIES = [
    "gpu_card_allocation", "node_memory_allocation", "gpu_rollout_recreate", "gpu_whole_cards", "weights_fit_card",
    "kv_cache_fits_max_model_len", "multi_gpu_shm", "isvc_not_parked_silently", "moving_tag_pull_always",
    "gpu_runtime_class", "kserve_owned_names",
    "candle_vllm_args", "gpu_memory_request", "model_server_readiness", "server_listen_endpoint",
    "startup_probe_covers_cold_start", "tensor_parallel_divisibility", "vllm_context_window",
    "vllm_gpu_memory_utilization", "vllm_parallelism", "vllm_served_model_names", "vllm_volta",
    "served_model_name_unique", "service_selector_uniqueness", "service_target_port", "service_link_env_collision",
    "network_ingress_for_clients", "ingress_admits_server_port", "model_mounts_read_only", "pod_run_as_non_root",
    "env_var_secret", "policy_waivers",
    "pod_security_baseline", "pod_security_restricted", "no_service_account_token",
]
#: Policies judged by several rules and no one rule of their name (each finding carries its rule's source):
#: vllm-volta (rules of different sources), the Pod Security profiles (a rule a row of the profile's table).
SEVERAL_SOURCES = {"vllm_volta", "pod_security_baseline", "pod_security_restricted"}


@pytest.mark.parametrize("module", RULEBOOK_POLICIES)
def test_a_policy_is_judged_by_its_registered_rules(module):
    """Each policy has a registered rule of its name, and its SOURCE is that rule's (written once)."""
    import importlib

    policy = importlib.import_module(module)
    rules = [r for r in rulebook.register_all().values() if r.policy == policy.NAME]
    assert rules, policy.NAME
    if module not in SEVERAL_SOURCES:
        assert registry.RULES[policy.NAME].source == policy.SOURCE


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
    assert pack and set(registry.POLICY_TEXTS) == set(pack)
    for name, policy in pack.items():
        text = registry.POLICY_TEXTS[name]
        assert (policy.description, policy.remediation_steps) == (text.description, text.remediation), name
        assert text.description and text.remediation, name
    assert registry.POLICY_TEXTS["vllm-context-window"].description.startswith("vLLM --max-model-len is within")
    with pytest.raises(ValueError, match="described twice"):
        registry.describe_policy("vllm-context-window", "another", "wording")
