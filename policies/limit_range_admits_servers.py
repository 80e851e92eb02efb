"""limit-range-admits-servers: each container's resources, after a LimitRange's defaults, lie within it.

Rule: for each running Deployment, StatefulSet or LeaderWorkerSet and each of its containers and init
containers, with the namespace's LimitRanges of the manifests applied as the LimitRanger admission applies
them (:func:`core.manifests.objects.admitted`: a missing limit from ``default``, a missing request from
``defaultRequest``): every request and limit is at least ``min`` and at most ``max``, and no request
exceeds its (defaulted) limit. The admission refuses the pod otherwise, so it is never created.

An InferenceService's predictor is not judged: KServe sets its containers' resources.
Source: kserve #867. Judged and worded once, in :mod:`core.rulebook.limits`.
"""

from __future__ import annotations

from decimal import Decimal

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import quantity, registry
from core.manifests import objects
from core.rulebook import limits
from policylib import declare, views
from policylib import objects as glue

NAME = "limit-range-admits-servers"
SOURCE = registry.RULES[NAME].source


def _q(value: str) -> Decimal | None:
    return quantity.parse_or_none(value)


def problems(got: objects.Admitted, item: objects.LimitItem) -> list[str]:
    """Each bound of ``item`` the admitted resources cross, worded."""
    out = []
    for field, values in (("requests", got.requests), ("limits", got.limits)):
        for res, amount in values.items():
            a = _q(amount)
            if a is None:
                continue
            hi, lo = _q(item.max.get(res, "")), _q(item.min.get(res, ""))
            source = " (the LimitRange's default)" if f"{field}.{res}" in got.defaulted else ""
            if hi is not None and a > hi:
                out.append(f"{field}.{res} {amount}{source} is above max {item.max[res]}")
            if lo is not None and a < lo:
                out.append(f"{field}.{res} {amount}{source} is below min {item.min[res]}")
    for res, amount in got.requests.items():
        a, lim = _q(amount), _q(got.limits.get(res, ""))
        if a is not None and lim is not None and a > lim and f"limits.{res}" in got.defaulted:
            out.append(f"requests.{res} {amount} is above the default limit {got.limits[res]} it gets")
    return out


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    if not objs.limit_ranges:
        return
    stack = views.stack_view(args.resources)
    for w in stack.workloads:
        if not w.running or w.kind == "InferenceService":
            continue
        ranges = objs.limit_ranges_in(w.namespace)
        for c in (*w.init_containers, *w.containers):
            got = objects.admitted(c, ranges)
            for r in ranges:
                for item in r.items:
                    message = glue.report(f"{w.kind} {w.name}", limits.within_limit_range(
                        r.name, f"container {c.name}", problems(got, item)), w.annotations)
                    if message:
                        report_violation(message, w.urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
