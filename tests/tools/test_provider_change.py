"""Provider and render-mode changes refused by ``python3 dev.py plan`` (:mod:`tools.provider_change`).

The plans are the real CLI's (``tests/fixtures/plans/rename-former.jsonl``, see tests/tools/test_plan.py)
with every Kubernetes object moved to the ``render-yaml`` provider, as the engine plans it when
``llm-serving:render_yaml_to_directory`` is set on a stack that already applied (each object
replaced; the real suite's ``tests/real/test_real_secrets_render.py`` reads such a plan from the CLI).
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

from tests.paths import ROOT
from tools import plan, provider_change

PLANS = ROOT / "tests" / "fixtures" / "plans"
RENDER = "urn:pulumi:full::llm-serving::pulumi:providers:kubernetes::render-yaml"


def _document(render: bool = False, ssa: str = "") -> dict:
    events = plan.read_events((PLANS / "rename-former.jsonl").read_text())
    [prelude] = [e["preludeEvent"] for e in events if e.get("preludeEvent")]
    [summ] = [e["summaryEvent"] for e in events if e.get("summaryEvent")]
    steps = [copy.deepcopy(e["resourcePreEvent"]["metadata"]) for e in events if e.get("resourcePreEvent")]
    provider = {"urn": RENDER, "type": provider_change.PROVIDER_TYPE, "inputs": {"renderYamlToDirectory": "rendered"}}
    if ssa:
        provider["inputs"] = {"enableServerSideApply": ssa}
    if render or ssa:
        steps.insert(0, {"op": "create", "urn": RENDER, "old": None, "new": provider})
    for m in steps:
        new = m.get("new") or {}
        if render and m.get("old") and str(new.get("type", "")).startswith("kubernetes:"):
            new["provider"] = RENDER + "::04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    return {"config": prelude["config"], "changeSummary": summ["resourceChanges"],
            "steps": [{"op": m["op"], "urn": m["urn"], "oldState": m.get("old"), "newState": m.get("new")} for m in steps]}


def _run(doc: dict, tmp_path: Path) -> tuple[int, str]:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    out = io.StringIO()
    return plan.main([str(path)], stdout=out, stderr=out), out.getvalue()


def test_the_unchanged_provider_is_not_refused(tmp_path):
    code, text = _run(_document(), tmp_path)
    assert code == plan.EXIT_OK, text
    assert "REFUSED" not in text and "SAFE" not in text and "render-only stack" not in text


def test_render_mode_switched_on_an_applied_stack_is_refused_with_the_safe_path(tmp_path):
    doc = _document(render=True)
    moved = provider_change.moved(plan.read_plan(json.dumps(doc))[1])
    assert moved == {("default_4_25_0_alpha_1768448096", "render-yaml"): 3}
    code, text = _run(doc, tmp_path)
    assert code == plan.EXIT_REFUSED, text
    [line] = [ln for ln in text.splitlines() if ln.startswith("REFUSED: provider")]
    assert line.startswith(
        "REFUSED: provider default_4_25_0_alpha_1768448096 -> render-yaml: the plan moves 3 Kubernetes object(s) from "
        "provider default_4_25_0_alpha_1768448096 (applying to the cluster) to render-yaml (render mode "
        "(renderYamlToDirectory)), and the engine replaces every object whose provider changes")
    assert "Fix: keep this stack's mode" in line and "`pulumi stack init <stack>-render`" in line
    assert line.endswith("Source: pulumi/pulumi-kubernetes#1693 (a changed provider replaces every object it manages) "
                         "and pulumi-kubernetes PR #936 (renderYamlToDirectory).")


def test_a_provider_with_server_side_apply_off_is_refused(tmp_path):
    code, text = _run(_document(ssa="false"), tmp_path)
    assert code == plan.EXIT_REFUSED, text
    [line] = [ln for ln in text.splitlines() if ln.startswith("REFUSED: provider")]
    assert line.startswith("REFUSED: provider render-yaml: enableServerSideApply is false: taking over the live objects")
    assert ("Fix: remove kubernetes:enableServerSideApply from the stack (server-side apply is the provider's default; "
            "a secret value cannot be judged before the CLI decrypts it), or render a separate render-only stack for "
            "ArgoCD.") in line
    assert _run(_document(ssa="true"), tmp_path)[0] == plan.EXIT_OK
    for off in ("0", "f", "False"):  # what Go's strconv.ParseBool reads as false, as the provider does
        code, text = _run(_document(ssa=off), tmp_path)
        assert code == plan.EXIT_REFUSED, off
        assert f"enableServerSideApply is {off}: taking over" in text  # the plan's own value


def test_server_side_apply_off_through_a_secret_is_refused_and_never_shown(tmp_path):
    """A secret enableServerSideApply (a plan's ``[secret]``, Pulumi's secret object with or without
    its plaintext) walked around the refusal: read as the provider will, it may be false."""
    sig = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
    for ssa in ("[secret]", sig, {**sig, "plaintext": '"false"'}):
        code, text = _run(_document(ssa=ssa), tmp_path)  # type: ignore[arg-type]
        assert code == plan.EXIT_REFUSED, (ssa, text)
        assert "enableServerSideApply is [secret]: taking over" in text and "plaintext" not in text
    assert _run(_document(ssa={**sig, "plaintext": '"true"'}), tmp_path)[0] == plan.EXIT_OK  # type: ignore[arg-type]


def test_a_render_mode_switch_is_seen_when_the_old_providers_reference_is_absent(tmp_path):
    """A step whose old state names no provider ran on the default one: moving it to render-yaml is
    the same switch (it was unseen)."""
    doc = _document(render=True)
    for step in doc["steps"]:
        if step.get("oldState"):
            step["oldState"].pop("provider", None)
    moved = provider_change.moved(plan.read_plan(json.dumps(doc))[1])
    assert moved == {("default", "render-yaml"): 3}
    assert _run(doc, tmp_path)[0] == plan.EXIT_REFUSED
