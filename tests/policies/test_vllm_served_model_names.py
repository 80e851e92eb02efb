"""vllm-served-model-names: separate argv items, no comma or space, given once (seed 002 reasoning.yaml)."""

from __future__ import annotations

import pytest
import served_names as mod

from core.judging import registry
from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


@pytest.mark.parametrize(
    "argv, names",
    [
        (["--model=m", "--served-model-name", "reasoning", "reasoning-long", "--port=8080"],
         [("--served-model-name", ("reasoning", "reasoning-long"))]),
        (["--served-model-name=reasoning,reasoning-long"], [("--served-model-name=reasoning,reasoning-long", ("reasoning,reasoning-long",))]),
        (["--served_model_name", "a"], [("--served_model_name", ("a",))]),
        (["--model", "m"], []),
    ],
)
def test_occurrences(argv, names):
    assert mod.occurrences(tuple(argv)) == names


def _wrong(argv) -> list[str]:
    return [b.render(registry.MANIFEST)[0] for b in mod.argv_breaches(tuple(argv))]


def test_seed_002_comma_form_says_it_makes_one_model():
    (breach,) = mod.argv_breaches(("--served-model-name=reasoning,reasoning-long",))
    wrong, fix = breach.render(registry.MANIFEST)
    assert wrong.startswith('served model name "reasoning,reasoning-long" contains a comma: vLLM serves ONE model')
    assert "not reasoning, reasoning-long" in wrong
    assert fix == "give --served-model-name once followed by each name as its own argv item"
    assert breach.render(registry.STACK)[1] == "list each name as its own item of served_model_names"
    assert breach.source == registry.RULES["vllm-served-model-names"].source


def test_empty_name():
    assert _wrong(("--served-model-name", "--port=8080")) == ["--served-model-name gives an empty served model name"]


def test_names_of_an_earlier_flag_are_dropped():
    (wrong,) = _wrong(("--served-model-name", "coder", "reasoning", "--served-model-name", "coder-next"))
    assert wrong == "--served-model-name is given 2 times; vLLM keeps only the last (coder-next) and drops coder, reasoning"


def test_candle_vllm_and_command_form_vllm():
    """candle-vllm has no served names; vLLM run as `vllm serve` is recognised by its command."""
    text = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: llm-serving}
spec:
  template:
    spec:
      containers:
      - name: candle
        image: forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70
        args: [--w, "/mnt/models/a,b"]
      - name: v
        image: internal/llm-server:1
        command: [vllm, serve]
        args: [Qwen/Qwen3-30B-A3B-GPTQ-Int4, --served-model-name, "a b"]
"""
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    (v,) = run_policy(policy("vllm-served-model-names"), manifests(text))
    assert v.message.startswith('Deployment d, container v: served model name "a b" contains a space')
