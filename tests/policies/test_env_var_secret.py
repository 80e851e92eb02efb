"""env-var-secret on the forms teams write: literal credentials found, Secret references and
non-credentials left alone (kube-linter's env-var-secret, widened to tokens, keys and passwords)."""

from __future__ import annotations

import pytest

from core.rulebook import pod_security as ps
from policylib.pack import policies
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file

POLICY = next(p for p in policies() if p.name == "env-var-secret")


@pytest.mark.parametrize("name, value", [
    ("HF_TOKEN", "hf_abc123"), ("HUGGING_FACE_HUB_TOKEN", "hf_abc"), ("VLLM_API_KEY", "sk-123"),
    ("OPENAI_APIKEY", "sk-1"), ("POSTGRES_PASSWORD", "hunter2"), ("DB_PASSWD", "x1"), ("CLIENT_SECRET", "abc"),
    ("AWS_SECRET_ACCESS_KEY", "wJalr"), ("AWS_ACCESS_KEY_ID", "AKIA0"), ("TOKEN", "t0k"), ("hf_token", "hf_lower"),
    ("NGC_API_KEY", "nvapi-xyz"),
])
def test_a_literal_credential_is_a_breach(name, value):
    breach = ps.env_var_secret(name, value)
    assert breach is not None and f"env {name} holds a literal value ({len(value)} characters)" in breach.wrong
    assert value not in breach.wrong + breach.fix  # the finding never repeats the secret


@pytest.mark.parametrize("name, value", [
    ("HF_TOKEN", None),  # valueFrom
    ("HF_TOKEN", ""), ("HF_TOKEN", "   "),
    ("VLLM_API_KEY", "$(KEY_FROM_SECRET)"), ("AUTH_TOKEN", "Bearer $(TOKEN)"),
    ("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1"), ("TOKENIZERS_PARALLELISM", "false"), ("MAX_NUM_BATCHED_TOKENS", "8192"),
    ("OPENAI_API_KEY", "EMPTY"), ("DB_PASSWORD_FILE", "/run/secrets/db"), ("HF_HOME", "/mnt/models"),
    ("VLLM_USE_V1", "1"), ("HF_TOKEN", 5),
])
def test_no_breach_without_a_literal_credential(name, value):
    assert ps.env_var_secret(name, value) is None


def test_an_init_containers_literal_is_found_and_a_secret_key_ref_is_not():
    """An init container's literal credential is found; the server's valueFrom.secretKeyRef is not."""
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    found = run_policy(POLICY, manifests("""
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s, namespace: llm-serving}
spec:
  selector: {matchLabels: {app: s}}
  template:
    metadata: {labels: {app: s}}
    spec:
      initContainers:
      - name: fetch
        image: busybox:1.36
        env: [{name: HF_TOKEN, value: hf_literal_in_init}]
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        env:
        - name: HF_TOKEN
          valueFrom: {secretKeyRef: {name: hf, key: token}}
"""))
    assert [v.message.split(":")[0] for v in found] == ["StatefulSet s, init container fetch"]
