"""The inventory model (one source of truth for program and pack) and the manifest loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from core.capacity.inventory import ClusterInventory
from tests.paths import PROD_STACK_FILE, REFERENCE
from tools.offline import manifests as m


def _prod_cluster() -> dict:
    return yaml.safe_load(PROD_STACK_FILE.read_text())["config"]["llm-serving:cluster"]


def test_prod_inventory_is_worker1_with_four_volta_cards():
    inv = ClusterInventory.model_validate(_prod_cluster())
    node = inv.node("worker-1")
    assert (node.cards, node.allocatable_memory_mib) == (4, 63495)
    assert (node.card.sm, node.card.nvlink, node.card.memory_mib) == (70, False, 32768)
    assert inv.max_cards == 4


def test_inventory_refuses_unknown_keys_and_impossible_reservations():
    cluster = _prod_cluster()
    cluster["nodes"][0]["gpus"] = 4
    with pytest.raises(ValidationError, match="gpus"):
        ClusterInventory.model_validate(cluster)
    cluster = _prod_cluster()
    cluster["nodes"][0]["reserved"] = [{"workload": "ornith", "cards": 5}]
    with pytest.raises(ValidationError, match="reserved cards \\(5\\) exceed the node's 4 cards"):
        ClusterInventory.model_validate(cluster)


def test_inventory_refuses_a_gpu_node_without_a_card_spec_and_duplicate_nodes():
    node = {"name": "worker-2", "cards": 2, "allocatable_memory_mib": 1000}
    with pytest.raises(ValidationError, match="no card spec"):
        ClusterInventory.model_validate({"nodes": [node]})
    cpu = {"name": "w", "cards": 0, "allocatable_memory_mib": 1000}
    with pytest.raises(ValidationError, match="listed twice"):
        ClusterInventory.model_validate({"nodes": [cpu, cpu]})


def test_reference_directory_loads_with_the_providers_type_tokens():
    types = sorted({r.type for r in m.load_manifest_dir(REFERENCE)})
    assert types == [
        "kubernetes:apps/v1:Deployment",
        "kubernetes:core/v1:Service",
        "kubernetes:serving.kserve.io/v1beta1:InferenceService",
    ]
    names = sorted(r.name for r in m.load_manifest_dir(REFERENCE))
    assert names == [
        "llm-serving/candle-vllm", "llm-serving/clef-candle", "llm-serving/coder",
        "llm-serving/coder-predictor", "llm-serving/reasoning-long-predictor",
    ]


def test_kustomize_directory_is_built_with_kubectl(tmp_path):
    if not Path("/usr/bin/kubectl").exists():
        pytest.skip("kubectl is not installed on this machine")
    for f in ("coder-service.yaml", "clef-candle.yaml"):
        (tmp_path / f).write_text((REFERENCE / f).read_text())
    (tmp_path / "kustomization.yaml").write_text("resources:\n  - coder-service.yaml\n  - clef-candle.yaml\n")
    got = sorted(r.name for r in m.load_manifest_dir(tmp_path))
    assert got == ["llm-serving/clef-candle", "llm-serving/coder-predictor"]


def test_bad_inputs_name_the_file(tmp_path):
    with pytest.raises(m.InputError, match="no such file"):
        m.load_manifest_dir(tmp_path / "missing")
    (tmp_path / "bad.yaml").write_text("a: [\n")
    with pytest.raises(m.InputError, match="bad.yaml: not valid YAML"):
        m.load_manifest_dir(tmp_path)
    (tmp_path / "bad.yaml").write_text("kind: Service\n")
    with pytest.raises(m.InputError, match="apiVersion is null"):
        m.load_manifest_dir(tmp_path)
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text("encryptionsalt: x\n")
    with pytest.raises(m.InputError, match="config: map"):
        m.load_stack_file(stack)


def test_config_env_encodes_structured_values_as_json_text_like_the_cli():
    env = json.loads(m.config_env({"llm-serving:namespace": "llm-serving", "llm-serving:cluster": {"nodes": []}}))
    assert env == {"llm-serving:namespace": "llm-serving", "llm-serving:cluster": '{"nodes":[]}'}
