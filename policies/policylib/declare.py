"""A pack policy declared from its registry record, once.

A policy module gives its name, its ``validate``, its enforcement level and severity (and its
configuration schema, if it has one); the description and the remediation are the text its rule
family files beside its rules (:func:`core.registry.describe_policy`, read back by
:func:`core.rulebook.policy_text`), so each is worded in one place. KeyError: no family
describes ``name``.
"""

from __future__ import annotations

from collections.abc import Callable

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from core import rulebook
from policylib import waivers


def resource_policy(
    name: str,
    validate: Callable[[ResourceValidationArgs, ReportViolation], None],
    level: EnforcementLevel,
    severity: Severity,
    config_schema: PolicyConfigSchema | None = None,
) -> ResourceValidationPolicy:
    """Policy ``name``, run on each resource, with its registered description and remediation; silent on
    an object that waives it (:func:`policylib.waivers.guard_resource`)."""
    text = rulebook.policy_text(name)
    validate = validate if name == waivers.rules.NAME else waivers.guard_resource(name, validate)
    return ResourceValidationPolicy(name=name, description=text.description, validate=validate, enforcement_level=level,
                                    severity=severity, config_schema=config_schema, remediation_steps=text.remediation)


def stack_policy(
    name: str,
    validate: Callable[[StackValidationArgs, ReportViolation], None],
    level: EnforcementLevel,
    severity: Severity,
    config_schema: PolicyConfigSchema | None = None,
) -> StackValidationPolicy:
    """Policy ``name``, run once on the whole stack, with its registered description and remediation;
    without its findings on objects that waive it (:func:`policylib.waivers.guard_stack`)."""
    text = rulebook.policy_text(name)
    validate = validate if name == waivers.rules.NAME else waivers.guard_stack(name, validate)
    return StackValidationPolicy(name=name, description=text.description, validate=validate, enforcement_level=level,
                                 severity=severity, config_schema=config_schema, remediation_steps=text.remediation)
