"""tensor-parallel-divisibility: seed 001's rule on fixtures and inline cases."""

from __future__ import annotations

import json

import pulumi.runtime
import pytest

import tensor_parallel_divisibility as mod
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.manifests import load_stack_file


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
    return [v.message for v in run_policy(mod.POLICY, manifests(text))]


def test_seed_001_dimensions_divide_by_two_and_four():
    """coder-14b-fp16.yaml: 40, 8, 13824, 152064 divide by 2 (and by 4)."""
    assert run(vllm("/mnt/models/coder-14b-fp16", 2)) == []
    assert run(vllm("/mnt/models/coder-14b-fp16", 4)) == []


def test_moe_gptq_at_tp8_names_the_kv_heads_and_suggests_sizes():
    (message,) = run(vllm("Qwen/Qwen3-30B-A3B-GPTQ-Int4", 8))
    assert "tensor parallel 8 does not divide model qwen3-30b-a3b-gptq-int4: num_key_value_heads 4 % 8 = 4" in message
    assert "(1, 2, 4)" in message


def test_tp1_needs_no_model_facts():
    """TP=1 shards nothing: an unknown model is left to the capacity policies."""
    assert run(vllm("some/unknown-model", 1)) == []


def test_invalid_models_config_gives_one_violation():
    pulumi.runtime.set_config("llm-serving:models", "[not json")
    (message,) = run(vllm("/mnt/models/coder-14b-fp16", 2))
    assert message.startswith("Deployment srv: tensor-parallel-divisibility cannot check its tensor parallel size: llm-serving:models is invalid")
