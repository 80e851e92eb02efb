"""How long ``pulumi up`` waits for each object: the rendered await annotations.

The kubernetes provider (f47bc2d6f199, ``provider/pkg/await``) waits 10 minutes by default for a
Deployment to become available and for a Service's Endpoints to settle with no not-ready
address. ``reasoning`` declares a 600 s cold start: with the default, a start that is on time
plus its rollout fails the update. Each workload, and the Service in front of it, carries
``pulumi.com/timeoutSeconds`` from the workload's declared cold start
(:func:`core.rulebook.time_budgets.await_timeout_seconds`); a Service in front of a parked workload carries
``pulumi.com/skipAwait: "true"`` instead. The real provider's behaviour with these values is
``tests/real/test_real_awaits.py``.
"""

from __future__ import annotations

import copy

import pytest

from core.base import facts
from core.rulebook import time_budgets
from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tools import analyze
from tools.offline.manifests import load_stack_file

PROD_FILE = load_stack_file(PROD_STACK_FILE)


def _by_kind(config_map: dict) -> dict[tuple[str, str], dict]:
    return {(m["kind"], m["metadata"]["name"]): m for m in render_manifests(load_stack_config(config_map))}


def _annotations(m: dict) -> dict[str, str]:
    return m["metadata"].get("annotations") or {}


def test_await_timeout_is_the_cold_start_with_its_margin():
    # ceil(1.5 x cold start) + 60 s of rollout (termination under Recreate, scheduling, pull check).
    assert time_budgets.await_timeout_seconds(600) == 960  # reasoning: over the provider's 600 s default
    assert time_budgets.await_timeout_seconds(300) == 510  # candle-vllm
    assert time_budgets.await_timeout_seconds(180) == 330  # clef-candle
    assert time_budgets.await_timeout_seconds(240) == 420  # clef-serve
    assert time_budgets.await_timeout_seconds(1) == 62  # ceil(1.5) + 60


@pytest.mark.parametrize("cold_start", [1, 7, 59, 60, 61, 599, 600, 601, 1799, 3600])
def test_await_never_fails_an_on_time_start(cold_start):
    # Strictly above the cold start, with at least the rollout margin to spare.
    assert time_budgets.await_timeout_seconds(cold_start) >= cold_start + time_budgets.AWAIT_ROLLOUT_SECONDS


def test_prod_workloads_await_their_cold_start_with_the_margin():
    objects = _by_kind(PROD_FILE)
    expected = {("Deployment", "candle-vllm"): "510", ("Deployment", "clef-candle"): "330",
                ("InferenceService", "reasoning"): "960", ("Deployment", "clef-serve"): "420"}
    for key, timeout in expected.items():
        ann = _annotations(objects[key])
        assert ann[facts.AWAIT_TIMEOUT_ANNOTATION] == timeout, key
        # From the object's own declared cold start, the same value the pack reads.
        assert int(timeout) == time_budgets.await_timeout_seconds(int(ann[facts.COLD_START_ANNOTATION]))
        assert facts.SKIP_AWAIT_ANNOTATION not in ann


def test_prod_services_await_as_long_as_the_workload_they_select():
    objects = _by_kind(PROD_FILE)
    # coder-predictor -> candle-vllm, clef-serve -> clef-candle, reasoning-long-predictor -> reasoning.
    expected = {"coder-predictor": "510", "clef-serve": "330", "reasoning-long-predictor": "960"}
    for name, timeout in expected.items():
        ann = _annotations(objects[("Service", name)])
        assert ann[facts.AWAIT_TIMEOUT_ANNOTATION] == timeout, name
        assert facts.SKIP_AWAIT_ANNOTATION not in ann, name


def _parked_coder() -> dict:
    """Prod with candle-vllm parked, and its Service coder-predictor parked too (the loader
    requires a Service selecting a parked workload to be parked)."""
    cfg = copy.deepcopy(PROD_FILE)
    cfg["llm-serving:workloads"]["candle-vllm"]["parked"] = {"reason": "cards lent to a benchmark"}
    cfg["llm-serving:services"]["coder-predictor"]["parked"] = {"reason": "candle-vllm is parked"}
    return cfg


def test_a_service_in_front_of_a_parked_workload_skips_its_await():
    objects = _by_kind(_parked_coder())
    ann = _annotations(objects[("Service", "coder-predictor")])
    assert ann[facts.SKIP_AWAIT_ANNOTATION] == "true"
    assert facts.AWAIT_TIMEOUT_ANNOTATION not in ann
    # The other Services keep waiting for their running workloads.
    assert _annotations(objects[("Service", "clef-serve")])[facts.AWAIT_TIMEOUT_ANNOTATION] == "330"
    # The parked Deployment itself (0 replicas: available at once) keeps its bound.
    assert _annotations(objects[("Deployment", "candle-vllm")])[facts.AWAIT_TIMEOUT_ANNOTATION] == "510"


def test_the_program_registers_the_same_await_annotations():
    """Through the Pulumi program under the mock runtime: what the provider receives."""
    registered = {}
    for r in analyze.program_resources(_parked_coder(), "prod"):
        if r.type.startswith("kubernetes:") and "metadata" in r.props:
            registered[(r.props["kind"], r.props["metadata"]["name"])] = _annotations(r.props)
    rendered = _by_kind(_parked_coder())
    for key, m in rendered.items():
        want = {k: v for k, v in _annotations(m).items() if k.startswith("pulumi.com/")}
        got = {k: v for k, v in registered[key].items() if k.startswith("pulumi.com/")}
        assert got == want, key
    assert registered[("Service", "coder-predictor")][facts.SKIP_AWAIT_ANNOTATION] == "true"


def test_a_deployment_whose_cold_start_reaches_the_default_progress_deadline_gets_one_above_it():
    """Past spec.progressDeadlineSeconds (default 600) the Deployment reports ProgressDeadlineExceeded and the
    provider's await fails the deploy: a workload declaring 600 s or more renders the await's deadline, one
    below it renders none (prod's Deployments, 180-300 s, are rendered as before)."""
    config = copy.deepcopy(PROD_FILE)
    config["llm-serving:workloads"]["candle-vllm"]["cold_start_seconds"] = 600
    spec = _by_kind(config)[("Deployment", "candle-vllm")]["spec"]
    assert spec["progressDeadlineSeconds"] == time_budgets.await_timeout_seconds(600) == 960
    assert all("progressDeadlineSeconds" not in m["spec"] for (kind, _), m in _by_kind(PROD_FILE).items() if kind == "Deployment")
    assert time_budgets.progress_deadline_seconds(599) is None and time_budgets.progress_deadline_seconds(600) == 960
