"""kserve-deployment-mode: an InferenceService runs in a deployment mode the cluster serves.

Rule, on a cluster whose inventory records ``kserve_deployment_mode``: an InferenceService without
``serving.kserve.io/deploymentMode: RawDeployment`` takes the cluster's default. Where the cluster has
no Knative (``NoKnative``) it is never ready; where the default is Serverless, a predictor that holds
cards becomes a Knative revision, and every update starts the new revision's pod beside the old one.
Not judged where the inventory does not record the mode.

Source: kserve #1768. Judged and worded once, in :mod:`core.rulebook.kserve`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import manifests, registry
from core.rulebook import kserve
from policylib import containers, declare, stackconfig, views

NAME = "kserve-deployment-mode"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or args.resource_type != manifests.ISVC_TYPE or not w.running:
        return
    try:
        default = stackconfig.inventory().kserve_deployment_mode
    except stackconfig.StackConfigError:
        return
    if default is not None:
        containers.report(args, report_violation, w, kserve.deployment_mode(w.deployment_mode, default, w.cards_per_pod))


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
