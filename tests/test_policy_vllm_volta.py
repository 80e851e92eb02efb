"""vllm-volta: vLLM settings that fail on sm_70 (coder.yaml, seed 001), judged on the inventory's nodes."""

from __future__ import annotations

import json

import pulumi.runtime.config
import pytest

import vllm_volta as mod
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.manifests import load_stack_file


V100 = {"product": "Tesla-V100-PCIE-32GB", "memory_mib": 32768, "compute_capability": "7.0",
        "nvlink": False, "hbm_bandwidth_gb_s": 900}
A100 = {"product": "NVIDIA-A100-SXM4-80GB", "memory_mib": 81920, "compute_capability": "8.0",
        "nvlink": True, "hbm_bandwidth_gb_s": 2039}


def _cluster(*nodes):
    return {"nodes": [{"name": n, "cards": c, "card": card, "allocatable_memory_mib": 500000} for n, c, card in nodes]}


def _vllm(args: str, cards: int = 1, node: str = "", env: str = "") -> str:
    pin = f"nodeSelector: {{kubernetes.io/hostname: {node}}}" if node else ""
    return f"""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {{name: r, namespace: llm-serving}}
spec:
  predictor:
    {pin}
    containers:
    - name: k
      image: "vllm/vllm-openai:v0.11.0"
      args: {args}
      env: {env or '[{name: VLLM_USE_FLASHINFER_SAMPLER, value: "0"}]'}
      resources: {{limits: {{nvidia.com/gpu: "{cards}"}}}}
"""


@pytest.fixture(autouse=True)
def stack_config(monkeypatch):
    """The fixture inventory; tests that change a key do it through ``set_key`` (undone after)."""
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))


def set_key(monkeypatch, key: str, value) -> None:
    monkeypatch.setitem(pulumi.runtime.config.CONFIG.get(), key, json.dumps(value))


def _run(text: str):
    return [v.message for v in run_policy(mod.POLICY, manifests(text))]


BF16 = "[--model=Qwen/Qwen2.5-Coder-14B-Instruct, --dtype=bfloat16]"


def test_each_problem_is_its_own_violation():
    text = _vllm("[--model=m, --dtype=bfloat16, --quantization=fp8, --kv-cache-dtype=fp8, -tp, '2']", cards=2,
                 node="worker-1", env="[{name: VLLM_ATTENTION_BACKEND, value: FLASHINFER}]")
    messages = _run(text)
    assert len(messages) == 6, messages
    prefix = "InferenceService r, container k (on worker-1 (Tesla-V100-PCIE-32GB, sm_70)): "
    assert all(m.startswith(prefix) for m in messages)
    joined = "\n".join(messages)
    for part in ("--dtype bfloat16", "--quantization fp8", "--kv-cache-dtype fp8",
                 "VLLM_USE_FLASHINFER_SAMPLER is not set", "VLLM_ATTENTION_BACKEND=FLASHINFER",
                 "TP 2 without NVLink (worker-1)"):
        assert part in joined


def test_checkpoint_quantization_from_the_stack_models_is_judged_without_the_flag(monkeypatch):
    models = {"awq-model": {"hf_id": "org/m-AWQ", "facts": {
        "architecture": "Qwen2ForCausalLM", "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 64, "hidden_size": 256, "intermediate_size": 512,
        "vocab_size": 1000, "max_position_embeddings": 4096, "parameters": 1e8, "torch_dtype": "float16",
        "quantization": {"method": "awq", "bits": 4}}}}
    set_key(monkeypatch, "llm-serving:models", models)
    found = run_policy(mod.POLICY, manifests(_vllm("[--model=org/m-AWQ, --dtype=half]")))
    assert [v.message.split(": ", 1)[1] for v in found] == [
        "the checkpoint's awq quantization (picked up without --quantization): its kernels need sm75+ "
        "(FP8 / INT4 tensor cores, Marlin), not sm_70. Fix: use a gptq or unquantized float16 checkpoint. "
        "Source: seed 000 (coder.yaml: what vLLM v0.11.0 needs on sm_70, no NVLink)."
    ]


def test_missing_dtype_names_the_checkpoint_dtype_from_the_catalog():
    (message,) = _run(_vllm("[--model=Qwen/Qwen3-30B-A3B-GPTQ-Int4, --quantization=gptq]"))
    assert "no explicit --dtype, so vLLM takes the checkpoint's dtype (float16)" in message


def test_not_on_volta_nothing_applies(monkeypatch):
    set_key(monkeypatch, "llm-serving:cluster", _cluster(("gpu-a", 8, A100)))
    assert _run(_vllm(BF16)) == []


def test_unpinned_pods_are_judged_on_every_node_with_enough_cards(monkeypatch):
    """Mixed cluster: 2 cards fit on both nodes (could land on the V100), 8 only on the A100."""
    set_key(monkeypatch, "llm-serving:cluster", _cluster(("a100-node", 8, A100), ("worker-1", 4, V100)))
    (message,) = _run(_vllm(BF16, cards=2))
    assert "(could land on worker-1 (Tesla-V100-PCIE-32GB, sm_70))" in message
    assert _run(_vllm(BF16, cards=8)) == []
    assert _run(_vllm(BF16, cards=2, node="a100-node")) == []


def test_pinned_to_a_node_missing_from_the_inventory_is_left_to_card_allocation():
    assert _run(_vllm(BF16, node="worker-9")) == []


def test_missing_inventory_is_one_violation_that_says_which_key(monkeypatch):
    monkeypatch.delitem(pulumi.runtime.config.CONFIG.get(), "llm-serving:cluster")
    (v,) = run_policy(mod.POLICY, manifests(_vllm(BF16)))
    assert v.message.startswith("policy vllm-volta: cannot judge this resource: the stack config has no llm-serving:cluster")
    assert "Fix: give the stack file's config the llm-serving:cluster inventory" in v.message
