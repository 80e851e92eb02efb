"""Every policy on its fixtures: allowed ones pass, disallowed ones are refused with the message.

gatekeeper-library style: ``policies/fixtures/<policy>/allowed/*.yaml`` must give that policy no
violation; each ``disallowed/*.yaml`` must give at least one violation whose message contains
every ``# expect:`` line at the top of the file, each message in the one finding form. One runner
(:func:`tests.policy_harness.check_case`) for the whole pack, so a new policy is covered by adding
its fixtures (``tests/policies/test_pack_metadata.py`` requires them). The per-policy test files
hold the edge cases.
"""

from __future__ import annotations

import pytest

from policylib.pack import policies
from tests.policy_harness import check_case, fixture_cases

CASES = [(p, case) for p in policies() for verdict in ("allowed", "disallowed") for case in fixture_cases(p.name, verdict)]


@pytest.mark.parametrize("policy_case", CASES, ids=lambda c: f"{c[0].name}/{c[1].parent.name}/{c[1].name}")
def test_fixture(policy_case):
    policy, case = policy_case
    check_case(policy, case)


def test_the_runner_fails_a_fixture_that_does_not_hold(tmp_path):
    """The runner is not vacuous: an allowed case that violates, and a disallowed case whose
    expectation is not met, each fail it."""
    from tests.policy_harness import FIXTURES  # noqa: PLC0415

    (policy,) = [p for p in policies() if p.name == "gpu-whole-cards"]
    bad = sorted((FIXTURES / "gpu-whole-cards" / "disallowed").glob("*.yaml"))[0]
    for verdict, text in (("allowed", bad.read_text()),
                          ("disallowed", "# expect: no such message\n" + bad.read_text())):
        case = tmp_path / "gpu-whole-cards" / verdict / bad.name
        case.parent.mkdir(parents=True)
        case.write_text(text)
        with pytest.raises(AssertionError):
            check_case(policy, case)
