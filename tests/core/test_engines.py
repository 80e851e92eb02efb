"""Each engine flag is declared once (core/engines/config.py) and the stack file's workload,
the component args and the rendered argv all come from that one model; the model reads an argv
back into the typed settings the capacity estimator takes (the inverse of ``argv()``), and the
estimator runs once per server."""

from __future__ import annotations

import inspect
import re
from types import SimpleNamespace

import pytest

import core.k8s.manifests
from components.vllm import VllmArgs, vllm_argv
from components.workload import CandleDeploymentArgs, candle_argv
from core import rulebook
from core.capacity import estimator as capacity
from core.engines.config import CandleConfig, ServerSettings, VllmConfig
from core.judging.registry import SETTINGS
from policylib import capacity_helpers as ch
from policylib import stackconfig
from policylib.pack import policies
from stackfile import CandleWorkload, VllmWorkload, load_stack_config
from stackfile import build as stack
from stackfile.build import render_manifests
from tests.components.test_manifest_functions import PROD
from tests.paths import PROD_STACK_FILE, ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, FIXTURES, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file, resources_from_documents

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


PROD_FILE = load_stack_file(PROD_STACK_FILE)


def _prod_rendered():
    config = load_stack_config(PROD_FILE)
    resources = resources_from_documents(render_manifests(config), stack="prod")
    return config, resources


def _stack(resources):
    return core.k8s.manifests.stack_view(SimpleNamespace(resource_type=r.type, props=r.props, urn=r.urn) for r in resources)


def test_prod_servers_read_back_to_the_stack_files_settings():
    config, resources = _prod_rendered()
    read = {(w.name, s.engine): s.settings(c.image or None) for w in _stack(resources).workloads for c, s in w.servers}
    expected = {}
    for name, wl in config.workloads.items():
        if isinstance(wl, VllmWorkload):
            expected[(name, "vllm")] = wl.settings(tp=wl.tp)
        elif isinstance(wl, CandleWorkload):
            expected[(name, "candle-vllm")] = wl.settings(cards=wl.cards)
    assert expected and read == expected
    reasoning = read[("reasoning", "vllm")]
    assert (reasoning.max_model_len, reasoning.gpu_memory_utilization, reasoning.dtype, reasoning.tp) == (65536, 0.9, "float16", 1)
    assert sorted(read) == [("candle-vllm", "candle-vllm"), ("clef-candle", "candle-vllm"), ("reasoning", "vllm")]


def test_the_rules_name_each_flag_as_the_engine_models_declare_it():
    """Every flag a rule's wording names is a value of VllmConfig.FLAGS or CandleConfig.FLAGS
    (core/engines/flags.py), never spelt again in the rulebook."""
    rulebook.register_all()
    declared = set(VllmConfig.FLAGS.values()) | set(CandleConfig.FLAGS.values())
    named = {s.id: s.manifest for s in SETTINGS.values() if s.flag}
    assert named["max_model_len"] == VllmConfig.FLAGS["max_model_len"] == "--max-model-len"
    assert named["kv_fraction"] == CandleConfig.FLAGS["kv_fraction"] == "--kv-fraction"
    assert named["candle_devices"] == CandleConfig.FLAGS["devices"] == "--d"
    assert {i: m for i, m in named.items() if m not in declared} == {}


def test_vllms_short_spellings_read_as_the_long_flags():
    s = core.k8s.manifests.parse_args("vllm", ["--model=m", "-tp", "2", "-pp", "2", "-dp", "3", "-q", "gptq"])
    assert (s.tensor_parallel, s.pipeline_parallel, s.setting("data_parallel_size"), s.setting("quantization")) == (
        2, 2, "3", "gptq")
    long = core.k8s.manifests.parse_args("vllm", ["--model=m", "--tensor-parallel-size=4", "-tp", "2"])
    assert long.tensor_parallel == 4  # the flag first, as before
    assert core.k8s.manifests.parse_args("candle-vllm", ["--m", "Qwen/Qwen3-8B"]).model_arg == "Qwen/Qwen3-8B"


def test_an_unknown_or_unreadable_flag_is_the_engines_default():
    s = core.k8s.manifests.parse_args("vllm", ["--model=m", "--max-model-len=lots", "--frobnicate", "--block_size", "32",
                                           "--gpu_memory_utilization=0.8", "-tp", "2"])
    assert s.settings() == ServerSettings("vllm", tp=2, gpu_memory_utilization=0.8, block_size=32)
    c = core.k8s.manifests.parse_args("candle-vllm", ["--w", "/mnt/models/x", "--d", "0,1", "--fp8-kvcache", "--mem", "4K"])
    assert c.settings() == ServerSettings("candle-vllm", tp=2, kv_cache_dtype="fp8", mem_mib=4096)


def test_every_fixture_server_reads_without_error():
    read = 0
    for case in sorted(FIXTURES.glob("*/*/*.yaml")):
        for w in _stack(manifests(case.read_text())).workloads:
            for c, s in w.servers:
                assert s.settings(c.image or None).engine == s.engine, case
                read += 1
    assert read > 50


def test_prod_estimates_each_server_once():
    """The stack-file checks, the preview's capacity table and every policy of the pack, in one
    process, estimate each of prod's three servers once (the pack's own process does the same)."""
    capacity.estimate.cache_clear()
    config, resources = _prod_rendered()
    after_checks = capacity.estimate.cache_info().misses
    use_stack_config(PROD_FILE)
    try:
        rows = ch.rows_from_resources([SimpleNamespace(resource_type=r.type, props=r.props, urn=r.urn) for r in resources],
                                      stackconfig.inventory(), stackconfig.models())
        for policy in policies():
            run_policy(policy, resources)
    finally:
        use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    assert len(rows) == 3
    assert (after_checks, capacity.estimate.cache_info().misses) == (3, 3)


def _route_of(value: int, run) -> list[str]:
    """Every call into the project's code (``file:function``, tests left out) that is handed
    ``value`` as ``max_model_len``: the int itself, an argv item ``--max-model-len=<value>``, an
    argv holding it, a flags map or config dict holding it, or an object whose ``max_model_len``
    it is. In call order, repeats kept (``sys.setprofile``)."""
    import sys
    from collections.abc import Mapping

    root = str(ROOT) + "/"
    item = f"--max-model-len={value}"

    def carries(v, top=True) -> bool:
        if isinstance(v, bool):
            return False
        if isinstance(v, (int, str)):
            return v == value or v == item  # noqa: SIM109
        if isinstance(v, (list, tuple)):
            return top and any(carries(x, False) for x in v[:64])
        if isinstance(v, Mapping):
            return v.get("max_model_len") == value or list(v.get("--max-model-len") or [None])[-1] == str(value)
        return getattr(v, "max_model_len", None) == value

    route: list[str] = []

    def profile(frame, event, arg):
        path = frame.f_code.co_filename or ""
        if event != "call" or not path.startswith(root) or path.startswith((root + "tests/", root + ".venv/")):
            return
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if any(carries(frame.f_locals.get(n)) for n in names):
            route.append(f"{path[len(root):]}:{code.co_qualname}")

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return route


def test_max_model_len_reaches_the_verdicts_and_the_capacity_table_in_four_hops():
    """``llm-serving:workloads.reasoning.max_model_len`` (65536) followed through one process:
    typed by the loader, rendered into the argv, read back from it, then judged by the pack and
    printed in the capacity table (docs/architecture.md lists the hops). The context window and
    the KV cache are judged once, by the pack on the rendered manifest; the estimate is made once."""
    from tools.offline import summary

    capacity.estimate.cache_clear()

    def run():
        config = load_stack_config(PROD_FILE)
        resources = resources_from_documents(render_manifests(config), stack="prod")
        use_stack_config(PROD_FILE)
        try:
            for policy in policies():
                if policy.name in ("vllm-context-window", "kv-cache-fits-max-model-len"):
                    run_policy(policy, resources)
            table = summary.capacity_section(resources, PROD_FILE, stackconfig.inventory())
        finally:
            use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
        assert any("65,536" in line for line in table)

    route = _route_of(65536, run)
    first = ["stackfile/loader.py:_validate", "core/engines/config.py:VllmConfig.argv", "core/engines/config.py:VllmConfig.read"]
    at = [route.index(h) for h in first]
    assert at == sorted(at), route
    judged = ["core/rulebook/servers.py:context_window", "core/rulebook/capacity.py:kv_cache_fits", "tools/offline/summary.py:_num"]
    assert min(route.index(h) for h in judged) > at[-1], route  # the pack's verdicts and the table, on the manifest read back
    assert route.count("core/rulebook/servers.py:context_window") == 1  # the pack's, once
    assert route.count("core/capacity/estimator.py:estimate") == 1  # cached on its inputs: once per server and process
    assert route.count("core/rulebook/capacity.py:kv_cache_fits") == 1  # the pack's, once
