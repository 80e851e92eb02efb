"""The KServe stand-in's predictor Deployment (testbed.kserve_standin.predictor_deployment): its
replicas as KServe's RawDeployment mode gives them."""

from __future__ import annotations

import pytest

from testbed.kserve_standin import predictor_deployment


def _isvc(**predictor):
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "reasoning", "namespace": "llm-serving", "uid": "u-1"},
            "spec": {"predictor": {"containers": [{"name": "kserve-container", "image": "vllm/vllm-openai:v0.11.0"}],
                                   **predictor}}}


@pytest.mark.parametrize("predictor, replicas", [
    ({}, 1),
    ({"minReplicas": 1, "maxReplicas": 1}, 1),
    ({"minReplicas": 0, "maxReplicas": 0}, 0),  # parked (seed 000's ornith)
    ({"minReplicas": 0}, 1),  # no scale to zero in RawDeployment (kserve #3514)
    ({"minReplicas": 0, "maxReplicas": 2}, 1),
    ({"minReplicas": 2, "maxReplicas": 3}, 2),
])
def test_predictor_replicas_as_raw_deployment_gives_them(predictor, replicas):
    deployment = predictor_deployment(_isvc(**predictor))
    assert deployment["spec"]["replicas"] == replicas
    assert deployment["metadata"]["name"] == "reasoning-predictor"
