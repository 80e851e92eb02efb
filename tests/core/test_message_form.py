"""One message form for every policy (``core.judging.problems.Finding``), with the fix in
the user's own terms: an object the program made from a stack file (it carries the component
annotation) is told the stack-file key; the same object written by hand is told the manifest field."""

from __future__ import annotations

import re

import pytest

from core.base import facts
from core.judging.problems import FINDING_FORM, Finding
from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


def _deployment(component: str | None, image: str, gpu: str, env: str = "") -> str:
    note = f"\n  annotations: {{{facts.COMPONENT_ANNOTATION}: {component}}}" if component else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: clef-candle
  namespace: llm-serving{note}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: clef-candle}}}}
  template:
    metadata: {{labels: {{app: clef-candle}}}}
    spec:
      runtimeClassName: nvidia
      nodeSelector: {{kubernetes.io/hostname: worker-1}}
      containers:
      - name: server
        image: {image}
        command: [vllm, serve]
        args: [--model=Qwen/Qwen3-8B, --dtype=float16]
        {env}
        resources: {{limits: {{nvidia.com/gpu: {gpu}}}, requests: {{nvidia.com/gpu: {gpu}}}}}
"""


@pytest.fixture(autouse=True)
def stack_config():
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))


@pytest.mark.parametrize(
    "policy, image, gpu, env, stack_words, yaml_words",
    [
        (policy("moving-tag-pull-always"), "ghcr.io/x/candle-vllm:sm70", "1", "",
         "Fix: pin image by @sha256 digest under llm-serving:workloads.clef-candle",
         "Fix: pin image by @sha256 digest, or set imagePullPolicy: Always"),
        (policy("gpu-whole-cards"), "ghcr.io/x/candle-vllm@sha256:00", "0.5", "",
         "Fix: set cards to a whole number under llm-serving:workloads.clef-candle",
         "Fix: set requests and limits to the same whole number"),
        (policy("vllm-volta"), "vllm/vllm-openai@sha256:00", "1", "env: [{name: VLLM_USE_FLASHINFER_SAMPLER, value: '1'}]",
         "Fix: remove VLLM_USE_FLASHINFER_SAMPLER from env (the component sets it to 0) under "
         "llm-serving:workloads.clef-candle",
         "Fix: set env VLLM_USE_FLASHINFER_SAMPLER=0"),
    ],
)
def test_the_fix_is_in_the_users_terms(policy, image, gpu, env, stack_words, yaml_words):
    made = run_policy(policy, manifests(_deployment("CandleDeployment/clef-candle", image, gpu, env)))
    hand = run_policy(policy, manifests(_deployment(None, image, gpu, env)))
    assert [stack_words in v.message for v in made] == [True], [v.message for v in made]
    assert [yaml_words in v.message for v in hand] == [True], [v.message for v in hand]
    for v in made + hand:
        assert re.match(FINDING_FORM, v.message, re.S), v.message


def test_finding_renders_one_line_in_four_parts():
    f = Finding("Deployment x", "pods hold 2 cards but set no runtimeClassName", "set runtimeClassName: nvidia",
                "seed 001", stack_fix="set node under {key}")
    assert f.render() == ("Deployment x: pods hold 2 cards but set no runtimeClassName. "
                          "Fix: set runtimeClassName: nvidia. Source: seed 001.")
    assert f.render("llm-serving:workloads.x").endswith("Fix: set node under llm-serving:workloads.x. Source: seed 001.")
    assert re.match(FINDING_FORM, f.render()).group("subject", "source") == ("Deployment x", "seed 001")
