"""Discovery and assembly of the policy modules (kept out of ``__main__`` so tests can list them)."""

from __future__ import annotations

import importlib
import os
import pkgutil

from pulumi_policy import EnforcementLevel, Policy, PolicyPack

PACK_NAME = "llm-serving-policies"
POLICIES_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def policy_modules() -> list[str]:
    """Names of the policy modules, sorted: every top-level module in ``policies/`` but
    ``__main__``, ``policylib`` and names starting with ``_``."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules([POLICIES_DIR])
        if not m.ispkg and not m.name.startswith("_")
    )


def policies() -> list[Policy]:
    """The ``POLICY`` of each policy module, in module order."""
    out = []
    for name in policy_modules():
        module = importlib.import_module(name)
        out.append(module.POLICY)
    return out


def build_pack() -> PolicyPack:
    """Serve the pack (blocks, as pulumi-policy does). Policies that set no level are advisory."""
    return PolicyPack(name=PACK_NAME, policies=policies(), enforcement_level=EnforcementLevel.ADVISORY)
