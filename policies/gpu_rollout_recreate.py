"""gpu-rollout-recreate: a GPU workload's rollout never needs a card the node does not have.

Rule: a Deployment or InferenceService predictor whose pods hold cards and rolls out with
``RollingUpdate`` is reported when its surge pods need room beside every running pod
(``maxUnavailable`` resolves to 0 pods, so no old pod goes first) and that room is not there:
the node's cards with the surge counted exceed its cards, by the one allocation
(:func:`core.allocation.cards`, what gpu-card-allocation judges). When the strategy is
omitted, the API server (Deployment) and KServe (RawDeployment predictor,
``spec.predictor.deploymentStrategy``) use RollingUpdate with 25% / 25%: for one replica that
is 1 surge pod and 0 unavailable (Kubernetes rounds a surge percentage up and an
unavailability percentage down, :func:`core.allocation.rollout`). ``RollingUpdate`` with
``maxSurge`` and ``maxUnavailable`` both written as 0 is reported too: the API server rejects it.

Allowed: ``Recreate``; ``maxSurge: 0``; ``maxUnavailable`` of one pod or more (the old pod
goes first and the rollout completes on a full node, its surge pod Pending only until then);
a surge that fits in free cards.

Source: seed 001 and 003 comments ("Every GPU card is allocated, so a rolling update leaves
the new pod Pending forever waiting for a card the old pod still holds"), coder.yaml
(Recreate on the InferenceService "still matters for the later swap"); spec facts table.

Does not check: StatefulSets (their RollingUpdate replaces a pod in place, no surge); parked
workloads (no pods, no rollout; unparking is judged when it happens); a node the inventory
does not list (gpu-card-allocation reports it).

The rule is judged and worded once, in :mod:`core.rulebook.allocation`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import allocation, manifests, registry
from core.rulebook import allocation as rules
from policylib import declare, stack_helpers, views

NAME = "gpu-rollout-recreate"
SOURCE = registry.RULES[NAME].source


def written(w: manifests.Workload) -> str:
    """The strategy as written, with what Kubernetes makes of it: ``spec.strategy is omitted, so
    RollingUpdate with maxSurge 25% and maxUnavailable 25% (1 surge pod, 0 unavailable of 1 replica)``."""
    rolling = manifests.plain(w.strategy.get("rollingUpdate")) or {}
    surge = rolling.get("maxSurge", allocation.DEFAULT_MAX_SURGE)
    unavailable = rolling.get("maxUnavailable", allocation.DEFAULT_MAX_UNAVAILABLE)
    surge, unavailable = _shown(surge), _shown(unavailable)
    head = f"{w.strategy_at} is omitted, so RollingUpdate" if not w.strategy else f"{w.strategy_at} is {w.strategy_type}"
    r = w.rollout
    return (
        f"{head} with maxSurge {surge} and maxUnavailable {unavailable} ({r.surge_pods} surge pod(s), "
        f"{r.unavailable_pods} unavailable of {w.replicas} replica(s))"
    )


def _shown(value: object) -> object:
    """A value as the manifest wrote it: ``1`` for the ``1.0`` the analyzer protocol delivers."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    gpu = [w for w in stack.workloads if w.is_gpu and w.kind != "StatefulSet"]
    rolling = [w for w in gpu if w.strategy_type == "RollingUpdate" and w.running]
    if not rolling:
        return
    surging = []
    for w in rolling:
        raw = manifests.plain(w.strategy.get("rollingUpdate")) or {}
        rejected = rules.rollout_valid(w.strategy_at, allocation.both_zero(raw.get("maxSurge"), raw.get("maxUnavailable")))
        if rejected is not None:
            report_violation(stack_helpers.report(w, rejected), w.urn)
        elif w.surge_needing_room:
            surging.append(w)
    if not surging:
        return
    inventory = stack_helpers.read_inventory(report_violation, NAME)
    if inventory is None:
        return
    alloc = allocation.cards(allocation.demands(gpu, lambda w: float(w.cards_per_pod), inventory), inventory)
    for w in surging:
        for use in alloc.nodes.values():
            share = use.share_of(w.id)
            breach = rules.rollout_room(w.strategy_at, written(w), w.cards_per_pod, w.surge_needing_room,
                                        use) if share is not None and share.surge_pods else None
            if breach is not None:
                report_violation(stack_helpers.report(w, breach), w.urn)
                break


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
