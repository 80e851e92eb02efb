"""The pack on held-out failure kinds: ``tests/heldout/kinds/``, one manifest a public report's failure,
each correct for worker-1 (policies/fixtures/Pulumi.fixture.yaml) but for its one fault, written in the
form the source shows. Each file's header gives its source URL, the fault (``# problem: <policies that
catch it> -- <what>``), the mechanism meant to catch it (``# mechanism:``) and, where the pack cannot yet
read what the fault needs, ``# needs: <model>``.

Three measures, recorded in docs/failure-kinds.md: no mandatory finding by a policy the file does not
name (no false mandatory finding); each file's fault is caught by a named policy, or the file says what
it needs; and the share caught, which the page states as ``caught N of M``.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest
from pulumi_policy import EnforcementLevel

from policylib.pack import policies
from tests.paths import ROOT
from tests.policy_harness import FIXTURES, run_policy, use_stack_config
from tools.offline.manifests import load_manifest_dir, load_stack_file

KINDS = ROOT / "tests" / "heldout" / "kinds"
FILES = sorted(KINDS.glob("*.yaml"))
DOC = ROOT / "docs" / "failure-kinds.md"


def header(path: Path, key: str) -> str | None:
    """The value of the header line ``# <key>: ...`` (None when absent)."""
    for line in path.read_text().splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def named(path: Path) -> set[str]:
    """The policies the file's ``# problem:`` line names (before ``--``)."""
    return {p.strip() for p in (header(path, "problem") or "").split("--")[0].split(",") if p.strip()}


@cache
def findings(path: Path) -> tuple[tuple[str, bool], ...]:
    """``(policy, mandatory)`` of every finding of every pack policy on the file, on worker-1."""
    use_stack_config(load_stack_file(FIXTURES / "Pulumi.fixture.yaml"))
    resources = load_manifest_dir(path, stack="heldout")
    return tuple((p.name, p.enforcement_level == EnforcementLevel.MANDATORY) for p in policies() for _ in run_policy(p, resources))


def caught(path: Path) -> bool:
    return bool(named(path) & {p for p, _ in findings(path)})


def test_at_least_twenty_kinds_each_with_a_public_source():
    assert len(FILES) >= 20
    for f in FILES:
        assert re.match(r"# Source: https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+\n", f.read_text()), f.name
        assert named(f) and header(f, "mechanism"), f.name


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_false_mandatory_finding(path):
    false = [p for p, mandatory in findings(path) if mandatory and p not in named(path)]
    assert not false, false


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_caught_or_says_what_it_needs(path):
    """A kind the pack misses says which model it needs (``# needs:``); one it catches says nothing of the kind."""
    assert caught(path) != bool(header(path, "needs")), (path.name, findings(path))


def test_the_page_states_the_share_and_each_kind():
    text = DOC.read_text()
    share = sum(caught(f) for f in FILES)
    assert f"caught {share} of {len(FILES)}" in text
    for f in FILES:
        assert f"`{f.stem}`" in text, f.stem
