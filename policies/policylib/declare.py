"""The pack's policy registry: one typed record a policy (:class:`PolicyRecord`), filed once.

A rule family module of ``policies/`` (``policies/<family>.py``, mirroring
``core/rulebook/<family>.py``) declares each of its policies with :func:`resource_policy` or
:func:`stack_policy`: name, ``validate``, enforcement level, severity, configuration properties and
its account (``doc``: what it judges, its sources, what it does not check). The description and
remediation are the text the rule family files beside its rules (:func:`core.judging.registry.describe_policy`),
its rules the registered ones of its name (``core.judging.registry.RULES``); so each is worded in one place.
:mod:`policylib.pack` builds the PolicyPack from :data:`POLICIES`. Pulumi's own compliance
policies declare a policy the same way, in one ``registerPolicy({...})`` record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ResourceValidationPolicy,
    Severity,
    StackValidationPolicy,
)

from core import rulebook
from core.judging import registry
from policylib import waivers

Kind = Literal["resource", "stack"]

#: A policy name: lowercase words joined by ``-`` (its fixtures' folder and page name).
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: The account's sentences on what the policy leaves alone (``Does not check: ...`` or ``Not judged: ...``,
#: to the end of their paragraph).
_DOES_NOT_CHECK = re.compile(r"\b(?:Does not check|Not judged):\s*(.+?)(?:\n\s*\n|\Z)", re.I | re.S)


@dataclass(frozen=True)
class PolicyRecord:
    """One pack policy: ``name``; ``kind`` (``resource``: run on each resource, ``stack``: once on
    the whole stack); ``validate`` (pulumi-policy's callback, unguarded); ``level``, ``severity``;
    ``config`` (the JSON Schema properties of its ``--policy-pack-config`` entry, ``{}``: none);
    ``doc`` (its account, shown on its page). ``family``: the module that declared it."""

    name: str
    kind: Kind
    validate: Callable[..., None]
    level: EnforcementLevel
    severity: Severity
    doc: str
    config: Mapping[str, Any] = field(default_factory=dict)

    @property
    def family(self) -> str:
        """The declaring module (``allocation``: ``policies/allocation.py``)."""
        return self.validate.__module__

    @property
    def text(self) -> registry.PolicyText:
        """Its description and remediation, filed by its rule family in ``core/rulebook/``."""
        return rulebook.policy_text(self.name)

    @property
    def rules(self) -> list[registry.Rule]:
        """The registered rules that name this policy, in registration order."""
        rulebook.register_all()
        return [r for r in registry.RULES.values() if r.policy == self.name]

    @property
    def does_not_check(self) -> str:
        """What the policy leaves alone: the account's ``Does not check:`` / ``Not judged:`` text ("" if none)."""
        return " ".join(" ".join(m.group(1).split()) for m in _DOES_NOT_CHECK.finditer(self.doc))

    def policy(self) -> Policy:
        """The pulumi-policy ``Policy`` (built once a record), its ``validate`` silent on an object
        that waives it (:func:`policylib.waivers.guard_resource` / ``guard_stack``)."""
        built = _BUILT.get(self.name)
        if built is None:
            built = _BUILT[self.name] = _build(self)
        return built


#: Every declared policy by name, in declaration order.
POLICIES: dict[str, PolicyRecord] = {}
_BUILT: dict[str, Policy] = {}


def _build(record: PolicyRecord) -> Policy:
    text = record.text
    schema = PolicyConfigSchema(properties=dict(record.config)) if record.config else None
    unguarded = record.name == waivers.rules.NAME
    if record.kind == "resource":
        validate = record.validate if unguarded else waivers.guard_resource(record.name, record.validate)
        return ResourceValidationPolicy(name=record.name, description=text.description, validate=validate,
                                        enforcement_level=record.level, severity=record.severity,
                                        config_schema=schema, remediation_steps=text.remediation)
    validate = record.validate if unguarded else waivers.guard_stack(record.name, record.validate)
    return StackValidationPolicy(name=record.name, description=text.description, validate=validate,
                                 enforcement_level=record.level, severity=record.severity, config_schema=schema,
                                 remediation_steps=text.remediation)


def declare(record: PolicyRecord) -> PolicyRecord:
    """File ``record``. ValueError: a name that is not lowercase words joined by ``-``, no description
    filed by a rule family (:func:`core.judging.registry.describe_policy`), a ``doc`` left empty, a
    configuration property without a type or description, or a name another function declared."""
    if not _NAME.fullmatch(record.name):
        raise ValueError(f"policy name {record.name!r}: use lowercase words joined by '-' (e.g. gpu-card-allocation)")
    rulebook.register_all()
    if record.name not in registry.POLICY_TEXTS:
        raise ValueError(f"policy {record.name}: no rule family describes it; add "
                         f"describe_policy({record.name!r}, description, remediation) beside its rules in core/rulebook/")
    if not record.doc.strip():
        raise ValueError(f"policy {record.name}: doc is empty; say what it judges, its source and what it does not check")
    for prop, spec in record.config.items():
        if not spec.get("type") or not spec.get("description"):
            raise ValueError(f"policy {record.name}: configuration property {prop} needs a type and a description")
    known = POLICIES.get(record.name)
    if known is not None and (known.family, known.validate.__qualname__) != (record.family, record.validate.__qualname__):
        raise ValueError(f"policy {record.name} is declared twice ({known.family} and {record.family})")
    POLICIES[record.name] = record
    return record


def resource_policy(name: str, validate: Callable[..., None], level: EnforcementLevel, severity: Severity, *,
                    doc: str, config: Mapping[str, Any] | None = None) -> PolicyRecord:
    """Declare resource policy ``name`` (run on each resource); errors as :func:`declare`."""
    return declare(PolicyRecord(name, "resource", validate, level, severity, doc, dict(config or {})))


def stack_policy(name: str, validate: Callable[..., None], level: EnforcementLevel, severity: Severity, *,
                 doc: str, config: Mapping[str, Any] | None = None) -> PolicyRecord:
    """Declare stack policy ``name`` (run once on the whole stack); errors as :func:`declare`."""
    return declare(PolicyRecord(name, "stack", validate, level, severity, doc, dict(config or {})))
