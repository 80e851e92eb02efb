"""bench/genstack.py: the benchmark's large stack is a valid stack that fills its cards.

The preview benchmark's ``large`` figure is only meaningful if the program accepts the stack
and the stack has the benchmark's sizes: 100 nodes x 8 cards, 1,000 workloads (candle-vllm
and vLLM), 1,000 Services each selecting one workload, every card used and none over.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
import yaml

from bench import genstack
from stackfile import CandleWorkload, VllmWorkload, load_stack_config
from tests.paths import PROD_STACK_FILE
from tools.offline.manifests import load_stack_file


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    path = genstack.write(tmp_path_factory.mktemp("genstack") / "Pulumi.large.yaml", prod_file=PROD_STACK_FILE)
    return path, load_stack_config(load_stack_file(path), base_dir=path.parent)


def test_the_large_stack_sizes(large):
    _, stack = large
    assert len(stack.cluster.nodes) == 100 and {n.cards for n in stack.cluster.nodes} == {8}
    assert len(stack.workloads) == 1000 and len(stack.services) == 1000
    kinds = Counter((type(w).__name__, w.parked is not None) for w in stack.workloads.values())
    assert kinds == {("CandleWorkload", False): 400, ("VllmWorkload", False): 300,
                     ("VllmWorkload", True): 200, ("CandleWorkload", True): 100}


def test_every_card_used_and_none_over(large):
    _, stack = large
    table = stack.card_table()
    assert {(row["used"], row["cards"]) for row in table.values()} == {(8, 8)}
    assert sum(row["used"] for row in table.values()) == 800


def test_each_service_selects_one_workload_and_parked_ones_say_so(large):
    _, stack = large
    selected = Counter(s.selects for s in stack.services.values())
    assert set(selected) == set(stack.workloads) and set(selected.values()) == {1}
    for svc in stack.services.values():
        assert (svc.parked is not None) == (stack.workloads[svc.selects].parked is not None)


def test_served_names_and_weights_are_unique(large):
    _, stack = large
    vllm_names = [n for w in stack.workloads.values() if isinstance(w, VllmWorkload) for n in w.served_model_names]
    assert len(vllm_names) == len(set(vllm_names)) == 500
    candle_models = [w.model for w in stack.workloads.values() if isinstance(w, CandleWorkload)]
    weights = {stack.models[m].weights_path for m in candle_models}
    assert len(weights) == len(candle_models) == 500


def test_clef_variants_read_the_prod_facts_from_one_config_json(large):
    path, stack = large
    prod = yaml.safe_load(PROD_STACK_FILE.read_text())["config"]["llm-serving:models"]["clef-flash"]["facts"]
    clef = [k for k, e in stack.models.items() if e.config_json]
    assert len(clef) == 400
    assert {stack.models[k].config_json for k in clef} == {str(path.parent / "clef-flash-config.json")}
    facts = stack.model_facts(clef[0])
    assert (facts.num_hidden_layers, facts.full_attention_layers, facts.num_key_value_heads) == (
        prod["num_hidden_layers"], prod["full_attention_layers"], prod["num_key_value_heads"])
    assert json.loads((path.parent / "clef-flash-config.json").read_text())["layer_types"].count("full_attention") == 8


def test_the_pack_config_fits_one_environment_variable_and_keeps_measured_figures(large):
    from tools.analyze import config_env
    from tools.offline.packproc import MAX_ENV_VALUE_BYTES
    from tools.preview import pack_config

    path, stack = large
    config = pack_config(load_stack_file(path))
    assert len(config_env(config).encode()) < MAX_ENV_VALUE_BYTES
    measured = {name for name, w in stack.workloads.items() if w.measured is not None}
    assert measured and {stack.workloads[name].node for name in measured} == {genstack.FIRST_NODE}
    assert set(config["llm-serving:workloads"]) == measured
