"""The real CLI's plan read back (``python3 dev.py plan``, :mod:`tools.plan`): cards per node at the update's peak.

The fixtures are the real CLI's event streams (``pulumi preview --json`` with
``PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true``, this project's toolchain, the loopback cluster),
trimmed to the prelude, step and summary events: ``tests/real/test_real_transitions.py``'s stack
(worker-1 at 4 of 4: ``big`` 3 cards, ``clef-candle`` 1) renamed to ``clef-flash``, plainly
(``rename-plain.jsonl``: ``create clef-flash`` ... ``delete clef-candle``) and with
``former_names: [clef-candle]`` (``rename-former.jsonl``: ``delete-replaced`` before
``create-replacement``). The real suite reads fresh plans of both forms from the CLI.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import ROOT
from tools import plan
from tools.offline import render, summary, transition, treediff

PLANS = ROOT / "tests" / "fixtures" / "plans"


def _run(path: Path) -> tuple[int, str]:
    out = io.StringIO()
    return plan.main([str(path)], stdout=out, stderr=out), out.getvalue()


def _document(stream: Path, sames: bool = True, replacement_steps: bool = True) -> dict:
    """The CLI's default ``--json`` document of the same plan: config, steps, changeSummary.
    Without ``sames`` it lists, as the real CLI without ``--show-sames`` did, only the stack's own
    ``same`` step; without ``replacement_steps``, as the CLI without ``--show-replacement-steps``
    (``backend/display`` shows only logical steps), no ``create-replacement`` or
    ``delete-replaced`` step."""
    events = plan.read_events(stream.read_text())
    steps = [e["resourcePreEvent"]["metadata"] for e in events if e.get("resourcePreEvent")]
    [prelude] = [e["preludeEvent"] for e in events if e.get("preludeEvent")]
    [summ] = [e["summaryEvent"] for e in events if e.get("summaryEvent")]
    return {"config": prelude["config"], "changeSummary": summ["resourceChanges"],
            "steps": [{"op": m["op"], "urn": m["urn"], "oldState": m.get("old"), "newState": m.get("new")}
                      for m in steps if (sames or m["op"] != "same" or m["type"] == "pulumi:pulumi:Stack")
                      and (replacement_steps or m["op"] not in ("create-replacement", "delete-replaced"))]}


def test_a_create_first_rename_on_a_full_node_is_refused_at_5_of_4():
    code, text = _run(PLANS / "rename-plain.jsonl")
    assert code == plan.EXIT_REFUSED, text
    assert "worker-1  5 / 4  OVER by 1  big 3, clef-candle (old, deleted at the end of the update) 1, clef-flash 1" in text
    assert ("REFUSED: node worker-1: the update needs 5 of 4 cards at its peak (its end state needs 4): the old "
            "objects (clef-candle) hold their cards until the end of the update") in text
    assert "Fix: if clef-flash replaces clef-candle, set former_names: [clef-candle] under llm-serving:workloads.clef-flash" in text


def test_a_delete_first_replacement_keeps_the_node_at_4_of_4():
    code, text = _run(PLANS / "rename-former.jsonl")
    assert code == plan.EXIT_OK, text
    assert "worker-1  4 / 4            big 3, clef-flash 1" in text
    peak = text[text.index("cards per node during the update"):]
    assert "clef-candle" not in peak and "REFUSED" not in text
    # The cost: the replacement stops clef-candle for its declared cold start (10 s here).
    assert "apps/v1 Deployment llm-serving/clef-flash (REPLACE)" in text
    assert "cost: clef-candle is replaced (1 card(s) on worker-1): down about 10 s" in text


def test_the_step_order_decides_whether_the_old_side_is_alive():
    """The same replacement with its delete-replaced step moved after the create: create-first."""
    config, steps = plan.read_plan((PLANS / "rename-former.jsonl").read_text())
    inventory = summary.inventory_of(config)
    assert inventory is not None
    dr = next(s for s in steps if s.op == "delete-replaced")
    reordered = [s for s in steps if s is not dr] + [dr]
    assert [r.used for r in plan.count(steps, inventory).peak.rows] == [4]
    counted = plan.count(reordered, inventory)
    assert [r.used for r in counted.peak.rows] == [5]
    assert list(counted.peak.old) == ["1-manifest/apps_v1-deployment-llm-serving-clef-candle.yaml"]


@pytest.mark.parametrize("fixture", ["rename-plain.jsonl", "rename-former.jsonl"])
def test_the_document_form_counts_as_the_event_stream(fixture, tmp_path):
    doc = tmp_path / "plan.json"
    doc.write_text(json.dumps(_document(PLANS / fixture)))
    assert _run(doc) == _run(PLANS / fixture)


def test_a_document_without_its_sames_is_refused_as_input(tmp_path):
    doc = tmp_path / "plan.json"
    doc.write_text(json.dumps(_document(PLANS / "rename-plain.jsonl", sames=False)))
    code, text = _run(doc)
    assert code == plan.EXIT_INPUT
    assert text.startswith("plan: the plan lists 1 of the 4 resources it keeps unchanged") and text.count("\n") == 1, text
    assert "fix: run `pulumi preview --json --show-sames --show-replacement-steps`" in text


def test_a_document_without_its_replacement_steps_is_refused_as_input(tmp_path):
    """Without them the order of a replacement is unknown: a create-first one would count 4 of 4."""
    doc = tmp_path / "plan.json"
    doc.write_text(json.dumps(_document(PLANS / "rename-former.jsonl", replacement_steps=False)))
    code, text = _run(doc)
    assert code == plan.EXIT_INPUT and text.count("\n") == 1, text
    assert text.startswith("plan: the plan replaces clef-flash but leaves out its create-replacement and delete-replaced steps")
    assert "fix: run `pulumi preview --json --show-sames --show-replacement-steps`" in text


def test_a_plan_that_deletes_a_left_alone_object_is_refused(tmp_path):
    """The stack state still holds clef-candle while the stack file says it leaves it alone."""
    doc = _document(PLANS / "rename-plain.jsonl")
    doc["config"]["llm-serving:left_alone"] = json.dumps([{"kind": "Deployment", "name": "clef-candle", "why": "kept by hand"}])
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    code, text = _run(path)
    assert code == plan.EXIT_REFUSED, text
    urn = "urn:pulumi:full::llm-serving::llm-serving:index:GpuDeployment$kubernetes:apps/v1:Deployment::clef-candle"
    assert ("REFUSED: Deployment llm-serving/clef-candle: the plan deletes it (delete), but llm-serving:left_alone "
            "lists it (\"kept by hand\")") in text, text
    assert f"`pulumi state delete '{urn}'`" in text, text
    # Not listed: no such refusal.
    assert "left_alone" not in _run(PLANS / "rename-plain.jsonl")[1]


def test_not_a_plan_and_a_plan_without_an_inventory_are_one_line_each(tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_text("Previewing update (prod)\nerror: something\n")
    code, text = _run(junk)
    assert (code, text.count("\n")) == (plan.EXIT_INPUT, 1) and "no plan in the input" in text, text
    doc = _document(PLANS / "rename-plain.jsonl")
    del doc["config"]["llm-serving:cluster"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(doc))
    code, text = _run(bare)
    assert (code, text.count("\n")) == (plan.EXIT_INPUT, 1) and "no valid llm-serving:cluster inventory" in text, text
    code, text = _run(tmp_path / "missing.json")
    assert code == plan.EXIT_INPUT and "cannot read the plan" in text, text


def _tree(config: dict) -> dict[str, dict]:
    return {render.render_path(m): m for m in render_manifests(load_stack_config(config))}


def _config(events_file: Path) -> dict:
    config, _ = plan.read_plan(events_file.read_text())
    return {k: json.loads(v) if k != "llm-serving:namespace" else v for k, v in config.items()}


def _before_after(fixture: str) -> tuple[dict, dict[str, dict], dict[str, dict]]:
    """(the plan's stack config, the old and the new rendering): the old stack file is the new one
    with clef-candle back under its name."""
    new_cfg = _config(PLANS / fixture)
    old_cfg = json.loads(json.dumps(new_cfg))
    old_cfg["llm-serving:workloads"]["clef-candle"] = old_cfg["llm-serving:workloads"].pop("clef-flash")
    old_cfg["llm-serving:workloads"]["clef-candle"].pop("former_names", None)
    old_cfg["llm-serving:services"]["clef-serve"]["selects"] = "clef-candle"
    return new_cfg, _tree(old_cfg), _tree(new_cfg)


@pytest.mark.parametrize("fixture", ["rename-plain.jsonl", "rename-former.jsonl"])
def test_the_offline_base_preview_counts_the_same_peak_as_the_real_plan(fixture):
    """One counter: the offline ``--base`` transition of the same two stack files gives the real
    plan's rows (the old stack file is the new one with clef-candle back under its name)."""
    new_cfg, old, new = _before_after(fixture)
    diff = treediff.diff_trees(old, new)
    inventory = summary.inventory_of(new_cfg)
    assert inventory is not None
    delete_first = {p for p, o in new.items()
                    if "former-names" in str((o.get("metadata") or {}).get("annotations"))}
    offline = transition.peak(old, new, diff, inventory, delete_first)
    config, steps = plan.read_plan((PLANS / fixture).read_text())
    real = plan.count(steps, inventory).peak
    assert [r.line() for r in offline.rows] == [r.line() for r in real.rows]


def _events(name: str) -> list[str]:
    return [line for line in (PLANS / name).read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("cut, says", [
    ("summary", "ends before its summary event"),
    ("prelude-only", "ends before its summary event"),
    ("two-preludes", "has 2 prelude events"),
    ("no-op", "has no 'op'"),
])
def test_an_incomplete_event_stream_is_refused_as_input(tmp_path, cut, says):
    """A preview that died mid-way, a stream of its prelude alone, two previews joined, or a
    step without its operation: each would undercount the peak, so each is bad input."""
    lines = _events("rename-plain.jsonl")
    if cut == "summary":
        lines = [x for x in lines if "summaryEvent" not in x]
    elif cut == "prelude-only":
        lines = [x for x in lines if "preludeEvent" in x]
    elif cut == "two-preludes":
        lines = [x for x in lines if "preludeEvent" in x] + lines
    else:
        first = next(i for i, x in enumerate(lines) if "resourcePreEvent" in x)
        event = json.loads(lines[first])
        del event["resourcePreEvent"]["metadata"]["op"]
        lines[first] = json.dumps(event)
    path = tmp_path / "plan.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, text = _run(path)
    assert code == plan.EXIT_INPUT and says in text and "fix:" in text and text.count("\n") == 1, text


def test_a_document_without_its_change_summary_is_refused_as_input(tmp_path):
    doc = _document(PLANS / "rename-plain.jsonl")
    del doc["changeSummary"]
    doc["steps"] = []
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    code, text = _run(path)
    assert code == plan.EXIT_INPUT and "has no changeSummary" in text, text


def _with_config(stream: Path, tmp_path: Path, **extra: str) -> Path:
    """``stream`` with ``extra`` added to its prelude's config (the CLI's form: JSON text values)."""
    lines = []
    for line in stream.read_text().splitlines():
        event = json.loads(line) if line.strip() else None
        if isinstance(event, dict) and "preludeEvent" in event:
            event["preludeEvent"]["config"].update(extra)
            line = json.dumps(event)
        lines.append(line)
    out = tmp_path / stream.name
    out.write_text("\n".join(lines) + "\n")
    return out


def test_a_plan_that_deletes_a_workload_is_refused_unless_the_stack_file_retires_it(tmp_path):
    code, text = _run(PLANS / "rename-plain.jsonl")
    assert code == plan.EXIT_REFUSED
    assert ("REFUSED: Deployment llm-serving/clef-candle: the update deletes it, and the stack file does not say that is "
            "intended") in text
    assert "Fix: if it should go, add it to the stack file: llm-serving:retire: {workloads: [clef-candle]}" in text
    assert "apps/v1 Deployment llm-serving/clef-candle (remove)" in text
    assert "cost: clef-candle is deleted (1 card(s) on worker-1): down for good" in text
    code, text = _run(_with_config(PLANS / "rename-plain.jsonl", tmp_path, **{"llm-serving:retire": '{"workloads": ["clef-candle"]}'}))
    assert code == plan.EXIT_REFUSED  # still over its cards at the peak, but the deletion is intended
    assert "REFUSED: Deployment" not in text and "REFUSED: node worker-1" in text


@pytest.mark.parametrize("fixture", ["rename-plain.jsonl", "rename-former.jsonl"])
def test_the_offline_base_preview_costs_and_refuses_as_the_real_plan(fixture):
    """One cost model and one deletion refusal (core.k8s.manifests.transition_cost), on both paths: the offline
    ``--base`` diff of the same two stack files stops the same servers for as long, and refuses the
    same deletions, as the real plan."""
    from core.k8s.manifests import transition_cost

    _, old, new = _before_after(fixture)
    diff = treediff.diff_trees(old, new)
    config, steps = plan.read_plan((PLANS / fixture).read_text())
    real = plan.costs(steps)
    assert transition_cost.summary(diff.costs) == transition_cost.summary(c for _, _, c in real)
    assert sorted(s.line() for c in diff.costs for s in c.servers) == sorted(s.line() for _, _, c in real for s in c.servers)
    removed = [old[o.old_path] for o in diff.objects if o.action == "remove"]
    assert transition_cost.unintended_deletions(removed, transition_cost.Retired()) == plan.unintended_deletions(steps, config)
    assert bool(removed) == (fixture == "rename-plain.jsonl")


# --- exactly what `pulumi preview --json` writes ------------------------------------------------------


def _refused_input(tmp_path: Path, text: str, *says: str) -> str:
    path = tmp_path / "plan.json"
    path.write_text(text)
    code, out = _run(path)
    assert code == plan.EXIT_INPUT and out.count("\n") == 1 and "Traceback" not in out, out
    for s in says:
        assert s in out, (s, out)
    return out


def test_a_document_followed_by_a_stream_is_refused_with_the_line(tmp_path):
    """Read as a stream, it counted the stream's steps; a crafted stream made a 3-card object vanish."""
    doc = json.dumps(_document(PLANS / "rename-former.jsonl"), indent=2)
    _refused_input(tmp_path, doc + "\n" + (PLANS / "rename-plain.jsonl").read_text(),
                   f"line {doc.count(chr(10)) + 2}: more JSON after the plan document")


@pytest.mark.parametrize("same, says", [
    (2.0, "same is 2.0, not a count of steps"),
    ("4", 'same is "4", not a count of steps'),
    (True, "same is true, not a count"),
    (None, "counts 0 resources kept unchanged (no same count) but the plan lists 4"),
    (3, "counts 3 resources kept unchanged (same) but the plan lists 4"),
])
def test_a_same_count_that_is_no_count_or_does_not_match_is_refused(tmp_path, same, says):
    doc = _document(PLANS / "rename-plain.jsonl")
    if same is None:
        del doc["changeSummary"]["same"]
    else:
        doc["changeSummary"]["same"] = same
    _refused_input(tmp_path, json.dumps(doc), says)


@pytest.mark.parametrize("change, says", [
    (lambda s: s.update(result="failed"), 'has result "failed": the preview did not succeed'),
    (lambda s: s.update(maybeCorrupt=True), "maybeCorrupt true"),
    (lambda s: s.update(verdict="ok"), "the key verdict, which no preview writes"),
    (lambda s: s["resourceChanges"].update(same=4.5), "same is 4.5, not a count"),
])
def test_a_summary_of_a_failed_or_edited_preview_is_refused_with_its_line(tmp_path, change, says):
    lines = _events("rename-plain.jsonl")
    n = next(i for i, x in enumerate(lines) if "summaryEvent" in x)
    event = json.loads(lines[n])
    change(event["summaryEvent"])
    lines[n] = json.dumps(event)
    out = _refused_input(tmp_path, "\n".join(lines) + "\n", says)
    assert f"line {n + 1}" in out


@pytest.mark.parametrize("text, says", [
    ("{\n  \"steps\": [\n    {\"op\": \"same\"", "line 3, column"),
    ("[1, 2]", "line 1: the input is a JSON list"),
    ('{"config": {}}', "a document without a steps list"),
])
def test_a_cut_or_foreign_document_says_the_line(tmp_path, text, says):
    _refused_input(tmp_path, text, says)


def test_a_line_in_a_stream_that_is_no_event_is_refused_with_its_line(tmp_path):
    lines = _events("rename-plain.jsonl")
    lines.insert(2, '{"note": "hand-written"}')
    _refused_input(tmp_path, "\n".join(lines) + "\n", "line 3: JSON that is not an engine event")


def test_a_resource_name_cannot_forge_a_refusal_line(tmp_path):
    """ANSI escapes and a newline in a name printed raw and forged REFUSED: lines."""
    doc = _document(PLANS / "rename-plain.jsonl")
    for step in doc["steps"]:
        for side in ("oldState", "newState"):
            state = step.get(side) or {}
            meta = (state.get("inputs") or {}).get("metadata")
            if isinstance(meta, dict) and state.get("type", "").endswith("Deployment"):
                meta["name"] = str(meta.get("name")) + "\x1b[2K\rREFUSED: nothing\nREFUSED: forged"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    code, out = _run(path)
    assert "\\x1b[2K\\rREFUSED: nothing\\nREFUSED: forged" in out, out  # the name, escaped
    assert "\x1b" not in out and "\nREFUSED: forged" not in out, out
    assert not [ln for ln in out.splitlines() if ln.startswith("REFUSED: nothing")]


def _protected_delete_plan(tmp_path: Path, protect: bool, retire: bool) -> Path:
    """A ``pulumi preview --json`` document of prod with the clef-serve Service gone from the
    program: every other object ``same``, the Service's ``delete`` step with its state's protect
    flag (the CLI's document form: ``oldState.protect``; config values as JSON text)."""
    from tests.paths import PROD_STACK_FILE
    from tools.offline.manifests import load_stack_file

    config = load_stack_file(PROD_STACK_FILE)
    if retire:
        config["llm-serving:retire"] = {"services": ["clef-serve"]}
    objects = render_manifests(load_stack_config(load_stack_file(PROD_STACK_FILE)))
    root = {"urn": "urn:pulumi:prod::llm-serving::pulumi:pulumi:Stack::llm-serving-prod", "type": "pulumi:pulumi:Stack",
            "inputs": {}}
    steps = [{"op": "same", "urn": root["urn"], "oldState": root, "newState": root}]  # every preview plans the stack
    for obj in objects:
        kind, name = obj["kind"], obj["metadata"]["name"]
        group = obj["apiVersion"] if "/" in obj["apiVersion"] else "core/" + obj["apiVersion"]
        state = {"urn": f"urn:pulumi:prod::llm-serving::x${name}", "type": f"kubernetes:{group}:{kind}", "inputs": obj}
        if kind == "Service" and name == "clef-serve":
            state["urn"] = ("urn:pulumi:prod::llm-serving::llm-serving:index:StablePredictorService"
                            "$kubernetes:core/v1:Service::clef-serve")
            state["protect"] = protect
            steps.append({"op": "delete", "urn": state["urn"], "oldState": state})
        else:
            steps.append({"op": "same", "urn": state["urn"], "oldState": state, "newState": state})
    doc = {"config": {k: json.dumps(v) if not isinstance(v, str) else v for k, v in config.items()},
           "steps": steps, "changeSummary": {"same": len(steps) - 1, "delete": 1}}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_plan_deleting_a_protected_service_is_refused_with_the_way_through_until_unprotected(tmp_path):
    """The engine refuses a protected delete at pulumi up: the plan says so with the state command
    for the plan's own URN, after the retire entry; once the state is unprotected it passes, and
    the Service's clients are named as losing it. The offline diff's way through is the same text."""
    from core.k8s.manifests import transition_cost

    urn = "urn:pulumi:prod::llm-serving::llm-serving:index:StablePredictorService$kubernetes:core/v1:Service::clef-serve"
    code, text = _run(_protected_delete_plan(tmp_path, protect=True, retire=True))
    assert code == plan.EXIT_REFUSED, text
    assert ("REFUSED: Service llm-serving/clef-serve: pulumi up refuses to delete it while the stack's state marks it "
            "protected") in text
    assert f"2. before the deploy, by someone with the stack's backend: `pulumi state unprotect --stack prod --yes '{urn}'`" in text
    assert "OUTAGE: Service llm-serving/clef-serve is deleted: clients that lose it: gateway (namespace gateway, port 80)" in text
    assert text.rstrip("\n").rsplit("\n", 1)[-1].startswith("REFUSED: the plan cannot run as it stands (1 reason")
    offline = transition_cost.protected_deletion(
        next(o for o in render_manifests(load_stack_config(_prod())) if o["kind"] == "Service" and o["metadata"]["name"] == "clef-serve"),
        transition_cost.object_urn({"kind": "Service", "apiVersion": "v1", "metadata": {
            "name": "clef-serve", "annotations": {"llm-serving.riotpiao.com/component": "StablePredictorService/clef-serve"}}}, "prod"),
        transition_cost.Retired(services=frozenset({"clef-serve"})))
    assert f"REFUSED: {offline}" in text

    assert "v1 Service llm-serving/clef-serve (remove, PROTECTED)" in text
    code, text = _run(_protected_delete_plan(tmp_path, protect=False, retire=True))
    assert code == plan.EXIT_OK, text
    # The state says unprotected: the diff says so too (the component's annotation is not the state).
    assert "v1 Service llm-serving/clef-serve (remove)\n" in text and "PROTECTED" not in text
    assert "REFUSED" not in text and "OUTAGE: Service llm-serving/clef-serve is deleted" in text
    assert text.rstrip("\n").rsplit("\n", 1)[-1] == ("PASS: the plan fits every node at its peak and nothing in it is "
                                                     "refused; 1 outage(s), the OUTAGE lines above")

    code, text = _run(_protected_delete_plan(tmp_path, protect=False, retire=False))
    assert code == plan.EXIT_REFUSED and "llm-serving:retire: {services: [clef-serve]}" in text


def _prod() -> dict:
    from tests.paths import PROD_STACK_FILE
    from tools.offline.manifests import load_stack_file

    return load_stack_file(PROD_STACK_FILE)


def test_every_plan_ends_with_its_verdict():
    for fixture, verdict in (("rename-plain.jsonl", "REFUSED: "), ("rename-former.jsonl", "PASS: ")):
        code, text = _run(PLANS / fixture)
        assert text.rstrip("\n").rsplit("\n", 1)[-1].startswith(verdict), (fixture, text)
        assert code == (plan.EXIT_REFUSED if verdict == "REFUSED: " else plan.EXIT_OK)


def test_a_failed_preview_is_a_refusal_naming_its_error_and_its_steps_are_still_judged(tmp_path):
    """The CLI writes a failed preview's document whole (the engine refuses to replace a protected
    object, the real suite's render-mode switch): pulumi up stops at the same error, so the plan
    is refused (exit 1, not bad input), and the steps it lists are judged beside it."""
    doc = _document(PLANS / "rename-former.jsonl")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    assert _run(path)[0] == plan.EXIT_OK  # the same plan, succeeded
    doc["diagnostics"] = [
        {"urn": "urn:pulumi:prod::llm-serving::kubernetes:core/v1:Service::clef-serve", "severity": "error",
         "message": "unable to replace resource \"urn:...clef-serve\"\nas it is currently marked for protection."},
        {"severity": "error", "message": "error: preview failed"}]
    path.write_text(json.dumps(doc))
    code, out = _run(path)
    assert code == plan.EXIT_REFUSED, out
    [line] = [ln for ln in out.splitlines() if ln.startswith("REFUSED: the preview failed")]
    assert "2 error diagnostic(s)" in line and "marked for protection" in line, line
    assert "cards per node" in out or "worker-1" in out, out  # the steps were counted as well
    with pytest.raises(plan.PlanError, match="the preview failed"):
        plan.read_plan(json.dumps(doc))  # a caller that takes no errors is told, never handed partial steps
