"""startup-probe-covers-cold-start: the startup probe outlasts the declared cold start (seed 002, coder.yaml)."""

from __future__ import annotations

import re

import pytest

from core.base import facts
from core.judging import registry
from core.judging.problems import FINDING_FORM
from core.rulebook import servers as rulebook_servers
from policylib import resource_helpers as rh
from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


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


def _run(text: str, config=None):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(policy("startup-probe-covers-cold-start"), manifests(text), config)]


def test_every_message_is_in_the_one_finding_form():
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}}"
    for text in (_server("600", probe), _server(None, probe), _server(None, ""), _server("ten", probe)):
        (message,) = _run(text)
        assert re.match(FINDING_FORM, message), message


def test_budget_must_exceed_the_cold_start_equal_does_not_cover_it():
    """Spec: the budget "must exceed" the cold start (core/rulebook/, as the config check)."""
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10, failureThreshold: 24}"
    assert _run(_server("239", probe)) == []
    (message,) = _run(_server("240", probe))
    assert message.startswith("Deployment s, container vllm: the startup probe allows 10 s x 24 = 240 s, which does "
                              "not exceed the declared cold start of 240 s")
    assert "Fix: raise startupProbe.failureThreshold to at least 25 at a 10 s period." in message
    (message,) = _run(_server("241", probe))
    assert "raise startupProbe.failureThreshold to at least 25 at a 10 s period" in message


def test_only_the_model_server_container_is_judged():
    """The sidecar has no probe and is not reported; the server container is."""
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 15, failureThreshold: 120}"
    assert _run(_server("600", probe)) == []


def test_an_adequate_probe_without_a_declared_cold_start_passes():
    """coder.yaml's 120 x 15 s probe with no annotation is correct YAML, not a violation."""
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 15, failureThreshold: 120}"
    assert _run(_server(None, probe)) == []


def test_an_undeclared_cold_start_is_judged_against_the_assumed_600_s():
    """601 s passes, 600 s does not: the assumed cold start is judged exactly like a declared one."""
    assert rulebook_servers.ASSUMED_COLD_START_SECONDS == 600
    ok = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 1, failureThreshold: 601}"
    assert _run(_server(None, ok)) == []
    short = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 1, failureThreshold: 600}"
    (message,) = _run(_server(None, short))
    assert message.startswith("Deployment s, container vllm: the startup probe allows 1 s x 600 = 600 s, which does "
                              "not exceed the cold start of 600 s assumed for a model server that declares none")
    assert f"or declare the measured cold start as annotation {facts.COLD_START_ANNOTATION}" in message


def test_the_assumed_cold_start_is_a_parameter():
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 15, failureThreshold: 120}"
    (message,) = _run(_server(None, probe), {"assumedColdStartSeconds": 1800})
    assert "allows 15 s x 120 = 1800 s, which does not exceed the cold start of 1800 s assumed" in message
    assert _run(_server(None, probe), {"assumedColdStartSeconds": 1799}) == []


def test_a_declared_cold_start_wins_over_the_assumed_one():
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}, periodSeconds: 10, failureThreshold: 6}"
    assert _run(_server("59", probe)) == []
    (message,) = _run(_server(None, probe))
    assert "cold start of 600 s assumed" in message


def test_no_startup_probe_still_fails_without_a_declaration():
    (message,) = _run(_server(None, ""))
    assert message.startswith("Deployment s, container vllm: it has no startupProbe. Fix: add a startupProbe")
    assert "exceeds the cold start of 600 s assumed for a model server that declares none" in message


@pytest.mark.parametrize(
    "liveness, says",
    [
        ("{httpGet: {path: /health, port: 8080}}",
         "its livenessProbe runs from the container's start (no initialDelaySeconds) and restarts the server if it "
         "is not answering 30 s in (3 x 10 s)"),
        # The message once said "runs from the first second" even with initialDelaySeconds: 60.
        ("{httpGet: {path: /health, port: 8080}, initialDelaySeconds: 60}",
         "its livenessProbe runs from initialDelaySeconds 60 and restarts the server if it is not answering 90 s in "
         "(3 x 10 s + 60 s initial delay)"),
        ("{httpGet: {path: /health, port: 8080}, initialDelaySeconds: 120.0, periodSeconds: 30.0, failureThreshold: 4.0}",
         "runs from initialDelaySeconds 120 and restarts the server if it is not answering 240 s in "
         "(4 x 30 s + 120 s initial delay)"),
    ],
)
def test_the_liveness_text_states_the_probes_own_numbers(liveness, says):
    (message,) = _run(_server("600", f"livenessProbe: {liveness}"))
    assert says in message
    assert "first second" not in message


@pytest.mark.parametrize("value", ["0", "-5", "4.5", "ten minutes"])
def test_cold_start_must_be_whole_positive_seconds(value):
    probe = "startupProbe: {httpGet: {path: /health, port: 8080}}"
    messages = _run(_server(value, probe))
    assert messages == [f"Deployment s: annotation {facts.COLD_START_ANNOTATION} is {value!r}, not whole seconds "
                        f'above 0. Fix: declare annotation {facts.COLD_START_ANNOTATION} as whole seconds above 0, '
                        f'e.g. "600". Source: {registry.RULES["cold-start-declared"].source}.']


def test_a_non_server_workload_without_a_declaration_is_not_judged():
    text = _server(None, "").replace("vllm/vllm-openai:v0.11.0", "nginx@sha256:" + "a" * 64)
    assert _run(text) == []
