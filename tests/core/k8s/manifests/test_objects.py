"""core.k8s.manifests.objects: the objects that scale, disrupt, limit or route to pods, read as the API reads them."""

from __future__ import annotations

import yaml

from core.k8s.manifests import objects, pods
from core.k8s.manifests.objects import duration_seconds


def test_gateway_durations_are_seconds():
    assert duration_seconds("300s") == 300
    assert duration_seconds("1h30m") == 5400
    assert duration_seconds("500ms") == 0.5
    assert duration_seconds("0s") == 0
    assert duration_seconds("five minutes") is None


def test_a_budget_allows_what_the_disruption_controller_allows():
    b = objects.DisruptionBudget("", "pdb", "ns", {}, 1, None)
    assert b.allowed_disruptions(1) == 0 and b.allowed_disruptions(3) == 2
    assert objects.DisruptionBudget("", "pdb", "ns", {}, "50%", None).allowed_disruptions(3) == 1  # 50% of 3 rounds up: 2 must stay
    assert objects.DisruptionBudget("", "pdb", "ns", {}, None, 0).allowed_disruptions(2) == 0
    assert objects.DisruptionBudget("", "pdb", "ns", {}, None, None).allowed_disruptions(2) is None
    assert objects.DisruptionBudget("", "pdb", "ns", {}, 1.0, None).setting == "minAvailable: 1"  # a gRPC double


def test_limit_range_defaults_fill_only_what_is_missing():
    c = pods.container({"name": "vllm", "resources": {"requests": {"memory": "12Gi"}, "limits": {"nvidia.com/gpu": 2}}})
    lr = objects.limit_range({"metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": [
        {"type": "Container", "default": {"memory": "512Mi", "cpu": "500m"}, "defaultRequest": {"cpu": "250m"}},
        {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}}]}})
    got = objects.admitted(c, [lr])
    assert got.requests == {"memory": "12Gi", "cpu": "250m", "nvidia.com/gpu": "2"}
    assert got.limits == {"nvidia.com/gpu": "2", "memory": "512Mi", "cpu": "500m"}
    assert got.defaulted == {"limits.memory": "lr", "limits.cpu": "lr", "requests.cpu": "lr"}
    assert len(lr.items) == 1  # the PVC item is not a container's


def test_routes_read_each_backend_with_its_timeout():
    ingress = yaml.safe_load("""
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: coder, namespace: llm-serving}
spec:
  ingressClassName: nginx
  rules:
  - http:
      paths:
      - backend: {service: {name: coder, port: {name: http}}}
""")
    rt = objects.route("kubernetes:networking.k8s.io/v1:Ingress", ingress)
    assert rt is not None
    (b,) = rt.backends
    assert (b.name, b.port, b.port_name, b.timeout_seconds) == ("coder", None, "http", 60.0)
    ingress["metadata"]["annotations"] = {objects.NGINX_READ_TIMEOUT_ANNOTATION: "3600"}
    assert objects.route("", ingress).backends[0].timeout_seconds == 3600.0
    ingress["spec"]["ingressClassName"] = "traefik"
    ingress["metadata"]["annotations"] = {}
    assert objects.route("", ingress).backends[0].timeout_seconds is None  # another controller's default is not known
    http = yaml.safe_load("""
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: ns}
spec:
  rules:
  - backendRefs: [{name: coder, port: 80}]
    timeouts: {request: 10m, backendRequest: 300s}
  - backendRefs: [{group: inference.networking.k8s.io, kind: InferencePool, name: pool}]
""")
    a, p = objects.route("", http).backends
    assert (a.port, a.timeout_seconds, a.timeout_from) == (80, 300.0, "spec.rules[0].timeouts.backendRequest: 300s")
    assert (p.kind, p.timeout_seconds) == ("InferencePool", None)


def test_pools_of_both_api_versions():
    old = objects.pool({"metadata": {"name": "p"}, "spec": {"targetPortNumber": 8000, "selector": {"app": "vllm"}}})
    new = objects.pool({"metadata": {"name": "p"}, "spec": {"targetPorts": [{"number": 8000}],
                                                            "selector": {"matchLabels": {"app": "vllm"}}}})
    assert (old.selector, old.target_ports) == (new.selector, new.target_ports) == ({"app": "vllm"}, (8000,))


def test_autoscaler_reads_its_target_and_utilization_metrics():
    a = objects.autoscaler({"metadata": {"name": "h", "namespace": "ns"}, "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 4.0,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]}})
    assert (a.target_kind, a.target_name, a.min_replicas, a.max_replicas, a.utilization_of) == ("Deployment", "d", 1, 4, ("cpu",))


def test_a_runtime_supports_a_format_as_kserve_matches_it():
    r = objects.runtime({"metadata": {"name": "vllm", "namespace": "ns"}, "spec": {"supportedModelFormats": [
        {"name": "vLLM", "autoSelect": True}, {"name": "huggingface", "version": "1"}]}})
    assert objects.supports(r, "vllm", None) and objects.supports(r, "huggingface", "1")
    assert not objects.supports(r, "huggingface", "2") and not objects.supports(r, "sklearn", None)
    off = objects.runtime({"metadata": {"name": "off"}, "spec": {"disabled": True, "supportedModelFormats": [{"name": "vLLM"}]}})
    assert not objects.supports(off, "vLLM", None)
    p = objects.predictor({"metadata": {"name": "isvc"}, "spec": {"predictor": {"model": {
        "modelFormat": {"name": "vLLM"}, "runtime": "vllm"}}}})
    assert p is not None and (p.format_name, p.format_version, p.runtime) == ("vLLM", None, "vllm")
    assert objects.predictor({"metadata": {"name": "isvc"}, "spec": {"predictor": {"containers": []}}}) is None


def test_keda_and_aibrix_autoscalers_are_read_as_one():
    keda = objects.autoscaler({"metadata": {"name": "so"}, "spec": {"scaleTargetRef": {"name": "d"}}}, kind="ScaledObject")
    assert (keda.target_kind, keda.min_replicas, keda.max_replicas, keda.bound) == ("Deployment", 0, 100,
                                                                                     "maxReplicaCount 100 (KEDA's default)")
    aibrix = objects.autoscaler({"metadata": {"name": "pa"}, "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 1, "maxReplicas": 3}}, kind="PodAutoscaler")
    assert (aibrix.max_replicas, aibrix.bound, aibrix.utilization_of) == (3, "maxReplicas 3", ())


def test_a_request_left_out_is_its_own_limit_before_a_limit_range_defaults_it():
    c = pods.container({"name": "vllm", "resources": {"limits": {"memory": "40Gi"}}})
    lr = objects.limit_range({"metadata": {"name": "lr"}, "spec": {"limits": [
        {"type": "Container", "defaultRequest": {"memory": "512Mi"}}]}})
    got = objects.admitted(c, [lr])
    assert got.requests == {"memory": "40Gi"} and got.defaulted == {}


STATEFUL_SERVER = yaml.safe_load("""
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: vllm, namespace: ns}
spec:
  replicas: 2
  selector: {matchLabels: {app: vllm}}
  template:
    metadata: {labels: {app: vllm}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: [--model, Qwen/Qwen3-8B]
        resources: {limits: {nvidia.com/gpu: 1}}
""")


def test_budgets_and_pools_select_pods_by_the_labels_their_controller_adds():
    """A selector on the pod index a StatefulSet's controller adds selects that pod (the read model's
    ``Workload.matched_by`` / ``selected_by``), as a Service's does; a label no pod carries selects none."""
    (w,) = [pods.workload("kubernetes:apps/v1:StatefulSet", STATEFUL_SERVER)]
    budget = objects.disruption_budget({"metadata": {"name": "pdb", "namespace": "ns"}, "spec": {
        "minAvailable": 1, "selector": {"matchLabels": {"apps.kubernetes.io/pod-index": "0"}}}})
    assert objects.disrupted(budget, [w]) == (w,)
    pool = objects.pool({"metadata": {"name": "p", "namespace": "ns"}, "spec": {
        "targetPortNumber": 8000, "selector": {"statefulset.kubernetes.io/pod-name": "vllm-0"}}})
    assert objects.pooled(pool, [w]) == (w,)
    other = objects.pool({"metadata": {"name": "p", "namespace": "ns"}, "spec": {
        "targetPortNumber": 8000, "selector": {"apps.kubernetes.io/pod-index": "5"}}})  # replicas 2: no pod 5
    assert objects.pooled(other, [w]) == ()
