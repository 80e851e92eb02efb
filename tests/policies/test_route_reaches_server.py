"""route-reaches-server beyond its fixtures: an Ingress naming the Service port by name, a Service port whose
targetPort is not the server's port, and a backend Service that is not among the manifests."""

from __future__ import annotations

from policylib.pack import policies
from tests.paths import ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file

POLICY = next(p for p in policies() if p.name == "route-reaches-server")
OK = ROOT / "policies" / "fixtures" / "route-reaches-server" / "allowed" / "ingress-port-80.yaml"


def judge(text: str) -> list[str]:
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(POLICY, manifests(text))]


def test_a_port_named_as_the_service_names_it_reaches_the_server():
    text = OK.read_text().replace("              number: 80\n", "              name: http-8080\n")
    assert "name: http-8080\n" in text and judge(text) == []
    unknown = text.replace("              name: http-8080\n", "              name: metrics\n")
    assert "port metrics, which the Service does not expose" in judge(unknown)[0]


def test_a_service_port_that_targets_another_port_than_the_api():
    text = OK.read_text().replace("  - name: http\n    port: 80\n    targetPort: 8080", "  - name: http\n    port: 80\n    targetPort: 9090")
    assert "targetPort: 9090" in text
    (message,) = judge(text)
    assert "port 80, which reaches pod port 9090, but vllm of Deployment coder-vllm serves its API on 8080" in message


def test_a_backend_service_elsewhere_is_not_judged():
    text = OK.read_text().replace("            name: coder\n", "            name: coder-elsewhere\n")
    assert "coder-elsewhere" in text and judge(text.replace("number: 80", "number: 1234")) == []


def test_a_service_backend_without_a_port_is_said_so():
    text = (ROOT / "policies" / "fixtures" / "route-reaches-server" / "allowed" / "ingress-port-80.yaml").read_text()
    route = text.split("---\napiVersion: networking.k8s.io/v1")[0] + """---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: coder, namespace: llm-serving}
spec:
  rules:
  - backendRefs: [{name: coder}]
"""
    (message,) = judge(route)
    assert "sends to Service coder port (no port: a Service backend needs one), which the Service does not expose" in message
