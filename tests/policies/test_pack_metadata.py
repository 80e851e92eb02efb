"""Every policy of the pack is complete: name, description, level, severity, remediation, fixtures.

gatekeeper-library style: one module per policy, allowed and disallowed fixtures beside it.
A policy that lacks any of these fails here, so a new policy cannot land half-described.
"""

from __future__ import annotations

import re

import pytest
from pulumi_policy import EnforcementLevel

from policylib.pack import policies, policy_modules
from tests.policy_harness import FIXTURES, expectations, fixture_cases

KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MODULES = policy_modules()


def test_the_pack_has_policies_and_unique_names():
    names = [p.name for p in policies()]
    assert len(names) >= 10, names
    assert len(names) == len(set(names)), names


@pytest.mark.parametrize("module", MODULES)
def test_policy_metadata(module):
    policy = __import__(module).POLICY
    assert KEBAB.match(policy.name), policy.name
    assert policy.name.replace("-", "_") == module, "module name is the policy name in snake case"
    assert policy.description and not policy.description.endswith(" "), policy.name
    assert policy.enforcement_level in (EnforcementLevel.MANDATORY, EnforcementLevel.ADVISORY), policy.name
    assert policy.severity is not None, f"{policy.name}: set a severity"
    assert policy.remediation_steps and len(policy.remediation_steps) > 20, f"{policy.name}: remediation steps"


@pytest.mark.parametrize("module", MODULES)
def test_policy_has_allowed_and_disallowed_fixtures(module):
    name = module.replace("_", "-")
    allowed = fixture_cases(name, "allowed")
    disallowed = fixture_cases(name, "disallowed")
    assert allowed, f"no fixtures under {FIXTURES / name / 'allowed'}"
    assert disallowed, f"no fixtures under {FIXTURES / name / 'disallowed'}"
    for case in disallowed:
        assert expectations(case), f"{case}: a disallowed fixture starts with '# expect: <message part>'"


def test_fixture_directories_belong_to_policies():
    """A fixture directory without a policy is a renamed or deleted policy left behind."""
    names = {m.replace("_", "-") for m in MODULES}
    dirs = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert dirs <= names, sorted(dirs - names)


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
