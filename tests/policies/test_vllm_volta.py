"""vllm-volta: vLLM settings that fail on sm_70 (coder.yaml, seed 001), judged on the inventory's nodes."""

from __future__ import annotations

import json

import pulumi.runtime.config
import pytest

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file

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
    return [v.message for v in run_policy(policy("vllm-volta"), manifests(text))]


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
                 "custom all-reduce is on at tensor parallel 2 without NVLink (worker-1)"):
        assert part in joined


def test_checkpoint_quantization_from_the_stack_models_is_judged_without_the_flag(monkeypatch):
    models = {"awq-model": {"hf_id": "org/m-AWQ", "facts": {
        "architecture": "Qwen2ForCausalLM", "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 64, "hidden_size": 256, "intermediate_size": 512,
        "vocab_size": 1000, "max_position_embeddings": 4096, "parameters": 1e8, "torch_dtype": "float16",
        "quantization": {"method": "awq", "bits": 4}}}}
    set_key(monkeypatch, "llm-serving:models", models)
    found = run_policy(policy("vllm-volta"), manifests(_vllm("[--model=org/m-AWQ, --dtype=half]")))
    assert [v.message.split(": ", 1)[1] for v in found] == [
        "the checkpoint's awq quantization needs compute capability 7.5; Tesla-V100-PCIE-32GB is sm_70. Fix: point "
        "--model at a gptq checkpoint (--quantization=gptq, which runs on sm_70) or a half-precision one. "
        "Source: seed 001 and coder.yaml; vLLM's get_min_capability."
    ]


def test_missing_dtype_names_the_checkpoint_dtype_from_the_catalog():
    (message,) = _run(_vllm("[--model=Qwen/Qwen3-30B-A3B-GPTQ-Int4, --quantization=gptq]"))
    assert "no --dtype takes the checkpoint's dtype (float16); Tesla-V100-PCIE-32GB is sm_70, where this cluster asks" in message


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
    (v,) = run_policy(policy("vllm-volta"), manifests(_vllm(BF16)))
    assert v.message.startswith("policy vllm-volta: cannot judge this resource: the stack config has no llm-serving:cluster")
    assert "Fix: give the stack file's config the llm-serving:cluster inventory" in v.message


def _sampler_case(image: str, env: str = "[]") -> list[str]:
    text = _vllm("[--model=m, --dtype=float16]", env=env).replace('"vllm/vllm-openai:v0.11.0"', f'"{image}"')
    return [m for m in _run(text) if "VLLM_USE_FLASHINFER_SAMPLER" in m]


def test_sampler_rule_holds_for_the_releases_that_turn_it_on():
    """The FlashInfer sampler is on by default from vLLM 0.8.0 (V1); before it, V0 used
    it only when asked. The release comes from the image tag."""
    (message,) = _sampler_case("vllm/vllm-openai:v0.11.0")
    assert "is not set: FlashInfer's sampler raises on sm_70 (vLLM 0.11.0 samples with FlashInfer unless it is 0)" in message
    assert _sampler_case("vllm/vllm-openai:v0.6.4") == []
    assert _sampler_case("vllm/vllm-openai:v0.9.2", env="[{name: VLLM_USE_V1, value: '0'}]") == []
    # Asked for explicitly, it raises on any release.
    (message,) = _sampler_case("vllm/vllm-openai:v0.6.4", env="[{name: VLLM_USE_FLASHINFER_SAMPLER, value: '1'}]")
    assert "is '1'" in message


def test_sampler_rule_follows_the_releases_own_sampler():
    """From the engine contract (each release's vllm/v1/sample/ops/topk_topp_sampler.py): 0.14.1
    and 0.19.1 take FlashInfer's sampler only when VLLM_USE_FLASHINFER_SAMPLER=1, and then check
    the card and refuse to start; 0.10.1.1 and 0.11.0 take it unless it is 0 and do not check, so
    FlashInfer's own check raises. A V100 manifest of a newer release without the variable is
    correct; the V1 default alone (core.rulebook) would have refused it."""
    assert _sampler_case("vllm/vllm-openai:v0.14.1") == []
    assert _sampler_case("vllm/vllm-openai:v0.19.1") == []
    (message,) = _sampler_case("vllm/vllm-openai:v0.19.1", env="[{name: VLLM_USE_FLASHINFER_SAMPLER, value: '1'}]")
    assert "is '1': vLLM 0.19.1 refuses to start on sm_70" in message
    assert "vllm/v1/sample/ops/topk_topp_sampler.py" in message
    (message,) = _sampler_case("vllm/vllm-openai:v0.10.1.1")
    assert "vLLM 0.10.1.1 samples with FlashInfer unless it is 0" in message
    assert _sampler_case("vllm/vllm-openai:v0.10.1.1", env="[{name: VLLM_USE_V1, value: '0'}]") == []


def test_sampler_rule_says_when_the_release_is_unknown():
    (message,) = _sampler_case("vllm/vllm-openai:latest")
    assert ("the image tag :latest names no release, so the sampler is taken as on, as in every release from "
            "0.10.0 on sm_70") in message


def test_below_sm_80_vllm_ran_v0_until_0_10():
    """On sm_70, V1's oracle fell back to V0 until 0.10.0 (core.engines.contracts.vllm_v1_by_default, the fact
    the capacity figures use too), and V0 samples with FlashInfer only when asked: a v0.9.2 V100
    manifest without the variable is fine; v0.10.0 is V1 there and needs it."""
    assert _sampler_case("vllm/vllm-openai:v0.9.2") == []
    (message,) = _sampler_case("vllm/vllm-openai:v0.10.0")
    assert "vLLM 0.10.0 samples with FlashInfer unless it is 0" in message


def test_messages_state_the_cards_own_compute_capability(monkeypatch):
    """Every number a message states is the object's: a P100 is sm_60, not sm_70."""
    p100 = {"product": "Tesla-P100-PCIE-16GB", "memory_mib": 16384, "compute_capability": "6.0", "nvlink": False,
            "hbm_bandwidth_gb_s": 732}
    set_key(monkeypatch, "llm-serving:cluster", _cluster(("worker-1", 4, p100)))
    messages = _run(_vllm("[--model=m, --dtype=bfloat16, --kv-cache-dtype=fp8]", env="[]"))
    joined = "\n".join(messages)
    assert "--dtype bfloat16 needs compute capability 8.0; Tesla-P100-PCIE-16GB is sm_60" in joined
    assert "--kv-cache-dtype fp8 needs FP8 support; Tesla-P100-PCIE-16GB (sm_60) has none" in joined
    assert "FlashInfer's sampler raises on sm_60" in joined
    assert "sm_70" not in joined


def test_auto_dtype_of_a_float16_checkpoint_is_a_house_convention(monkeypatch):
    """The GPTQ checkpoint's torch_dtype is float16, so vLLM's auto takes float16, which
    sm_70 runs; an explicit --dtype is the user's convention (house_conventions), required there only."""
    text = _vllm("[--model=Qwen/Qwen3-30B-A3B-GPTQ-Int4]")
    assert any("no --dtype takes the checkpoint's dtype" in m for m in _run(text))
    cluster = json.loads(pulumi.runtime.config.CONFIG.get()["llm-serving:cluster"])
    set_key(monkeypatch, "llm-serving:cluster", {**cluster, "house_conventions": False})
    assert not any("--dtype" in m for m in _run(text))
    # A bf16 checkpoint still needs the explicit half dtype everywhere.
    assert any("no --dtype takes the checkpoint's dtype" in m for m in _run(_vllm("[--model=/mnt/models/coder-14b-fp16]")))


def test_custom_all_reduce_flag_is_needed_at_tp2_only():
    """Above two PCIe-only cards vLLM disables its custom all-reduce itself; the
    deadlock (coder.yaml) was the TP=2 pair."""
    two = _run(_vllm("[--model=m, --dtype=float16, -tp, '2']", cards=2, node="worker-1"))
    assert any("at tensor parallel 2 without NVLink (worker-1)" in m for m in two)
    four = _run(_vllm("[--model=m, --dtype=float16, -tp, '4']", cards=4, node="worker-1"))
    assert not any("custom" in m for m in four)


def test_a_release_whose_sampler_falls_back_needs_no_variable(monkeypatch):
    """A release that checks the card and falls back to the PyTorch path (the contract's
    ``falls back``) runs on sm_70 whatever the variable says: no breach, even asked for."""
    from core.engines import contracts

    rel = contracts.release("0.11.0")
    falls = rel.model_copy(update={"sampler": rel.sampler.model_copy(update={"flashinfer_on_unsupported_card": "falls back"})})
    monkeypatch.setattr(contracts, "release", lambda version: falls)
    assert _sampler_case("vllm/vllm-openai:v0.11.0") == []
    assert _sampler_case("vllm/vllm-openai:v0.11.0", env="[{name: VLLM_USE_FLASHINFER_SAMPLER, value: '1'}]") == []
