"""The pack built from the policy records (:data:`core.judging.registry.POLICIES`), each joined
with the code that reads the manifests (:data:`policylib.declare.POLICIES`); kept out of
``__main__`` so tests can list it: every module of ``policies/`` imported, each policy built once."""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
from types import ModuleType

from pulumi_policy import EnforcementLevel, Policy, PolicyPack

from policylib import declare

PACK_NAME = "llm-serving-policies"


def _pack_dir() -> str:
    """The pack's folder: the one above ``policylib`` when it holds ``PulumiPolicy.yaml`` (the
    checkout's ``policies/``, a published pack); else the working directory when it does (an
    installed package: ``policylib`` is in site-packages, and the pack runs in its own folder, as
    the CLI and ``tools.analyze`` start it); else the one above ``policylib``."""
    beside = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # noqa: PTH100, PTH120
    if os.path.isfile(os.path.join(beside, "PulumiPolicy.yaml")):  # noqa: PTH113, PTH118
        return beside
    here = os.getcwd()  # noqa: PTH109
    return here if os.path.isfile(os.path.join(here, "PulumiPolicy.yaml")) else beside  # noqa: PTH113, PTH118


POLICIES_DIR = _pack_dir()


def policy_modules() -> list[str]:
    """Names of the rule family modules, sorted: every top-level module in ``policies/`` but
    ``__main__``, ``policylib`` and names starting with ``_``."""
    return sorted(
        m.name
        for m in pkgutil.iter_modules([POLICIES_DIR])
        if not m.ispkg and not m.name.startswith("_")
    )


def _module(name: str) -> ModuleType:
    """The rule family module ``name`` of ``policies/``: the one already imported (the pack process
    and the tests import it by name), else loaded from its file, registered under its name as
    an import would (the offline tools, whose path has the installed ``policylib`` only)."""
    if name in sys.modules:
        return sys.modules[name]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name != name:
            raise
    spec = importlib.util.spec_from_file_location(name, os.path.join(POLICIES_DIR, name + ".py"))  # noqa: PTH118
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def records() -> list[declare.PackPolicy]:
    """Every policy of the pack (each family module of ``policies/`` imported, each record joined
    with its ``validate``: :func:`policylib.declare.build`), by name (``-`` read as ``_``, the order
    the pack has always listed them in)."""
    for name in policy_modules():
        _module(name)
    return sorted(declare.build().values(), key=lambda r: r.name.replace("-", "_"))


def policies() -> list[Policy]:
    """The pulumi-policy ``Policy`` of each record, in :func:`records` order."""
    return [r.policy() for r in records()]


def policy(name: str) -> Policy:
    """The pack's policy ``name``. KeyError: no family declares it."""
    records()
    return declare.POLICIES[name].policy()


def build_pack() -> PolicyPack:
    """Serve the pack (blocks, as pulumi-policy does). Policies that set no level are advisory."""
    return PolicyPack(name=PACK_NAME, policies=policies(), enforcement_level=EnforcementLevel.ADVISORY)
