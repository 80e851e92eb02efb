"""gpu-card-allocation: per node, cards of running pods + surge + reserved fit the node (spec history, 000, 001, 003)."""

from __future__ import annotations

import copy
import json
import random

import pulumi.runtime.config as runtime_config

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, fixture_cases, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_manifest_dir, load_stack_file

NAME = policy("gpu-card-allocation").name
V100 = {"product": "Tesla-V100-PCIE-32GB", "memory_mib": 32768, "compute_capability": "7.0",
        "nvlink": False, "hbm_bandwidth_gb_s": 900}


def _deployment(name, cards, replicas=1, node="worker-1", strategy="type: Recreate"):
    pin = f"nodeSelector: {{kubernetes.io/hostname: {node}}}" if node else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  replicas: {replicas}
  strategy: {{{strategy}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      {pin}
      containers:
      - name: a
        image: x
        resources: {{limits: {{nvidia.com/gpu: "{cards}"}}}}
---"""


def _isvc(name, cards, min_replicas=1, max_replicas=1):
    return f"""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  predictor:
    minReplicas: {min_replicas}
    maxReplicas: {max_replicas}
    deploymentStrategy: {{type: Recreate}}
    nodeSelector: {{kubernetes.io/hostname: worker-1}}
    containers:
    - name: kserve-container
      image: x
      resources: {{limits: {{nvidia.com/gpu: "{cards}"}}}}
---"""


def _nodes(*nodes):
    """A stack config with the given nodes: (name, cards[, reserved list])."""
    out = []
    for n in nodes:
        node = {"name": n[0], "cards": n[1], "card": V100, "allocatable_memory_mib": 63495}
        if len(n) > 2:
            node["reserved"] = n[2]
        out.append(node)
    config = dict(load_stack_file(DEFAULT_STACK_FILE))
    config["llm-serving:cluster"] = {"nodes": out}
    return config


#: The fix and source of an over-allocated node's message for hand-written YAML.
CARD_FIX = (". Fix: bring the cards to 4 or fewer: park one workload (replicas 0 with annotation "
            "llm-serving.riotpiao.com/parked: <reason>), lower the cards of one (the container's nvidia.com/gpu "
            "(requests = limits), with its tensor parallel size), or pin one to another node (nodeSelector "
            "kubernetes.io/hostname). Source: seeds 001 and 003 (6 and 7 "
            "cards asked of worker-1's 4; a surge pod Pending for a card the old pod holds).")


def _run(text, config=None, stack=None):
    use_stack_config(stack or load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("gpu-card-allocation"), manifests(text), config)


def test_shares_are_ordered_largest_first_then_by_name():
    text = _deployment("zeta", 2) + _deployment("alpha", 1) + _deployment("beta", 2)
    (v,) = _run(text)
    assert v.message == (
        "worker-1: 5 of 4 cards requested: beta 2, zeta 2, alpha 1; the pods beyond 4 cards stay Pending" + CARD_FIX
    )
    assert v.urn == ""  # the node is not a resource: a stack-level finding


def test_exactly_full_node_fits():
    assert _run(_deployment("a", 2) + _deployment("b", 1) + _deployment("c", 1)) == []


def test_parked_workloads_take_no_cards():
    text = _deployment("parked", 4, replicas=0) + _isvc("coder", 2, 0, 0) + _deployment("live", 4)
    assert _run(text) == []


def test_replicas_multiply_and_the_share_says_how_many_pods():
    (v,) = _run(_deployment("srv", 2, replicas=2) + _deployment("other", 1))
    assert v.message.startswith("worker-1: 5 of 4 cards requested: srv 4 (2 pods), other 1;")


def test_inference_service_counts_its_replica_bound():
    """KServe may scale to maxReplicas: the bound is what the node must hold."""
    (v,) = _run(_isvc("coder", 2, 1, 2) + _deployment("reasoning", 1))
    assert v.message.startswith("worker-1: 5 of 4 cards requested: coder 4 (2 pods), reasoning 1;")


def test_rolling_update_surge_is_named_and_blamed():
    text = _deployment("coder", 2, strategy="type: RollingUpdate") + _deployment("reasoning", 1) + _deployment("clef", 1)
    (v,) = _run(text)
    assert v.message.startswith(
        "worker-1: 6 of 4 cards requested: coder 2 + 2 surge (RollingUpdate), clef 1, reasoning 1;"
    )
    assert v.message.endswith(
        "the RollingUpdate surge (2) is the cause: without it 4 of 4 fit. Fix: set strategy type Recreate on the "
        "surging workload. Source: seeds 001 and 003 (6 and 7 cards asked of worker-1's 4; a surge pod Pending for "
        "a card the old pod holds)."
    )


def test_rolling_update_with_max_surge_zero_needs_no_card():
    strategy = "type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 1}"
    assert _run(_deployment("coder", 2, strategy=strategy) + _deployment("b", 2)) == []


def test_count_surge_parameter_turns_the_surge_off():
    case = fixture_cases(NAME, "disallowed")
    surge = next(c for c in case if c.name == "rolling-update-surge.yaml")
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    resources = load_manifest_dir(surge, stack="fixture")
    assert run_policy(policy("gpu-card-allocation"), resources, {"countSurge": True})
    assert run_policy(policy("gpu-card-allocation"), resources, {"countSurge": False}) == []


def test_surge_that_is_not_the_cause_is_not_blamed():
    text = _deployment("coder", 2, strategy="type: RollingUpdate") + _deployment("big", 3)
    (v,) = _run(text)
    assert "coder 2 + 2 surge (RollingUpdate)" in v.message
    assert "is the cause" not in v.message


def test_reserved_cards_count_and_are_named():
    stack = _nodes(("worker-1", 4, [{"workload": "gpu-burn", "cards": 1, "reason": "manual soak test"}]))
    (v,) = _run(_deployment("coder", 2) + _deployment("reasoning", 1) + _deployment("clef", 1), stack=stack)
    assert v.message.startswith(
        "worker-1: 5 of 4 cards requested: coder 2, clef 1, gpu-burn 1 (reserved outside the stack: manual soak test), "
        "reasoning 1;"
    )


def test_unpinned_pods_pack_onto_nodes_with_room():
    """worst-fit over two nodes: worker-1 has 3 free, worker-2 4; three 2-card pods fit (2 + 1 pods)."""
    stack = _nodes(("worker-1", 4), ("worker-2", 4))
    text = _deployment("pinned", 1) + _deployment("spread", 2, replicas=3, node=None)
    assert _run(text, stack=stack) == []


def test_packing_is_per_node_not_a_sum_over_the_cluster():
    """8 cards in all and 8 asked, but no node has 2 free for the unpinned pod: it is counted
    on the node with the most free cards (tie: by name) and named as unpinned."""
    stack = _nodes(("worker-1", 4), ("worker-2", 4))
    text = _deployment("a", 3) + _deployment("b", 3, node="worker-2") + _deployment("loose", 2, node=None)
    (v,) = _run(text, stack=stack)
    assert v.message == (
        "worker-1: 5 of 4 cards requested: a 3, loose 2 (unpinned: loose); the pods beyond 4 cards stay Pending; "
        "unpinned loose fits on no node (counted on the node with the most free cards)" + CARD_FIX
    )


def test_unpinned_pods_avoid_a_node_that_pinned_pods_over_fill():
    """Pinned pods count first; the unpinned pod goes to the node with room, not onto the overflow."""
    stack = _nodes(("worker-1", 4), ("worker-2", 4))
    text = _deployment("fits", 1, node=None) + _deployment("a", 3) + _deployment("b", 2)
    (v,) = _run(text, stack=stack)
    assert v.message == "worker-1: 5 of 4 cards requested: a 3, b 2; the pods beyond 4 cards stay Pending" + CARD_FIX


def test_a_pod_larger_than_every_node_is_its_own_violation_and_takes_no_cards():
    (v,) = _run(_deployment("huge", 8, node=None) + _deployment("ok", 4))
    assert v.message.startswith("Deployment huge: one pod asks 8 cards and the largest node has 4;")
    assert v.urn.endswith("kubernetes:apps/v1:Deployment::llm-serving/huge")


def test_a_pod_larger_than_its_pinned_node_names_that_node():
    stack = _nodes(("worker-1", 4), ("worker-2", 8))
    (v,) = _run(_deployment("big", 8, node="worker-1"), stack=stack)
    assert v.message.startswith("Deployment big: one pod asks 8 cards and its node worker-1 has 4;")


def test_pinned_to_a_node_outside_the_inventory():
    (v,) = _run(_deployment("lost", 1, node="worker-9") + _deployment("fine", 4))
    assert v.message.startswith(
        "Deployment lost: pinned to node worker-9, which is not in the inventory (llm-serving:cluster nodes: worker-1)"
    )
    assert v.urn.endswith("::llm-serving/lost")


def test_missing_inventory_is_one_violation_naming_the_key():
    saved = copy.copy(runtime_config.CONFIG.get())
    try:
        runtime_config.set_all_config({k: v for k, v in saved.items() if k != "llm-serving:cluster"})
        found = run_policy(policy("gpu-card-allocation"), manifests(_deployment("a", 1) + _deployment("b", 1)))
    finally:
        runtime_config.set_all_config(saved)
    assert len(found) == 1
    assert "llm-serving:cluster" in found[0].message and "give the stack file's config the llm-serving:cluster" in found[0].message


def test_invalid_inventory_is_one_violation():
    stack = dict(load_stack_file(DEFAULT_STACK_FILE))
    stack["llm-serving:cluster"] = {"nodes": [{"name": "worker-1", "cards": -1, "allocatable_memory_mib": 1}]}
    (v,) = _run(_deployment("a", 1), stack=stack)
    assert "llm-serving:cluster is invalid" in v.message


def test_no_gpu_workload_needs_no_inventory():
    saved = copy.copy(runtime_config.CONFIG.get())
    try:
        runtime_config.set_all_config({})
        assert run_policy(policy("gpu-card-allocation"), manifests(_deployment("cpu-only", 0))) == []
    finally:
        runtime_config.set_all_config(saved)


def test_result_does_not_depend_on_resource_order():
    case = next(c for c in fixture_cases(NAME, "disallowed") if c.name == "after-003.yaml")
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    resources = load_manifest_dir(case, stack="fixture")
    want = [v.message for v in run_policy(policy("gpu-card-allocation"), resources)]
    for seed in range(5):
        shuffled = resources[:]
        random.Random(seed).shuffle(shuffled)
        assert [v.message for v in run_policy(policy("gpu-card-allocation"), shuffled)] == want


def test_config_schema_documents_the_parameter_and_its_default():
    props = policy("gpu-card-allocation").config_schema.properties
    assert props["countSurge"]["type"] == "boolean" and props["countSurge"]["default"] is True
    json.dumps(props)  # serialisable for GetAnalyzerInfo
