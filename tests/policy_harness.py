"""Run policies in-process on manifests, the way the pack's analyzer servicer calls them.

Fast enough for one test per fixture. It builds the same argument objects pulumi-policy's
servicer builds (``ResourceValidationArgs`` per resource, ``StackValidationArgs`` with every
resource), with properties decoded the way the servicer decodes them from the wire (a
``google.protobuf.Struct``, so every number is a double: ``replicas: 0`` arrives as ``0.0``)
behind pulumi-policy's unknown-checking proxy, and loads the stack config into the Pulumi
runtime config as the servicer does from ``PULUMI_CONFIG``.
End-to-end runs of the real pack process over gRPC are in ``tests/tools/test_analyze_grpc.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi.runtime
import yaml
from google.protobuf import json_format
from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.policy import PolicyResource, PolicyResourceOptions, ResourceValidationArgs, StackValidationArgs
from pulumi_policy.proxy import unknown_checking_proxy

from tools.offline.manifests import Resource, load_manifest_dir, load_stack_file, resources_from_documents
from tools.offline.packproc import to_struct

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "policies" / "fixtures"
#: The inventory and models every fixture uses unless its directory has its own stack file.
DEFAULT_STACK_FILE = FIXTURES / "Pulumi.fixture.yaml"


@dataclass(frozen=True)
class Violation:
    policy: str
    message: str
    urn: str


def use_stack_config(config: dict[str, Any]) -> None:
    """Load a stack file's ``config:`` map into the Pulumi runtime config (as PULUMI_CONFIG would).
    A config without workloads clears the previous one's (the pack reads their measured figures)."""
    for key, value in {"llm-serving:workloads": {}, **config}.items():
        pulumi.runtime.set_config(key, value if isinstance(value, str) else json.dumps(value))


def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], None, [], None)


def wire_props(props: dict[str, Any]):
    """``props`` as a policy receives them from the analyzer protocol: through a protobuf Struct
    (numbers become doubles), pulumi-policy's ``deserialize_properties``, and its proxy."""
    return unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(to_struct(props))))


def run_policy(policy, resources: Iterable[Resource], policy_config: dict | None = None) -> list[Violation]:
    """Violations ``policy`` reports on ``resources`` (stack config must be loaded first)."""
    found: list[Violation] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append(Violation(policy.name, message, urn or ""))

    resources = list(resources)
    if isinstance(policy, ResourceValidationPolicy):
        for r in resources:
            args = ResourceValidationArgs(
                r.type, wire_props(r.props), r.urn, r.name, _opts(), None, policy_config
            )
            policy.validate(args, report)
    elif isinstance(policy, StackValidationPolicy):
        prs = [
            PolicyResource(r.type, wire_props(r.props), r.urn, r.name, _opts(), None, None, [], {})
            for r in resources
        ]
        policy.validate(StackValidationArgs(prs, policy_config), report)
    else:  # pragma: no cover - a new policy class would need handling here
        raise TypeError(f"unknown policy class {type(policy).__name__}")
    return found


def fixture_cases(policy_name: str, verdict: str, root: Path = FIXTURES) -> list[Path]:
    """The fixture files of ``<root>/<policy_name>/<verdict>/`` (verdict: allowed|disallowed; root:
    ``policies/fixtures``)."""
    return sorted((root / policy_name / verdict).glob("*.yaml"))


def expectations(case: Path) -> list[str]:
    """The ``# expect: <substring>`` lines at the top of a fixture file."""
    out = []
    for line in case.read_text().splitlines():
        if line.startswith("# expect:"):
            out.append(line.split(":", 1)[1].strip())
    return out


def stack_file_for(case: Path) -> Path:
    """The fixture's stack file: the one its ``# inventory: <path under policies/fixtures>`` line
    names (someone else's cluster: ``inventories/public.yaml``), else ``<policy
    dir>/Pulumi.fixture.yaml`` if present, else the default (the user's cluster)."""
    for line in case.read_text().splitlines():
        if line.startswith("# inventory:"):
            return FIXTURES / line.split(":", 1)[1].strip()
        if not line.startswith("#"):
            break
    own = case.parent.parent / "Pulumi.fixture.yaml"
    return own if own.exists() else DEFAULT_STACK_FILE


def run_fixture(policy, case: Path) -> list[Violation]:
    """Load the fixture's stack config and run ``policy`` on its manifests."""
    use_stack_config(load_stack_file(stack_file_for(case)))
    return run_policy(policy, load_manifest_dir(case, stack="fixture"))


def check_case(policy, case: Path) -> None:
    """The one fixture runner (Polaris runs every check's samples through one): an ``allowed/`` case
    gives ``policy`` no violation; a ``disallowed/`` one at least one whose message contains every
    ``# expect:`` line, and every message has the one finding form (subject, what is wrong, fix,
    source: :data:`core.judging.problems.FINDING_FORM`). AssertionError otherwise, naming the case."""
    from core.judging.problems import FINDING_FORM  # noqa: PLC0415 - the message form, only here

    messages = [v.message for v in run_fixture(policy, case)]
    if case.parent.name == "allowed":
        assert messages == [], f"{case}: an allowed fixture gives {policy.name} a violation"
        return
    assert case.parent.name == "disallowed", f"{case}: a fixture lives under allowed/ or disallowed/"
    expected = expectations(case)
    assert expected, f"{case}: a disallowed fixture starts with '# expect: <message part>'"
    assert any(all(e in m for e in expected) for m in messages), (str(case), expected, messages)
    for m in messages:
        form = re.match(FINDING_FORM, m, re.S)
        assert form and form["subject"] and form["wrong"] and form["fix"] and form["source"], m
        assert "Fix:" not in form["wrong"] and "(rule " not in m, m


def manifests(text: str) -> list[Resource]:
    """Resources from inline YAML (tests that build a case in code)."""
    return resources_from_documents(list(yaml.safe_load_all(text)), stack="test")
