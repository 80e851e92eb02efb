"""The real policy pack on the user's hand-written YAML, as a plain-manifest directory.

The directory is the five reference manifests (tests/reference/, the user's files unchanged)
plus tests/manifests/clef-serve.yaml (the parked reference PyTorch Deployment, reconstructed
from seeds 000/004), judged against policies/fixtures/Pulumi.fixture.yaml (worker-1, 4 x
V100-32GB). It is the state of the spec's history "after 001/003" minus reasoning: the coder
InferenceService (2 cards) is still managed beside candle-vllm (2) and clef-candle (1).

The pack runs as its own process over gRPC (tools.analyze), exactly as the CLI would run it.
:func:`plain_manifest_report` is the entry point a program-vs-manifests comparison uses:
``analyze_program(...).verdicts() == plain_manifest_report(...).verdicts()`` for the same objects.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.paths import REFERENCE, ROOT
from tools.analyze import analyze_manifests, manifest_resources, run_pack
from tools.offline.manifests import load_stack_file
from tools.offline.report import Report

CLEF_SERVE = ROOT / "tests" / "manifests" / "clef-serve.yaml"
INVENTORY = ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"



def plain_manifest_dir(dest: Path) -> Path:
    """A directory with the five reference manifests and the hand-written clef-serve.yaml."""
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(REFERENCE.glob("*.yaml")):
        shutil.copy(f, dest / f.name)
    shutil.copy(CLEF_SERVE, dest / CLEF_SERVE.name)
    return dest


def plain_manifest_report(tmp: Path) -> Report:
    return analyze_manifests(plain_manifest_dir(tmp / "llm-serving"), INVENTORY)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Report:
    return plain_manifest_report(tmp_path_factory.mktemp("plain"))


def need(report: Report, *policies: str) -> None:
    """The policies a test relies on are in the pack (a renamed or deleted policy fails here)."""
    missing = sorted(set(policies) - {p.name for p in report.policies})
    assert not missing, f"policies missing from the pack: {', '.join(missing)}"


def test_the_directory_is_read_as_six_objects(tmp_path):
    resources, sources = manifest_resources(plain_manifest_dir(tmp_path / "d"), "fixture")
    assert sorted(r.name for r in resources) == [
        "llm-serving/candle-vllm", "llm-serving/clef-candle", "llm-serving/clef-serve",
        "llm-serving/coder", "llm-serving/coder-predictor", "llm-serving/reasoning-long-predictor"]
    assert Path(sources[next(r.urn for r in resources if r.name == "llm-serving/clef-serve")]).name == "clef-serve.yaml"


def test_coder_14b_fp16_as_written_is_flagged_for_its_moving_tag(report):
    need(report, "moving-tag-pull-always")
    hits = [f for f in report.findings if f.policy == "moving-tag-pull-always"]
    assert [(f.level, f.object) for f in hits] == [("mandatory", "Deployment llm-serving/candle-vllm")]
    assert ":sm70-gptq-slim" in hits[0].message
    assert hits[0].source.endswith("coder-14b-fp16.yaml")


def test_cards_over_allocated_and_the_parked_clef_serve_takes_none(report):
    """Coder 2 + candle-vllm 2 + clef-candle 1 = 5 of 4; clef-serve is at replicas 0.

    Over gRPC, ``replicas: 0`` arrives as the double 0.0 (google.protobuf.Struct, as from the
    CLI): a reader that parses it with int(str(value)) falls back to its default of 1 replica
    and counts the parked clef-serve (6 of 4)."""
    need(report, "gpu-card-allocation")
    cards = [f for f in report.findings if f.policy == "gpu-card-allocation"]
    assert len(cards) == 1 and cards[0].level == "mandatory"
    msg = cards[0].message
    assert msg.startswith("worker-1: 5 of 4 cards requested:"), msg
    for share in ("candle-vllm 2", "coder 2", "clef-candle 1"):
        assert share in msg
    assert "clef-serve" not in msg


def test_the_parked_clef_serve_with_probe_and_declarations_has_no_finding(report):
    assert [f for f in report.findings if f.object == "Deployment llm-serving/clef-serve"] == []


def test_the_run_fails_review(report):
    assert report.exit_code() == 1
    assert report.stack == "fixture" and report.resources == 6


def in_process_verdicts(resources, config) -> Counter:
    """(policy, URN, message) of every policy run in-process (tests.policy_harness): resource
    policies one resource at a time (the engine reports a resource's URN), stack policies once
    (the engine reports a violation naming no resource of the stack on the stack's root URN)."""
    from pulumi_policy import ResourceValidationPolicy

    from policylib.pack import policies
    from tests.policy_harness import run_policy, use_stack_config
    from tools.analyze import PROJECT, root_stack_urn

    use_stack_config(config)
    out: Counter = Counter()
    for policy in policies():
        if isinstance(policy, ResourceValidationPolicy):
            for r in resources:
                out.update((policy.name, r.urn, v.message) for v in run_policy(policy, [r]))
        else:
            urns = {r.urn for r in resources}
            root = root_stack_urn("fixture", PROJECT)
            out.update((policy.name, v.urn if v.urn in urns else root, v.message) for v in run_policy(policy, resources))
    return out


def test_grpc_verdicts_equal_the_in_process_harness(tmp_path):
    """The fixture tests run policies in-process (tests/policy_harness.py); the CLI and this
    runner run them over gRPC. Both must judge the same manifests the same way."""
    config = load_stack_file(INVENTORY)
    resources, _ = manifest_resources(plain_manifest_dir(tmp_path / "d"), "fixture")
    over_grpc = run_pack(resources, config, stack="fixture")
    assert Counter((f.policy, f.urn, f.message) for f in over_grpc.findings) == in_process_verdicts(resources, config)


def test_resource_order_does_not_change_the_report(tmp_path, report):
    config = load_stack_file(INVENTORY)
    resources, sources = manifest_resources(plain_manifest_dir(tmp_path / "d"), "fixture")
    for seed in (3, 11):
        random.Random(seed).shuffle(resources)
        again = run_pack(resources, config, stack="fixture", sources=sources)
        assert again.verdicts() == report.verdicts()
        assert [f.urn for f in again.findings] == [f.urn for f in report.findings]


def test_three_pack_processes_reach_the_same_verdicts(tmp_path, report):
    again = analyze_manifests(plain_manifest_dir(tmp_path / "d"), INVENTORY, workers=3)
    assert again.verdicts() == report.verdicts()


def test_cli_on_the_directory_writes_sarif_and_exits_1(tmp_path):
    d = plain_manifest_dir(tmp_path / "llm-serving")
    sarif = tmp_path / "policy.sarif"
    proc = subprocess.run(
        [sys.executable, "-m", "tools.analyze", "--manifests", str(d), "--inventory", str(INVENTORY),
         "--also", f"sarif={sarif}", "--force"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("FAIL: ")
    rule_ids = {r["id"] for r in json.loads(sarif.read_text())["runs"][0]["tool"]["driver"]["rules"]}
    from policylib.pack import policies

    assert rule_ids == {p.name for p in policies()}
