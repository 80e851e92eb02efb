"""How the pack reads the manifests for the policies :mod:`core.rulebook.limits` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from decimal import Decimal

from pulumi_policy import ReportViolation, StackValidationArgs

from core.base import facts
from core.k8s import quantity
from core.k8s.manifests import objects
from core.rulebook import limits
from policylib import declare, views
from policylib import objects as glue

# --- limit-range-admits-servers: each container's resources, after a LimitRange's defaults, lie within it.


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


def limit_range_admits_servers(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


declare.validate("limit-range-admits-servers", limit_range_admits_servers)


# --- quota-admits-servers: a namespace's ResourceQuota admits its model servers' pods.

#: The quota resources a container must set: ``requests.cpu`` and bare ``cpu`` are requests (Kubernetes).
_MUST_SPECIFY = {"cpu": "requests.cpu", "memory": "requests.memory", "requests.cpu": "requests.cpu",
                 "requests.memory": "requests.memory", "limits.cpu": "limits.cpu", "limits.memory": "limits.memory"}


def quota_admits_servers(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs = views.objects_view(args.resources)
    if not objs.quotas:
        return
    stack = views.stack_view(args.resources)
    for q in objs.quotas:
        if q.scoped:
            continue  # it counts only the pods its scopes match: not judged
        running = [w for w in stack.workloads if w.namespace == q.namespace and w.running]
        for resource in (f"requests.{facts.GPU_RESOURCE}", f"limits.{facts.GPU_RESOURCE}"):
            if resource in q.hard:
                asking = [w for w in running if w.is_gpu]
                asked = sum(w.replicas * w.cards_per_pod for w in asking)
                who = ", ".join(f"{w.kind} {w.name} {w.replicas} x {w.cards_per_pod}" for w in asking)
                message = glue.report(f"ResourceQuota {q.name}", limits.quota_cards(q.name, resource, q.hard[resource], asked, who))
                if message:
                    report_violation(message, q.urn)
        needed = sorted({_MUST_SPECIFY[k] for k in q.hard if k in _MUST_SPECIFY})
        if not needed:
            continue
        ranges = objs.limit_ranges_in(q.namespace)
        for w in running:
            if w.kind == "InferenceService":
                continue
            for c in (*w.init_containers, *w.containers):
                got = objects.admitted(c, ranges)
                have = {f"requests.{k}" for k in got.requests} | {f"limits.{k}" for k in got.limits}
                breach = limits.quota_must_specify(q.name, [n for n in needed if n not in have], f"container {c.name}")
                message = glue.report(f"{w.kind} {w.name}", breach, w.annotations)
                if message:
                    report_violation(message, w.urn)


declare.validate("quota-admits-servers", quota_admits_servers)
