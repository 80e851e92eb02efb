"""The runner calls the pack in the Pulumi CLI's order.

The stand-in pack (tests/manifests/standin-pack/) logs every gRPC call it receives to the file
named by ``STANDIN_CALL_LOG``; these tests run the real pack process through
:func:`tools.analyze.run_pack` and read that log: Handshake, ConfigureStack, GetAnalyzerInfo,
GetPluginInfo, Configure, Analyze per resource, AnalyzeStack, and Remediate per resource
before Analyze only when a policy is at level ``remediate``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.paths import ROOT
from tools.analyze import run_pack
from tools.offline.manifests import load_stack_file, resources_from_documents

STANDIN = ROOT / "tests" / "manifests" / "standin-pack"
CONFIG = load_stack_file(ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml")


def deployment(name: str, image: str = "x:1.0") -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "llm-serving"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}},
    }


def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy_pack_config=None, stack: str = "call-order"):
    """(the resources, the calls the pack received, in order) for a run over three Deployments."""
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("STANDIN_CALL_LOG", str(log))
    res = resources_from_documents([deployment("a", "x:latest"), deployment("b"), deployment("c")], stack=stack)
    run_pack(res, CONFIG, stack=stack, pack_dir=STANDIN, policy_pack_config=policy_pack_config)
    return res, [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_the_pack_is_called_in_the_cli_order(tmp_path, monkeypatch):
    res, log = calls(tmp_path, monkeypatch)
    methods = [c["method"] for c in log]
    assert methods == [
        "Handshake", "ConfigureStack", "GetAnalyzerInfo", "GetPluginInfo", "Configure",
        "Analyze", "Analyze", "Analyze", "AnalyzeStack",
    ]
    # Analyze once per resource (pipelined, so in any order among themselves).
    assert sorted(c["urn"] for c in log if c["method"] == "Analyze") == sorted(r.urn for r in res)


def test_configure_stack_carries_the_stack_name_and_the_config(tmp_path, monkeypatch):
    _, log = calls(tmp_path, monkeypatch, stack="call-order")
    (configure_stack,) = [c for c in log if c["method"] == "ConfigureStack"]
    assert configure_stack["stack"] == "call-order"
    assert configure_stack["project"] == "llm-serving"
    assert configure_stack["dry_run"] is True
    # The CLI sends the decrypted config as key -> string: objects JSON-encoded.
    expected = {k: v if isinstance(v, str) else json.dumps(v) for k, v in CONFIG.items()}
    assert configure_stack["config"] == expected
    assert json.loads(configure_stack["config"]["llm-serving:cluster"]) == CONFIG["llm-serving:cluster"]


def test_remediate_comes_per_resource_between_configure_and_analyze_only_at_remediate_level(tmp_path, monkeypatch):
    res, log = calls(tmp_path, monkeypatch, {"no-latest-tag": "remediate"})
    methods = [c["method"] for c in log]
    assert methods == [
        "Handshake", "ConfigureStack", "GetAnalyzerInfo", "GetPluginInfo", "Configure",
        "Remediate", "Remediate", "Remediate", "Analyze", "Analyze", "Analyze", "AnalyzeStack",
    ]
    assert sorted(c["urn"] for c in log if c["method"] == "Remediate") == sorted(r.urn for r in res)
