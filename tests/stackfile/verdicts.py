"""The pack's verdict on a stack file, in process: load it, render its manifests as the program
does, and run every policy of the pack on them with the stack's config loaded, as the offline
preview and ``pulumi preview --policy-pack`` do. The engine, card and capacity rules are judged
there once (docs/architecture.md), so the stack-file tests of those rules assert these findings."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel

from policylib.pack import policies
from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tests.policy_harness import DEFAULT_STACK_FILE, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file, resources_from_documents

PROD = load_stack_file(PROD_STACK_FILE)
W = "llm-serving:workloads"


@dataclass(frozen=True)
class Verdict:
    """One finding: the policy, whether it is mandatory, and its message."""

    policy: str
    mandatory: bool
    message: str


def prod(**changes: dict[str, Any]) -> dict:
    """Prod's ``config:`` map with each workload's keys changed (a value of None removes the key)."""
    raw = copy.deepcopy(PROD)
    for workload, fields in changes.items():
        for key, value in fields.items():
            if value is None:
                raw[W][workload].pop(key, None)
            else:
                raw[W][workload][key] = value
    return raw


def verdicts(raw: dict, only: str | None = None) -> list[Verdict]:
    """Every finding of the pack (``only``: of that policy) on the manifests ``raw`` renders (the
    loader must accept it)."""
    resources = resources_from_documents(render_manifests(load_stack_config(raw)), stack="test")
    chosen = [p for p in policies() if only in (None, p.name)]
    assert chosen, f"no policy {only}"
    use_stack_config(raw)
    try:
        return [Verdict(p.name, p.enforcement_level == EnforcementLevel.MANDATORY, v.message)
                for p in chosen for v in run_policy(p, resources)]
    finally:
        use_stack_config(load_stack_file(DEFAULT_STACK_FILE))


def mandatory(raw: dict, policy: str) -> list[str]:
    """The mandatory findings of ``policy`` on ``raw``'s manifests."""
    return [v.message for v in verdicts(raw, policy) if v.mandatory]


def refused_once(raw: dict, policy: str) -> str:
    """The one mandatory finding on ``raw``'s manifests, which must be ``policy``'s."""
    found = [v for v in verdicts(raw) if v.mandatory]
    assert [v.policy for v in found] == [policy], [f"{v.policy}: {v.message}" for v in found]
    return found[0].message
