"""Issue 8: each engine flag is declared once (core/engines.py) and the stack file's workload,
the component args and the rendered argv all come from that one model."""

from __future__ import annotations

import inspect
import re

import pytest

from stackfile import build as stack
from stackfile import CandleWorkload, VllmWorkload
from components.vllm import VllmArgs, vllm_argv
from components.workload import CandleDeploymentArgs, candle_argv
from core.engines import CandleConfig, VllmConfig
from tests.test_components import PROD

PAIRS = [(VllmConfig, VllmWorkload, VllmArgs), (CandleConfig, CandleWorkload, CandleDeploymentArgs)]


@pytest.mark.parametrize("settings, workload, args", PAIRS, ids=["vllm", "candle-vllm"])
def test_the_workload_and_the_args_extend_the_one_settings_model(settings, workload, args):
    for cls in (workload, args):
        assert issubclass(cls, settings)
        own = set(cls.__dict__.get("__annotations__", {}))
        assert own.isdisjoint(settings.model_fields), (cls.__name__, own & set(settings.model_fields))


@pytest.mark.parametrize("settings, compose", [(VllmConfig, stack.vllm_args), (CandleConfig, stack.candle_args)],
                         ids=["vllm", "candle-vllm"])
def test_the_composition_copies_no_flag(settings, compose):
    """stackfile/build.py hands the settings over whole (settings_of), never ``flag=wl.flag``."""
    source = inspect.getsource(compose)
    assert f"settings_of({settings.__name__}, wl)" in source
    copied = [f for f in settings.model_fields if re.search(rf"\b{f}=wl\.{f}\b", source)]
    assert copied == []


def test_prod_argv_comes_from_the_settings_models():
    reasoning = PROD.workloads["reasoning"]
    args = stack.vllm_args("reasoning", reasoning, PROD)
    assert vllm_argv(args) == reasoning.argv("Qwen/Qwen3-30B-A3B-GPTQ-Int4", tp=1, nvlink=False, port=8080)
    assert vllm_argv(args)[:5] == ["--model=Qwen/Qwen3-30B-A3B-GPTQ-Int4", "--served-model-name", "reasoning",
                                   "reasoning-long", "--quantization=gptq"]
    candle = PROD.workloads["candle-vllm"]
    cargs = stack.candle_args("candle-vllm", candle, PROD)
    assert candle_argv(cargs) == candle.argv("/mnt/models/coder-14b-fp16", cards=2) == [
        "--w", "/mnt/models/coder-14b-fp16", "--d", "0,1", "--dtype", "f16", "--p", "8080",
        "--max-num-seqs", "32", "--kv-fraction", "0.85"]
