"""service-target-port: targetPort reaches a port the selected pods declare and listen on (coder-service.yaml)."""

from __future__ import annotations

import services as mod

import core.k8s.manifests
from policylib.pack import policy
from tests.paths import ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_manifest_dir, load_stack_file


def _deployment(ports="[{containerPort: 8080}]", args="[]", image="x", replicas=1, name="srv"):
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  replicas: {replicas}
  template:
    metadata: {{labels: {{app: srv}}}}
    spec:
      containers:
      - {{name: main, image: {image}, args: {args}, ports: {ports}}}
---"""


def _service(target, port=80, name="http"):
    return f"""
apiVersion: v1
kind: Service
metadata: {{name: svc, namespace: llm-serving}}
spec:
  selector: {{app: srv}}
  ports: [{{name: {name}, port: {port}, targetPort: {target}}}]
---"""


def _run(text):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("service-target-port"), manifests(text))


def test_numeric_target_on_a_declared_port_passes():
    assert _run(_deployment() + _service(8080)) == []


def test_missing_target_port_defaults_to_the_service_port():
    text = _deployment() + """
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: llm-serving}
spec: {selector: {app: srv}, ports: [{port: 80}]}
"""
    (v,) = _run(text)
    assert v.message.startswith("Service svc port 80: targetPort 80 is not a containerPort of srv (Deployment) (containerPorts: 8080)")
    assert v.urn.endswith("kubernetes:core/v1:Service::llm-serving/svc")


def test_named_target_resolves_through_named_container_ports():
    text = _deployment(ports="[{name: web, containerPort: 8080}]") + _service("web")
    assert _run(text) == []
    (v,) = _run(_deployment(ports="[{name: web, containerPort: 8080}]") + _service("api"))
    assert v.message.startswith("Service svc port 80 (http): targetPort api names no containerPort of srv (Deployment) (named ports: web)")


def test_named_target_on_pods_without_ports_is_a_violation():
    (v,) = _run(_deployment(ports="[]") + _service("http"))
    assert "names no containerPort of srv (Deployment) (named ports: none)" in v.message


def test_numeric_target_on_pods_without_ports_is_not_judged_without_a_server_port():
    assert _run(_deployment(ports="[]") + _service(9999)) == []


def test_numeric_target_on_pods_without_ports_is_judged_by_the_server_port_flag():
    candle = _deployment(ports="[]", image="forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70",
                         args='["--w", "/mnt/models/m", "--p", "8080"]')
    assert _run(candle + _service(8080)) == []
    (v,) = _run(candle + _service(8000))
    assert "targetPort 8000 reaches pod port 8000 of srv (Deployment), but container main runs candle-vllm on 8080" in v.message


def test_vllm_port_flag_disagreeing_with_the_declared_port():
    vllm = _deployment(image="vllm/vllm-openai:v0.11.0", args='["--model=m", "--port=8000"]')
    (v,) = _run(vllm + _service(8080))
    assert "but container main runs vllm on 8000" in v.message


def test_services_with_no_running_match_are_left_to_the_uniqueness_policy():
    assert _run(_deployment(replicas=0) + _service(1234)) == []


def test_each_selected_workload_is_checked():
    text = _deployment(name="a") + _deployment(name="b", ports="[{containerPort: 9000}]") + _service(8080)
    (v,) = _run(text)
    assert "is not a containerPort of b (Deployment) (containerPorts: 9000)" in v.message


def test_listen_port_reads_the_engine_flag():
    assert mod.listen_port(core.k8s.manifests.parse_args("vllm", ["--port", "8080"])) == 8080
    assert mod.listen_port(core.k8s.manifests.parse_args("candle-vllm", ["--p", "2000"])) == 2000
    # No port flag: the engine's default (vLLM 8000, candle-vllm 2000), not "unknown".
    assert mod.listen_port(core.k8s.manifests.parse_args("vllm", ["--model", "m"])) == 8000
    assert mod.listen_port(core.k8s.manifests.parse_args("candle-vllm", ["--w", "/mnt/models/m"])) == 2000
    # A port that is not a literal, or an argv still inside a shell script, is not guessed.
    assert mod.listen_port(core.k8s.manifests.parse_args("vllm", ["--port", "$(PORT)"])) is None
    assert mod.listen_port(core.k8s.manifests.parse_args("vllm", ["-c", "vllm serve m --port 8080"])) is None


def test_numbers_that_arrive_as_doubles_are_shown_as_whole_numbers():
    """Over the analyzer protocol every number is a protobuf double: targetPort 8000 arrives as 8000.0."""
    (v,) = _run(_deployment(ports="[{containerPort: 8080.0}]") + _service(8000.0, port=80.0))
    assert v.message.startswith(
        "Service svc port 80 (http): targetPort 8000 is not a containerPort of srv (Deployment) (containerPorts: 8080)"
    )


# --- the API port versus side ports (the server's endpoint) ---------------------------------------

PRODUCTION_STACK = ROOT / "tests" / "heldout" / "production-stack-engine-rendered.yaml"


def test_side_ports_beside_the_declared_api_port_pass_on_production_stacks_rendered_chart():
    """production-stack's engine Service also exposes zmq-port and ucx-port (KV-cache transfer);
    before, every Service port was judged as the API port and both were blocked."""
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    assert run_policy(policy("service-target-port"), load_manifest_dir(PRODUCTION_STACK)) == []


def test_a_wrong_api_target_port_beside_a_side_port_still_fails():
    text = PRODUCTION_STACK.read_text().replace('targetPort: "container-port"', "targetPort: 8080")
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    (v,) = run_policy(policy("service-target-port"), manifests(text))
    assert v.message.startswith("Service vllm-llama3-engine-service port 8000 (service-port): targetPort 8080 is not a "
                                "containerPort of vllm-llama3-deployment-vllm (Deployment) (containerPorts: 8000, 9999, 55555)")


def test_a_declared_port_that_is_not_the_api_port_still_fails_when_the_api_port_is_not_declared():
    """The container declares 8080 and vLLM listens on its default 8000: the declared port is the
    API port written wrong, not a side port."""
    (v,) = _run(_deployment(ports="[{containerPort: 8080}]", args="[vllm, serve, m]", image="vllm/vllm-openai:v0.11.0")
                + _service(8080))
    assert "container main runs vllm on 8000 (vllm's default, no --port)" in v.message


def test_a_side_port_the_servers_arguments_open_passes_without_a_declaration():
    kv = "'{\"kv_connector\":\"P2pNcclConnector\",\"kv_role\":\"kv_producer\",\"kv_port\":\"21001\"}'"
    text = _deployment(ports="[]", image="vllm/vllm-openai:v0.11.0",
                       args=f"[vllm, serve, m, --port, '8000', --kv-transfer-config, {kv}]")
    assert _run(text + _service(21001)) == []
    (v,) = _run(text + _service(21002))
    assert "targetPort 21002 reaches pod port 21002" in v.message


#: AIBrix's autoscaling sample (vllm-project/aibrix samples/autoscaling/deploy.yaml, Apache-2.0; the
#: corpus case carries its source and commit): Service ports serve 8000 -> vLLM's --port 8000 and
#: http 8080, the aibrix-runtime sidecar's metrics port the Service's prometheus.io/port names.
AIBRIX_AUTOSCALING = ROOT / "tests" / "corpus" / "cases" / "aibrix-autoscaling.yaml"


def test_the_services_scrape_port_beside_the_api_port_passes_on_aibrixs_sample():
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    assert run_policy(policy("service-target-port"), load_manifest_dir(AIBRIX_AUTOSCALING)) == []


def test_a_dead_port_the_scrape_annotation_does_not_name_still_fails():
    text = AIBRIX_AUTOSCALING.read_text().replace('prometheus.io/port: "8080"', 'prometheus.io/port: "9090"')
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    (v,) = run_policy(policy("service-target-port"), manifests(text))
    assert v.message.startswith("Service deepseek-r1-distill-llama-8b port 8080 (http): targetPort 8080 is not a "
                                "containerPort of deepseek-r1-distill-llama-8b (Deployment) (containerPorts: 8000)")


def test_the_scrape_port_fails_when_no_port_of_the_service_reaches_the_api():
    """With --port 8001, serve 8000 reaches no listener either, so neither port is a side port."""
    text = AIBRIX_AUTOSCALING.read_text().replace('- "8000"\n', '- "8001"\n', 1)
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    found = sorted(v.message.split(":")[0] for v in run_policy(policy("service-target-port"), manifests(text)))
    assert found == ["Service deepseek-r1-distill-llama-8b port 8000 (serve)",
                     "Service deepseek-r1-distill-llama-8b port 8080 (http)"], found
