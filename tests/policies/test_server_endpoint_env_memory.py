"""Edge cases the fixtures do not show, of the policies on model servers: where a server listens
(server-listen-endpoint, ingress-admits-server-port), service links (service-link-env-collision),
--gpu-memory-utilization, the context window and GPU memory requests. Each message is in the
pack's one form (core.judging.problems.Finding) and states the value the object has."""

from __future__ import annotations

import copy
import re
import subprocess
import sys

import endpoints as mod
import yaml

from core.base import facts
from core.judging.problems import FINDING_FORM
from core.k8s import manifests
from core.k8s.manifests.pods import container
from policylib.pack import policies, policy
from tests.paths import ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file, resources_from_documents

HAND_WRITTEN = ROOT / "tests" / "manifests" / "hand-written"
DEP, SVC = yaml.safe_load_all((HAND_WRITTEN / "vllm-tp2.yaml").read_text())


def _dep(**pod) -> dict:
    d = copy.deepcopy(DEP)
    d["spec"]["template"]["spec"].update(pod)
    return d


def _c(d: dict) -> dict:
    return d["spec"]["template"]["spec"]["containers"][0]


def _run(policy, *docs, config=None) -> list[str]:
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    found = [v.message for v in run_policy(policy, resources_from_documents(list(docs), stack="t"), config)]
    for m in found:
        assert re.match(FINDING_FORM, m), m
    return found


# --- the hand-written TP=2 vLLM Deployment + Service passes the whole pack ---------------------

def test_the_hand_written_tp2_deployment_and_service_pass_every_policy_in_process():
    resources = resources_from_documents([DEP, SVC], stack="t")
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    assert {p.name: [v.message for v in run_policy(p, resources)] for p in policies()} == {p.name: [] for p in policies()}


def test_the_hand_written_tp2_deployment_and_service_pass_the_cli_with_exit_0():
    """docs/commands.md's command for plain manifests, the pack as its own process over gRPC."""
    proc = subprocess.run(
        [sys.executable, "-m", "tools.analyze", "--manifests", str(HAND_WRITTEN),
         "--inventory", str(ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS: no mandatory violation, 0 advisory" in proc.stdout


# --- the endpoint model -------------------------------------------------------------------------

def test_endpoint_from_the_argv():
    ep = manifests.endpoint(manifests.parse_args("vllm", ["--host=0.0.0.0", "--port=8080"]))
    assert ep == manifests.Endpoint("vllm", "0.0.0.0", 8080, "--port")
    assert manifests.endpoint(manifests.parse_args("vllm", ["--model", "m"])) == manifests.Endpoint(
        "vllm", None, 8000, None, served_model_names=("m",))
    assert manifests.endpoint(manifests.parse_args("candle-vllm", ["--p", "8080"])).port_text == "8080 (--p)"
    assert manifests.endpoint(manifests.parse_args("candle-vllm", [])).port_text == "2000 (candle-vllm's default, no --p)"
    assert manifests.endpoint(manifests.parse_args("vllm", ["--port", "$(PORT)"])) is None
    assert manifests.endpoint(None) is None


def test_a_probe_on_a_port_name_no_container_port_carries():
    d = copy.deepcopy(DEP)
    _c(d)["readinessProbe"] = {"httpGet": {"path": "/health", "port": "web"}}
    (m,) = _run(policy("server-listen-endpoint"), d)
    assert "its readinessProbe targets port web, a name no containerPort carries, but vllm listens on 8080 (--port)" in m


def test_tcp_and_grpc_probes_are_judged_and_a_named_port_resolves():
    d = copy.deepcopy(DEP)
    _c(d)["livenessProbe"] = {"tcpSocket": {"port": "http"}}
    _c(d)["readinessProbe"] = {"grpc": {"port": 9000}}
    (m,) = _run(policy("server-listen-endpoint"), d)
    assert "its readinessProbe targets port 9000, but vllm listens on 8080 (--port)" in m


def test_a_server_wrapped_in_a_shell_is_read_as_it_will_run():
    """The shell script is read as the server's argv (core.k8s.manifests.argv): its loopback
    host and its port are judged like a literal argv."""
    d = copy.deepcopy(DEP)
    c = _c(d)
    c["command"] = ["sh", "-c", "exec vllm serve m --host 127.0.0.1 --port 9999"]
    del c["args"]
    messages = _run(policy("server-listen-endpoint"), d)
    assert any("vllm listens on --host 127.0.0.1, a loopback address" in m for m in messages), messages


def test_a_server_whose_port_comes_from_a_configmap_is_not_guessed():
    d = copy.deepcopy(DEP)
    c = _c(d)
    c["command"] = ["sh", "-c", "exec vllm serve m --host 127.0.0.1 --port $(cat /etc/port)"]
    del c["args"]
    assert _run(policy("server-listen-endpoint"), d) == []


def test_the_declared_container_port_must_be_the_listen_port():
    d = copy.deepcopy(DEP)
    _c(d)["args"] = [a for a in _c(d)["args"] if not a.startswith("--port")]
    messages = _run(policy("server-listen-endpoint"), d)
    assert ("Deployment coder-vllm, container vllm: declares containerPort 8080, but vllm listens on 8000 "
            "(vllm's default, no --port). Fix: declare containerPort 8000") in " | ".join(messages)


def test_ingress_judges_running_servers_and_named_rule_ports():
    netpol = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "np", "namespace": "llm-serving"},
              "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": "http"}]}]}}
    assert _run(policy("ingress-admits-server-port"), DEP, netpol) == []
    netpol["spec"]["ingress"] = [{"ports": [{"port": 9000}]}]
    (m,) = _run(policy("ingress-admits-server-port"), DEP, netpol)
    assert "vllm listens on 8080 (--port), but NetworkPolicy np admits ingress to its pods only on 9000" in m
    parked = copy.deepcopy(DEP)
    parked["spec"]["replicas"] = 0
    assert _run(policy("ingress-admits-server-port"), parked, netpol) == []
    netpol["spec"]["policyTypes"] = ["Egress"]
    assert _run(policy("ingress-admits-server-port"), DEP, netpol) == []


# --- service links --------------------------------------------------------------------------------

def _svc(name: str, namespace: str = "llm-serving") -> dict:
    s = copy.deepcopy(SVC)
    s["metadata"].update(name=name, namespace=namespace)
    return s


def test_service_links_default_on_and_parked_servers_are_judged():
    d = copy.deepcopy(DEP)
    del d["spec"]["template"]["spec"]["enableServiceLinks"]
    d["spec"]["replicas"] = 0
    (m,) = _run(policy("service-link-env-collision"), d, _svc("vllm"))
    assert m.startswith("Deployment coder-vllm, container vllm: service links are on")


def test_a_service_in_another_namespace_injects_nothing():
    d = _dep(enableServiceLinks=True)
    assert _run(policy("service-link-env-collision"), d, _svc("vllm", "other")) == []


def test_a_variable_the_container_sets_itself_wins_over_the_service_link():
    d = _dep(enableServiceLinks=True)
    svc = _svc("vllm")
    svc["spec"]["ports"] = [{"port": 80, "targetPort": 8080}]
    assert len(_run(policy("service-link-env-collision"), d, svc)) == 1
    _c(d)["env"] += [{"name": "VLLM_PORT", "value": "29500"}]
    assert _run(policy("service-link-env-collision"), d, svc) == []


def test_a_variable_set_from_a_configmap_or_maybe_by_envfrom_wins_over_the_service_link_too():
    d = _dep(enableServiceLinks=True)
    svc = _svc("vllm")
    svc["spec"]["ports"] = [{"port": 80, "targetPort": 8080}]
    _c(d)["env"] += [{"name": "VLLM_PORT", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "port"}}}]
    assert _run(policy("service-link-env-collision"), d, svc) == []
    _c(d)["env"] = [e for e in _c(d)["env"] if e["name"] != "VLLM_PORT"]
    _c(d)["envFrom"] = [{"configMapRef": {"name": "c"}}]
    assert _run(policy("service-link-env-collision"), d, svc) == []


def test_only_a_variable_the_engine_parses_is_a_collision():
    """A Service vllm-router (the production-stack router's shape) injects VLLM_ROUTER_*, names
    vLLM does not read; a Service vllm injects VLLM_PORT, which vLLM parses as a number."""
    d = _dep(enableServiceLinks=True)
    assert _run(policy("service-link-env-collision"), d, _svc("vllm-router")) == []
    assert _run(policy("service-link-env-collision"), d, _svc("vllm-service")) == []
    (m,) = _run(policy("service-link-env-collision"), d, _svc("vllm"))
    assert "inject VLLM_PORT into vllm's own VLLM_ environment namespace; vLLM reads VLLM_PORT as a number" in m


def test_candle_vllm_has_no_known_prefix():
    candle = yaml.safe_load((ROOT / "tests" / "reference" / "coder-14b-fp16.yaml").read_text())
    assert "candle-vllm" not in facts.ENGINE_ENV_PREFIXES
    assert _run(policy("service-link-env-collision"), candle, _svc("candle-vllm")) == []


# --- gpu-memory-utilization, context window, memory requests ---------------------------------------

def test_no_utilization_flag_is_vllms_default_and_passes():
    d = copy.deepcopy(DEP)
    _c(d)["args"] = [a for a in _c(d)["args"] if "gpu-memory-utilization" not in a]
    assert _run(policy("vllm-gpu-memory-utilization"), d) == []


def test_an_object_from_the_stack_file_gets_the_stack_file_fix():
    d = copy.deepcopy(DEP)
    d["metadata"]["annotations"] = {facts.COMPONENT_ANNOTATION: "VllmInferenceService/coder-vllm"}
    _c(d)["args"] = [a.replace("0.90", "0.99") for a in _c(d)["args"]]
    (m,) = _run(policy("vllm-gpu-memory-utilization"), d)
    assert ("Fix: lower gpu_memory_utilization to at most 0.95 (vLLM's default is 0.90), set enforce_eager: true, or "
            "declare the measured exception as gpu_memory_utilization_override under llm-serving:workloads.coder-vllm") in m


def test_context_window_skips_unknown_models_and_servers_without_max_model_len():
    d = copy.deepcopy(DEP)
    _c(d)["args"] = [a for a in _c(d)["args"] if not a.startswith("--max-model-len")]
    assert _run(policy("vllm-context-window"), d) == []
    _c(d)["args"] = ["--model=someone/unknown-model", "--max-model-len=999999"]
    assert _run(policy("vllm-context-window"), d) == []


def test_context_window_reads_the_deprecated_rope_scaling_flag_too():
    d = copy.deepcopy(DEP)
    _c(d)["args"] = ["--model=Qwen/Qwen3-30B-A3B-GPTQ-Int4", "--max-model-len=131073",
                     "--rope-scaling", '{"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768}']
    (m,) = _run(policy("vllm-context-window"), d)
    assert "--max-model-len 131,073 is above model qwen3-30b-a3b-gptq-int4's max_position_embeddings 40,960" in m
    assert "stretches that to 131,072" in m


def test_memory_request_judges_each_card_holding_container_only():
    d = copy.deepcopy(DEP)
    pod = d["spec"]["template"]["spec"]
    pod["containers"].append({"name": "sidecar", "image": "busybox"})
    assert _run(policy("gpu-memory-request"), d) == []
    res = _c(d)["resources"]
    del res["requests"]["memory"], res["limits"]["memory"]
    (m,) = _run(policy("gpu-memory-request"), d)
    assert m.startswith("Deployment coder-vllm, container vllm: it holds 2 card(s) with memory request "
                        "none and limit none: it counts as 0 MiB on the node")


def test_a_plain_http_probe_on_a_tls_server_is_a_breach_of_the_endpoint():
    c = container({"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                   "args": ["--model=m", "--ssl-keyfile=/tls/key", "--ssl-certfile=/tls/crt"],
                   "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}}})
    (breach,) = mod.breaches(c, c.endpoint, house=False)
    assert breach.finding("Deployment d, container vllm").render().startswith(
        "Deployment d, container vllm: its readinessProbe uses scheme HTTP, but vllm serves HTTPS")
    tls = container({**{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0"},
                     "args": ["--model=m", "--ssl-certfile=/tls/crt"],
                     "readinessProbe": {"httpGet": {"path": "/health", "port": 8000, "scheme": "HTTPS"}}})
    assert mod.breaches(tls, tls.endpoint, house=False) == []
