"""candle-vllm-args: --dtype f16 on sm_70, one --d device per card, 0..n-1 (seeds 001, 003)."""

from __future__ import annotations

import json

import candle as mod
import pulumi.runtime.config
import pytest

import core.k8s.manifests
from core.judging import registry
from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


@pytest.fixture(autouse=True)
def stack_config():
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))


def _args(*argv):
    return core.k8s.manifests.parse_args("candle-vllm", argv)


@pytest.mark.parametrize(
    "argv, cards, problems",
    [
        (("--d", "0,1"), 2, []),
        (("--d", "0"), 1, []),
        ((), 1, []),  # no --d: device 0
        ((), 2, [("no --d (device 0 only) names 1 device(s) but the container holds 2 nvidia.com/gpu; "
                  "the tensor-parallel ranks must equal the cards",
                  "set --d=0,1, or the container's nvidia.com/gpu (requests = limits): 1")]),
        (("--d", "1,0"), 2, []),  # order does not matter, the set does
        (("--d", "0,2"), 2, [("--d 0,2 is not distinct devices 0..n-1: the pod's cards are numbered from 0 "
                              "inside the container", "set --d=0,1")]),
        (("--d", "0", "1"), 2, [("--d is followed by 2 items (0 1); candle-vllm takes one comma-separated list",
                                 "set --d=0,1")]),
        (("--d", "gpu0"), 1, [("--d gpu0 has a device that is not a number", "set --d=0")]),
    ],
)
def test_device_problems(argv, cards, problems):
    breaches = mod.device_breaches(_args(*argv), cards)
    assert [b.render(registry.MANIFEST) for b in breaches] == problems
    for b in breaches:  # the stack file has no --d: its user sets cards
        assert b.render(registry.STACK)[1] == "set cards to the tensor parallel size; the component writes --d"
        assert b.source == registry.RULES["candle-vllm-args"].source


def _candle(dtype_args: str, node: str = "worker-1") -> str:
    pin = f"nodeSelector: {{kubernetes.io/hostname: {node}}}" if node else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: c, namespace: llm-serving}}
spec:
  template:
    spec:
      {pin}
      containers:
      - name: candle
        image: forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70
        args: [--w, /mnt/models/clef-flash, --d, "0" {dtype_args}]
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def test_dtype_rule_follows_the_node_card(monkeypatch):
    (v,) = run_policy(policy("candle-vllm-args"), manifests(_candle(", --dtype, bf16")))
    assert v.message == (
        "Deployment c, container candle (on worker-1 (Tesla-V100-PCIE-32GB, sm_70)): --dtype bf16 needs compute "
        "capability 8.0; Tesla-V100-PCIE-32GB is sm_70. Fix: set --dtype=f16. Source: seed 001 and coder.yaml."
    )
    p100 = {"nodes": [{"name": "worker-1", "cards": 4, "allocatable_memory_mib": 63495, "card": {
        "product": "Tesla-P100", "memory_mib": 16384, "compute_capability": "6.0", "nvlink": False, "hbm_bandwidth_gb_s": 732}}]}
    monkeypatch.setitem(pulumi.runtime.config.CONFIG.get(), "llm-serving:cluster", json.dumps(p100))
    (v,) = run_policy(policy("candle-vllm-args"), manifests(_candle(", --dtype, bf16")))
    # The message states the card's own compute capability, not sm_70.
    assert "(Tesla-P100, sm_60)): --dtype bf16 needs compute capability 8.0; Tesla-P100 is sm_60" in v.message
    a100 = {"nodes": [{"name": "worker-1", "cards": 4, "allocatable_memory_mib": 63495, "card": {
        "product": "A100", "memory_mib": 81920, "compute_capability": "8.0", "nvlink": True, "hbm_bandwidth_gb_s": 2039}}]}
    monkeypatch.setitem(pulumi.runtime.config.CONFIG.get(), "llm-serving:cluster", json.dumps(a100))
    assert run_policy(policy("candle-vllm-args"), manifests(_candle(", --dtype, bf16"))) == []


def test_bad_inventory_still_checks_devices_and_reports_the_config_once(monkeypatch):
    monkeypatch.setitem(pulumi.runtime.config.CONFIG.get(), "llm-serving:cluster", json.dumps({"nodes": []}))
    text = _candle("").replace('--d, "0"', '--d, "1"')
    messages = [v.message for v in run_policy(policy("candle-vllm-args"), manifests(text))]
    assert len(messages) == 2
    assert "--d 1 is not distinct devices 0..n-1" in messages[0]
    assert messages[1].startswith("policy candle-vllm-args: cannot judge this resource: llm-serving:cluster is invalid")
