"""A file judged beside what runs: ``tools.analyze --manifests DIR --context-stack prod`` (the stack's
offline rendering) or ``--context-namespace NS`` (live objects read with kubectl).

The file: a hand-written one-card Deployment for worker-1 (tests/manifests/beside-prod). Alone, with
the prod inventory, it passes: worker-1 has 4 cards. Beside prod, which holds all 4, it is refused by
gpu-card-allocation, and prod's own objects bring none of their findings into the report.
"""

from __future__ import annotations

import json
import subprocess

from tests.paths import PROD_STACK_FILE, ROOT
from tools import analyze, context, kubectl
from tools.offline.manifests import load_stack_file

FILE = ROOT / "tests" / "manifests" / "beside-prod"
PROD = PROD_STACK_FILE
REFUSED = "worker-1: 5 of 4 cards requested: candle-vllm 2, clef-candle 1, embedder 1, reasoning 1"


def test_alone_it_passes_on_the_full_worker_1():
    report = analyze.analyze_manifests(FILE, PROD)
    assert report.exit_code() == 0, [f.message for f in report.findings]


def test_beside_prod_it_is_refused(capsys, monkeypatch):
    monkeypatch.setattr(analyze, "ROOT", PROD.parent)  # --context-stack prod reads the frozen prod
    code = analyze.main(["--manifests", str(FILE), "--context-stack", "prod"])
    out = capsys.readouterr().out
    assert code == 1
    assert REFUSED in out
    assert "judged beside 8 object(s) of stack prod" in out
    assert "candle-vllm, container" not in out  # prod's own findings are left out


def test_beside_the_live_namespace_it_is_refused(monkeypatch):
    """Kubectl stands in with prod's rendering as the API server would list it."""
    live = [r.props for r in context.from_stack("prod", PROD.parent, analyze.program_resources) if r.custom and r.props.get("kind")]

    def fake_run(kubeconfig, *args, stdin=None, timeout=kubectl.TIMEOUT_S):
        kind = args[1].split(".")[0]
        items = [{**p, "status": {}} for p in live if p["kind"].lower() + "s" == kind]
        return subprocess.CompletedProcess(["kubectl", *args], 0, json.dumps({"items": items}), "")

    monkeypatch.setattr(kubectl, "run", fake_run)
    report = analyze.analyze_manifests(FILE, PROD, context=lambda: context.from_namespace("llm-serving"),
                                       context_name="namespace llm-serving (live)")
    assert [f.policy for f in report.mandatory] == ["gpu-card-allocation"]
    assert REFUSED in report.mandatory[0].message


def test_a_file_object_replaces_the_context_object_it_edits():
    prod = context.from_stack("prod", PROD.parent, analyze.program_resources)
    edited = [r for r in prod if r.props.get("kind") == "Deployment"][:1]
    merged, beside = context.merge(edited, prod)
    assert edited[0] in merged and edited[0].urn not in beside
    assert sum(r.props.get("metadata", {}).get("name") == edited[0].props["metadata"]["name"] for r in merged) == 1
    assert load_stack_file(PROD)  # the context's inventory is the stack's own file
