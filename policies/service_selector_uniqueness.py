"""service-selector-uniqueness: each Service selects exactly one running workload.

Rule: a Service's selector matches the pod labels of exactly one running workload
(Deployment, StatefulSet, InferenceService predictor or LeaderWorkerSet, replicas > 0) in its
namespace. A LeaderWorkerSet's pods carry ``leaderworkerset.sigs.k8s.io/name`` and, on leaders,
``leaderworkerset.sigs.k8s.io/worker-index: "0"`` beside its templates' labels.

- Two or more: traffic splits across them (two models, or two implementations of one).
  Message: ``Service coder-predictor selects 2 running workloads: candle-vllm (Deployment),
  coder (InferenceService); its traffic splits across them``. Names sorted by name, then kind.
- None: clients get no endpoints. Allowed only when the Service is declared parked
  (``facts.PARKED_ANNOTATION`` on the Service). Matching parked workloads (replicas 0) do not
  count as running; the message names them: ``... selects only parked clef-serve (Deployment)``.

Sources: spec "Facts each component must carry" (001, 003); kustomization.yaml in seed 001
("It must be the only workload with that label, or the Service splits traffic across two
models"); clef-candle.yaml ("The reference pytorch Deployment must stay at replicas 0 while
this runs, or the Service splits traffic across two different implementations").

Pods carry the labels their controller adds (:attr:`core.manifests.Workload.controller_labels`):
a Deployment's ``pod-template-hash``, a StatefulSet's ``controller-revision-hash``,
``statefulset.kubernetes.io/pod-name`` and ``apps.kubernetes.io/pod-index``, so a Service that
selects one StatefulSet pod (``pod-index: "0"``) selects that workload, and a selector on a hash
(one ReplicaSet's pods) is no collision.

InferenceService predictor pods carry the labels KServe gives them
(``serving.kserve.io/inferenceservice``, ``component: predictor``, ``app: isvc.<name>-predictor``)
beside the InferenceService's own labels (``core.manifests``).

Pod labels are indexed by (namespace, key, value) (:class:`policylib.stack_helpers.PodIndex`),
so the cost is linear in Services plus the matches, not Services x workloads.

Does NOT check: Services without a selector (manual Endpoints: not applicable, skipped);
ExternalName Services (no selector); a Service whose selector matches only pods of a kind the
pack does not model (bare Pods, Jobs, DaemonSets, custom resources with pod templates such as a
RayCluster): not reported as selecting nothing; pods of
workloads outside the stack; whether the single match is Ready.

The rule is judged and worded once, in :mod:`core.rulebook.services`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import manifests, registry, terms
from core.rulebook import services as service_rules
from policylib import declare, stack_helpers, stackconfig
from policylib.stack_helpers import PodIndex

NAME = "service-selector-uniqueness"


def _describe(selected) -> str:
    return ", ".join(f"{w.name} ({w.kind})" for w in sorted(selected, key=lambda w: (w.name, w.kind)))


def _selector_text(selector) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))


SOURCE = registry.RULES[NAME].source


def one_model_behind(live) -> bool:
    """Whether every workload answers the same, known served model names: a canary or a second
    version of one model, where a split of the traffic is the point."""
    names = {w.served_model_names for w in live}
    return len(names) == 1 and bool(next(iter(names)))


def check_service(svc: manifests.Service, index: PodIndex, house: bool = True):
    """The violation message for one Service, or None when it selects exactly one running workload
    (or none, declared parked; or has no selector). ``house``: the inventory's
    ``house_conventions`` (the user's cluster: one workload behind each Service, seed 002);
    without it a Service in front of workloads that all answer the same model names (a stable
    and a canary Deployment) is a deliberate split and passes; different models behind one
    Service (the seed 002 mistake) fail everywhere."""
    if not svc.selector:
        return None
    selected = index.select(svc.namespace, svc.selector)
    live = stack_helpers.running(selected)
    # One object may give several pod sets (a LeaderWorkerSet's leaders and workers): count objects.
    objects = {(w.kind, w.name) for w in live}
    if len(objects) == 1:
        return None
    if len(objects) >= 2 and any(w.narrowed_by(svc.selector) for w in live):
        return None  # a hash only one ReplicaSet or revision carries: one workload's pods, whichever it is
    if len(objects) >= 2:
        live = tuple({(w.kind, w.name): w for w in live}.values())
        if not house and one_model_behind(live):
            return None
        breach = service_rules.selects_one([_describe([w]) for w in sorted(live, key=lambda w: (w.name, w.kind))],
                                      _selector_text(svc.selector))
    else:
        if not selected and stack_helpers.selects_other_pods(index, svc.namespace, svc.selector) is not None:
            return None  # pods of a kind the pack does not model (policylib.coverage says so)
        parked = sorted((w for w in selected if not w.running), key=lambda w: (w.name, w.kind))
        breach = service_rules.selects_running(0, [_describe([w]) for w in parked], svc.parked_reason is not None,
                                          _selector_text(svc.selector))
    return None if breach is None else terms.message(svc.annotations, breach.finding(f"Service {svc.name}"))


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    services, index = stack_helpers.services_and_index(args)
    house = stackconfig.house_conventions()
    for svc in services:
        message = check_service(svc, index, house)
        if message:
            report_violation(message, svc.urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
