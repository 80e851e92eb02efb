"""How the pack reads the manifests for the policies :mod:`core.rulebook.kserve` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from core.base import facts
from core.judging import terms
from core.judging.terms import message
from core.k8s import manifests
from core.k8s.manifests import objects
from core.rulebook import kserve
from core.rulebook import kserve as rules
from policylib import containers, declare, stackconfig, views
from policylib import objects as glue
from policylib import resource_helpers as rh

# --- isvc-not-parked-silently: an InferenceService at zero replicas is declared parked.


def zero_replicas(predictor) -> str | None:
    """How the predictor is at zero (``"minReplicas 0, maxReplicas 0"``), or None when it is not."""
    if rh.whole(predictor.get("replicas")) == 0:
        return "replicas 0"
    lo, hi = rh.whole(predictor.get("minReplicas")), rh.whole(predictor.get("maxReplicas"))
    if lo == 0 and hi == 0:
        return "minReplicas 0, maxReplicas 0"
    return None


def isvc_not_parked_silently(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
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


declare.validate("isvc-not-parked-silently", isvc_not_parked_silently)


# --- isvc-raw-min-replicas: judged by its record's check (core.rulebook.kserve.raw_min_replicas_check).


# --- isvc-runtime-supports-format: the ServingRuntime an InferenceService names supports its model format.


def isvc_runtime_supports_format(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


declare.validate("isvc-runtime-supports-format", isvc_runtime_supports_format)


# --- kserve-deployment-mode: an InferenceService runs in a deployment mode the cluster serves.


def kserve_deployment_mode(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or args.resource_type != manifests.ISVC_TYPE or not w.running:
        return
    try:
        default = stackconfig.inventory().kserve_deployment_mode
    except stackconfig.StackConfigError:
        return
    if default is not None:
        containers.report(args, report_violation, w, kserve.deployment_mode(w.deployment_mode, default, w.cards_per_pod))


declare.validate("kserve-deployment-mode", kserve_deployment_mode)


# --- kserve-owned-names: no Service or Deployment takes the name KServe gives an InferenceService's predictor.

OWNED_KINDS = ("kubernetes:core/v1:Service", "kubernetes:apps/v1:Deployment")


def kserve_owned_names(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    taken: dict[tuple[str, str], str] = {}
    for r in args.resources:
        if r.resource_type == "kubernetes:serving.kserve.io/v1beta1:InferenceService":
            meta = rh.mapping(r.props.get("metadata"))
            name = str(meta.get("name", ""))
            taken[(str(meta.get("namespace", "default")), name + facts.KSERVE_PREDICTOR_SUFFIX)] = name
    for r in args.resources:
        if r.resource_type not in OWNED_KINDS:
            continue
        meta = rh.mapping(r.props.get("metadata"))
        name, kind = str(meta.get("name", "")), r.resource_type.rsplit(":", 1)[-1]
        breach = rules.predictor_name_free(kind, name, taken.get((str(meta.get("namespace", "default")), name)))
        if breach is not None:
            report_violation(message(rh.mapping(meta.get("annotations")), breach.finding(f"{kind} {name}")), r.urn)


declare.validate("kserve-owned-names", kserve_owned_names)
