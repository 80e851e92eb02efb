"""quota-admits-servers: a namespace's ResourceQuota admits its model servers' pods.

Rule: for each ResourceQuota of the manifests, (1) the cards its namespace's running workloads ask
(replicas x cards a pod) fit its ``requests.nvidia.com/gpu`` (or ``limits.nvidia.com/gpu``); (2) every
container and init container of a Deployment, StatefulSet or LeaderWorkerSet in its namespace sets each
cpu / memory resource the quota limits (``requests.memory``, ``limits.cpu``, ``memory``, ...), after the
namespace's LimitRanges of the manifests default them (:func:`core.manifests.objects.admitted`). The
ResourceQuota admission refuses the pod otherwise ("must specify ..."; "exceeded quota").

An InferenceService's predictor is not judged by (2): KServe gives its containers default resources. A
quota with ``scopes`` or a ``scopeSelector`` (it counts only the pods they match) is not judged.
Source: kserve #1242, #867. Judged and worded once, in :mod:`core.rulebook.limits`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import facts, registry
from core.manifests import objects
from core.rulebook import limits
from policylib import declare, views
from policylib import objects as glue

NAME = "quota-admits-servers"
SOURCE = registry.RULES["quota-cards"].source
#: The quota resources a container must set: ``requests.cpu`` and bare ``cpu`` are requests (Kubernetes).
_MUST_SPECIFY = {"cpu": "requests.cpu", "memory": "requests.memory", "requests.cpu": "requests.cpu",
                 "requests.memory": "requests.memory", "limits.cpu": "limits.cpu", "limits.memory": "limits.memory"}


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
