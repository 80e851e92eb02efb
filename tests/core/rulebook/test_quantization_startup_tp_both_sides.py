"""Quantization on sm_70, the startup budget against the cold start and the tensor parallel sizes
suggested, from a stack file: it loads, and the pack judges each rule once on the rendered manifests
(its fix in the stack file's keys), with the values it states on hand-written YAML of the same
values, on prod's V100 inventory. The wording is one (tests/core/test_registry.py)."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import get_args

import pytest

from core.base import facts, inputs
from core.catalog import cards
from core.rulebook import servers
from policylib import stackconfig
from policylib.pack import policy
from stackfile import ConfigError, VllmWorkload, load_stack_config
from tests.paths import PROD_STACK_FILE, ROOT
from tests.policies.test_tensor_parallel_divisibility import candle as candle_tp_server
from tests.policies.test_tensor_parallel_divisibility import vllm as tp_server
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tests.stackfile.verdicts import mandatory
from tools.offline.manifests import load_stack_file

PROD = load_stack_file(PROD_STACK_FILE)
W = "llm-serving:workloads"


@pytest.fixture(autouse=True)
def prod_in_the_pack():
    use_stack_config(PROD)
    yield
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))


def config_problems(change) -> list:
    config = copy.deepcopy(PROD)
    change(config)
    try:
        load_stack_config(config)
    except ConfigError as err:
        return err.problems
    return []


def pack_messages(policy: str, change) -> list[str]:
    """The mandatory findings of ``policy`` on the manifests prod renders with ``change`` (the
    loader accepts it: the rule is the pack's)."""
    config = copy.deepcopy(PROD)
    change(config)
    return mandatory(config, policy)


def policy_messages(policy, text: str) -> list[str]:
    return [v.message for v in run_policy(policy, manifests(text))]


# --- quantization on sm_70 ----------------------------------------------------------------

def _vllm_isvc(quantization) -> str:
    args = ["--model=m", "--dtype=float16"] + ([f"--quantization={quantization}"] if quantization else [])
    return f"""
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {{name: r, namespace: llm-serving}}
spec:
  predictor:
    nodeSelector: {{kubernetes.io/hostname: worker-1}}
    containers:
    - name: k
      image: "vllm/vllm-openai:v0.11.0"
      args: {json.dumps(args)}
      env: [{{name: VLLM_USE_FLASHINFER_SAMPLER, value: "0"}}]
      resources: {{limits: {{nvidia.com/gpu: "1"}}}}
"""


QUANT_METHODS = [None, *get_args(get_args(VllmWorkload.model_fields["quantization"].annotation)[0])]


@pytest.mark.parametrize("method", QUANT_METHODS)
def test_a_quantization_is_refused_by_the_pack_iff_sm70_lacks_its_kernels(method):
    """The stack file loads every method its type takes; vllm-volta judges it once, on the rendered
    InferenceService and on hand-written YAML alike."""
    def change(config):
        config[W]["reasoning"]["quantization"] = method

    assert config_problems(change) == []
    from_stack = [m for m in pack_messages("vllm-volta", change) if "--quantization" in m]
    from_yaml = [m for m in policy_messages(policy("vllm-volta"), _vllm_isvc(method)) if "--quantization" in m]
    assert bool(from_stack) == bool(from_yaml) == (not cards.quantization_runs_on(method, 70)), (from_stack, from_yaml)
    assert all("under llm-serving:workloads.reasoning" in m for m in from_stack)


def test_the_sm70_verdicts_themselves():
    """Gptq and bitsandbytes run on sm_70; AWQ, FP8, Marlin and compressed-tensors do not."""
    runs = {m: cards.quantization_runs_on(m, 70) for m in QUANT_METHODS}
    assert {m for m, ok in runs.items() if ok} == {None, "gptq", "bitsandbytes"}
    assert cards.quantization_min_sm("awq_marlin") == 80 and cards.quantization_min_sm("compressed_tensors") == 75
    assert cards.quantization_runs_on("awq", 75) and not cards.quantization_runs_on("fp8", 75)


# --- startup budget -----------------------------------------------------------------------

def _deployment(cold: int, period: int, threshold: int) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: s
  namespace: llm-serving
  annotations: {{{facts.COLD_START_ANNOTATION}: '{cold}'}}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        startupProbe: {{httpGet: {{path: /health, port: 8080}}, periodSeconds: {period}, failureThreshold: {threshold}}}
"""


@pytest.mark.parametrize("cold, period, threshold, covered", [
    (600, 15, 40, False),  # equal: does not exceed
    (599, 15, 40, True),   # one second above the cold start
    (601, 15, 40, False),
    (600, 15, 41, True),
])
def test_the_budget_must_exceed_the_cold_start(cold, period, threshold, covered):
    """startup-probe-covers-cold-start, on the stack file's rendering (fix in its keys) and on YAML."""
    def change(config):
        wl = config[W]["reasoning"]
        wl["cold_start_seconds"] = cold
        wl["startup_probe"] = {"period_seconds": period, "failure_threshold": threshold}

    from_stack = pack_messages("startup-probe-covers-cold-start", change)
    from_yaml = policy_messages(policy("startup-probe-covers-cold-start"), _deployment(cold, period, threshold))
    assert servers.startup_budget_covers(period * threshold, cold) is covered
    assert (not from_stack) is covered and (not from_yaml) is covered, (from_stack, from_yaml)
    if not covered:
        need = servers.startup_threshold_needed(cold, period)
        (stack_message,) = from_stack
        (message,) = from_yaml
        assert f"Fix: raise startup_probe.failure_threshold to at least {need} at a {period} s period" in stack_message
        assert f"Fix: raise startupProbe.failureThreshold to at least {need} at a {period} s period" in message


# --- tensor parallel suggestions ----------------------------------------------------------

@pytest.mark.parametrize("workload, engine, model_arg, tp", [
    ("candle-vllm", "candle-vllm", "/mnt/models/coder-14b-fp16", 3),
    ("reasoning", "vllm", "Qwen/Qwen3-30B-A3B-GPTQ-Int4", 6),
    ("reasoning", "vllm", "Qwen/Qwen3-30B-A3B-GPTQ-Int4", 3),
])
def test_the_pack_suggests_the_tp_sizes_that_divide_the_model(workload, engine, model_arg, tp):
    """tensor-parallel-divisibility on the stack file's rendering names ``cards`` (the stack file's
    key) and on YAML the flag; both list the sizes that divide the model."""
    def change(config):
        config[W][workload]["cards"] = tp

    (from_stack,) = pack_messages("tensor-parallel-divisibility", change)
    server = tp_server(model_arg, tp) if engine == "vllm" else candle_tp_server(model_arg, tp)
    (message,) = policy_messages(policy("tensor-parallel-divisibility"), server)
    sizes = [re.search(r"divides them: (\d+(?:, \d+)*)", m).group(1) for m in (from_stack, message)]
    assert ("with --tensor-parallel-size to match" in message) is (engine == "vllm")
    assert f"set cards to a tensor parallel size that divides them: {sizes[0]}" in from_stack
    key, model = stackconfig.models().find(model_arg)
    assert sizes == [", ".join(map(str, servers.tp_sizes_that_divide(model, engine=engine)))] * 2


def test_vllm_replicates_kv_heads_at_tp8():
    """VLLM at TP 8 on 4 KV heads replicates them; the pack does not refuse the split."""
    assert policy_messages(policy("tensor-parallel-divisibility"), tp_server("Qwen/Qwen3-30B-A3B-GPTQ-Int4", 8)) == []


# --- config_json paths --------------------------------------------------------------------

def test_config_json_resolves_against_the_project_directory_everywhere(tmp_path, monkeypatch):
    """One rule: relative to the project directory (Pulumi.yaml), in the program (default of
    load_stack_config and __main__.py), the pack (stackconfig.PROJECT_DIR) and the preview."""
    assert inputs.PROJECT_DIR == ROOT == stackconfig.PROJECT_DIR
    assert (inputs.PROJECT_DIR / "Pulumi.yaml").is_file()
    prod = load_stack_config(PROD)
    source = tmp_path / "config.json"
    clef = prod.model_facts("clef-flash")
    source.write_text(json.dumps({
        "architectures": [clef.architecture], "num_hidden_layers": 4, "num_attention_heads": 16,
        "num_key_value_heads": 2, "head_dim": 128, "hidden_size": 2048, "intermediate_size": 6144,
        "vocab_size": 151936, "max_position_embeddings": 32768, "torch_dtype": "float16",
    }))
    config = copy.deepcopy(PROD)
    relative = Path(os.path.relpath(source, ROOT))
    config["llm-serving:models"]["extra"] = {"config_json": str(relative), "weights_path": "/mnt/models/extra"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_stack_config(config).model_facts("extra").num_hidden_layers == 4  # not the working directory

