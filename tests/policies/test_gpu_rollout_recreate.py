"""gpu-rollout-recreate: a GPU rollout's surge fits in free cards, else Recreate (seeds 001, 003,
coder.yaml): maxUnavailable read, percentages rounded as Kubernetes does, and the rule
fires only when the surge does not fit, by the one allocation."""

from __future__ import annotations

import pytest

from core.capacity import allocation
from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


def _deployment(strategy: str, kind: str = "Deployment", gpu: int = 4, replicas: int = 1, name: str = "srv") -> str:
    """One Deployment on worker-1 (4 cards): with ``gpu`` 4 a single replica fills the node."""
    return f"""
apiVersion: apps/v1
kind: {kind}
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  replicas: {replicas}
  {strategy}
  template:
    spec:
      nodeSelector: {{kubernetes.io/hostname: worker-1}}
      containers:
      - {{name: a, image: x, resources: {{limits: {{nvidia.com/gpu: {gpu}}}}}}}
"""


def _run(text: str):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(policy("gpu-rollout-recreate"), manifests(text))]


@pytest.mark.parametrize(
    "strategy",
    [
        "strategy: {type: Recreate}",
        "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0}}",
        'strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: "0%", maxUnavailable: 1}}',
        # The analyzer's gRPC protocol delivers integers as floats.
        "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0.0, maxUnavailable: 1.0}}",
        # The old pod goes first (maxUnavailable 1): the rollout completes on a full node.
        "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 1}}",
        'strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: "100%", maxUnavailable: "100%"}}',
    ],
)
def test_no_surge_needing_room_passes_on_a_full_node(strategy):
    assert _run(_deployment(strategy)) == []


@pytest.mark.parametrize(
    "strategy, shown",
    [
        ("", "spec.strategy is omitted, so RollingUpdate with maxSurge 25% and maxUnavailable 25% "
             "(1 surge pod(s), 0 unavailable of 1 replica(s))"),
        ('strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: "1%"}}', "spec.strategy is RollingUpdate with maxSurge 1%"),
        ("strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 2.0}}", "spec.strategy is RollingUpdate with maxSurge 2 and"),
        # 25% of 1 replica is floor(0.25) = 0 pods unavailable: the old pod stays.
        ('strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: "25%"}}',
         "spec.strategy is RollingUpdate with maxSurge 1 and maxUnavailable 25% (1 surge pod(s), 0 unavailable of 1 replica(s))"),
    ],
)
def test_surge_on_a_full_node_is_reported_with_the_value_as_written(strategy, shown):
    (message,) = _run(_deployment(strategy))
    assert message.startswith(f"Deployment srv: pods hold 4 card(s) and {shown}")
    assert "worker-1 has 4 of 4 cards in use without the surge" in message
    assert "Fix: set spec.strategy.type: Recreate" in message


def test_surge_that_fits_in_free_cards_passes():
    # 1 card on a 4-card node: the surge pod takes a free card (an older verdict flagged it wrongly).
    assert _run(_deployment("", gpu=1)) == []


def test_surge_counts_with_the_rest_of_the_stack():
    # 2 + 2 cards fill worker-1; the 2-card surge of the second has no room.
    text = _deployment("strategy: {type: Recreate}", gpu=2, name="a") + "---" + _deployment("", gpu=2, name="b")
    (message,) = _run(text)
    assert message.startswith("Deployment b: pods hold 2 card(s)")
    assert "asks 2 more card(s)" in message and "(6 with it)" in message


def test_percentages_round_as_kubernetes_does():
    # 4 replicas of 1 card: 25% surge = ceil(1) = 1, 25% unavailable = floor(1) = 1: an old pod goes first.
    assert _run(_deployment("", gpu=1, replicas=4)) == []
    assert allocation.rollout("RollingUpdate", None, None, 4) == allocation.Rollout("RollingUpdate", 1, 1)
    assert allocation.rollout("RollingUpdate", None, None, 3) == allocation.Rollout("RollingUpdate", 1, 0)
    assert allocation.rollout("RollingUpdate", "30%", "30%", 10) == allocation.Rollout("RollingUpdate", 3, 3)
    assert allocation.rollout("RollingUpdate", "10%", "50%", 3) == allocation.Rollout("RollingUpdate", 1, 1)
    # Both resolve to 0 (not written as 0): the controller lets one pod be unavailable.
    assert allocation.rollout("RollingUpdate", 0, "25%", 1) == allocation.Rollout("RollingUpdate", 0, 1)
    assert allocation.rollout("Recreate", 5, 0, 1).extra_pods == 0
    assert allocation.rollout("RollingUpdate", "x%", 0, 1).valid is False


def test_three_of_four_replicas_with_default_strategy_keeps_the_old_pod():
    # 3 replicas x 1 card + surge: 25% unavailable of 3 = 0, surge 1: 4 of 4 fits.
    assert _run(_deployment("", gpu=1, replicas=3)) == []
    # 2 cards a pod, 2 replicas: 4 of 4 used; surge ceil(0.5) = 1 pod of 2 cards, unavailable 0: no room.
    (message,) = _run(_deployment("", gpu=2, replicas=2))
    assert "(1 surge pod(s), 0 unavailable of 2 replica(s))" in message


def test_both_zero_is_rejected_by_the_api_server():
    (message,) = _run(_deployment("strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}", gpu=1))
    assert "maxSurge 0 and maxUnavailable 0, which the API server rejects" in message


def test_cpu_workloads_statefulsets_and_parked_ones_are_not_judged():
    assert _run(_deployment("", gpu=0)) == []
    assert _run(_deployment("", kind="StatefulSet")) == []
    assert _run(_deployment("", replicas=0)) == []
