"""The spec's "history as test cases", as plain manifests, judged by the stack policies.

Each state is built from the user's manifests: the five reference manifests
(``../shared/reference/k8s/apps/llm-serving/``, read in place) plus the two reconstructed ones
(``tests/manifests/history/reasoning.yaml``: the reasoning InferenceService, 1 card, served
names reasoning + reasoning-long; ``clef-serve.yaml``: the reference PyTorch Deployment, 1
card, and its Service). The Services are the ones each seed's kustomization lists.

| state (spec)                                   | cards on worker-1 | verdict             |
| after 002: coder ISVC 2 + reasoning 1 + clef-serve 1 | 4 of 4      | fits                |
| after 001: + candle-vllm 2 (unpinned)          | 6 of 4            | over, each share    |
| after 003: + clef-candle 1, clef-serve still 1 | 7 of 4            | over                |
| after 000: coder ISVC gone, clef-serve parked  | 4 of 4            | fits                |

The reference candle-vllm and clef-candle Deployments have no nodeSelector: with one node
they can only land on worker-1, and the message names them after ``(unpinned: ...)``.
The program-rendered version of these states (same numbers) is another engineer's test.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from core.base import facts
from policylib.pack import policy
from tests.paths import REFERENCE, ROOT
from tests.policies.test_gpu_card_allocation import CARD_FIX
from tests.policy_harness import DEFAULT_STACK_FILE, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file, resources_from_documents

HISTORY = ROOT / "tests" / "manifests" / "history"

STACK_POLICIES = [
    policy("gpu-card-allocation"),
    policy("node-memory-allocation"),
    policy("service-selector-uniqueness"),
    policy("service-target-port"),
    policy("network-ingress-for-clients"),
    policy("served-model-name-unique"),
]


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _ref(name: str) -> dict:
    (doc,) = _docs(REFERENCE / name)
    return doc


def _clef_serve(replicas: int) -> dict:
    doc = copy.deepcopy(_docs(HISTORY / "clef-serve.yaml")[0])
    doc["spec"]["replicas"] = replicas
    if replicas == 0:
        doc["metadata"]["annotations"][facts.PARKED_ANNOTATION] = (
            "clef-candle serves clef-flash behind the clef-serve Service (seed 000)"
        )
    return doc


def _clef_serve_service(selects: str) -> dict:
    doc = copy.deepcopy(_docs(HISTORY / "clef-serve.yaml")[1])
    doc["spec"]["selector"] = {"app": selects}
    return doc


def _reasoning() -> dict:
    (doc,) = _docs(HISTORY / "reasoning.yaml")
    return doc


def state(name: str, clef_serve_replicas: int | None = None, coder_managed: bool = False) -> list:
    """The manifests of one history state; the keyword arguments undo one fix of seed 000."""
    after = {
        "002": ["coder", "reasoning", "clef-serve", "svc-clef-serve", "svc-coder", "svc-reasoning-long"],
        "001": ["coder", "reasoning", "clef-serve", "candle-vllm", "svc-clef-serve", "svc-coder", "svc-reasoning-long"],
        "003": ["coder", "reasoning", "clef-serve", "candle-vllm", "clef-candle", "svc-clef-candle", "svc-coder",
                "svc-reasoning-long"],
        "000": ["reasoning", "clef-serve-parked", "candle-vllm", "clef-candle", "svc-clef-candle", "svc-coder",
                "svc-reasoning-long"],
    }[name]
    if coder_managed:
        after = ["coder"] + after
    build = {
        "coder": lambda: _ref("coder.yaml"),
        "reasoning": _reasoning,
        "clef-serve": lambda: _clef_serve(1 if clef_serve_replicas is None else clef_serve_replicas),
        "clef-serve-parked": lambda: _clef_serve(0 if clef_serve_replicas is None else clef_serve_replicas),
        "candle-vllm": lambda: _ref("coder-14b-fp16.yaml"),
        "clef-candle": lambda: _ref("clef-candle.yaml"),
        "svc-clef-serve": lambda: _clef_serve_service("clef-serve"),
        "svc-clef-candle": lambda: _clef_serve_service("clef-candle"),
        "svc-coder": lambda: _ref("coder-service.yaml"),
        "svc-reasoning-long": lambda: _ref("reasoning-long-service.yaml"),
    }
    return resources_from_documents([build[k]() for k in after], stack=f"after-{name}")


def _messages(policy, resources) -> list[str]:
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(policy, resources)]


# --- cards ----------------------------------------------------------------------------------


def test_after_002_fits_four_of_four():
    assert _messages(policy("gpu-card-allocation"), state("002")) == []


def test_after_001_is_six_of_four_with_each_share():
    assert _messages(policy("gpu-card-allocation"), state("001")) == [
        "worker-1: 6 of 4 cards requested: candle-vllm 2, coder 2, clef-serve 1, reasoning 1 (unpinned: candle-vllm); "
        "the pods beyond 4 cards stay Pending; unpinned candle-vllm fits on no node (counted on the node with the "
        "most free cards)" + CARD_FIX
    ]


def test_after_003_is_seven_of_four():
    assert _messages(policy("gpu-card-allocation"), state("003")) == [
        "worker-1: 7 of 4 cards requested: candle-vllm 2, coder 2, clef-candle 1, clef-serve 1, reasoning 1 "
        "(unpinned: candle-vllm, clef-candle); the pods beyond 4 cards stay Pending; unpinned candle-vllm, "
        "clef-candle fit on no node (counted on the node with the most free cards)" + CARD_FIX
    ]


def test_after_000_fits_four_of_four():
    assert _messages(policy("gpu-card-allocation"), state("000")) == []


@pytest.mark.parametrize(
    "undo, used",
    [({"clef_serve_replicas": 1}, 5), ({"coder_managed": True}, 6)],
    ids=["clef-serve-not-parked", "coder-still-managed"],
)
def test_each_fix_of_seed_000_is_needed(undo, used):
    """Seed 000's two changes (park clef-serve, stop managing coder): undo either and it no longer fits."""
    (message,) = _messages(policy("gpu-card-allocation"), state("000", **undo))
    assert message.startswith(f"worker-1: {used} of 4 cards requested: candle-vllm 2, ")


# --- served model names -----------------------------------------------------------------------


def test_after_002_reasoning_is_served_by_coder_and_reasoning():
    assert _messages(policy("served-model-name-unique"), state("002")) == [
        "served model name reasoning: answered by 2 running servers: coder (InferenceService), reasoning "
        "(InferenceService); a client sending model=reasoning gets a different model depending on the host it "
        "calls. Fix: give each server its own --served-model-name, or park all but one. Source: seed 002 (two "
        "servers answering one served model name)."
    ]


def test_after_000_each_served_name_has_one_server():
    assert _messages(policy("served-model-name-unique"), state("000")) == []


# --- memory (figures of the reconstructed manifests: reasoning 12Gi, clef-serve 16Gi) --------


@pytest.mark.parametrize("name", ["002", "001", "000"])
def test_memory_fits_where_the_reconstruction_says_so(name):
    assert _messages(policy("node-memory-allocation"), state(name)) == []


def test_after_003_memory_is_over_committed_too():
    (message,) = _messages(policy("node-memory-allocation"), state("003"))
    assert message.startswith(
        "worker-1: 69,632 of 63,495 MiB of memory requested: clef-candle 16,384, clef-serve 16,384, "
        "candle-vllm 12,288, coder 12,288, reasoning 12,288 (unpinned: candle-vllm, clef-candle);"
    )


# --- Services ---------------------------------------------------------------------------------


def test_after_002_coder_predictor_selects_nothing_yet():
    """coder-service.yaml arrives with seed 002 and selects app: candle-vllm, which seed 001 adds."""
    assert _messages(policy("service-selector-uniqueness"), state("002")) == [
        "Service coder-predictor: selects no workload (selector app=candle-vllm): it has no running endpoints and "
        "its clients get connection errors. Fix: select a running workload, or declare the Service parked with "
        "annotation llm-serving.riotpiao.com/parked: <reason>. Source: seed 002 (a Service that could select two models)."
    ]
    assert _messages(policy("service-selector-uniqueness"), state("001")) == []


def test_after_000_no_stack_policy_finds_anything():
    resources = state("000")
    for stack_policy in STACK_POLICIES:
        assert _messages(stack_policy, resources) == [], stack_policy.name


# --- KServe's own names -----------------------------------------------------------------------

@pytest.mark.parametrize("name, flagged", [("002", True), ("001", True), ("003", True), ("000", False)])
def test_the_stable_coder_predictor_beside_the_managed_coder_isvc_is_flagged(name, flagged):
    """coder-predictor is also the Service KServe creates for the coder InferenceService: while
    coder.yaml was managed (002, 001, 003) both owned it; seed 000 unmanaged the InferenceService."""
    got = _messages(policy("kserve-owned-names"), state(name))
    assert bool(got) is flagged
    if flagged:
        assert got == ["Service coder-predictor: is named like the Service KServe creates for InferenceService coder "
                       "(coder-predictor), so KServe and this stack overwrite each other's object. Fix: rename it (as "
                       "reasoning-long-predictor sits beside KServe's reasoning-predictor), or stop managing "
                       "InferenceService coder. Source: KServe RawDeployment names its predictor Service and Deployment "
                       "<isvc>-predictor; seed 001 (coder-service.yaml beside the still-managed coder InferenceService)."]
