"""Every policy of the pack is complete: name, description, level, severity, remediation, fixtures.

gatekeeper-library style: one record per policy beside its rules in its rule family, allowed and disallowed
fixtures under ``policies/fixtures/<policy>/``. A policy that lacks any of these fails here, so a new
policy cannot land half-described.
"""

from __future__ import annotations

import re

import pytest
from pulumi_policy import EnforcementLevel

from core.judging import registry
from policylib import declare
from policylib.pack import policies, policy_modules, records
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
    """Declared beside its rules in its rule family, ``core/rulebook/<family>.py`` (or, for the one
    family the engine models judge their own values by, ``core/engines/<family>.py``, below the
    rulebook: docs/layout.md), judged by rules registered under its name there (a policy may also
    use another family's rules), and read by its check or by the pack's module of the same
    family, ``policies/<family>.py``."""
    p = declare.POLICIES[name]
    assert p.record.module in (f"core.rulebook.{p.family}", f"core.engines.{p.family}"), (name, p.record.module)
    assert p.rules, f"{name}: no rule names it (core.judging.registry.rule(..., policy={name!r}))"
    assert p.record.module in {r.judge.__module__ for r in p.rules}, name
    reader = p.record.check.__module__ if p.record.check is not None else p.validate.__module__
    assert reader in (p.record.module, p.family), (name, reader)


def test_every_pack_module_reads_a_policy_of_its_family():
    assert {p.family for p in records() if p.record.check is None} == set(policy_modules())


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
    """A bad name, an empty account, an unknown level, an undescribed parameter, a check on a stack
    policy, a name declared twice; a validate for a policy no family declares."""
    base = dict(kind="resource", level="advisory", severity="low", doc="x: y")
    with pytest.raises(ValueError, match="lowercase words joined by '-'"):
        registry.declare_policy("Bad_Name", "d", "r", **base)
    with pytest.raises(ValueError, match="doc is empty"):
        registry.declare_policy("no-such-policy", "d", "r", **{**base, "doc": " "})
    with pytest.raises(ValueError, match="level 'blocking' is not one of advisory, mandatory"):
        registry.declare_policy("no-such-policy", "d", "r", **{**base, "level": "blocking"})
    with pytest.raises(ValueError, match="needs a type and a description"):
        registry.declare_policy("no-such-policy", "d", "r", **base, config={"countSurge": {"type": "boolean"}})
    with pytest.raises(ValueError, match="declare it kind='resource'"):
        registry.declare_policy("no-such-policy", "d", "r", **{**base, "kind": "stack"}, check=lambda w, m, c: None)
    with pytest.raises(ValueError, match="declared twice"):
        registry.declare_policy("vllm-context-window", "d", "r", **base)
    with pytest.raises(ValueError, match="no rule family declares it; add declare_policy"):
        declare.validate("no-such-policy", lambda args, report_violation: None)
    with pytest.raises(ValueError, match="has two validates"):
        declare.validate("vllm-context-window", lambda args, report_violation: None)
    assert "no-such-policy" not in registry.POLICIES and "no-such-policy" not in declare.VALIDATES


@pytest.mark.parametrize("name", NAMES)
def test_enforcement_levels_are_the_documented_decision(name):
    """Mandatory where the mistake breaks serving (a server or a client stops); advisory where it is
    judgement, and then the record says why in its account, on a line starting ``Advisory``
    (what still works when it is broken: seed 002 kept a served model name on two servers while
    moving clients), which a mandatory policy does not have."""
    p = declare.POLICIES[name]
    says_why = re.search(r"^Advisory\b", p.doc, re.M) is not None
    if p.level == EnforcementLevel.ADVISORY:
        assert says_why, f"{name}: advisory, so its account says why on a line starting 'Advisory'"
    else:
        assert p.level == EnforcementLevel.MANDATORY and not says_why, f"{name}: mandatory, yet its account says 'Advisory'"


def test_a_record_says_what_it_does_not_check():
    """``does_not_check`` is the account's ``Does not check:`` / ``Not judged:`` text, whitespace folded."""
    cards = declare.POLICIES["gpu-card-allocation"].does_not_check
    assert cards.startswith("taints and tolerations; fractional cards (time-sliced cards count as the nvidia.com/gpu")
    assert "\n" not in cards
    assert declare.POLICIES["model-cache-usable"].does_not_check.startswith("a container whose HOME is not known")


def test_a_family_declaring_a_policy_again_with_another_record_is_refused_and_an_import_again_is_not():
    """Within the family that declared it, a second ``declare_policy`` of the same name with another
    record (a pasted copy edited) is refused; the same record again (the module imported a second
    time) is accepted and leaves the record as it was."""
    record = registry.POLICIES["vllm-context-window"]
    def again(remediation: str) -> str:
        return ("from core.judging.registry import declare_policy\n"
                f"declare_policy({record.name!r}, {record.description!r}, {remediation!r}, kind={record.kind!r}, "
                f"level={record.level!r}, severity={record.severity!r}, doc={record.doc!r}, config={dict(record.config)!r})\n")

    family = {"__name__": record.module}
    try:
        exec(again(record.remediation), dict(family))  # noqa: S102 - the family's own call, again
        assert registry.POLICIES[record.name] == record
        with pytest.raises(ValueError, match="policy vllm-context-window is declared twice"):
            exec(again("another fix"), dict(family))  # noqa: S102
        assert registry.POLICIES[record.name] == record
    finally:
        registry.POLICIES[record.name] = record  # the very object the pack was built from
