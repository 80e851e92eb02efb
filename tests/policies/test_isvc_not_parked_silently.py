"""isvc-not-parked-silently: an InferenceService at zero replicas is declared parked (kustomization: ornith)."""

from __future__ import annotations

import kserve as mod
import pytest

from core.base import facts
from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


@pytest.mark.parametrize(
    "predictor, how",
    [
        ({"minReplicas": 0, "maxReplicas": 0}, "minReplicas 0, maxReplicas 0"),
        # The analyzer's gRPC protocol delivers integers as floats: 0.0 is zero too.
        ({"minReplicas": 0.0, "maxReplicas": 0.0}, "minReplicas 0, maxReplicas 0"),
        ({"replicas": 0}, "replicas 0"),
        ({"minReplicas": 0, "maxReplicas": 1}, None),  # scale-to-zero, answers after a cold start
        ({"minReplicas": 0}, None),
        ({}, None),
        ({"minReplicas": 1, "maxReplicas": 1}, None),
    ],
)
def test_zero_replicas(predictor, how):
    assert mod.zero_replicas(predictor) == how


def _isvc(annotations: str = "", replicas: str = "minReplicas: 0.0, maxReplicas: 0.0") -> str:
    return f"""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {{name: ornith, namespace: llm-serving, annotations: {{{annotations}}}}}
spec:
  predictor: {{{replicas}, containers: [{{name: k, image: x}}]}}
"""


def _run(text: str):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("isvc-not-parked-silently"), manifests(text))


def test_grpc_floats_at_zero_are_reported_with_the_urn():
    (v,) = _run(_isvc())
    assert v.message.startswith("InferenceService ornith: predictor at zero replicas (minReplicas 0, maxReplicas 0) "
                                "with no parked annotation; it still reports Ready=True")
    assert v.urn.endswith("kubernetes:serving.kserve.io/v1beta1:InferenceService::llm-serving/ornith")


def test_declared_parked_passes_and_a_blank_reason_does_not():
    assert _run(_isvc(f"{facts.PARKED_ANNOTATION}: retired")) == []
    (v,) = _run(_isvc(f"{facts.PARKED_ANNOTATION}: '  '"))
    assert "with an empty parked annotation" in v.message


def test_deployments_at_zero_are_not_judged():
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: llm-serving}\nspec: {replicas: 0}\n"
    assert _run(text) == []
