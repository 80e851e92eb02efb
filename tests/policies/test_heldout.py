"""The pack on a held-back set: public GPU-serving manifests and manifests carrying the settings of
public reports found after the rules were written (``tests/heldout/``, each with its source URL and
the problems it carries, ``# problem: <the policy that should catch it> -- <what>``).

Judged with someone else's cluster (policies/fixtures/Pulumi.public.yaml), every policy but
startup-probe-covers-cold-start (a house rule, as in tests/policies/test_public_manifests.py). Two measures,
recorded in docs/failure-kinds.md: no mandatory finding that is not one of the file's problems (no
false mandatory finding), and the share of the problems caught (a finding by the named policy).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi_policy import EnforcementLevel

from policylib.pack import policies
from tests.paths import ROOT
from tests.policy_harness import FIXTURES, run_policy, use_stack_config
from tools.offline.manifests import load_manifest_dir, load_stack_file

HELDOUT = ROOT / "tests" / "heldout"
FILES = sorted(HELDOUT.glob("*.yaml"))
#: Problems caught / carried, as docs/failure-kinds.md records them.
CAUGHT, CARRIED = 7, 10


def problems(path: Path) -> list[str]:
    """The policies named by the file's ``# problem:`` lines."""
    return [line.split(":", 1)[1].split("--")[0].strip() for line in path.read_text().splitlines()
            if line.startswith("# problem:")]


def findings(path: Path) -> list[tuple[str, bool, str]]:
    """``(policy, mandatory, message)`` of every finding on the file."""
    use_stack_config(load_stack_file(FIXTURES / "Pulumi.public.yaml"))
    resources = load_manifest_dir(path, stack="heldout")
    return [(p.name, p.enforcement_level == EnforcementLevel.MANDATORY, v.message)
            for p in policies() if p.name != "startup-probe-covers-cold-start" for v in run_policy(p, resources)]


def test_the_set_has_ten_files_with_sources():
    assert len(FILES) >= 10
    for f in FILES:
        assert f.read_text().startswith("# Source"), f.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_false_mandatory_finding(path):
    expected = set(problems(path))
    false = [(p, m) for p, mandatory, m in findings(path) if mandatory and p not in expected]
    assert not false, false


def test_the_share_caught_is_the_recorded_one():
    carried = [(f.name, p) for f in FILES for p in problems(f)]
    caught = [(name, p) for name, p in carried if p in {q for q, _, _ in findings(HELDOUT / name)}]
    assert (len(caught), len(carried)) == (CAUGHT, CARRIED), (caught, carried)
