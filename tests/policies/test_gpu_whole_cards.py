"""gpu-whole-cards: nvidia.com/gpu requests equal limits and are whole numbers."""

from __future__ import annotations

import pods as mod
import pytest

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


@pytest.mark.parametrize(
    "resources, problems",
    [
        ({"limits": {"nvidia.com/gpu": 2}}, []),
        ({"requests": {"nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": 2.0}}, []),  # gRPC delivers 2.0
        ({"requests": {"nvidia.com/gpu": "2"}}, ['request "2" has no limit (extended resources need limit = request)']),
        ({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "2"}}, ['request "1" differs from limit "2"']),
        ({"limits": {"nvidia.com/gpu": 0.5}}, ["limit 0.5 is not a whole number of cards"]),
        ({"limits": {"nvidia.com/gpu": "-1"}}, ['limit "-1" is not a whole number of cards']),
        ({"limits": {"nvidia.com/gpu": "one"}}, ['limit "one" is not a whole number of cards']),
        ({"requests": {"cpu": "4"}}, []),
    ],
)
def test_container_problems(resources, problems):
    assert mod.gpu_whole_cards_container_problems(resources) == problems


def _run(text: str):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("gpu-whole-cards"), manifests(text))


def test_every_kind_that_runs_pods_is_judged_with_its_component_named():
    text = """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: llm-serving}
spec:
  containers:
  - {name: a, image: x, resources: {limits: {nvidia.com/gpu: "0.5"}}}
---
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: i, namespace: llm-serving}
spec:
  predictor:
    containers:
    - {name: k, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}
  transformer:
    containers:
    - {name: t, image: x, resources: {requests: {nvidia.com/gpu: "1"}}}
"""
    messages = sorted(v.message for v in _run(text))
    assert len(messages) == 2
    assert messages[0].startswith("InferenceService i, transformer container t: nvidia.com/gpu request \"1\" has no limit")
    assert messages[1].startswith("Pod p, container a: nvidia.com/gpu limit \"0.5\" is not a whole number")
