"""The policies' view of Kubernetes objects, on the user's own reference manifests."""

from __future__ import annotations

import pytest

import core.k8s.manifests
from core.base import facts
from policylib import views
from tests.paths import REFERENCE
from tests.policy_harness import manifests
from tools.offline.manifests import load_manifest_dir


@pytest.fixture(scope="module")
def reference():
    out = {}
    for r in load_manifest_dir(REFERENCE):
        out[r.props["metadata"]["name"]] = r
    return out


def _workload(r):
    return core.k8s.manifests.workload(r.type, r.props, r.urn)


def test_candle_deployment_view(reference):
    x = _workload(reference["candle-vllm"])
    assert (x.kind, x.replicas, x.cards_per_pod, x.node) == ("Deployment", 1, 2, None)
    assert (x.strategy_type, x.max_surge, x.runtime_class) == ("Recreate", 0, "nvidia")
    assert x.memory_request_mib == 12 * 1024
    (container, server), = x.servers
    assert server.engine == "candle-vllm"
    assert server.model_arg == "/mnt/models/coder-14b-fp16"
    # candle-vllm's /v1/models reports the weights directory's name (seed 001).
    assert server.served_model_names == ("coder-14b-fp16",)
    assert server.tensor_parallel == 2
    assert container.image_pull_policy is None


def test_inference_service_predictor_view(reference):
    x = _workload(reference["coder"])
    assert (x.kind, x.replicas, x.cards_per_pod, x.node) == ("InferenceService", 1, 2, "worker-1")
    # deploymentStrategy lives under spec.predictor in KServe v1beta1.
    assert (x.strategy_type, x.max_surge) == ("Recreate", 0)
    # KServe gives predictor pods these labels beside the InferenceService's own.
    assert x.pod_labels[facts.KSERVE_ISVC_LABEL] == "coder"
    assert x.pod_labels[facts.KSERVE_COMPONENT_LABEL] == "predictor"
    assert x.pod_labels["app.kubernetes.io/name"] == "llm-coder"
    (_, server), = x.servers
    assert server.engine == "vllm"
    assert server.served_model_names == ("coder", "reasoning")
    assert (server.tensor_parallel, server.pipeline_parallel) == (2, 1)
    assert server.get("--max-model-len") == "262144"
    assert server.has("--disable-custom-all-reduce")
    assert x.volume("shm")["emptyDir"]["sizeLimit"] == "8Gi"


def test_service_view_and_selector(reference):
    svc = core.k8s.manifests.service(reference["reasoning-long-predictor"].type, reference["reasoning-long-predictor"].props)
    assert [(p.port, p.target_port) for p in svc.ports] == [(80, 8080), (8080, 8080)]
    coder = _workload(reference["coder"])
    assert not core.k8s.manifests.selector_matches(svc.selector, coder.pod_labels)  # selects reasoning, not coder
    assert core.k8s.manifests.selector_matches({"serving.kserve.io/inferenceservice": "coder"}, coder.pod_labels)
    assert not core.k8s.manifests.selector_matches({}, coder.pod_labels)  # an empty Service selector selects nothing here


def test_rolling_update_surge_and_comma_joined_served_names():
    (r,) = manifests(
        """
apiVersion: apps/v1
kind: Deployment
metadata: {name: x, annotations: {llm-serving.riotpiao.com/parked: "why", llm-serving.riotpiao.com/cold-start-seconds: "240"}}
spec:
  replicas: 0
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          args: ["--model=Qwen/Qwen3-30B-A3B-GPTQ-Int4", "--served-model-name=reasoning,reasoning-long"]
          resources: {limits: {nvidia.com/gpu: 1}}
"""
    )
    x = _workload(r)
    # Kubernetes scales the default 25% by the replicas: ceil(25% x 0) = 0 surge pods while parked.
    assert (x.strategy_type, x.max_surge) == ("RollingUpdate", 0)
    assert (x.replicas, x.running, x.parked_reason, x.cold_start_seconds) == (0, False, "why", 240)
    (_, server), = x.servers
    # The comma-joined form is ONE name containing a comma (seed 002 reasoning.yaml).
    assert server.served_model_names == ("reasoning,reasoning-long",)


@pytest.mark.parametrize(
    "value, expected",
    [("12Gi", 12 * 1024), ("63495Mi", 63495), ("1G", 1e9 / 2**20), (2147483648, 2048), ("bogus", None)],
)
def test_memory_quantities(value, expected):
    got = core.k8s.manifests.mib(value)
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_label_selector_expressions():
    labels = {"app.kubernetes.io/part-of": "llm-serving", "app": "x"}
    assert core.k8s.manifests.label_selector_matches({}, labels)
    assert core.k8s.manifests.label_selector_matches({"matchLabels": {"app": "x"}}, labels)
    assert not core.k8s.manifests.label_selector_matches({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]}, labels)
    assert core.k8s.manifests.label_selector_matches({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, labels)


def test_numbers_arrive_as_doubles_over_grpc():
    """Protobuf Struct numbers are doubles: replicas 0.0 must read 0, not the default 1."""
    (dep, svc) = manifests(
        """
apiVersion: apps/v1
kind: Deployment
metadata: {name: clef-serve}
spec:
  replicas: 0.0
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0.0}}
  template:
    spec:
      initContainers: [{name: warm, image: x@sha256:1, resources: {limits: {nvidia.com/gpu: 3.0}}}]
      containers: [{name: c, image: x@sha256:1, ports: [{containerPort: 8080.0, name: http}], resources: {limits: {nvidia.com/gpu: 1.0}}}]
---
apiVersion: v1
kind: Service
metadata: {name: s}
spec: {selector: {app: x}, ports: [{port: 80.0, targetPort: 8080.0}, {port: 81.0, targetPort: http}]}
"""
    )
    x = _workload(dep)
    assert (x.replicas, x.max_surge) == (0, 0)
    assert x.containers[0].ports == (8080,) and x.containers[0].port_names == {"http": 8080}
    assert x.cards_per_pod == 3  # the init container's 3 cards outweigh the app container's 1
    s = core.k8s.manifests.service(svc.type, svc.props)
    assert [(p.port, p.target_port) for p in s.ports] == [(80, 8080), (81, "http")]


def test_of_reads_the_workload_a_resource_policy_judges_and_servers_of_filters_by_engine(reference):
    from types import SimpleNamespace

    r = reference["coder"]
    w_ = views.of(SimpleNamespace(resource_type=r.type, props=r.props, urn=r.urn))
    assert (w_.name, w_.urn) == ("coder", r.urn)
    assert [s.engine for _, s in w_.servers_of("vllm")] == ["vllm"]
    assert w_.servers_of("candle-vllm") == ()
    svc = reference["coder-predictor"]
    assert views.of(SimpleNamespace(resource_type=svc.type, props=svc.props, urn=svc.urn)) is None
