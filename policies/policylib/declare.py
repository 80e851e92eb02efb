"""The pack's side of a policy: the record its rule family declares (:class:`core.judging.registry.PolicyRecord`,
``core/rulebook/<family>.py``) joined with the ``validate`` that reads the manifests, built once.

A record with a ``check`` needs nothing here: the pack runs the check on each Deployment, StatefulSet
and InferenceService (:func:`check_validate`). A record without one is read by its family's pack
module (``policies/<family>.py``), which binds its ``validate`` with :func:`validate`. Pulumi's own
compliance policies declare a policy the same way, in one ``registerPolicy({...})`` record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationPolicy,
)

from core import rulebook
from core.judging import registry
from policylib import containers, views, waivers

#: Each policy's ``validate`` bound by a pack module (:func:`validate`), by policy name.
VALIDATES: dict[str, Callable[..., None]] = {}


@dataclass(frozen=True)
class PackPolicy:
    """One policy of the pack: its ``record`` (declared by its rule family) and ``validate``
    (pulumi-policy's callback, unguarded: the bound one, or the record's check run on each workload)."""

    record: registry.PolicyRecord
    validate: Callable[..., None]

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def kind(self) -> registry.PolicyKind:
        return self.record.kind

    @property
    def level(self) -> EnforcementLevel:
        return EnforcementLevel(self.record.level)

    @property
    def severity(self) -> Severity:
        return Severity(self.record.severity)

    @property
    def doc(self) -> str:
        return self.record.doc

    @property
    def config(self) -> Mapping[str, Any]:
        return self.record.config

    @property
    def family(self) -> str:
        """The rule family that declared it (``pods``: ``core/rulebook/pods.py``, ``policies/pods.py``)."""
        return self.record.family

    @property
    def rules(self) -> list[registry.Rule]:
        return self.record.rules

    @property
    def does_not_check(self) -> str:
        return self.record.does_not_check

    def policy(self) -> Policy:
        """The pulumi-policy ``Policy`` (built once a policy), its ``validate`` silent on an object
        that waives it (:func:`policylib.waivers.guard_resource` / ``guard_stack``)."""
        built = _BUILT.get(self.name)
        if built is None:
            built = _BUILT[self.name] = _build(self)
        return built


#: Every policy of the pack by name, in declaration order (filled by :func:`build`).
POLICIES: dict[str, PackPolicy] = {}
_BUILT: dict[str, Policy] = {}


def validate(name: str, fn: Callable[..., None]) -> Callable[..., None]:
    """Bind ``fn`` as the ``validate`` of policy ``name`` (declared beside its rules with
    :func:`core.judging.registry.declare_policy`). ValueError: no rule family declares ``name``,
    its record has a ``check`` (the pack runs it), or another function is bound to it."""
    rulebook.register_all()
    record = registry.POLICIES.get(name)
    if record is None:
        raise ValueError(f"policy {name}: no rule family declares it; add declare_policy({name!r}, ...) "
                         "beside its rules in core/rulebook/<family>.py")
    if record.check is not None:
        raise ValueError(f"policy {name}: its record has a check, which the pack runs on each workload; "
                         "drop the check or this validate")
    known = VALIDATES.get(name)
    if known is not None and (known.__module__, known.__qualname__) != (fn.__module__, fn.__qualname__):
        raise ValueError(f"policy {name} has two validates ({known.__module__} and {fn.__module__})")
    VALIDATES[name] = fn
    return fn


def _breaches(found: registry.Breach | Iterable[registry.Breach] | None) -> list[registry.Breach]:
    if found is None:
        return []
    return [found] if isinstance(found, registry.Breach) else list(found)


def check_validate(record: registry.PolicyRecord) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    """The ``validate`` of a record with a ``check``: on a Deployment, StatefulSet or InferenceService,
    report each breach the check returns about the workload (``Deployment x: ...``)."""
    check = record.check
    assert check is not None

    def run(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        w = views.of(args)
        if w is None:
            return
        for breach in _breaches(check(w, args.props, args.get_config() or {})):
            containers.report(args, report_violation, w, breach)

    run.__module__, run.__qualname__ = check.__module__, check.__qualname__
    return run


def build() -> dict[str, PackPolicy]:
    """:data:`POLICIES`: every record the rule families declare, joined with its ``validate``
    (the pack modules imported first: :func:`policylib.pack.records`). ValueError: a record
    without a check that no pack module reads."""
    rulebook.register_all()
    for name, record in registry.POLICIES.items():
        known = POLICIES.get(name)
        if known is not None and known.record is record:
            continue
        if record.check is not None:
            fn = check_validate(record)
        elif name in VALIDATES:
            fn = VALIDATES[name]
        else:
            raise ValueError(f"policy {name}: declared in {record.module} with no check, and no pack module reads it; "
                             f"give it check=, or bind a validate in policies/{record.family}.py with "
                             f"declare.validate({name!r}, <function>)")
        POLICIES[name] = PackPolicy(record, fn)
        _BUILT.pop(name, None)
    return POLICIES


def _build(p: PackPolicy) -> Policy:
    record = p.record
    schema = PolicyConfigSchema(properties=dict(record.config)) if record.config else None
    unguarded = record.name == waivers.rules.NAME
    if record.kind == "resource":
        fn = p.validate if unguarded else waivers.guard_resource(record.name, p.validate)
        return ResourceValidationPolicy(name=record.name, description=record.description, validate=fn,
                                        enforcement_level=p.level, severity=p.severity,
                                        config_schema=schema, remediation_steps=record.remediation)
    fn = p.validate if unguarded else waivers.guard_stack(record.name, p.validate)
    return StackValidationPolicy(name=record.name, description=record.description, validate=fn,
                                 enforcement_level=p.level, severity=p.severity, config_schema=schema,
                                 remediation_steps=record.remediation)
