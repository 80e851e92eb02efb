"""startup-probe-covers-cold-start: the startup probe outlasts the declared cold start (seed 002, coder.yaml)."""

from __future__ import annotations

import pytest

import startup_probe_covers_cold_start as mod
from core import facts
from policylib import resource_helpers as rh
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.manifests import load_stack_file


@pytest.mark.parametrize(
    "probe, budget",
    [
        ({}, (30, "3 x 10 s")),  # Kubernetes defaults
        ({"periodSeconds": 15, "failureThreshold": 120}, (1800, "120 x 15 s")),  # coder.yaml
        ({"periodSeconds": 15.0, "failureThreshold": 120.0}, (1800, "120 x 15 s")),  # as gRPC delivers it
        ({"periodSeconds": 10, "failureThreshold": 20, "initialDelaySeconds": 60}, (260, "20 x 10 s + 60 s initial delay")),
    ],
)
def test_probe_budget(probe, budget):
    assert rh.probe_budget(probe) == budget


def _server(cold: str | None, probe: str) -> str:
    ann = f"annotations: {{{facts.COLD_START_ANNOTATION}: '{cold}'}}" if cold is not None else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: s
  namespace: llm-serving
  {ann}
spec:
  template:
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        {probe}
      - name: sidecar
        image: busybox
"""


def _run(text: str):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(mod.POLICY, manifests(text))]


def test_budget_must_exceed_the_cold_start_equal_does_not_cover_it():
    """Spec: the budget "must exceed" the cold start (core/rules.py, as the config check)."""
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10, failureThreshold: 24}"
    assert _run(_server("239", probe)) == []
    (message,) = _run(_server("240", probe))
    assert message.startswith("Deployment s: container vllm startupProbe allows 240 s (24 x 10 s), which does not "
                              "exceed the declared cold start of 240 s")
    assert "Fix: raise failureThreshold to at least 25 at periodSeconds 10." in message
    (message,) = _run(_server("241", probe))
    assert "Fix: raise failureThreshold to at least 25 at periodSeconds 10." in message


def test_only_the_model_server_container_is_judged():
    """The sidecar has no probe and is not reported; the server container is."""
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 15, failureThreshold: 120}"
    assert _run(_server("600", probe)) == []


def test_undeclared_cold_start_is_reported_once_even_with_a_probe():
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 15, failureThreshold: 120}"
    (message,) = _run(_server(None, probe))
    assert message.startswith("Deployment s: runs a model server but declares no cold start, so the startup "
                              "probe budget cannot be checked against it. Fix: declare it as annotation "
                              f"{facts.COLD_START_ANNOTATION}")


@pytest.mark.parametrize("value", ["0", "-5", "4.5", "ten minutes"])
def test_cold_start_must_be_whole_positive_seconds(value):
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}}"
    messages = _run(_server(value, probe))
    assert messages == [f"Deployment s: annotation {facts.COLD_START_ANNOTATION} is {value!r}, not whole seconds above 0. "
                        'Fix: declare the cold start as e.g. "600". Source: seed 002 and coder.yaml (a liveness probe '
                        "killed the server while it loaded the weights)."]


def test_a_non_server_workload_without_a_declaration_is_not_judged():
    text = _server(None, "").replace("vllm/vllm-openai:v0.11.0", "nginx@sha256:" + "a" * 64)
    assert _run(text) == []
