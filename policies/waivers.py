"""How the pack reads the manifests for the policies :mod:`core.rulebook.waivers` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, StackValidationArgs

from core.rulebook import waivers as rules
from policylib import declare, waivers
from policylib.pack import policies

# --- policy-waivers: per-object waivers name a policy of the pack and say why; what they waive is shown.


def policy_waivers(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    policies()  # every policy module imported, so each waivable policy is known (idempotent)
    for message, urn in waivers.waived_findings(args.resources):
        report_violation(message, urn)


declare.validate(rules.NAME, policy_waivers)
