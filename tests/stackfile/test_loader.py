"""stackfile/: the prod and history stack files load; a bad config is refused with
every problem at once, each with its key path, value, rule and fix."""

from __future__ import annotations

import copy
import json

import pytest

from stackfile import (
    CandleWorkload,
    ConfigError,
    PytorchWorkload,
    VllmWorkload,
    load_stack_config,
)
from tests.paths import PROD_STACK_FILE, ROOT
from tools.offline.manifests import config_env, load_stack_file

PROD = load_stack_file(PROD_STACK_FILE)
STACKS = ROOT / "tests" / "stacks"


def prod() -> dict:
    return copy.deepcopy(PROD)


def problems_of(config: dict) -> list:
    with pytest.raises(ConfigError) as info:
        load_stack_config(config)
    return info.value.problems


def only(config: dict):
    found = problems_of(config)
    assert len(found) == 1, [p.render() for p in found]
    return found[0]


# --- what loads ---------------------------------------------------------------------------

def test_prod_loads_the_intended_state():
    config = load_stack_config(PROD)
    assert config.namespace == "llm-serving"
    assert {n: type(w) for n, w in config.workloads.items()} == {
        "candle-vllm": CandleWorkload, "clef-candle": CandleWorkload,
        "reasoning": VllmWorkload, "clef-serve": PytorchWorkload,
    }
    assert config.workloads["clef-serve"].parked is not None
    assert {n: s.selects for n, s in config.services.items()} == {
        "coder-predictor": "candle-vllm", "clef-serve": "clef-candle", "reasoning-long-predictor": "reasoning",
    }
    assert config.card_table() == {
        "worker-1": {"cards": 4, "used": 4,
                     "workloads": {"candle-vllm": 2, "clef-candle": 1, "reasoning": 1, "clef-serve": 0}},
    }
    assert config.model_facts("clef-flash").is_hybrid


@pytest.mark.parametrize("stack, used, shares", [
    ("after-002.yaml", 4, {"coder": 2, "reasoning": 1, "clef-serve": 1}),
    ("after-001.yaml", 6, {"coder": 2, "reasoning": 1, "candle-vllm": 2, "clef-serve": 1}),
    ("after-003.yaml", 7, {"coder": 2, "reasoning": 1, "candle-vllm": 2, "clef-candle": 1, "clef-serve": 1}),
])
def test_history_stacks_load_with_their_card_counts(stack, used, shares):
    """Over-allocation across workloads is the policy pack's verdict, so these load (spec,
    "The history as test cases": 4, 6 and 7 of 4)."""
    table = load_stack_config(load_stack_file(STACKS / stack)).card_table()
    assert table == {"worker-1": {"cards": 4, "used": used, "workloads": shares}}


def test_other_namespaces_are_ignored_and_json_text_is_accepted():
    """PULUMI_CONFIG carries structured values as JSON text; kubernetes:* keys are not ours."""
    config = {k: v for k, v in json.loads(config_env(PROD)).items()}
    config["kubernetes:context"] = "worker-cluster"
    loaded = load_stack_config(config)
    assert loaded.card_table()["worker-1"]["used"] == 4


def test_a_parked_service_may_select_a_parked_workload():
    config = prod()
    config["llm-serving:services"]["clef-serve"] = {"selects": "clef-serve", "parked": {"reason": "clef-serve is parked"}}
    assert load_stack_config(config).services["clef-serve"].parked.reason == "clef-serve is parked"


# --- every problem at once ----------------------------------------------------------------

def test_every_problem_is_reported_at_once_with_path_value_rule_and_fix():
    config = prod()
    config["llm-serving:workload"] = {}  # unknown key (typo)
    wl = config["llm-serving:workloads"]
    wl["clef-candle"]["max_num_seqs"] = "four"  # wrong type
    wl["reasoning"]["cards"] = -1  # negative card count
    config["llm-serving:services"]["coder-predictor"]["selects"] = "coder"  # no such workload
    wl["candle-vllm"]["model"] = "coder-15b"  # a model the catalog does not list

    found = {p.path: p for p in problems_of(config)}
    assert sorted(found) == [
        "llm-serving:services.coder-predictor.selects",
        "llm-serving:workload",
        "llm-serving:workloads.candle-vllm.model",
        "llm-serving:workloads.clef-candle.max_num_seqs",
        "llm-serving:workloads.reasoning.cards",
    ]

    unknown = found["llm-serving:workload"]
    assert unknown.value == {}
    assert unknown.rule == "llm-serving:workload is not a key of this program"
    assert unknown.fix.startswith("did you mean llm-serving:workloads?")

    wrong = found["llm-serving:workloads.clef-candle.max_num_seqs"]
    assert wrong.value == "four"
    assert wrong.rule == "max_num_seqs: \"four\" is text, not a whole number"
    assert wrong.fix == "give a whole number"

    negative = found["llm-serving:workloads.reasoning.cards"]
    assert negative.value == -1
    assert negative.rule == "cards: Input should be greater than or equal to 1"
    assert negative.fix == "give cards a value at least 1"

    missing = found["llm-serving:services.coder-predictor.selects"]
    assert missing.value == "coder"
    assert missing.rule == "Service coder-predictor selects workload coder, which is not in llm-serving:workloads"
    assert missing.fix == "use one of candle-vllm, clef-candle, reasoning, clef-serve, or add the workload"

    model = found["llm-serving:workloads.candle-vllm.model"]
    assert model.value == "coder-15b"
    assert "coder-15b" in model.rule and "llm-serving:models" in model.fix


def test_an_invalid_cluster_does_not_hide_the_other_problems():
    """Every problem at once. A bad inventory skips only the checks that need
    a node; the dangling Service selector and the unknown model are still reported."""
    config = prod()
    config["llm-serving:cluster"]["nodes"][0]["cards"] = -1
    config["llm-serving:services"]["coder-predictor"]["selects"] = "nope"
    config["llm-serving:workloads"]["candle-vllm"]["model"] = "coder-15b"
    found = problems_of(config)
    assert [p.path for p in found] == [
        "llm-serving:cluster.nodes.0.cards",
        "llm-serving:workloads.candle-vllm.model",
        "llm-serving:services.coder-predictor.selects",
    ]
    assert "coder-15b" in found[1].rule
    assert found[2].rule == "Service coder-predictor selects workload nope, which is not in llm-serving:workloads"


def test_a_missing_cluster_does_not_hide_the_other_problems():
    config = prod()
    del config["llm-serving:cluster"]
    config["llm-serving:workloads"]["reasoning"]["image"] = "vllm/vllm-openai:v0.15.0"
    assert [p.path for p in problems_of(config)] == [
        "llm-serving:cluster", "llm-serving:workloads.reasoning.image"]


def test_an_invalid_node_does_not_also_report_an_empty_node_list():
    """Pydantic checks the tuple's length after its items: one bad node also gave "nodes: Tuple
    should have at least 1 item after validation, not 0". Only the node's own error is kept;
    a list that is really empty is still reported."""
    config = prod()
    config["llm-serving:cluster"]["nodes"][0]["allocatable_memory_mib"] = 0
    assert [(p.path, p.rule) for p in problems_of(config)] == [
        ("llm-serving:cluster.nodes.0.allocatable_memory_mib", "allocatable_memory_mib: Input should be greater than 0")]

    config["llm-serving:cluster"]["nodes"] = []
    p = only(config)
    assert (p.path, p.fix) == ("llm-serving:cluster.nodes", "give at least 1 item(s)")


def test_render_is_one_block_per_problem_without_a_traceback():
    config = prod()
    config["llm-serving:workloads"]["reasoning"]["cards"] = -1
    config["llm-serving:bogus"] = 1
    with pytest.raises(ConfigError) as info:
        load_stack_config(config, source="Pulumi.try.yaml")
    text = info.value.render()
    blocks = text.split("\n\n")
    assert blocks[0] == (
        "Cannot load Pulumi.try.yaml: 2 problems. Nothing was previewed or written; "
        "fix each one below and run again."
    )
    assert blocks[1].splitlines()[0] == "llm-serving:bogus"
    assert blocks[2] == (
        "llm-serving:workloads.reasoning.cards\n"
        "  value: -1\n"
        "  rule:  cards: Input should be greater than or equal to 1\n"
        "  fix:   give cards a value at least 1"
    )
    assert "Traceback" not in text and len(blocks) == 3


def test_an_unknown_nested_key_names_the_allowed_fields():
    config = prod()
    config["llm-serving:workloads"]["candle-vllm"]["kv_fractoin"] = 0.3
    p = only(config)
    assert p.path == "llm-serving:workloads.candle-vllm.kv_fractoin"
    assert p.rule == "kv_fractoin is not a field here"
    assert p.fix.startswith("did you mean kv_fraction? remove or rename it; allowed: node, cards,")


def test_a_missing_field_says_what_to_add():
    config = prod()
    del config["llm-serving:workloads"]["reasoning"]["max_model_len"]
    p = only(config)
    assert (p.path, p.value, p.rule) == ("llm-serving:workloads.reasoning.max_model_len", None, "max_model_len is required")
    assert p.fix.startswith("add max_model_len: <value> (--max-model-len in tokens")


def test_an_invalid_workload_is_not_reported_again_through_its_service():
    config = prod()
    config["llm-serving:workloads"]["reasoning"]["cards"] = "one"
    assert [p.path for p in problems_of(config)] == ["llm-serving:workloads.reasoning.cards"]


def test_an_unknown_server_kind():
    config = prod()
    config["llm-serving:workloads"]["clef-serve"]["server"] = "sglang"
    p = only(config)
    assert (p.path, p.value) == ("llm-serving:workloads.clef-serve.server", "sglang")
    assert p.fix == "set server: to one of candle-vllm, vllm, pytorch"


# --- the facts as config rules ------------------------------------------------------------

def test_hybrid_model_on_two_cards_in_candle_is_refused():
    """Seed 003: GDN recurrent state is not shardable; clef-flash runs on one card."""
    config = prod()
    config["llm-serving:workloads"]["clef-candle"]["cards"] = 2
    p = only(config)
    assert p.path == "llm-serving:workloads.clef-candle.cards"
    assert "hybrid (8 full-attention of 32 layers" in p.rule and p.fix == "set cards: 1"


def test_vllm_image_must_be_pinned_by_digest():
    """coder.yaml: v0.15.0 failed on this node (error 803)."""
    config = prod()
    config["llm-serving:workloads"]["reasoning"]["image"] = "vllm/vllm-openai:v0.15.0"
    p = only(config)
    assert (p.path, p.value) == ("llm-serving:workloads.reasoning.image", "vllm/vllm-openai:v0.15.0")
    assert "not pinned by digest" in p.rule and "error 803" in p.rule
    assert p.fix.startswith("pin image as <image>:<tag>@sha256:<digest>")


def test_a_service_must_not_select_a_parked_workload():
    """001, 003: clients would find no endpoints."""
    config = prod()
    config["llm-serving:services"]["clef-serve"]["selects"] = "clef-serve"
    p = only(config)
    assert p.path == "llm-serving:services.clef-serve.selects"
    assert p.rule.startswith("selects only parked clef-serve (") and "no running endpoints" in p.rule
    assert "park the Service too" in p.fix


def test_request_above_limit_is_refused():
    config = prod()
    config["llm-serving:workloads"]["reasoning"]["resources"] = {"requests": {"memory": "33Gi"}, "limits": {"memory": "32Gi"}}
    p = only(config)
    assert p.path == "llm-serving:workloads.reasoning.resources"
    assert p.rule == "requests.memory 33Gi exceeds limits.memory 32Gi"


def test_an_unknown_node_is_refused_and_cards_beyond_the_node_are_the_packs():
    """A node the inventory does not list is the stack file's reference; 8 cards on a 4-card node
    load and the pack's gpu-card-allocation refuses them (tests/stackfile/test_server_rules.py)."""
    config = prod()
    config["llm-serving:workloads"]["candle-vllm"]["cards"] = 8
    config["llm-serving:workloads"]["clef-candle"]["node"] = "worker-2"
    p = only(config)
    assert p.path == "llm-serving:workloads.clef-candle.node"
    assert p.fix == "set node to one of worker-1, or add the node to llm-serving:cluster"


def test_cold_start_must_be_positive():
    config = prod()
    config["llm-serving:workloads"]["clef-serve"]["cold_start_seconds"] = 0
    p = only(config)
    assert (p.path, p.rule) == ("llm-serving:workloads.clef-serve.cold_start_seconds",
                                "cold_start_seconds: Input should be greater than 0")


def test_comma_joined_served_names_are_refused():
    """002 reasoning.yaml: the comma form serves one model whose name contains the comma."""
    config = prod()
    config["llm-serving:workloads"]["reasoning"]["served_model_names"] = ["reasoning,reasoning-long"]
    p = only(config)
    assert p.path == "llm-serving:workloads.reasoning.served_model_names.0"
    assert p.rule == ('served model name "reasoning,reasoning-long" contains a comma: vLLM serves ONE model of that '
                      "name, not reasoning, reasoning-long")
    assert p.fix == "list each name as its own item of served_model_names"


def test_the_engine_card_and_capacity_rules_load_for_the_pack_to_judge():
    """bf16 and FP8 on sm_70, custom all-reduce at TP 2 over PCIe, TP x PP against the cards, cards
    and memory beyond the node, a startup budget under the cold start: the stack file loads, and the
    pack refuses each on the rendered manifests, once (tests/stackfile/test_server_rules.py)."""
    config = prod()
    wl = config["llm-serving:workloads"]
    wl["candle-vllm"]["dtype"] = "bf16"
    wl["candle-vllm"]["cards"] = 8
    wl["reasoning"]["kv_cache_dtype"] = "fp8"
    wl["reasoning"]["tensor_parallel_size"] = 2
    wl["reasoning"]["resources"] = {"requests": {"memory": "64Gi"}, "limits": {"memory": "64Gi"}}
    wl["reasoning"]["startup_probe"] = {"period_seconds": 15, "failure_threshold": 40}
    loaded = load_stack_config(config)
    assert (loaded.workloads["candle-vllm"].dtype, loaded.workloads["reasoning"].tensor_parallel_size) == ("bf16", 2)
    after_002 = load_stack_file(STACKS / "after-002.yaml")
    after_002["llm-serving:workloads"]["coder"]["disable_custom_all_reduce"] = False
    assert load_stack_config(after_002).workloads["coder"].disable_custom_all_reduce is False


def test_prefill_chunk_must_be_a_multiple_of_1024():
    """candle-vllm asserts prefill_chunk_size % 1024 == 0 (src/main.rs)."""
    config = prod()
    config["llm-serving:workloads"]["clef-candle"]["prefill_chunk_size"] = 1500
    p = only(config)
    assert (p.path, p.fix) == ("llm-serving:workloads.clef-candle.prefill_chunk_size", "give a multiple of 1024")


def test_component_owned_labels_and_object_names():
    config = prod()
    config["llm-serving:workloads"]["reasoning"]["labels"]["app"] = "other"
    config["llm-serving:workloads"]["Clef_Serve"] = config["llm-serving:workloads"].pop("clef-serve")
    found = {p.path: p for p in problems_of(config)}
    assert found["llm-serving:workloads.reasoning"].rule == "label app is set by the component (it is what Services select)"
    assert found["llm-serving:workloads.Clef_Serve"].fix == "rename it, e.g. 'clef-serve'"


def test_model_references():
    config = prod()
    config["llm-serving:workloads"]["reasoning"]["model"] = "qwen3-coder"
    del config["llm-serving:models"]["coder-14b-fp16"]["weights_path"]
    config["llm-serving:models"]["coder-14b-fp16"]["hf_id"] = "Qwen/Qwen2.5-Coder-14B-Instruct"
    found = {p.path: p for p in problems_of(config)}
    assert found["llm-serving:workloads.reasoning.model"].rule == "model qwen3-coder is not in llm-serving:models"
    assert found["llm-serving:workloads.candle-vllm.model"].rule.startswith("model coder-14b-fp16 has no weights_path")


@pytest.mark.parametrize("namespace", ["llm-servign", "llm_serving", "LLM-serving", "llm-servin"])
def test_a_misspelt_namespace_is_refused_not_ignored(namespace):
    """``llm-servign:workloads`` is another namespace's key to Pulumi: read as such, the stack would
    render only what the correctly spelt keys hold and pulumi up would delete every workload."""
    config = prod()
    config[f"{namespace}:workloads"] = config.pop("llm-serving:workloads")
    problems = problems_of(config)
    [p] = [p for p in problems if p.path == f"{namespace}:workloads"]
    assert "Pulumi reads it as another namespace's key" in p.rule and "pulumi up would delete" in p.rule
    assert p.fix == "rename it llm-serving:workloads"


def test_other_namespaces_stay_ignored_and_unrelated_ones_are_not_taken_for_typos():
    from stackfile.schema import config_keys_read, misspelt_namespace

    assert not any(misspelt_namespace(k) for k in ("kubernetes:context", "pulumi:tags", "aws:region", "llm:x",
                                                   "llm-serving:workloads", "serving:x"))
    assert config_keys_read(["kubernetes:context", "llm-servign:services", "llm-serving:cluster",
                             "kubernetes:enableServerSideApply"]) == [
        "kubernetes:enableServerSideApply", "llm-servign:services", "llm-serving:cluster"]


@pytest.mark.parametrize("off", ["false", "False", "0", "f", False])
def test_server_side_apply_off_is_refused(off):
    """Off written any way the provider reads as false (Go's strconv.ParseBool)."""
    config = prod()
    config["kubernetes:enableServerSideApply"] = off
    [p] = [p for p in problems_of(config) if p.path == "kubernetes:enableServerSideApply"]
    assert "needs server-side apply" in p.rule and "render-only stack" in p.fix
    config["kubernetes:enableServerSideApply"] = "true"
    assert load_stack_config(config).card_table()["worker-1"]["used"] == 4


def test_a_workload_pinned_to_an_autoscaled_pool_is_refused_at_its_node_key():
    """The components pin by kubernetes.io/hostname; a pool's nodes carry their own hostnames."""
    config = prod()
    cluster = config["llm-serving:cluster"]
    cluster = json.loads(cluster) if isinstance(cluster, str) else cluster
    cluster["nodes"][0]["autoscaling"] = {"max_nodes": 3}
    config["llm-serving:cluster"] = cluster
    found = problems_of(config)
    nodes = [p for p in found if p.render().startswith("llm-serving:workloads.") and "node pool" in p.render()]
    assert nodes, [p.render() for p in found]
    assert "worker-1 is a node pool of up to 3 nodes (autoscaling)" in nodes[0].render()
    assert ".node" in nodes[0].render().splitlines()[0]


def test_the_new_cluster_keys_are_optional_so_prod_loads_unchanged():
    cluster = load_stack_config(prod()).cluster
    node = cluster.nodes[0]
    assert (node.labels, node.autoscaling, node.max_nodes) == ({}, None, 1)
    assert (cluster.driver_injected_by_default, cluster.uid_assigned_at_admission) == (False, False)
