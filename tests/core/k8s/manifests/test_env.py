"""A container's environment as the kubelet builds it (core/k8s/manifests/env.py), and the argv read
from it: ``valueFrom`` and ``envFrom`` count as set, ``$(VAR)`` expands as the kubelet expands it."""

from __future__ import annotations

import pytest

from core.k8s.manifests import environment
from core.k8s.manifests.argv import effective_argv, k8s_expand
from core.k8s.manifests.pods import container


def test_every_value_from_kind_is_set_with_its_value_unknown_and_its_source_named():
    env = environment([
        {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-secrets", "key": "vllmApiKey"}}},
        {"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "model"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
        {"name": "TP", "value": "8"},
    ])
    assert [env.is_set(n) for n in ("KEY", "MODEL", "POD_IP", "MEM", "TP", "NOPE")] == [True] * 5 + [False]
    assert [env.value(n) for n in ("KEY", "MODEL", "TP")] == [None, None, "8"]
    assert env.describe("KEY") == "env KEY (from Secret vllm-secrets, key vllmApiKey)"
    assert env.vars["MODEL"].ref == "ConfigMap cfg, key model"
    assert env.vars["POD_IP"].ref == "the pod's status.podIP" and env.vars["MEM"].source == "resourceFieldRef"
    assert env.known() == {"TP": "8"}


def test_env_from_makes_other_names_maybe_set():
    env = environment([{"name": "A", "value": "1"}], [{"secretRef": {"name": "hf"}}, {"configMapRef": {"name": "c"},
                                                                                     "prefix": "P_"}])
    assert (env.is_set("A"), env.is_set("B")) == (True, None)
    assert env.open_sources == ("Secret hf", "ConfigMap c (prefix P_)")


def test_values_expand_in_order_as_the_kubelet_does():
    env = environment([
        {"name": "BASE", "value": "/models"},
        {"name": "PATH_A", "value": "$(BASE)/llama"},   # defined before: expanded
        {"name": "PATH_B", "value": "$(LATER)/x"},      # defined after: kept as written
        {"name": "LATER", "value": "y"},
        {"name": "ESC", "value": "$$(BASE)"},           # $$ escapes
        {"name": "SECRET_PATH", "value": "$(KEY)/k"},
        {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "FROM_KEY", "value": "$(KEY)"},
    ])
    assert env.value("PATH_A") == "/models/llama"
    assert env.value("PATH_B") == "$(LATER)/x"
    assert env.value("ESC") == "$(BASE)"
    assert env.value("SECRET_PATH") == "$(KEY)/k"  # KEY was not yet defined
    assert env.value("FROM_KEY") is None and env.vars["FROM_KEY"].source == "expansion"


@pytest.mark.parametrize(("text", "expected"), [  # noqa: PT006
    ("--tensor-parallel-size=$(TP)", "--tensor-parallel-size=8"),
    ("$$(TP)", "$(TP)"), ("$$$(TP)", "$8"), ("$(NOPE)", "$(NOPE)"), ("$(TP", "$(TP"), ("a$b", "a$b"), ("$", "$"),
])
def test_k8s_expand_matches_the_kubelets_expansion(text, expected):
    assert k8s_expand(text, {"TP": "8"}) == expected


def test_an_argument_written_as_a_variable_is_judged_as_its_value():
    c = container({"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                   "args": ["--model=m", "--tensor-parallel-size=$(TP)"], "env": [{"name": "TP", "value": "8"}]})
    assert c.argv.argv == ("vllm", "serve", "--model=m", "--tensor-parallel-size=8")
    assert c.server is not None and c.server.tensor_parallel == 8


def test_a_secret_value_under_a_number_flag_leaves_the_argv_unknown_but_under_api_key_known():
    env = [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    unknown = effective_argv(["vllm", "serve"], ["--max-model-len=$(S)"], env)
    assert unknown.argv is None and "$(S) is set from a Secret" in str(unknown.unknown)
    known = effective_argv(["vllm", "serve"], ["m", "--api-key", "$(S)"], env)
    assert known.argv == ("vllm", "serve", "m", "--api-key", "$(S)")


def test_the_endpoint_carries_scheme_key_health_route_names_and_side_ports():
    c = container({"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                   "args": ["--model=m", "--served-model-name", "chat", "--ssl-certfile=/tls/crt",
                            "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'],
                   "env": [{"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                           {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": "5600"}]})
    ep = c.endpoint
    assert ep is not None
    assert (ep.port, ep.scheme, ep.api_key, ep.health_path, ep.served_model_names) == (
        8000, "HTTPS", "env VLLM_API_KEY (from Secret s, key k)", "/health", ("chat",))
    assert dict(ep.side_ports) == {5600: "VLLM_NIXL_SIDE_CHANNEL_PORT (NIXL side channel)"}
    assert ep.needs_key("/v1/models") and not ep.needs_key("/health")



def test_a_secret_held_api_key_in_a_shell_script_or_one_word_keeps_the_argv_known():
    env = [{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    script = effective_argv(["/bin/sh", "-c"], ['vllm serve m --port 8000 --api-key "$KEY"'], env)
    assert script.argv == ("vllm", "serve", "m", "--port", "8000", "--api-key", "$KEY")
    one_word = effective_argv(["sh", "-c", "vllm serve m --api-key=$(KEY)"], [], env)
    assert one_word.argv == ("vllm", "serve", "m", "--api-key=$KEY")  # the kubelet fills it; shown as the shell's
    assert effective_argv(["sh", "-c", "vllm serve m --max-model-len $KEY"], [], env).argv is None
