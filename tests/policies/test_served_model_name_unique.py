"""served-model-name-unique: one served model name, one running server (seed 002: `reasoning` twice)."""

from __future__ import annotations

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


def _vllm(name, args, replicas=1, containers=1):
    container = f"{{name: c{{i}}, image: vllm/vllm-openai:v0.11.0, args: {args}}}"
    listed = ", ".join(container.replace("{i}", str(i)) for i in range(containers))
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  replicas: {replicas}
  template: {{spec: {{containers: [{listed}]}}}}
---"""


def _candle(name, weights):
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  template:
    spec:
      containers:
      - {{name: candle, image: "forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70", args: [--w, "{weights}", --p, "8080"]}}
---"""


def _run(text):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("served-model-name-unique"), manifests(text))


def test_every_server_answering_the_name_is_named_once_per_name():
    text = (_vllm("zeta", '["--model=a", "--served-model-name", "chat", "x"]')
            + _vllm("alpha", '["--model=b", "--served-model-name", "chat", "x"]')
            + _vllm("mid", '["--model=c", "--served-model-name", "chat"]'))
    found = _run(text)
    assert [v.message.split(";")[0] for v in found] == [
        "served model name chat: answered by 3 running servers: alpha (Deployment), mid (Deployment), zeta (Deployment)",
        "served model name x: answered by 2 running servers: alpha (Deployment), zeta (Deployment)",
    ]
    assert found[0].urn.endswith("kubernetes:apps/v1:Deployment::llm-serving/alpha")


def test_without_served_model_name_vllm_answers_its_model_argument():
    (v,) = _run(_vllm("a", '["--model=Qwen/Qwen3-30B-A3B-GPTQ-Int4"]')
                + _vllm("b", '["--model", "Qwen/Qwen3-30B-A3B-GPTQ-Int4"]'))
    assert v.message.startswith("served model name Qwen/Qwen3-30B-A3B-GPTQ-Int4: answered by 2 running servers")


def test_candle_vllm_answers_the_basename_of_its_weights_and_a_vllm_name_can_clash_with_it():
    (v,) = _run(_candle("candle-vllm", "/mnt/models/coder-14b-fp16/")
                + _vllm("vllm-coder", '["--model=x", "--served-model-name", "coder-14b-fp16"]'))
    assert v.message.startswith(
        "served model name coder-14b-fp16: answered by 2 running servers: candle-vllm (Deployment), vllm-coder (Deployment)"
    )


def test_names_are_case_sensitive_as_vllm_compares_them():
    assert _run(_vllm("a", '["--served-model-name", "Reasoning"]') + _vllm("b", '["--served-model-name", "reasoning"]')) == []


def test_replicas_and_two_containers_of_one_workload_count_once():
    assert _run(_vllm("a", '["--served-model-name", "chat"]', replicas=3, containers=2)) == []


def test_parked_servers_answer_nothing():
    assert _run(_vllm("a", '["--served-model-name", "chat"]', replicas=0) + _vllm("b", '["--served-model-name", "chat"]')) == []


def test_non_model_servers_are_not_parsed():
    plain = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: llm-serving}
spec: {template: {spec: {containers: [{name: w, image: nginx, args: ["--served-model-name", "chat"]}]}}}
---"""
    assert _run(plain + _vllm("b", '["--served-model-name", "chat"]')) == []
