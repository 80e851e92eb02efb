"""The model-server rules on a stack file (context window, service links, listen host, GPU memory
utilization, memory requests, the card's capabilities, tensor parallel, cards and memory on the
node, the startup budget, the KV cache): the predicates (core/rulebook/), what the components render
for them, the capacity estimate that never rewards a utilization above the bound, and the pack's
finding on the rendered manifests, its fix in the stack file's keys: each rule is judged once, by
the pack (docs/architecture.md). The per-policy tests and fixtures judge hand-written YAML."""

from __future__ import annotations

import io
import json
from collections import Counter

import pytest
import yaml

from core.base import facts
from core.capacity import estimator as capacity
from core.catalog import modelfacts
from core.catalog.modelfacts import CATALOG
from core.engines import config
from core.engines.config import ServerSettings
from core.judging.registry import RULES, Rule
from core.k8s.manifests import env
from core.rulebook import endpoints, servers
from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE, ROOT
from tests.stackfile.verdicts import PROD, W, mandatory, prod, refused_once, verdicts
from tools import preview
from tools.offline.manifests import load_stack_file

STACKS = ROOT / "tests" / "stacks"
YARN2 = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32768}


def _manifest(raw: dict, kind: str, name: str) -> dict:
    (m,) = [m for m in render_manifests(load_stack_config(raw)) if m["kind"] == kind and m["metadata"]["name"] == name]
    return m


def _isvc_container(m: dict) -> dict:
    return m["spec"]["predictor"]["containers"][0]


# --- core.rulebook ---------------------------------------------------------------------------------

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
    assert modelfacts.derived_max_model_len(window, scaling) == derived


def test_max_model_len_ok_and_the_long_env_flag():
    assert not modelfacts.max_model_len_ok(65536, 40960)
    assert modelfacts.max_model_len_ok(65536, 40960, YARN2)
    assert not modelfacts.max_model_len_ok(65537, 40960, YARN2)
    assert modelfacts.max_model_len_ok(65536, 40960, None, env.env_flag_on("1"))
    assert [env.env_flag_on(v) for v in ("1", "true", "TRUE", "0", "false", "", None)] == [
        True, True, True, False, False, False, False]


def test_service_link_names_follow_the_kubelet():
    """pkg/kubelet/envvars FromServices: Service vllm (ports http 80, http-8080 8080) -> VLLM_PORT and more."""
    names = env.service_link_env_names("vllm", [("http", 80, "TCP"), ("http-8080", 8080, "TCP")])
    assert names == [
        "VLLM_SERVICE_HOST", "VLLM_SERVICE_PORT", "VLLM_SERVICE_PORT_HTTP", "VLLM_SERVICE_PORT_HTTP_8080",
        "VLLM_PORT",
        "VLLM_PORT_80_TCP", "VLLM_PORT_80_TCP_PROTO", "VLLM_PORT_80_TCP_PORT", "VLLM_PORT_80_TCP_ADDR",
        "VLLM_PORT_8080_TCP", "VLLM_PORT_8080_TCP_PROTO", "VLLM_PORT_8080_TCP_PORT", "VLLM_PORT_8080_TCP_ADDR",
    ]
    coder = env.service_link_env_names("coder-predictor", [(None, 80, "TCP")])
    assert coder[0] == "CODER_PREDICTOR_SERVICE_HOST"
    assert env.env_collisions(coder, facts.ENGINE_ENV_PREFIXES["vllm"]) == []


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.1.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.5", False), (None, False),
])
def test_loopback_hosts(host, loopback):
    assert endpoints.loopback_host(host) is loopback


def test_gpu_memory_utilization_bound():
    assert config.GPU_MEMORY_UTILIZATION_CEILING == 0.95
    assert config.gpu_memory_utilization_ok(0.95)
    assert not config.gpu_memory_utilization_ok(0.98)
    assert config.gpu_memory_utilization_ok(0.98, enforce_eager=True)
    assert config.gpu_memory_utilization_ok(0.98, overridden=True)


def test_gpu_memory_declared():
    assert servers.gpu_memory_declared(12288, 40960)
    assert servers.gpu_memory_declared(None, 40960)  # the API server copies the limit into the request
    assert not servers.gpu_memory_declared(12288, None)
    assert not servers.gpu_memory_declared(None, None)


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


def test_max_model_len_above_the_window_without_rope_scaling_is_refused_by_the_pack():
    """Judged once, by vllm-context-window on the rendered InferenceService: the stack file loads
    and the finding's fix names the stack file's keys."""
    (m,) = mandatory(prod(reasoning={"rope_scaling": None}), "vllm-context-window")
    assert m.startswith("InferenceService reasoning, container kserve-container: --max-model-len 65,536 is above model "
                        "qwen3-30b-a3b-gptq-int4's max_position_embeddings 40,960 and no rope scaling is set")
    assert "Fix: add the rope scaling the model card documents, e.g. YaRN: rope_scaling: {rope_type: yarn, factor: 1.6, " \
           "original_max_position_embeddings: 40960}" in m
    assert "or lower max_model_len to 40,960 under llm-serving:workloads.reasoning" in m


def test_vllm_allow_long_max_model_len_lets_it_start():
    assert mandatory(prod(reasoning={"rope_scaling": None, "env": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}}),
                     "vllm-context-window") == []


def test_a_yarn_factor_short_of_max_model_len_is_refused_by_the_pack():
    (m,) = mandatory(prod(reasoning={"rope_scaling": {**YARN2, "factor": 1.5}}), "vllm-context-window")
    assert 'rope scaling {"rope_type":"yarn","factor":1.5,"original_max_position_embeddings":32768} stretches that to 49,152' in m


def test_gpu_memory_utilization_above_the_ceiling_is_refused_by_the_pack():
    (m,) = mandatory(prod(reasoning={"gpu_memory_utilization": 0.98}), "vllm-gpu-memory-utilization")
    assert "--gpu-memory-utilization 0.98 is above the 0.95 ceiling" in m
    assert "Fix: lower gpu_memory_utilization to at most 0.95" in m and "under llm-serving:workloads.reasoning" in m
    assert "vllm-project/vllm #15598" in m


def test_enforce_eager_lifts_the_ceiling_and_renders_the_flag():
    raw = prod(reasoning={"gpu_memory_utilization": 0.98, "enforce_eager": True})
    c = _isvc_container(_manifest(raw, "InferenceService", "reasoning"))
    assert "--enforce-eager" in c["args"] and "--gpu-memory-utilization=0.98" in c["args"]
    assert mandatory(raw, "vllm-gpu-memory-utilization") == []


def test_a_declared_override_lifts_the_ceiling_and_is_written_for_the_pack():
    raw = prod(reasoning={"gpu_memory_utilization": 0.97,
                          "gpu_memory_utilization_override": {"reason": "measured 72 h at 0.97"}})
    m = _manifest(raw, "InferenceService", "reasoning")
    assert m["metadata"]["annotations"][facts.GMU_OVERRIDE_ANNOTATION] == "measured 72 h at 0.97"
    assert mandatory(raw, "vllm-gpu-memory-utilization") == []


@pytest.mark.parametrize("workload, subject", [("candle-vllm", "Deployment candle-vllm, container candle"),
                                               ("reasoning", "InferenceService reasoning, container kserve-container")])
def test_a_gpu_workload_without_memory_is_refused_by_the_pack(workload, subject):
    (m,) = mandatory(prod(**{workload: {"resources": {"requests": {"cpu": "4"}}}}), "gpu-memory-request")
    assert m.startswith(f"{subject}: it holds ")
    assert "memory request none and limit none" in m and "counts as 0 MiB" in m
    assert "Fix: set resources.requests.memory and resources.limits.memory" in m
    assert f"under llm-serving:workloads.{workload}." in m


def test_a_request_without_a_limit_is_refused_and_a_limit_alone_passes():
    (m,) = mandatory(prod(reasoning={"resources": {"requests": {"memory": "12Gi"}}}), "gpu-memory-request")
    assert "memory request 12,288 MiB and limit none: nothing bounds" in m
    assert mandatory(prod(reasoning={"resources": {"limits": {"memory": "32Gi"}}}), "gpu-memory-request") == []


def test_every_rendered_pod_has_service_links_off():
    pods = []
    for m in render_manifests(load_stack_config(PROD)):
        if m["kind"] == "Deployment":
            pods.append(m["spec"]["template"]["spec"])
        elif m["kind"] == "InferenceService":
            pods.append(m["spec"]["predictor"])
    assert len(pods) == 4 and all(p["enableServiceLinks"] is False for p in pods)


# --- judged once: the engine, card and capacity rules are the pack's --------------------------------

def test_startup_budget_is_refused_by_the_pack():
    """002 / coder.yaml: the kubelet kills a server still loading."""
    m = refused_once(prod(reasoning={"startup_probe": {"period_seconds": 15, "failure_threshold": 40}}),
                     "startup-probe-covers-cold-start")
    assert "the startup probe allows 15 s x 40 = 600 s, which does not exceed the declared cold start of 600 s" in m
    assert "Fix: raise startup_probe.failure_threshold to at least 41 at a 15 s period" in m
    assert "under llm-serving:workloads.reasoning" in m


@pytest.mark.parametrize("workload, field, value, policy, text, fix", [
    ("candle-vllm", "dtype", "bf16", "candle-vllm-args", "--dtype bf16 needs compute capability 8.0",
     "Fix: set dtype: f16 under llm-serving:workloads.candle-vllm"),
    ("reasoning", "kv_cache_dtype", "fp8", "vllm-volta", "--kv-cache-dtype fp8 needs FP8 support",
     "Fix: set kv_cache_dtype: auto under llm-serving:workloads.reasoning"),
    ("reasoning", "tensor_parallel_size", 2, "vllm-parallelism",
     "tensor parallel 2 x pipeline parallel 1 = 2 ranks, but the pod holds 1 cards",
     "Fix: set cards: 2, or tensor_parallel_size x pipeline_parallel_size = 1 under llm-serving:workloads.reasoning"),
])
def test_the_cards_capabilities_are_judged_by_the_pack(workload, field, value, policy, text, fix):
    """001 / coder.yaml: V100 has no bf16, no FP8, no AWQ kernels; ranks equal cards."""
    m = refused_once(prod(**{workload: {field: value}}), policy)
    assert text in m and fix in m


def test_awq_on_the_gptq_checkpoint_is_refused_for_the_card_and_for_the_checkpoint():
    """001 / coder.yaml: V100 has no AWQ kernels (vllm-volta); and reasoning's checkpoint is GPTQ, whose
    config.json quant_method vLLM 0.11.0 matches against ``--quantization`` (engine-contract)."""
    found = {v.policy: v.message for v in verdicts(prod(reasoning={"quantization": "awq"})) if v.mandatory}
    assert sorted(found) == ["engine-contract", "vllm-volta"], found
    assert "--quantization awq needs compute capability 7.5" in found["vllm-volta"]
    assert "(quantization: gptq, which runs on sm_70)" in found["vllm-volta"]
    assert "the checkpoint's config.json says quant_method gptq" in found["engine-contract"]
    assert "set it to gptq under llm-serving:workloads.reasoning" in found["engine-contract"]


def test_custom_all_reduce_at_tp2_without_nvlink_is_refused_by_the_pack():
    """coder.yaml: the custom all-reduce deadlocked after CUDA graph capture over PCIe."""
    raw = load_stack_file(STACKS / "after-002.yaml")
    raw[W]["coder"]["disable_custom_all_reduce"] = False
    (m,) = mandatory(raw, "vllm-volta")
    assert "deadlocked after CUDA graph capture" in m and "under llm-serving:workloads.coder" in m


def test_tensor_parallel_that_does_not_divide_the_model_is_refused_by_the_pack():
    """Seed 001: the suggestion lists the sizes that divide the model, in stack-file keys."""
    (m,) = mandatory(prod(**{"candle-vllm": {"cards": 3}}), "tensor-parallel-divisibility")
    assert m.startswith("Deployment candle-vllm: tensor parallel 3 does not divide model coder-14b-fp16: "
                        "num_attention_heads 40 % 3 = 1")
    assert "Fix: set cards to a tensor parallel size that divides them: 1, 2, 4, 8 under llm-serving:workloads.candle-vllm" in m


def test_cards_and_memory_beyond_the_node_are_refused_by_the_pack():
    (cards,) = mandatory(prod(**{"candle-vllm": {"cards": 8}}), "gpu-card-allocation")
    assert cards.startswith("Deployment candle-vllm: one pod asks 8 cards and its node worker-1 has 4; the pod never schedules")
    assert "under llm-serving:workloads.candle-vllm" in cards
    big = {"requests": {"memory": "64Gi"}, "limits": {"memory": "64Gi"}}
    (memory,) = mandatory(prod(reasoning={"resources": big}), "node-memory-allocation")
    assert memory.startswith("InferenceService reasoning: one pod requests 65,536 MiB of memory and its node worker-1 "
                             "has 63,495 MiB allocatable")
    assert "Fix: lower resources.requests.memory" in memory and "under llm-serving:workloads.reasoning" in memory


def test_weights_beyond_the_card_are_refused_by_the_pack():
    """The 14B in fp16 on one V100 through vLLM: its weights leave no room for the KV cache."""
    raw = prod(reasoning={"model": "coder-14b-fp16", "measured": None, "rope_scaling": None, "max_model_len": 4096})
    (m,) = mandatory(raw, "weights-fit-card")
    assert m.startswith("InferenceService reasoning: 27.51 GiB of weights a card (coder-14b-fp16, TP=1)")
    assert "Fix: split it over 2 cards (TP=2): set cards: 2 under llm-serving:workloads.reasoning" in m


def test_a_memory_limit_under_the_shared_memory_is_refused_by_the_pack():
    """coder.yaml: a multi-card pod's 8Gi /dev/shm counts against its memory limit."""
    small = {"requests": {"memory": "4Gi"}, "limits": {"memory": "4Gi"}}
    (m,) = mandatory(prod(**{"candle-vllm": {"resources": small}}), "multi-gpu-shm")
    assert m.startswith("Deployment candle-vllm")
    assert "under llm-serving:workloads.candle-vllm" in m


def test_a_context_beyond_the_kv_cache_is_refused_by_the_pack():
    raw = prod(reasoning={"max_model_len": 262144, "rope_scaling": None, "env": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}})
    (m,) = mandatory(raw, "kv-cache-fits-max-model-len")
    assert m.startswith("InferenceService reasoning: --max-model-len 262,144 needs 262,144 tokens of KV cache; "
                        "the pool holds about 137,000 tokens")
    assert "Fix: lower max_model_len to at most 137,000" in m and "under llm-serving:workloads.reasoning" in m


#: The policies that judge the engine, card and capacity rules on the rendered manifests.
ENGINE_CARD_CAPACITY_POLICIES = {
    "vllm-context-window", "vllm-gpu-memory-utilization", "vllm-parallelism", "tensor-parallel-divisibility",
    "candle-vllm-args", "vllm-volta", "startup-probe-covers-cold-start", "gpu-memory-request", "gpu-card-allocation",
    "node-memory-allocation", "multi-gpu-shm", "weights-fit-card", "kv-cache-fits-max-model-len",
}

#: Rules filed under one of those policies that the loader judges: a reference (a node the inventory
#: lists), and two the policy does not call (a hybrid model on more than one candle-vllm card, seed
#: 003; on vLLM below sm_75, coder.yaml).
STACK_FILE_ONLY = {"node-in-inventory", "hybrid-one-card", "hybrid-on-volta-vllm"}


def _counting(monkeypatch) -> Counter:
    """Every rule judged from now on, counted by id (Rule.__call__, which every judge goes through)."""
    calls: Counter = Counter()
    judge = Rule.__call__

    def counted(rule: Rule, *args, **kwargs):
        calls[rule.id] += 1
        return judge(rule, *args, **kwargs)

    monkeypatch.setattr(Rule, "__call__", counted)
    return calls


def test_loading_and_rendering_judge_no_pack_rule(monkeypatch):
    """Each rule is judged once: loading prod's stack file and building its components' args
    (the program's run, here without the engine) judge none of the rules a pack policy judges;
    the loader judges the stack file's own (node listed, model listed, the image pinned, ...)."""
    calls = _counting(monkeypatch)
    render_manifests(load_stack_config(PROD))
    engine_card_capacity = {rid for rid, rule in RULES.items()
                            if rule.policy in ENGINE_CARD_CAPACITY_POLICIES} - STACK_FILE_ONLY
    assert engine_card_capacity >= {"vllm-context-window", "half-dtype", "tensor-parallel-divisibility",
                                    "startup-probe-covers-cold-start", "kv-cache-fits-max-model-len"}
    assert set(calls) & engine_card_capacity == set(), sorted(set(calls) & engine_card_capacity)
    # What the loader still judges: references, the served name's type, and the rules that name a
    # policy which does not judge them (the two hybrid rules: only the stack file refuses them).
    assert calls["vllm-digest-pinned"] == 1 and calls["model-in-models"] == 3 and calls["hybrid-one-card"] == 2


def test_a_stack_file_the_pack_refuses_shows_the_finding_in_the_preview_exit_1(tmp_path):
    """A rule the loader used to refuse as bad input (exit 2) is now a mandatory finding (exit 1),
    shown by the offline preview before anything is applied."""
    data = yaml.safe_load(PROD_STACK_FILE.read_text())
    data["config"][W]["candle-vllm"]["dtype"] = "bf16"
    stack = tmp_path / "Pulumi.test.yaml"
    stack.write_text(yaml.safe_dump(data, sort_keys=False))
    out, err = io.StringIO(), io.StringIO()
    code = preview.main(["--stack-file", str(stack), "--out", str(tmp_path / "out")], stdout=out, stderr=err)
    assert code == 1, out.getvalue() + err.getvalue()
    assert "--dtype bf16 needs compute capability 8.0" in out.getvalue() + err.getvalue()
    assert "Fix: set dtype: f16 under llm-serving:workloads.candle-vllm" in out.getvalue() + err.getvalue()
