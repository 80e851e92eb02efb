"""tensor-parallel-divisibility: seed 001's rule on fixtures and inline cases."""

from __future__ import annotations

import json

import pulumi.runtime
import pytest

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


@pytest.fixture(autouse=True)
def default_stack():
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    yield
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))


def vllm(model: str, tp: int) -> str:
    args = [f"--model={model}", f"--tensor-parallel-size={tp}", "--max-model-len=4096"]
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: srv, namespace: llm-serving}}
spec:
  template:
    spec:
      containers:
      - {{name: s, image: vllm/vllm-openai:v0.11.0, args: {json.dumps(args)}, resources: {{limits: {{nvidia.com/gpu: "{tp}"}}}}}}
"""


def run(text: str) -> list[str]:
    return [v.message for v in run_policy(policy("tensor-parallel-divisibility"), manifests(text))]


def test_seed_001_dimensions_divide_by_two_and_four():
    """coder-14b-fp16.yaml: 40, 8, 13824, 152064 divide by 2 (and by 4)."""
    assert run(vllm("/mnt/models/coder-14b-fp16", 2)) == []
    assert run(vllm("/mnt/models/coder-14b-fp16", 4)) == []


def candle(weights: str, tp: int) -> str:
    devices = ",".join(str(i) for i in range(tp))
    args = ["--w", weights, "--d", devices, "--dtype", "f16"]
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: srv, namespace: llm-serving}}
spec:
  template:
    spec:
      containers:
      - {{name: s, image: candle-vllm:sm70, command: [/usr/local/bin/candle-vllm], args: {json.dumps(args)},
          resources: {{limits: {{nvidia.com/gpu: "{tp}"}}}}}}
"""


def test_vllm_replicates_kv_heads_when_tp_is_a_multiple_of_them():
    """Qwen3-30B-A3B has 32 heads and 4 KV heads; vLLM at TP=8 holds 4 heads a rank and
    a replica of one KV head (QKVParallelLinear), and pads the vocabulary: it loads."""
    assert run(vllm("Qwen/Qwen3-30B-A3B-GPTQ-Int4", 8)) == []


def test_vllm_still_needs_the_attention_heads_and_a_kv_multiple():
    (message,) = run(vllm("Qwen/Qwen3-30B-A3B-GPTQ-Int4", 6))
    assert ("tensor parallel 6 does not divide model qwen3-30b-a3b-gptq-int4: num_attention_heads 32 % 6 = 2; "
            "tensor parallel 6 is above num_key_value_heads 4 and not a multiple of it (6 % 4 = 2)") in message
    assert "a tensor parallel size that divides them: 1, 2, 4, 8, with --tensor-parallel-size to match." in message


def test_candle_vllm_keeps_the_stricter_rule_of_seed_001():
    """candle-vllm divides the KV heads and the vocabulary too (seed 001): TP=3 names each."""
    (message,) = run(candle("/mnt/models/coder-14b-fp16", 3))
    assert "does not divide model coder-14b-fp16: num_attention_heads 40 % 3 = 1; num_key_value_heads 8 % 3 = 2;" in message
    from core.catalog import modelfacts
    qwen3 = modelfacts.CATALOG["Qwen/Qwen3-30B-A3B-GPTQ-Int4"]
    assert "num_key_value_heads 4 % 8 = 4" in qwen3.tp_divisibility_problems(8, "candle-vllm")
    assert qwen3.tp_divisibility_problems(8, "vllm") == []


def test_tp1_needs_no_model_facts():
    """TP=1 shards nothing: an unknown model is left to the capacity policies."""
    assert run(vllm("some/unknown-model", 1)) == []


def test_invalid_models_config_gives_one_violation():
    pulumi.runtime.set_config("llm-serving:models", "[not json")
    (message,) = run(vllm("/mnt/models/coder-14b-fp16", 2))
    assert message.startswith("policy tensor-parallel-divisibility: cannot judge this resource: llm-serving:models is invalid")
