"""network-ingress-for-clients: declared clients pass the NetworkPolicies on the pod's port (seed 002, 34 days)."""

from __future__ import annotations

import json

from policylib.pack import policy
from tests.paths import ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file

BACKEND = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: srv, namespace: llm-serving}
spec:
  template:
    metadata: {labels: {app: srv, app.kubernetes.io/part-of: llm-serving}}
    spec: {containers: [{name: main, image: x, ports: [{name: http, containerPort: 8080}]}]}
---"""


def _service(clients, target=8080, selector="{app: srv}"):
    annotation = json.dumps(json.dumps(clients))
    return f"""
apiVersion: v1
kind: Service
metadata:
  name: svc
  namespace: llm-serving
  annotations: {{llm-serving.riotpiao.com/clients: {annotation}}}
spec:
  selector: {selector}
  ports: [{{name: http, port: 80, targetPort: {target}}}, {{name: http-8080, port: 8080, targetPort: {target}}}]
---"""


def _policy(ingress, name="np", pod_selector="{}", types="[Ingress]"):
    return f"""
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  podSelector: {pod_selector}
  policyTypes: {types}
  ingress: {ingress}
---"""


GATEWAY = {"name": "gateway", "namespace": "gateway", "port": 80}
LOCAL = {"name": "qwen-finetune", "namespace": "llm-serving", "port": 80}
NS_GATEWAY = "{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: gateway}}}"


def _run(text, config=None):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("network-ingress-for-clients"), manifests(text), config)


def test_rule_ports_are_the_pods_port_not_the_service_port():
    on_service_port = _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: 80}}]}}]")
    (v,) = _run(BACKEND + _service([GATEWAY]) + on_service_port)
    assert v.message == (
        "Service svc: client gateway (namespace gateway) calls port 80 -> pod port 8080; NetworkPolicy np admits "
        "gateway only on 80: packets are dropped and the client sees a bare timeout. Fix: add an ingress rule "
        "admitting namespace gateway on port 8080. Source: seed 002 (poimen-memory dropped by the NetworkPolicy "
        "for 34 days)."
    )
    assert v.urn.endswith("kubernetes:core/v1:Service::llm-serving/svc")
    assert _run(BACKEND + _service([GATEWAY]) + _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: 8080}}]}}]")) == []


def test_a_rule_without_ports_admits_every_port():
    assert _run(BACKEND + _service([GATEWAY]) + _policy(f"[{{from: [{NS_GATEWAY}]}}]")) == []


def test_a_rule_without_from_admits_every_source():
    assert _run(BACKEND + _service([GATEWAY]) + _policy("[{ports: [{port: 8080}]}]")) == []


def test_named_rule_ports_and_port_ranges():
    assert _run(BACKEND + _service([GATEWAY]) + _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: http}}]}}]")) == []
    assert _run(BACKEND + _service([GATEWAY]) + _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: 8000, endPort: 8100}}]}}]")) == []
    (v,) = _run(BACKEND + _service([GATEWAY]) + _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: 9000, endPort: 9100}}, {{port: 80}}]}}]"))
    assert "admits gateway only on 80, 9000-9100" in v.message


def test_protocol_must_match():
    (v,) = _run(BACKEND + _service([GATEWAY]) + _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{protocol: UDP, port: 8080}}]}}]"))
    assert "admits gateway only on 8080" in v.message


def test_named_target_port_is_resolved_through_the_container_port_name():
    assert _run(BACKEND + _service([GATEWAY], target="http") + _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: 8080}}]}}]")) == []


def test_namespace_selector_must_match_the_client_namespace():
    poimen_only = _policy("[{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: poimen}}}]}]")
    (v,) = _run(BACKEND + _service([GATEWAY]) + poimen_only)
    assert "NetworkPolicy np admits nothing from namespace gateway" in v.message
    assert _run(BACKEND + _service([GATEWAY]) + _policy("[{from: [{namespaceSelector: {}}]}]")) == []
    expr = "[{from: [{namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [gateway]}]}}]}]"
    assert _run(BACKEND + _service([GATEWAY]) + _policy(expr)) == []


def test_pod_selector_alone_means_the_policys_own_namespace():
    same_ns = _policy("[{from: [{podSelector: {}}]}]")
    assert _run(BACKEND + _service([LOCAL]) + same_ns) == []
    (v,) = _run(BACKEND + _service([GATEWAY]) + same_ns)
    assert "admits nothing from namespace gateway" in v.message


def test_namespace_and_pod_selector_together_are_and():
    both = _policy("[{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: poimen}}, podSelector: {}}]}]")
    (v,) = _run(BACKEND + _service([GATEWAY]) + both)
    assert "admits nothing from namespace gateway" in v.message


def test_non_empty_pod_selector_is_trusted_by_default_and_refused_on_request():
    labelled = _policy("[{from: [{podSelector: {matchLabels: {app: trainer}}}]}]")
    assert _run(BACKEND + _service([LOCAL]) + labelled) == []
    assert _run(BACKEND + _service([LOCAL]) + labelled, {"podSelectorPeers": "admit"}) == []
    (v,) = _run(BACKEND + _service([LOCAL]) + labelled, {"podSelectorPeers": "refuse"})
    assert v.message.startswith("Service svc: client qwen-finetune (namespace llm-serving) calls port 80 -> pod port 8080;")


def test_ip_block_peers_admit_nothing_here():
    (v,) = _run(BACKEND + _service([GATEWAY]) + _policy("[{from: [{ipBlock: {cidr: 10.0.0.0/8}}]}]"))
    assert "admits nothing from namespace gateway" in v.message


def test_rules_of_every_policy_selecting_the_pods_add_up():
    ports_only = _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: 80}}]}}]", name="a")
    fixed = _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: 8080}}]}}]", name="b")
    assert _run(BACKEND + _service([GATEWAY]) + ports_only + fixed) == []
    (v,) = _run(BACKEND + _service([GATEWAY]) + ports_only + _policy("[]", name="deny-all"))
    assert "NetworkPolicies a, deny-all admit gateway only on 80" in v.message


def test_policies_that_do_not_select_the_pods_do_not_isolate_them():
    other = _policy("[]", pod_selector="{matchLabels: {app: other}}")
    assert _run(BACKEND + _service([GATEWAY]) + other) == []
    other_ns = _policy("[]").replace("namespace: llm-serving", "namespace: elsewhere")
    assert _run(BACKEND + _service([GATEWAY]) + other_ns) == []


def test_policy_types_without_ingress_do_not_isolate_and_absent_types_do():
    assert _run(BACKEND + _service([GATEWAY]) + _policy("[]", types="[Egress]")) == []
    (v,) = _run(BACKEND + _service([GATEWAY]) + _policy("[]").replace("  policyTypes: [Ingress]\n", ""))
    assert "admits nothing from namespace gateway" in v.message


def test_each_client_is_judged_on_its_own_port():
    poimen = {"name": "poimen-memory", "namespace": "poimen", "port": 8080}
    rule = "[{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: poimen}}}], ports: [{port: 8080}]}]"
    (v,) = _run(BACKEND + _service([poimen, GATEWAY]) + _policy(rule))
    assert v.message.startswith("Service svc: client gateway (namespace gateway)")


def test_two_backends_are_named():
    second = BACKEND.replace("name: srv,", "name: srv-b,")
    found = _run(BACKEND + second + _service([GATEWAY]) + _policy("[]"))
    assert sorted(v.message.split(";")[0] for v in found) == [
        "Service svc: client gateway (namespace gateway) calls port 80 -> pod port 8080 of srv",
        "Service svc: client gateway (namespace gateway) calls port 80 -> pod port 8080 of srv-b",
    ]


def test_no_running_backend_is_left_to_the_uniqueness_policy():
    parked = BACKEND.replace("spec:\n  template", "spec:\n  replicas: 0\n  template")
    assert _run(parked + _service([GATEWAY]) + _policy("[]")) == []


def test_clients_missing_a_field_are_malformed():
    (v,) = _run(BACKEND + _service([{"name": "gateway", "port": 80}]))
    assert v.message.startswith("Service svc: llm-serving.riotpiao.com/clients is not a JSON list of {name, namespace, port}")


def test_numbers_that_arrive_as_doubles_read_as_ports():
    """Over the analyzer protocol every number is a protobuf double: port 80 arrives as 80.0."""
    rule = f"[{{from: [{NS_GATEWAY}], ports: [{{port: 80.0}}, {{port: 9000.0, endPort: 9100.0}}]}}]"
    service = _service([GATEWAY], target="8080.0").replace("port: 80,", "port: 80.0,")
    (v,) = _run(BACKEND.replace("8080}", "8080.0}") + service + _policy(rule))
    assert "calls port 80 -> pod port 8080; NetworkPolicy np admits gateway only on 80, 9000-9100:" in v.message
    assert _run(BACKEND + _service([GATEWAY]) + _policy(f"[{{from: [{NS_GATEWAY}], ports: [{{port: 8080.0}}]}}]")) == []



def test_a_client_on_a_side_port_is_told_it_never_reaches_the_api():
    """production-stack's engine Service: a client declared on zmq-port (55555) calls the KV-cache
    transfer listener, not the API on 8000."""
    text = (ROOT / "tests" / "heldout" / "production-stack-engine-rendered.yaml").read_text()
    head = '  name: "vllm-llama3-engine-service"\n  namespace: llm-serving\n'
    assert head in text

    def run(port: int):
        clients = json.dumps([{"name": "router", "namespace": "llm-serving", "port": port}])
        annotated = text.replace(head, f"{head}  annotations:\n    llm-serving.riotpiao.com/clients: '{clients}'\n", 1)
        use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
        return run_policy(policy("network-ingress-for-clients"), manifests(annotated))

    assert run(8000) == []
    (v,) = run(55555)
    assert ("client router (namespace llm-serving) calls port 55555 -> pod port 55555, containerPort 55555 beside the "
            "API, not the API: vllm answers its API on 8000") in v.message
