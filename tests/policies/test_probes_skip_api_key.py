"""probes-skip-api-key on the forms real teams write: the key from a Secret (production-stack's
chart renders VLLM_API_KEY from ``valueFrom.secretKeyRef``), ``--api-key $(VAR)``, envFrom."""

from __future__ import annotations

from policylib.pack import policy
from tests.paths import ROOT
from tests.policy_harness import FIXTURES, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file

RENDERED = (ROOT / "tests" / "heldout" / "production-stack-engine-rendered.yaml").read_text()
READINESS_ON_HEALTH = "periodSeconds: 5\n            failureThreshold: 3\n            httpGet:\n              path:  /health"


def _run(text: str) -> list[str]:
    use_stack_config(load_stack_file(FIXTURES / "Pulumi.public.yaml"))
    return [v.message for v in run_policy(policy("probes-skip-api-key"), manifests(text))]


def test_the_rendered_chart_probing_health_passes():
    assert _run(RENDERED) == []


def test_a_secret_held_key_with_a_readiness_probe_on_v1_models_fires():
    """Before, the key counted only as an inline value: the Secret-held key (the chart's form) passed."""
    assert READINESS_ON_HEALTH in RENDERED
    text = RENDERED.replace(READINESS_ON_HEALTH, READINESS_ON_HEALTH.replace("/health", "/v1/models"))
    (message,) = _run(text)
    assert message.startswith(
        "Deployment vllm-llama3-deployment-vllm, container vllm: the server requires an API key (env VLLM_API_KEY "
        "(from Secret vllm-secrets, key vllmApiKey)) and its readinessProbe gets /v1/models, which answers 401")


def _deployment(env: str, args: str, probe_path: str = "/v1/models") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: d, namespace: serving}}
spec:
  template:
    metadata: {{labels: {{app: d}}}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: {args}
        env: {env}
        readinessProbe: {{httpGet: {{path: {probe_path}, port: 8000}}}}
"""


def test_an_api_key_flag_from_a_secret_variable_keeps_the_argv_known_and_fires():
    env = "[{name: KEY, valueFrom: {secretKeyRef: {name: s, key: k}}}]"
    (message,) = _run(_deployment(env, "[--model, m, --api-key, $(KEY)]"))
    assert "requires an API key (--api-key)" in message
    (message,) = _run(_deployment(env, "['--model=m', '--api-key=$(KEY)']"))
    assert "requires an API key (--api-key)" in message


def test_an_empty_inline_key_or_a_key_only_envfrom_may_set_is_not_judged():
    assert _run(_deployment('[{name: VLLM_API_KEY, value: ""}]', "[--model, m]")) == []
    text = _deployment("[]", "[--model, m]").replace("env: []", "envFrom: [{secretRef: {name: maybe-key}}]")
    assert _run(text) == []
    assert _run(_deployment("[{name: VLLM_API_KEY, value: k}]", "[--model, m]", "/health")) == []


def test_a_shell_wrapped_server_with_the_key_from_a_secret_fires():
    """Cloud tutorials wrap vLLM in sh -c and pass the Secret-held key on the command line."""
    env = "[{name: VLLM_API_KEY, valueFrom: {secretKeyRef: {name: s, key: k}}}]"
    text = _deployment(env, """['vllm serve m --port 8000 --api-key "$VLLM_API_KEY"']""").replace(
        "args:", "command: [/bin/sh, -c]\n        args:")
    (message,) = _run(text)
    assert "requires an API key (--api-key)" in message
