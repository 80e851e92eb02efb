"""isvc-runtime-supports-format: the ServingRuntime an InferenceService names supports its model format.

Rule: for each InferenceService whose ``spec.predictor.model.runtime`` names a ServingRuntime of the
manifests in its namespace, that runtime is not disabled and one of its ``supportedModelFormats`` is the
predictor's ``modelFormat`` (name, case-insensitive, and version when both give one). KServe refuses
the predictor otherwise and the InferenceService never becomes ready. A runtime that is not among the
manifests (another namespace's, a ClusterServingRuntime) is not judged.

Source: kserve #3632, #4298. Judged and worded once, in :mod:`core.rulebook.kserve`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import registry
from core.manifests import objects
from core.rulebook import kserve
from policylib import declare, views
from policylib import objects as glue

NAME = "isvc-runtime-supports-format"
SOURCE = registry.RULES[NAME].source


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    if not objs.runtimes:
        return
    for p in objs.predictors:
        r = next((r for r in objs.runtimes if r.namespace == p.namespace and r.name == p.runtime), None)
        if r is None:
            continue
        wanted = p.format_name + (f" version {p.format_version}" if p.format_version else "")
        supported = ", ".join(n + (f" {v}" if v else "") for n, v, _ in r.formats)
        message = glue.report(f"InferenceService {p.name}", kserve.runtime_supports(
            r.name, wanted, supported, objects.supports(r, p.format_name, p.format_version)), p.annotations)
        if message:
            report_violation(message, p.urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
