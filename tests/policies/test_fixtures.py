"""Every policy on its fixtures: allowed ones pass, disallowed ones are refused with the message.

gatekeeper-library style: ``policies/fixtures/<policy>/allowed/*.yaml`` must give that policy no
violation; each ``disallowed/*.yaml`` must give at least one violation whose message contains
every ``# expect:`` line at the top of the file. One parametrized test for the whole pack, so a
new policy is covered by adding its fixtures (``tests/policies/test_pack_metadata.py`` requires them).
The per-policy test files hold the edge cases.
"""

from __future__ import annotations

import re

import pytest

from core.problems import FINDING_FORM
from policylib.pack import policies
from tests.policy_harness import expectations, fixture_cases, run_fixture

CASES = {
    verdict: [(p, case) for p in policies() for case in fixture_cases(p.name, verdict)]
    for verdict in ("allowed", "disallowed")
}


def _id(param) -> str:
    return f"{param[0].name}/{param[1].name}"


@pytest.mark.parametrize("policy_case", CASES["allowed"], ids=_id)
def test_allowed_fixture(policy_case):
    policy, case = policy_case
    assert [v.message for v in run_fixture(policy, case)] == []


@pytest.mark.parametrize("policy_case", CASES["disallowed"], ids=_id)
def test_disallowed_fixture(policy_case):
    policy, case = policy_case
    found = run_fixture(policy, case)
    assert any(all(e in v.message for e in expectations(case)) for v in found), [v.message for v in found]


@pytest.mark.parametrize("policy_case", CASES["disallowed"], ids=_id)
def test_disallowed_messages_have_one_form(policy_case):
    """Every message names its subject, says what is wrong with the value, the fix and the source
    (``core.problems.Finding``); an object made from a stack file is told the stack-file key."""
    policy, case = policy_case
    for v in run_fixture(policy, case):
        m = re.match(FINDING_FORM, v.message, re.S)
        assert m, v.message
        assert m["subject"] and m["wrong"] and m["fix"] and m["source"], v.message
        assert "Fix:" not in m["wrong"] and "(rule " not in v.message, v.message
