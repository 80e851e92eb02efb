"""Every policy of the pack is complete: name, description, level, severity, remediation, fixtures.

gatekeeper-library style: one record per policy in its rule family's module, allowed and disallowed
fixtures under ``policies/fixtures/<policy>/``. A policy that lacks any of these fails here, so a new
policy cannot land half-described.
"""

from __future__ import annotations

import pytest
from pulumi_policy import EnforcementLevel

from policylib import declare
from policylib.pack import policies, policy_modules, records
from tests.paths import ROOT
from tests.policy_harness import FIXTURES, expectations, fixture_cases

NAMES = [r.name for r in records()]


def test_the_pack_is_built_from_the_registry_with_unique_names():
    names = [p.name for p in policies()]
    assert names, "no policy declared"
    assert names == NAMES and len(names) == len(set(names)), names
    assert set(NAMES) == set(declare.POLICIES)


@pytest.mark.parametrize("name", NAMES)
def test_policy_metadata(name):
    record = declare.POLICIES[name]
    policy = record.policy()
    assert policy.name == name and policy.enforcement_level == record.level and policy.severity == record.severity
    assert policy.description and not policy.description.endswith(" "), name
    assert policy.enforcement_level in (EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY), name
    assert policy.severity is not None, f"{name}: set a severity"
    assert policy.remediation_steps and len(policy.remediation_steps) > 20, f"{name}: remediation steps"
    assert record.doc.startswith(f"{name}: "), f"{name}: the account starts with the policy's name and what it holds"


@pytest.mark.parametrize("name", NAMES)
def test_a_policy_lives_in_its_rule_family(name):
    """Declared in ``policies/<family>.py`` beside its rule family, ``core/rulebook/<family>.py`` (or,
    for the one family the engine models judge their own values by, ``core/engines/<family>.py``,
    below the rulebook: docs/layout.md), and judged by rules registered under its name there (a
    policy may also use another family's rules)."""
    record = declare.POLICIES[name]
    homes = [f"core.{layer}.{record.family}" for layer in ("rulebook", "engines")
             if (ROOT / "core" / layer / f"{record.family}.py").is_file()]
    assert len(homes) == 1, (name, record.family, homes)
    assert record.rules, f"{name}: no rule names it (core.judging.registry.rule(..., policy={name!r}))"
    assert homes[0] in {r.judge.__module__ for r in record.rules}, name


def test_every_family_module_declares_a_policy():
    assert {r.family for r in records()} == set(policy_modules())


@pytest.mark.parametrize("name", NAMES)
def test_policy_has_allowed_and_disallowed_fixtures(name):
    allowed = fixture_cases(name, "allowed")
    disallowed = fixture_cases(name, "disallowed")
    assert allowed, f"no fixtures under {FIXTURES / name / 'allowed'}"
    assert disallowed, f"no fixtures under {FIXTURES / name / 'disallowed'}"
    for case in disallowed:
        assert expectations(case), f"{case}: a disallowed fixture starts with '# expect: <message part>'"


def test_fixture_directories_belong_to_policies():
    """A fixture directory without a policy is a renamed or deleted policy left behind."""
    dirs = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert dirs <= set(NAMES), sorted(dirs - set(NAMES))


def test_a_record_refuses_what_would_land_half_described():
    """A bad name, a policy no rule family describes, an empty account, an undescribed parameter."""
    def noop(args, report_violation):
        return None

    base = dict(validate=noop, level=EnforcementLevel.ADVISORY, severity=declare.Severity.LOW, doc="x: y")
    with pytest.raises(ValueError, match="lowercase words joined by '-'"):
        declare.resource_policy("Bad_Name", **base)
    with pytest.raises(ValueError, match="no rule family describes it; add describe_policy"):
        declare.resource_policy("no-such-policy", **base)
    with pytest.raises(ValueError, match="doc is empty"):
        declare.resource_policy("vllm-context-window", **{**base, "doc": " "})
    with pytest.raises(ValueError, match="needs a type and a description"):
        declare.stack_policy("gpu-card-allocation", **base, config={"countSurge": {"type": "boolean"}})
    with pytest.raises(ValueError, match="declared twice"):
        declare.resource_policy("vllm-context-window", **base)
    assert "no-such-policy" not in declare.POLICIES


def test_enforcement_levels_are_the_documented_decision():
    """Mandatory where the mistake breaks serving; advisory where it is judgement.

    Advisory: a served model name answered by two servers (seed 002 accepted it knowingly while
    moving clients), an undeclared zero-replica InferenceService (misleading Ready=True,
    nothing stops serving), a uid the image does not know (whether the server reaches getpwuid
    depends on its version), a card-less pod under the GPU RuntimeClass (it starts; the harm depends
    on what it does with the cards), a liveness window (timing judgement) and minReplicas 0 in
    RawDeployment (the pod runs; the manifest says otherwise), an autoscaler that cannot compute its
    metric (the server serves at its replicas), a disruption budget that blocks drains
    (the server serves; its node's maintenance stops), a route timeout below the longest request and a
    grace period below the drain (only the longest or in-flight requests are lost), a credential in an env value (the pod
    runs; who can read it is a judgement about exposure), and the waivers (a waived finding is
    shown, not enforced; a waiver that waives nothing leaves the finding with its own policy). Every other policy
    guards a failure that stops a server or a client.
    """
    levels = {p.name: p.enforcement_level for p in policies()}
    advisory = sorted(n for n, level in levels.items() if level == EnforcementLevel.ADVISORY)
    assert advisory == ["arbitrary-uid-has-home", "autoscaler-metric-has-requests", "disruption-budget-allows-drain",
                        "env-var-secret", "gpu-runtime-class-without-cards", "isvc-not-parked-silently",
                        "isvc-raw-min-replicas", "liveness-probe-window", "policy-waivers",
                        "route-timeout-covers-request", "served-model-name-unique", "termination-grace-covers-drain"]


def test_a_record_says_what_it_does_not_check():
    """``does_not_check`` is the account's ``Does not check:`` / ``Not judged:`` text, whitespace folded."""
    cards = declare.POLICIES["gpu-card-allocation"].does_not_check
    assert cards.startswith("taints and tolerations; fractional cards (time-sliced cards count as the nvidia.com/gpu")
    assert "\n" not in cards
    assert declare.POLICIES["model-cache-usable"].does_not_check.startswith("a container whose HOME is not known")
