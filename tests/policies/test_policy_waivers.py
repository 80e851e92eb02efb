"""Per-object waivers (policylib.waivers, core.rulebook.waivers): a waived finding leaves its policy
and is shown by policy-waivers, with the reason; a waiver without a reason or of no policy waives nothing."""

from __future__ import annotations

from pathlib import Path

import yaml

from core.rulebook import waivers as rules
from policylib.pack import policies
from tests.policy_harness import DEFAULT_STACK_FILE, FIXTURES, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file, resources_from_documents

POLICIES = {p.name: p for p in policies()}
TOKEN = "no-service-account-token"
REASON = "the router sidecar reads its own Endpoints"


def _resources(path: Path, annotate: dict[str, dict[str, str]] | None = None):
    """The fixture's objects (``annotate``: object name -> annotations added to its metadata)."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    for d in docs:
        d["metadata"].setdefault("annotations", {}).update((annotate or {}).get(d["metadata"]["name"], {}))
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return resources_from_documents(docs, stack="test")


def _messages(policy: str, resources) -> list[str]:
    return [v.message for v in run_policy(POLICIES[policy], resources)]


TOKEN_CASE = FIXTURES / TOKEN / "disallowed" / "isvc-token-true.yaml"


def test_a_waived_resource_finding_moves_to_policy_waivers_with_its_reason():
    plain = _resources(TOKEN_CASE)
    waived = _resources(TOKEN_CASE, {"reasoning": {f"{rules.IGNORE_PREFIX}{TOKEN}": REASON}})
    before = _messages(TOKEN, plain)
    assert before and _messages(rules.NAME, plain) == []
    assert _messages(TOKEN, waived) == []
    shown = _messages(rules.NAME, waived)
    assert [rules.parse_waived(m) for m in shown] == [
        (TOKEN, f"{rules.IGNORE_PREFIX}{TOKEN}", REASON, m) for m in before]


def test_a_waiver_on_the_pod_template_counts_and_checkov_checks_stay_checkovs():
    docs = [d for d in yaml.safe_load_all((FIXTURES / "pod-run-as-non-root" / "disallowed").glob("*.yaml").__next__().read_text()) if d]
    workload = next(d for d in docs if d["kind"] in ("Deployment", "StatefulSet"))
    template = workload["spec"]["template"].setdefault("metadata", {})
    template.setdefault("annotations", {})["checkov.io/skip7"] = f"pod-run-as-non-root={REASON}"
    workload["metadata"].setdefault("annotations", {})["checkov.io/skip8"] = "CKV_K8S_20=checkov's own check"
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    resources = resources_from_documents(docs, stack="test")
    assert _messages("pod-run-as-non-root", resources) == []
    shown = [rules.parse_waived(m) for m in _messages(rules.NAME, resources)]
    assert shown and {s[:3] for s in shown if s} == {("pod-run-as-non-root", "checkov.io/skip7", REASON)}


def test_a_waiver_without_reason_or_of_no_policy_waives_nothing_and_is_a_finding():
    for added, said in (
        ({f"{rules.IGNORE_PREFIX}{TOKEN}": "  "}, "without a reason"),
        ({f"{rules.IGNORE_PREFIX}no-such-policy": REASON}, "'no-such-policy', which is no policy of the pack"),
        ({"checkov.io/skip3": f"{TOKEN}="}, "without a reason"),
        ({f"{rules.IGNORE_PREFIX}{rules.NAME}": REASON}, "cannot be waived"),
    ):
        resources = _resources(TOKEN_CASE, {"reasoning": added})
        assert _messages(TOKEN, resources), added  # the finding stays with its policy
        shown = _messages(rules.NAME, resources)
        assert len(shown) == 1 and said in shown[0] and rules.parse_waived(shown[0]) is None, shown


def test_a_waived_stack_finding_leaves_only_the_waiving_object():
    case = FIXTURES / "service-selector-uniqueness" / "disallowed" / "selects-nothing.yaml"
    plain = _resources(case)
    before = run_policy(POLICIES["service-selector-uniqueness"], plain)
    assert before
    urn = before[0].urn
    name = urn.rsplit("::", 1)[-1].rsplit("/", 1)[-1] if urn else ""
    services = [r for r in plain if r.urn == urn]
    assert services, (urn, [r.urn for r in plain])
    waived = _resources(case, {services[0].props["metadata"]["name"]: {
        f"{rules.IGNORE_PREFIX}service-selector-uniqueness": "its Endpoints are written by hand"}})
    after = run_policy(POLICIES["service-selector-uniqueness"], waived)
    assert [v for v in after if v.urn == urn] == [] and len(after) == len(before) - sum(v.urn == urn for v in before)
    shown = [rules.parse_waived(m) for m in _messages(rules.NAME, waived)]
    assert shown and all(s and s[0] == "service-selector-uniqueness" for s in shown), (name, shown)


def test_the_waived_form_reads_back_reasons_with_quotes_and_colons():
    w = rules.Waiver("checkov.io/skip1", TOKEN, 'sidecar: reads "Endpoints"')
    assert rules.parse_waived(rules.waived_message(w, "Deployment x: wrong. Fix: f. Source: s.")) == (
        TOKEN, "checkov.io/skip1", 'sidecar: reads "Endpoints"', "Deployment x: wrong. Fix: f. Source: s.")
    assert rules.parse_waived("Deployment x: wrong. Fix: f. Source: s.") is None
