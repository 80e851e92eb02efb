"""gpu-whole-cards: nvidia.com/gpu is asked in whole cards, with a limit equal to the request.

Rule, for every container and init container of every object that runs pods (Deployment,
StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, Pod, InferenceService components):
  - a ``nvidia.com/gpu`` request has a limit (a limit alone is fine: the request defaults to it);
  - request and limit are equal;
  - each is a whole, non-negative number of cards ("0.5" and "1500m" are not).

Source: Kubernetes extended resources cannot be overcommitted (the API
server rejects a request without an equal limit) and the NVIDIA device plugin hands out
whole cards only, so a fraction never schedules. The card counts of every other policy
(gpu-card-allocation, vllm-parallelism) assume whole cards.

Does not check: how many cards a node has (gpu-card-allocation); time-slicing or MIG
resources (other resource names are ignored).

The rule is judged and worded once, in :mod:`core.rulebook.pods`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import facts, manifests, registry, terms
from core.rulebook import pods as rules
from policylib import declare
from policylib import resource_helpers as rh

NAME = "gpu-whole-cards"
SOURCE = registry.RULES[NAME].source


def _shown(raw: Any) -> str:
    return f'"{raw}"' if isinstance(raw, str) else str(raw)


def _whole_cards(raw: Any) -> Decimal | None:
    """The quantity as a Decimal when it is a whole, non-negative number of cards, else None."""
    q = manifests.quantity(raw)
    if q is None or q < 0 or q != q.to_integral_value():
        return None
    return q


def container_problems(resources: Any) -> list[str]:
    """What is wrong with one container's nvidia.com/gpu request and limit; ``[]`` when fine."""
    res = rh.mapping(resources)
    req_raw = rh.mapping(res.get("requests")).get(facts.GPU_RESOURCE)
    lim_raw = rh.mapping(res.get("limits")).get(facts.GPU_RESOURCE)
    problems = []
    for label, raw in (("request", req_raw), ("limit", lim_raw)):
        if raw is not None and _whole_cards(raw) is None:
            problems.append(f"{label} {_shown(raw)} is not a whole number of cards")
    if req_raw is not None and lim_raw is None:
        problems.append(f"request {_shown(req_raw)} has no limit (extended resources need limit = request)")
    elif req_raw is not None and lim_raw is not None:
        req, lim = manifests.quantity(req_raw), manifests.quantity(lim_raw)
        if req is not None and lim is not None and req != lim:
            problems.append(f"request {_shown(req_raw)} differs from limit {_shown(lim_raw)}")
    return problems


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type not in rh.CONTAINER_TYPES:
        return
    label = rh.object_label(args.props, args.resource_type)
    annotations = rh.annotations_of(args.props)
    for where, spec in rh.pod_specs(args.resource_type, args.props):
        for field, c in rh.raw_containers(spec):
            breach = rules.whole_cards(container_problems(c.get("resources")))
            if breach is not None:
                report_violation(terms.message(annotations, breach.finding(rh.container_label(label, where, field, c))),
                                 args.urn)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
