"""isvc-raw-min-replicas: ``minReplicas: 0`` does not scale a RawDeployment InferenceService to zero.

Rule: an InferenceService annotated ``serving.kserve.io/deploymentMode: RawDeployment`` whose
predictor has ``minReplicas: 0`` and a ``maxReplicas`` other than 0 is reported: KServe gives no
error and runs one pod (its HPA cannot scale to zero), which holds its cards. The pack's allocation
counts that pod (:func:`core.manifests.pods.workload`). Both at 0 parks it (isvc-not-parked-silently).

Advisory: the pod runs; the manifest says something else.
Source: kserve #3514. Judged and worded once, in :mod:`core.rulebook.kserve`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import manifests, registry
from core.manifests.read import as_map, whole_number
from core.rulebook import kserve
from policylib import containers, declare, views

NAME = "isvc-raw-min-replicas"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or args.resource_type != manifests.ISVC_TYPE:
        return
    predictor = as_map(as_map(args.props.get("spec")).get("predictor"))
    breach = kserve.raw_min_replicas(w.deployment_mode, whole_number(predictor.get("minReplicas")),
                                     whole_number(predictor.get("maxReplicas")), w.cards_per_pod)
    containers.report(args, report_violation, w, breach)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
