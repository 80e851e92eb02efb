"""node-memory-allocation: per node, memory requests fit allocatable memory (coder.yaml: 63,495 MiB on worker-1)."""

from __future__ import annotations

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


def _deployment(name, request=None, limit=None, replicas=1, node="worker-1", strategy="type: Recreate", cards=0):
    pin = f"nodeSelector: {{kubernetes.io/hostname: {node}}}" if node else ""
    req = f"requests: {{memory: {request}}}" if request else ""
    lim = f"limits: {{memory: {limit}, nvidia.com/gpu: '{cards}'}}" if limit else f"limits: {{nvidia.com/gpu: '{cards}'}}"
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  replicas: {replicas}
  strategy: {{{strategy}}}
  template:
    spec:
      {pin}
      containers:
      - name: a
        image: x
        resources:
          {req}
          {lim}
---"""


def _run(text, config=None, stack=None):
    use_stack_config(stack or load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("node-memory-allocation"), manifests(text), config)


def _two_nodes():
    stack = dict(load_stack_file(DEFAULT_STACK_FILE))
    stack["llm-serving:cluster"] = {"nodes": [
        {"name": "worker-1", "cards": 0, "allocatable_memory_mib": 63495},
        {"name": "worker-2", "cards": 0, "allocatable_memory_mib": 32768},
    ]}
    return stack


def test_exact_allocatable_fits_and_one_mib_more_does_not():
    assert _run(_deployment("a", "63495Mi")) == []
    (v,) = _run(_deployment("a", "63495Mi") + _deployment("b", "1Mi"))
    assert v.message.startswith("worker-1: 63,496 of 63,495 MiB of memory requested: a 63,495, b 1;")


def test_limit_stands_in_for_a_missing_request():
    """Kubernetes defaults a missing request to the limit: a 40Gi limit alone requests 40Gi."""
    (v,) = _run(_deployment("a", limit="40Gi") + _deployment("b", "24Gi"))
    assert v.message.startswith("worker-1: 65,536 of 63,495 MiB of memory requested: a 40,960, b 24,576;")


def test_decimal_units_are_converted_to_mib():
    (v,) = _run(_deployment("a", "60G") + _deployment("b", "8G"))
    assert "of 63,495 MiB of memory requested: a 57,220.5, b 7,629.4" in v.message


def test_parked_pods_request_nothing():
    assert _run(_deployment("parked", "60Gi", replicas=0) + _deployment("live", "60Gi")) == []


def test_surge_counts_and_is_blamed_and_the_parameter_turns_it_off():
    text = _deployment("a", "40Gi", strategy="type: RollingUpdate")
    (v,) = _run(text)
    assert v.message.startswith(
        "worker-1: 81,920 of 63,495 MiB of memory requested: a 40,960 + 40,960 surge (RollingUpdate);"
    )
    assert v.message.endswith(
        "the RollingUpdate surge (40,960 MiB) is the cause. Fix: set strategy type Recreate on the surging "
        "workload. Source: seed 000 (coder.yaml: a 24Gi memory request did not schedule)."
    )
    assert _run(text, {"countSurge": False}) == []


def test_headroom_parameter_keeps_memory_free():
    text = _deployment("a", "60Gi")
    assert _run(text) == []
    (v,) = _run(text, {"headroomMiB": 4096})
    assert v.message.startswith(
        "worker-1: 65,536 of 63,495 MiB of memory requested: a 61,440, "
        "headroomMiB 4,096 (reserved outside the stack: kept free by the policy parameter);"
    )


def test_unpinned_pods_pack_by_memory_across_nodes():
    text = _deployment("a", "40Gi", node=None) + _deployment("b", "30Gi", node=None)
    assert _run(text, stack=_two_nodes()) == []
    # worst-fit: a 40Gi -> worker-1 (22,535 MiB left), b 30Gi -> worker-2 (2,048 left); a third
    # 20Gi pod still fits on worker-1, a 25Gi one fits nowhere and is counted on worker-1.
    assert _run(text + _deployment("c", "20Gi", node=None), stack=_two_nodes()) == []
    (v,) = _run(text + _deployment("c", "25Gi", node=None), stack=_two_nodes())
    assert v.message.startswith(
        "worker-1: 66,560 of 63,495 MiB of memory requested: a 40,960, c 25,600 (unpinned: a, c);"
    )


def test_a_pod_larger_than_every_node():
    (v,) = _run(_deployment("huge", "100Gi", node=None))
    assert v.message.startswith(
        "Deployment huge: one pod requests 102,400 MiB of memory and the largest node has 63,495 MiB allocatable;"
    )
    assert v.urn.endswith("::llm-serving/huge")


def test_unknown_node_is_reported_here_only_for_pods_without_cards():
    (v,) = _run(_deployment("web", "1Gi", node="worker-9"))
    assert v.message.startswith("Deployment web: pinned to node worker-9, which is not in the inventory")
    # A GPU workload pinned to an unknown node is gpu-card-allocation's finding, not repeated here.
    assert _run(_deployment("gpu", "1Gi", node="worker-9", cards=1)) == []


def test_missing_inventory_is_one_violation():
    stack = {k: v for k, v in load_stack_file(DEFAULT_STACK_FILE).items() if k != "llm-serving:cluster"}
    import pulumi.runtime.config as runtime_config
    saved = dict(runtime_config.CONFIG.get())
    try:
        runtime_config.set_all_config({})
        use_stack_config(stack)
        found = run_policy(policy("node-memory-allocation"), manifests(_deployment("a", "1Gi")))
    finally:
        runtime_config.set_all_config(saved)
    assert [v.message for v in found] == [
        "policy node-memory-allocation: cannot judge the stack: the stack config has no llm-serving:cluster; the "
        "policy pack needs the cluster inventory (nodes, cards, memory) from the stack file. Fix: give the stack "
        "file's config the llm-serving:cluster inventory (nodes, cards, allocatable_memory_mib) and llm-serving:models "
        "in the format of Pulumi.prod.yaml; the pack receives it in PULUMI_CONFIG. Source: the pack's inventory "
        "(the stack config)."
    ]
