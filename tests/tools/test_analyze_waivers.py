"""Waived findings through the real pack process (tools.analyze over gRPC): the waived policy's finding
comes back at level ``waived`` with its annotation and reason, in the report every format renders."""

from __future__ import annotations

import shutil

import yaml

from core.rulebook import waivers
from tests.paths import ROOT
from tools.analyze import analyze_manifests
from tools.offline.report import WAIVED, WAIVERS_POLICY

CASE = ROOT / "policies" / "fixtures" / "no-service-account-token" / "disallowed" / "isvc-token-true.yaml"
INVENTORY = ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"
KEY = f"{waivers.IGNORE_PREFIX}no-service-account-token"


def test_the_reports_policy_name_is_the_packs():
    assert WAIVERS_POLICY == waivers.NAME


def test_a_waived_finding_reaches_the_report_as_waived_with_its_reason(tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    shutil.copy(CASE, d / "plain.yaml")
    plain = analyze_manifests(d, INVENTORY)
    token = [f for f in plain.findings if f.policy == "no-service-account-token"]
    assert token and all(f.level == "mandatory" for f in token)

    doc = yaml.safe_load(CASE.read_text())
    doc["metadata"]["annotations"][KEY] = "the router sidecar reads its own Endpoints"
    (d / "plain.yaml").write_text(yaml.safe_dump(doc))
    waived = analyze_manifests(d, INVENTORY)
    now = [f for f in waived.findings if f.policy == "no-service-account-token"]
    assert [(f.level, f.message, f.object) for f in now] == [(WAIVED, f.message, f.object) for f in token]
    assert {f.waiver for f in now} == {f"{KEY}: the router sidecar reads its own Endpoints"}
    assert not [f for f in waived.findings if f.policy == WAIVERS_POLICY]
    assert len(waived.mandatory) == len(plain.mandatory) - len(token)
    assert f"waived by {KEY}: the router sidecar" in waived.render_table()
