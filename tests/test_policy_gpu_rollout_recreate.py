"""gpu-rollout-recreate: GPU workloads roll out without a surge pod (seeds 001, 003, coder.yaml)."""

from __future__ import annotations

import pytest

import gpu_rollout_recreate as mod
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.manifests import load_stack_file


def _deployment(strategy: str, kind: str = "Deployment", gpu: int = 1) -> str:
    return f"""
apiVersion: apps/v1
kind: {kind}
metadata: {{name: srv, namespace: llm-serving}}
spec:
  {strategy}
  template:
    spec:
      containers:
      - {{name: a, image: x, resources: {{limits: {{nvidia.com/gpu: {gpu}}}}}}}
"""


def _run(text: str):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(mod.POLICY, manifests(text))]


@pytest.mark.parametrize(
    "strategy",
    [
        "strategy: {type: Recreate}",
        "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0}}",
        'strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: "0%", maxUnavailable: 1}}',
        # The analyzer's gRPC protocol delivers integers as floats.
        "strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0.0, maxUnavailable: 1.0}}",
    ],
)
def test_no_surge_passes(strategy):
    assert _run(_deployment(strategy)) == []


@pytest.mark.parametrize(
    "strategy, shown",
    [
        ("", "spec.strategy is omitted, so RollingUpdate with maxSurge 25%"),
        ('strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: "1%"}}', "spec.strategy is RollingUpdate with maxSurge 1%"),
        ("strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 2.0}}", "spec.strategy is RollingUpdate with maxSurge 2.0"),
    ],
)
def test_surge_is_reported_with_the_value_as_written(strategy, shown):
    (message,) = _run(_deployment(strategy))
    assert message.startswith(f"Deployment srv: pods hold 1 card(s) and {shown}: the surge pod")
    assert "Fix: set spec.strategy.type: Recreate (or RollingUpdate with maxSurge: 0)." in message


def test_both_zero_is_rejected_by_the_api_server():
    (message,) = _run(_deployment("strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}"))
    assert "maxSurge 0 and maxUnavailable 0, which the API server rejects" in message


def test_cpu_workloads_and_statefulsets_are_not_judged():
    assert _run(_deployment("", gpu=0)) == []
    assert _run(_deployment("", kind="StatefulSet")) == []
