"""The model-server rules on the stack-file side (context window, service links, listen host,
GPU memory utilization, memory requests): the rules the loader shares with the pack (core/rules.py), what
the components render for them, and the capacity estimate that never rewards a utilization above
the bound. The pack's side is in the per-policy tests and fixtures."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest

from components.vllm import VllmArgs
from core import capacity, facts, rules
from core.engines import ServerSettings
from core.modelfacts import CATALOG
from core.registry import Rule
from stackfile import CandleWorkload, ConfigError, VllmWorkload, load_stack_config
from stackfile.build import render_manifests, vllm_args
from tests.paths import PROD_STACK_FILE
from tools.offline.manifests import load_stack_file

PROD = load_stack_file(PROD_STACK_FILE)
W = "llm-serving:workloads"
YARN2 = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32768}


def _prod(**changes) -> dict:
    raw = copy.deepcopy(PROD)
    for workload, fields in changes.items():
        for key, value in fields.items():
            if value is None:
                raw[W][workload].pop(key, None)
            else:
                raw[W][workload][key] = value
    return raw


def _problems(raw: dict) -> list:
    with pytest.raises(ConfigError) as info:
        load_stack_config(raw)
    return info.value.problems


def _manifest(raw: dict, kind: str, name: str) -> dict:
    (m,) = [m for m in render_manifests(load_stack_config(raw)) if m["kind"] == kind and m["metadata"]["name"] == name]
    return m


def _isvc_container(m: dict) -> dict:
    return m["spec"]["predictor"]["containers"][0]


# --- core.rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "window, scaling, derived",
    [
        (40960, None, 40960),                                   # Qwen3-30B-A3B config.json
        (40960, YARN2, 65536),                                   # the Qwen3 card's factor 2.0 for ~64k
        (40960, {**YARN2, "factor": 4.0}, 131072),               # the card's vLLM line, factor 4.0
        (32768, {"rope_type": "linear", "factor": 2.0}, 65536),  # non-YaRN: the window times the factor
        (32768, {"type": "dynamic", "factor": 2.0}, 65536),      # the older "type" key
        (131072, {"rope_type": "llama3", "factor": 8.0}, 131072),  # llama3 keeps its window
        (32768, {"rope_type": "yarn"}, 32768),                   # no factor: unchanged
    ],
)
def test_derived_max_model_len_as_vllm_derives_it(window, scaling, derived):
    assert rules.derived_max_model_len(window, scaling) == derived


def test_max_model_len_ok_and_the_long_env_flag():
    assert not rules.max_model_len_ok(65536, 40960)
    assert rules.max_model_len_ok(65536, 40960, YARN2)
    assert not rules.max_model_len_ok(65537, 40960, YARN2)
    assert rules.max_model_len_ok(65536, 40960, None, rules.env_flag_on("1"))
    assert [rules.env_flag_on(v) for v in ("1", "true", "TRUE", "0", "false", "", None)] == [
        True, True, True, False, False, False, False]


def test_service_link_names_follow_the_kubelet():
    """pkg/kubelet/envvars FromServices: Service vllm (ports http 80, http-8080 8080) -> VLLM_PORT and more."""
    names = rules.service_link_env_names("vllm", [("http", 80, "TCP"), ("http-8080", 8080, "TCP")])
    assert names == [
        "VLLM_SERVICE_HOST", "VLLM_SERVICE_PORT", "VLLM_SERVICE_PORT_HTTP", "VLLM_SERVICE_PORT_HTTP_8080",
        "VLLM_PORT",
        "VLLM_PORT_80_TCP", "VLLM_PORT_80_TCP_PROTO", "VLLM_PORT_80_TCP_PORT", "VLLM_PORT_80_TCP_ADDR",
        "VLLM_PORT_8080_TCP", "VLLM_PORT_8080_TCP_PROTO", "VLLM_PORT_8080_TCP_PORT", "VLLM_PORT_8080_TCP_ADDR",
    ]
    coder = rules.service_link_env_names("coder-predictor", [(None, 80, "TCP")])
    assert coder[0] == "CODER_PREDICTOR_SERVICE_HOST"
    assert rules.env_collisions(coder, facts.ENGINE_ENV_PREFIXES["vllm"]) == []


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.1.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), (None, False),
])
def test_loopback_hosts(host, loopback):
    assert rules.loopback_host(host) is loopback


def test_gpu_memory_utilization_bound():
    assert rules.GPU_MEMORY_UTILIZATION_CEILING == 0.95
    assert rules.gpu_memory_utilization_ok(0.95)
    assert not rules.gpu_memory_utilization_ok(0.98)
    assert rules.gpu_memory_utilization_ok(0.98, enforce_eager=True)
    assert rules.gpu_memory_utilization_ok(0.98, overridden=True)


def test_gpu_memory_declared():
    assert rules.gpu_memory_declared(12288, 40960)
    assert rules.gpu_memory_declared(None, 40960)  # the API server copies the limit into the request
    assert not rules.gpu_memory_declared(12288, None)
    assert not rules.gpu_memory_declared(None, None)


# --- the estimate never rewards a utilization above the bound ---------------------------------

def test_the_estimate_credits_at_most_the_ceiling():
    """The capacity table once showed MORE room at 0.98 than at 0.95; it must not."""
    facts_ = CATALOG["Qwen/Qwen3-30B-A3B-GPTQ-Int4"]
    card = load_stack_config(PROD).cluster.nodes[0].card
    at = {u: capacity.estimate(facts_, card, ServerSettings("vllm", gpu_memory_utilization=u, max_model_len=65536)) for u in (0.95, 0.98, 1.0)}
    assert at[0.98].kv_tokens == at[0.95].kv_tokens == at[1.0].kv_tokens
    assert at[0.98].budget_gib == at[0.95].budget_gib
    assert any("0.98 is above the 0.95 ceiling" in n for n in at[0.98].notes)
    assert not any("ceiling" in n for n in at[0.95].notes)
    # Below the ceiling more utilization is more room, as vLLM computes it.
    assert capacity.estimate(facts_, card, ServerSettings("vllm", gpu_memory_utilization=0.90, max_model_len=65536)).kv_tokens < at[0.95].kv_tokens
    # The engine model itself is unchanged (a public log at 0.98 is reproduced through estimate_vllm).
    assert capacity.estimate_vllm(facts_, card, gpu_memory_utilization=0.98, max_model_len=65536).kv_tokens > at[0.95].kv_tokens
    with pytest.raises(ValueError):  # noqa: PT011
        capacity.estimate(facts_, card, ServerSettings("vllm", gpu_memory_utilization=1.2, max_model_len=65536))


# --- the stack file -------------------------------------------------------------------------------

def test_prod_reasoning_renders_the_qwen3_cards_yarn_as_hf_overrides():
    """Prod's reasoning asks 65,536 of a 40,960 window; the manifest carries what makes it start."""
    c = _isvc_container(_manifest(PROD, "InferenceService", "reasoning"))
    (item,) = [a for a in c["args"] if a.startswith("--hf-overrides=")]
    assert json.loads(item.split("=", 1)[1]) == {"rope_scaling": YARN2}
    assert c["args"].index(item) == c["args"].index("--max-model-len=65536") + 1


def test_max_model_len_above_the_window_without_rope_scaling_is_refused():
    (p,) = _problems(_prod(reasoning={"rope_scaling": None}))
    assert p.path == f"{W}.reasoning.max_model_len" and p.value == 65536
    assert "above model qwen3-30b-a3b-gptq-int4's max_position_embeddings 40,960 and no rope scaling is set" in p.rule
    assert "YaRN: rope_scaling: {rope_type: yarn, factor: 1.6, original_max_position_embeddings: 40960}" in p.fix
    assert p.fix.endswith("or lower max_model_len to 40,960")


def test_vllm_allow_long_max_model_len_lets_it_load():
    load_stack_config(_prod(reasoning={"rope_scaling": None, "env": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}}))


def test_a_yarn_factor_short_of_max_model_len_is_refused():
    (p,) = _problems(_prod(reasoning={"rope_scaling": {**YARN2, "factor": 1.5}}))
    assert 'rope scaling {"rope_type":"yarn","factor":1.5,"original_max_position_embeddings":32768} stretches that to 49,152' in p.rule


def test_gpu_memory_utilization_above_the_ceiling_is_refused():
    (p,) = _problems(_prod(reasoning={"gpu_memory_utilization": 0.98}))
    assert p.path == f"{W}.reasoning.gpu_memory_utilization" and p.value == 0.98
    assert "vllm-project/vllm #15598" in p.source


def test_enforce_eager_lifts_the_ceiling_and_renders_the_flag():
    c = _isvc_container(_manifest(_prod(reasoning={"gpu_memory_utilization": 0.98, "enforce_eager": True}),
                                  "InferenceService", "reasoning"))
    assert "--enforce-eager" in c["args"] and "--gpu-memory-utilization=0.98" in c["args"]


def test_a_declared_override_lifts_the_ceiling_and_is_written_for_the_pack():
    raw = _prod(reasoning={"gpu_memory_utilization": 0.97,
                           "gpu_memory_utilization_override": {"reason": "measured 72 h at 0.97"}})
    m = _manifest(raw, "InferenceService", "reasoning")
    assert m["metadata"]["annotations"][facts.GMU_OVERRIDE_ANNOTATION] == "measured 72 h at 0.97"


@pytest.mark.parametrize("workload", ["candle-vllm", "reasoning", "clef-serve"])
def test_a_gpu_workload_without_memory_is_refused(workload):
    raw = _prod(**{workload: {"resources": {"requests": {"cpu": "4"}}}})
    (p,) = _problems(raw)
    assert p.path == f"{W}.{workload}.resources"
    assert "memory request none and limit none" in p.rule and "counts as 0 MiB" in p.rule


def test_a_request_without_a_limit_is_refused_and_a_limit_alone_loads():
    (p,) = _problems(_prod(reasoning={"resources": {"requests": {"memory": "12Gi"}}}))
    assert "memory request 12,288 MiB and limit none: nothing bounds" in p.rule
    load_stack_config(_prod(reasoning={"resources": {"limits": {"memory": "32Gi"}}}))


def test_every_rendered_pod_has_service_links_off():
    pods = []
    for m in render_manifests(load_stack_config(PROD)):
        if m["kind"] == "Deployment":
            pods.append(m["spec"]["template"]["spec"])
        elif m["kind"] == "InferenceService":
            pods.append(m["spec"]["predictor"])
    assert len(pods) == 4 and all(p["enableServiceLinks"] is False for p in pods)


def _counting(monkeypatch) -> Counter:
    """Every rule judged from now on, counted by id (Rule.__call__, which every judge goes through)."""
    calls: Counter = Counter()
    judge = Rule.__call__

    def counted(rule: Rule, *args, **kwargs):
        calls[rule.id] += 1
        return judge(rule, *args, **kwargs)

    monkeypatch.setattr(Rule, "__call__", counted)
    return calls


def test_one_run_judges_each_rule_once(monkeypatch):
    """The loader judges prod's workloads; building their components' args (the program's
    run, here without the engine) judges nothing again: one judgement per rule and workload.
    (Before, building the args judged 21 rules again: the startup budget 6 times, twice for each
    candle-vllm server, whose generic Deployment args judged it a third time.)"""
    calls = _counting(monkeypatch)
    config = load_stack_config(PROD)
    by_loader = Counter(calls)
    render_manifests(config)
    assert calls == by_loader
    vllm = [n for n, wl in config.workloads.items() if isinstance(wl, VllmWorkload)]
    candle = [n for n, wl in config.workloads.items() if isinstance(wl, CandleWorkload)]
    assert (len(vllm), len(candle), len(config.workloads)) == (1, 2, 4)
    assert by_loader["startup-probe-covers-cold-start"] == 4  # every workload kind, pytorch too
    assert by_loader["vllm-context-window"] == by_loader["vllm-digest-pinned"] == by_loader["vllm-parallelism"] == 1
    assert by_loader["half-dtype"] == 3  # each server's dtype on its card
    assert by_loader["tensor-parallel-divisibility"] == 3


def test_component_args_used_directly_still_judge(monkeypatch):
    """Args not built from a judged stack file (a component used on its own) judge every rule
    of their server, and raise the first breach."""
    config = load_stack_config(PROD)
    unjudged = config.model_copy()
    unjudged._judged = False
    calls = _counting(monkeypatch)
    args = vllm_args("reasoning", config.workloads["reasoning"], unjudged)
    assert calls["vllm-context-window"] == calls["startup-probe-covers-cold-start"] == 1
    fields = {name: getattr(args, name) for name in type(args).model_fields}
    with pytest.raises(ValueError, match="max_model_len"):
        VllmArgs(**{**fields, "max_model_len": 10 ** 7})
    assert calls["vllm-context-window"] == 2
