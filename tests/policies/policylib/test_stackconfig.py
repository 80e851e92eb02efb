"""policylib.stackconfig: a key the runtime config lacks is read from ``PULUMI_CONFIG`` as pulumi
reads it, and that variable is parsed once while it stays the same (pulumi's ``get_config``
parses all of it on every call; the pack asks for the workloads key on every policy call)."""

from __future__ import annotations

import json

import pytest
from pulumi.runtime import config as runtime_config

from policylib import stackconfig


@pytest.fixture
def no_runtime_config(monkeypatch):
    """An empty runtime config (the servicer fills it from PULUMI_CONFIG); parses counted."""
    token = runtime_config.CONFIG.set({})
    parses: list[int] = []
    real = runtime_config.get_config_env

    def counted():
        parses.append(1)
        return real()

    monkeypatch.setattr(runtime_config, "get_config_env", counted)
    monkeypatch.delenv("PULUMI_CONFIG_LLM_SERVING_WORKLOADS", raising=False)
    stackconfig._absent.clear()
    yield parses
    runtime_config.CONFIG.reset(token)
    stackconfig._absent.clear()


def test_an_absent_key_is_read_from_pulumi_config_once_while_it_is_unchanged(monkeypatch, no_runtime_config):
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"llm-serving:models": "{}"}))
    assert [stackconfig._raw("workloads") for _ in range(5)] == [None] * 5
    assert len(no_runtime_config) == 1
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"llm-serving:workloads": '{"a": {}}'}))
    assert stackconfig._raw("workloads") == '{"a": {}}'
    assert stackconfig._raw("workloads") == '{"a": {}}'
    assert len(no_runtime_config) == 2


def test_the_specific_variable_and_the_runtime_config_win_as_in_pulumi(monkeypatch, no_runtime_config):
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"llm-serving:workloads": '{"a": {}}'}))
    monkeypatch.setenv("PULUMI_CONFIG_LLM_SERVING_WORKLOADS", '{"b": {}}')
    assert stackconfig._raw("workloads") == '{"b": {}}' == runtime_config.get_config("llm-serving:workloads")
    runtime_config.set_config("llm-serving:workloads", '{"c": {}}')
    assert stackconfig._raw("workloads") == '{"c": {}}'
