"""The pack's policies judged by :mod:`core.rulebook.waivers`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core.rulebook import waivers as rules
from policylib import declare, waivers
from policylib.pack import policies

# --- policy-waivers: per-object waivers name a policy of the pack and say why; what they waive is shown.


def policy_waivers(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    policies()  # every policy module imported, so each waivable policy is known (idempotent)
    for message, urn in waivers.waived_findings(args.resources):
        report_violation(message, urn)


declare.stack_policy(
    rules.NAME, policy_waivers, EnforcementLevel.ADVISORY, Severity.LOW,
    doc="""policy-waivers: per-object waivers name a policy of the pack and say why; what they waive is shown.

Rule: an annotation ``llm-serving.riotpiao.com/ignore-<policy>: <reason>`` (or checkov's
``checkov.io/skip<N>: <policy>=<reason>``) on an object or its pod template waives that policy's
findings on the object: the policy does not report them (:mod:`policylib.waivers`, applied to every
policy by :mod:`policylib.declare`), this one does, each as ``waived <policy> by <annotation>:
"<reason>": <finding>``; the reports show them as waived, with the reason. A waiver that
names no policy of the pack, or gives no reason, waives nothing and is reported here.

Source: kube-linter's ``ignore-check.kube-linter.io/<check>`` and checkov's ``checkov.io/skip<N>``
annotations (a suppression carries its reason).

Does not check: a waiver that waives nothing any more (the policy finds nothing on the object).
A waived policy is run again on the waiving object with its default configuration, so a waived
finding's text is the default configuration's.

The rule is judged and worded once, in :mod:`core.rulebook.waivers`.
""",
)
