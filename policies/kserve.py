"""The pack's policies judged by :mod:`core.rulebook.kserve`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity, StackValidationArgs

from core.base import facts
from core.judging import terms
from core.judging.terms import message
from core.k8s import manifests
from core.k8s.manifests import objects
from core.k8s.manifests.read import as_map, whole_number
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


declare.resource_policy(
    "isvc-not-parked-silently", isvc_not_parked_silently, EnforcementLevel.ADVISORY, Severity.MEDIUM,
    doc="""isvc-not-parked-silently: an InferenceService at zero replicas is declared parked.

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
""",
)


# --- isvc-raw-min-replicas: ``minReplicas: 0`` does not scale a RawDeployment InferenceService to zero.


def isvc_raw_min_replicas(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or args.resource_type != manifests.ISVC_TYPE:
        return
    predictor = as_map(as_map(args.props.get("spec")).get("predictor"))
    breach = kserve.raw_min_replicas(w.deployment_mode, whole_number(predictor.get("minReplicas")),
                                     whole_number(predictor.get("maxReplicas")), w.cards_per_pod)
    containers.report(args, report_violation, w, breach)


declare.resource_policy(
    "isvc-raw-min-replicas", isvc_raw_min_replicas, EnforcementLevel.ADVISORY, Severity.MEDIUM,
    doc="""isvc-raw-min-replicas: ``minReplicas: 0`` does not scale a RawDeployment InferenceService to zero.

Rule: an InferenceService annotated ``serving.kserve.io/deploymentMode: RawDeployment`` whose
predictor has ``minReplicas: 0`` and a ``maxReplicas`` other than 0 is reported: KServe gives no
error and runs one pod (its HPA cannot scale to zero), which holds its cards. The pack's allocation
counts that pod (:func:`core.k8s.manifests.pods.workload`). Both at 0 parks it (isvc-not-parked-silently).

Advisory: the pod runs; the manifest says something else.
Source: kserve #3514. Judged and worded once, in :mod:`core.rulebook.kserve`.
""",
)


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


declare.stack_policy(
    "isvc-runtime-supports-format", isvc_runtime_supports_format, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""isvc-runtime-supports-format: the ServingRuntime an InferenceService names supports its model format.

Rule: for each InferenceService whose ``spec.predictor.model.runtime`` names a ServingRuntime of the
manifests in its namespace, that runtime is not disabled and one of its ``supportedModelFormats`` is the
predictor's ``modelFormat`` (name, case-insensitive, and version when both give one). KServe refuses
the predictor otherwise and the InferenceService never becomes ready. A runtime that is not among the
manifests (another namespace's, a ClusterServingRuntime) is not judged.

Source: kserve #3632, #4298. Judged and worded once, in :mod:`core.rulebook.kserve`.
""",
)


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


declare.resource_policy(
    "kserve-deployment-mode", kserve_deployment_mode, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""kserve-deployment-mode: an InferenceService runs in a deployment mode the cluster serves.

Rule, on a cluster whose inventory records ``kserve_deployment_mode``: an InferenceService without
``serving.kserve.io/deploymentMode: RawDeployment`` takes the cluster's default. Where the cluster has
no Knative (``NoKnative``) it is never ready; where the default is Serverless, a predictor that holds
cards becomes a Knative revision, and every update starts the new revision's pod beside the old one.
Not judged where the inventory does not record the mode.

Source: kserve #1768. Judged and worded once, in :mod:`core.rulebook.kserve`.
""",
)


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


declare.stack_policy(
    "kserve-owned-names", kserve_owned_names, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""kserve-owned-names: no Service or Deployment takes the name KServe gives an InferenceService's predictor.

Rule: for each InferenceService ``<isvc>`` in a namespace, no Service and no Deployment of the
stack in that namespace is named ``<isvc>-predictor`` (``core.base.facts.KSERVE_PREDICTOR_SUFFIX``):
KServe's RawDeployment reconciler creates and keeps its own Service and Deployment under that
name, so two owners overwrite each other's selector, ports and pods.

Source: KServe RawDeployment (``constants.PredictorServiceName``: ``<isvc>-predictor``); seed 001
(coder-service.yaml created the Service coder-predictor while the coder InferenceService was still
managed: the history stacks after-001 and after-003 carry both), reasoning-long-service.yaml
(the stable name beside KServe's own reasoning-predictor is reasoning-long-predictor).

A stack policy, not a stack-file check, so the history stacks still load and the pack judges
them. Does not check: objects outside the stack (KServe's own are not in it).

The rule is judged and worded once, in :mod:`core.rulebook.kserve`; this module reads the manifests
and reports its breaches.
""",
)
