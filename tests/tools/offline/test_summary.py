"""tools/offline/summary.py: the card table and the component column, on hand-made resources.

The prod summary as a whole is checked end to end in tests/tools/test_preview.py; here each rule
of the card table gets a case the prod stack does not have: the history's over-allocation
(seed 001: 6 of 4 on worker-1), the surge of a RollingUpdate, cards reserved outside the
stack, a workload pinned to a node the inventory lacks, and the component of an object
without the component annotation.
"""

from __future__ import annotations

from core.base import facts
from core.capacity.inventory import ClusterInventory
from tools.offline.manifests import Resource
from tools.offline.summary import card_rows, cards_section, component_of, objects_section, table

CARD = {"product": "Tesla-V100-PCIE-32GB", "memory_mib": 32768, "compute_capability": "7.0",
        "nvlink": False, "hbm_bandwidth_gb_s": 900}


def inventory(*nodes: dict) -> ClusterInventory:
    return ClusterInventory.model_validate({"nodes": [
        {"card": CARD, "allocatable_memory_mib": 63495, **n} for n in nodes]})


def deployment(name: str, cards: int, replicas: int = 1, node: str | None = "worker-1",
               strategy: str = "Recreate", parked: bool = False) -> Resource:
    meta = {"name": name, "namespace": "llm-serving", "annotations": {}}
    if parked:
        meta["annotations"][facts.PARKED_ANNOTATION] = "kept for later"
    pod = {"containers": [{"name": "server", "image": "x@sha256:0",
                           "resources": {"limits": {facts.GPU_RESOURCE: str(cards)}}}]}
    if node:
        pod["nodeSelector"] = {facts.HOSTNAME_LABEL: node}
    props = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
             "spec": {"replicas": replicas, "strategy": {"type": strategy}, "selector": {"matchLabels": {"app": name}},
                      "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}
    t = "kubernetes:apps/v1:Deployment"
    return Resource(type=t, name=name, urn=f"urn:pulumi:prod::llm-serving::{t}::{name}", props=props)


def isvc(name: str, cards: int, node: str = "worker-1") -> Resource:
    props = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
             "metadata": {"name": name, "namespace": "llm-serving"},
             "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1, "deploymentStrategy": {"type": "Recreate"},
                                    "nodeSelector": {facts.HOSTNAME_LABEL: node},
                                    "containers": [{"name": "kserve-container", "image": "vllm/vllm-openai@sha256:0",
                                                    "resources": {"limits": {facts.GPU_RESOURCE: str(cards)}}}]}}}
    t = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
    return Resource(type=t, name=name, urn=f"urn:pulumi:prod::llm-serving::{t}::{name}", props=props)


def test_seed_001_over_allocation_names_each_share():
    """After seed 001: the candle-vllm coder (2) beside the still-managed coder ISVC (2),
    reasoning (1) and clef-serve (1): 6 of 4 cards on worker-1."""
    resources = [deployment("candle-vllm", 2), isvc("coder", 2), isvc("reasoning", 1), deployment("clef-serve", 1)]
    (row,), loose = card_rows(resources, inventory({"name": "worker-1", "cards": 4}))
    assert loose == []
    assert row.line() == ["worker-1", "6 / 4  OVER by 2", "candle-vllm 2, coder 2, clef-serve 1, reasoning 1"]


def test_prod_shape_fits_with_the_parked_server_at_zero():
    resources = [deployment("candle-vllm", 2), deployment("clef-candle", 1), isvc("reasoning", 1),
                 deployment("clef-serve", 1, replicas=0, parked=True)]
    lines = cards_section(resources, inventory({"name": "worker-1", "cards": 4}))
    assert lines[0].endswith("4 / 4 in the cluster")
    assert lines[2].split(None, 4) == ["worker-1", "4", "/", "4", "candle-vllm 2, clef-candle 1, reasoning 1, clef-serve 0 (parked)"]


def test_rolling_update_surge_and_reserved_cards_count_as_used():
    inv = inventory({"name": "worker-1", "cards": 4,
                     "reserved": [{"workload": "poimen/embedder", "cards": 1, "reason": "manual pod"}]})
    (row,), _ = card_rows([deployment("candle-vllm", 2, strategy="RollingUpdate")], inv)
    assert row.line() == ["worker-1", "5 / 4  OVER by 1", "candle-vllm 2 + 2 surge, poimen/embedder 1 (reserved: manual pod)"]


def test_workloads_off_the_inventory_are_listed_apart():
    """A pod pinned to a node the inventory lacks is listed apart; an unpinned one is packed
    where gpu-card-allocation packs it (it used to be listed apart as "not placed")."""
    resources = [deployment("lost", 1, node="worker-9"), deployment("free", 2, node=None)]
    lines = cards_section(resources, inventory({"name": "worker-1", "cards": 4}))
    assert lines[0].endswith("3 / 4 in the cluster")
    assert lines[2].split(None, 4) == ["worker-1", "2", "/", "4", "free 2 (unpinned)"]
    assert lines[-1] == "  not placed on an inventory node: lost 1 (node worker-9, not in the inventory)"


def test_component_from_annotation_else_parent_urn():
    annotated = deployment("candle-vllm", 2)
    annotated.props["metadata"]["annotations"][facts.COMPONENT_ANNOTATION] = "CandleDeployment/candle-vllm"
    assert component_of(annotated) == "CandleDeployment/candle-vllm"
    child = deployment("x", 1)
    child.parent = "urn:pulumi:prod::llm-serving::pulumi:pulumi:Stack$llm-serving:index:GpuDeployment::clef-serve"
    assert component_of(child) == "GpuDeployment/clef-serve"
    top = deployment("y", 1)
    top.parent = "urn:pulumi:prod::llm-serving::pulumi:pulumi:Stack::llm-serving-prod"
    assert component_of(top) == "-"


def test_objects_section_counts_components_and_marks_protect():
    svc = Resource(type="kubernetes:core/v1:Service", name="coder-predictor", urn="u", protect=True,
                   props={"apiVersion": "v1", "kind": "Service", "metadata": {
                       "name": "coder-predictor", "namespace": "llm-serving",
                       "annotations": {facts.COMPONENT_ANNOTATION: "StablePredictorService/coder-predictor"}}})
    component = Resource(type="llm-serving:index:StablePredictorService", name="coder-predictor", urn="c", props={}, custom=False)
    lines = objects_section([svc, component])
    assert lines[0] == "objects: 1 from 1 component"
    assert lines[2].split() == ["StablePredictorService/coder-predictor", "v1", "Service", "llm-serving/coder-predictor", "protect"]


def test_table_aligns_columns_and_leaves_the_last_unpadded():
    assert table([["a", "bb", "c"], ["ddd", "e", "ffff"]]) == ["  a    bb  c", "  ddd  e   ffff"]
