"""isvc-not-parked-silently: an InferenceService at zero replicas is declared parked.

Rule: an InferenceService whose predictor sits at zero replicas (``minReplicas: 0`` and
``maxReplicas: 0``, or ``replicas: 0``) carries annotation ``facts.PARKED_ANNOTATION`` with
the reason as its value (non-empty). Numbers are read as written or as the analyzer's gRPC
protocol delivers them (``0.0``).

Source: seed kustomization.yaml ("ornith is retired: its InferenceService still reports
Ready=True while running zero replicas, because desired equals available at 0"), spec facts
row "An InferenceService at zero replicas still reports Ready=True". Zero replicas on purpose
is fine (seed 000 parked clef-serve "to free the only V100"), but then it says so, so no
dashboard's Ready=True is taken for a serving model.

Advisory, not mandatory: an undeclared zero breaks no serving path by itself (no card is
held, no Service changes); it misleads whoever reads Ready=True. Judgement, so it warns.

Does not check: Deployments at zero (they report 0/0 honestly; service-selector-uniqueness
judges a Service left without endpoints); ``minReplicas: 0`` with a positive or omitted
``maxReplicas`` (scale-to-zero in Serverless mode, which answers after a cold start); that a
parked InferenceService is also left out of Services.

The rule is judged and worded once, in :mod:`core.rulebook.kserve`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import facts, manifests, registry, terms
from core.rulebook import kserve as rules
from policylib import declare
from policylib import resource_helpers as rh

NAME = "isvc-not-parked-silently"
SOURCE = registry.RULES[NAME].source


def zero_replicas(predictor) -> str | None:
    """How the predictor is at zero (``"minReplicas 0, maxReplicas 0"``), or None when it is not."""
    if rh.whole(predictor.get("replicas")) == 0:
        return "replicas 0"
    lo, hi = rh.whole(predictor.get("minReplicas")), rh.whole(predictor.get("maxReplicas"))
    if lo == 0 and hi == 0:
        return "minReplicas 0, maxReplicas 0"
    return None


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != manifests.ISVC_TYPE:
        return
    predictor = rh.mapping(rh.mapping(args.props.get("spec")).get("predictor"))
    how = zero_replicas(predictor)
    meta = rh.mapping(args.props.get("metadata"))
    annotations = rh.mapping(meta.get("annotations"))
    reason = annotations.get(facts.PARKED_ANNOTATION)
    breach = rules.parked_declared(how, None if reason is None else str(reason))
    if breach is not None:
        report_violation(terms.message(annotations, breach.finding(f"InferenceService {meta.get('name', '')}")), args.urn)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
