"""Inventories of clusters other than worker-1: node pools that autoscale, node labels a
nodeSelector picks a pool by, more than one card type, time-sliced cards.

A rollout's surge card on a pool that can add a node is no finding; on a fixed node it still is.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from core.capacity import allocation
from core.capacity.inventory import ClusterInventory
from policylib.pack import policy
from tests.policy_harness import manifests, run_policy, use_stack_config

L4 = {"product": "NVIDIA-L4", "memory_mib": 23034, "compute_capability": "8.9", "nvlink": False, "hbm_bandwidth_gb_s": 300}
A100 = {"product": "NVIDIA-A100-SXM4-80GB", "memory_mib": 81920, "compute_capability": "8.0", "nvlink": True,
        "hbm_bandwidth_gb_s": 2039}
ACCEL = "cloud.google.com/gke-accelerator"


def cluster(l4_nodes: dict | None) -> dict:
    l4 = {"name": "l4-pool", "cards": 1, "card": L4, "allocatable_memory_mib": 30000, "labels": {ACCEL: "nvidia-l4"}}
    if l4_nodes is not None:
        l4["autoscaling"] = l4_nodes
    a100 = {"name": "a100-pool", "cards": 8, "card": A100, "allocatable_memory_mib": 1000000,
            "labels": {ACCEL: "nvidia-a100-80gb"}, "autoscaling": {"max_nodes": 2}}
    return {"nodes": [l4, a100]}


SERVER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: gemma, namespace: serving}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: gemma}}
  template:
    metadata: {labels: {app: gemma}}
    spec:
      nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
      containers:
      - name: server
        image: vllm/vllm-openai:v0.10.0
        args: [--model=google/gemma-2-2b-it, --tensor-parallel-size=1]
        resources: {limits: {nvidia.com/gpu: "1"}}
"""


def _findings(l4_nodes: dict | None, replicas: int = 1) -> dict[str, list[str]]:
    use_stack_config({"llm-serving:cluster": cluster(l4_nodes), "llm-serving:models": {}})
    res = manifests(SERVER.replace("REPLICAS", str(replicas)))
    out = {}
    for pack_policy in (policy("gpu-card-allocation"), policy("gpu-rollout-recreate")):
        found = [v.message for v in run_policy(pack_policy, res)]
        if found:
            out[pack_policy.name] = found
    return out


def test_a_surge_card_on_a_pool_that_can_add_a_node_is_no_finding():
    assert _findings({"max_nodes": 3}) == {}


def test_the_same_surge_on_a_fixed_one_card_node_is_refused():
    found = _findings(None)
    assert sorted(found) == ["gpu-card-allocation", "gpu-rollout-recreate"]
    assert found["gpu-card-allocation"][0].startswith("l4-pool: 2 of 1 cards requested: gemma 1 + 1 surge (RollingUpdate)")


def test_a_full_pool_is_refused_and_says_its_most_nodes():
    (message,) = _findings({"max_nodes": 2}, replicas=3)["gpu-card-allocation"]
    assert message.startswith("l4-pool: 4 of 2 cards (at most 2 nodes of 1) requested: gemma 3 (3 pods) + 1 surge (RollingUpdate)")


def test_the_selector_picks_the_pool_so_the_a100s_do_not_take_the_pods():
    # Without the label the 3 pods would be packed onto the A100 pool's 16 cards; with it they stay on L4.
    assert "gpu-card-allocation" in _findings({"max_nodes": 2}, replicas=3)


def test_a_pod_larger_than_one_node_of_the_pool_is_refused_against_one_node():
    inv = ClusterInventory.model_validate(cluster({"max_nodes": 8}))
    d = allocation.Demand("big", 2.0, candidates=("l4-pool",))
    alloc = allocation.cards([d], inv)
    assert [(o[0].name, o[1], o[2]) for o in alloc.oversized] == [("big", "l4-pool", 1.0)]


def test_placed_on_reads_hostname_labels_and_ignores_unrecorded_keys():
    inv = ClusterInventory.model_validate(cluster({"max_nodes": 2}))
    assert [n.name for n in inv.placed_on(None, {ACCEL: "nvidia-l4", "cloud.google.com/gke-gpu-driver-version": "latest"})[0]] == ["l4-pool"]
    assert inv.placed_on(None, {"kubernetes.io/hostname": "a100-pool"}) == ([inv.node("a100-pool")], True)
    nodes, narrowed = inv.placed_on(None, {"other": "x"})
    assert (len(nodes), narrowed) == (2, False)


def test_a_default_runtime_that_injects_the_driver_is_stated_and_not_beside_a_runtime_class():
    inv = ClusterInventory.model_validate({**cluster(None), "driver_injected_by_default": True})
    assert (inv.driver_injected_by_default, inv.gpu_runtime_class) == (True, None)
    with pytest.raises(ValidationError, match="driver_injected_by_default is true and gpu_runtime_class is nvidia"):
        ClusterInventory.model_validate({**cluster(None), "driver_injected_by_default": True, "gpu_runtime_class": "nvidia"})


def test_autoscaling_bounds_are_checked():
    with pytest.raises(ValidationError, match="min_nodes 3 exceeds max_nodes 2"):
        ClusterInventory.model_validate(cluster({"max_nodes": 2, "min_nodes": 3}))


def test_required_node_affinity_picks_the_pool_like_a_selector():
    from core.k8s.manifests.pods import required_node_terms

    inv = ClusterInventory.model_validate(cluster({"max_nodes": 2}))
    pod = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ACCEL, "operator": "In", "values": ["nvidia-a100-80gb"]},
                              {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["x"]}]}]}}}}
    terms = required_node_terms(pod)
    assert terms == (((ACCEL, "In", ("nvidia-a100-80gb",)), ("topology.kubernetes.io/zone", "In", ("x",))),)
    assert inv.placed_on(None, {}, terms) == ([inv.node("a100-pool")], True)
    not_l4 = (((ACCEL, "NotIn", ("nvidia-l4",)),),)
    assert [n.name for n in inv.placed_on(None, {}, not_l4)[0]] == ["a100-pool"]


OPENSHIFT_TGI = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: tgi, namespace: serving}
spec:
  selector: {matchLabels: {app: tgi}}
  template:
    metadata: {labels: {app: tgi}}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
      - name: server
        image: ghcr.io/huggingface/text-generation-inference:2.0.1
        resources: {limits: {nvidia.com/gpu: "1"}}
"""


@pytest.mark.parametrize("assigned, found", [(False, 1), (True, 0)])
def test_runasnonroot_without_a_uid_is_refused_unless_admission_assigns_one(assigned, found):
    config = cluster({"max_nodes": 2})
    config["uid_assigned_at_admission"] = assigned  # OpenShift's restricted-v2 SCC
    use_stack_config({"llm-serving:cluster": config, "llm-serving:models": {}})
    assert len(run_policy(policy("run-as-non-root-needs-uid"), manifests(OPENSHIFT_TGI))) == found


def test_memory_follows_the_pool_too():
    # 3 replicas x 20,000 MiB on the L4 pool (30,000 MiB a node): one fixed node is over, a pool of 3 is not.
    text = SERVER.replace("REPLICAS", "3").replace('limits: {nvidia.com/gpu: "1"}',
                                                    'limits: {nvidia.com/gpu: "1"}, requests: {memory: 20000Mi}')
    text = text.replace("replicas: 3", "replicas: 3\n  strategy: {type: Recreate}")
    found = {}
    for nodes in (None, {"max_nodes": 3}):
        use_stack_config({"llm-serving:cluster": cluster(nodes), "llm-serving:models": {}})
        found[bool(nodes)] = [v.message for v in run_policy(policy("node-memory-allocation"), manifests(text))]
    assert found[True] == []
    (message,) = found[False]
    assert message.startswith("l4-pool: 60,000 of 30,000 MiB of memory requested")
