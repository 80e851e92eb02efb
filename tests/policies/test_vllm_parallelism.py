"""vllm-parallelism: TP x PP equals the container's cards (coder.yaml, seed 002 reasoning.yaml)."""

from __future__ import annotations

import pytest

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


def _vllm(args: str, cards) -> str:
    limits = f"{{nvidia.com/gpu: {cards}}}" if cards is not None else "{}"
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: v, namespace: llm-serving}}
spec:
  template:
    spec:
      containers:
      - {{name: s, image: "vllm/vllm-openai:v0.11.0", args: {args}, resources: {{limits: {limits}}}}}
"""


def _run(text: str):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(policy("vllm-parallelism"), manifests(text))]


@pytest.mark.parametrize(
    "args, cards",
    [
        ("[--model=m]", 1),
        ("[--model=m, -tp, '2']", 2),
        ("[--model=m, --tensor-parallel-size, '2', --pipeline-parallel-size, '2']", 4),
        ("[--model=m, --tensor-parallel-size=2, --data-parallel-size=2]", 4),
        ("[--model=m, --tensor-parallel-size=2]", 2.0),  # gRPC float
    ],
)
def test_ranks_equal_cards(args, cards):
    assert _run(_vllm(args, cards)) == []


def test_data_parallel_is_in_the_formula():
    (message,) = _run(_vllm("[--model=m, --tensor-parallel-size=2, --data-parallel-size=2]", 2))
    assert ("tensor parallel 2 x pipeline parallel 1 x data parallel 2 = 4 ranks, but the pod holds 2 cards; vLLM fails at start"
            in message)


def test_vllm_without_cards_is_reported():
    (message,) = _run(_vllm("[--model=m]", None))
    assert message.startswith("Deployment v, container s: tensor parallel 1 x pipeline parallel 1 = 1 ranks, but the pod holds 0 cards")
