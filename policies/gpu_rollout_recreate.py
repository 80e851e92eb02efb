"""gpu-rollout-recreate: GPU workloads roll out without a surge pod.

Rule: a Deployment or InferenceService predictor whose pods hold cards rolls out with
``Recreate``, or with ``RollingUpdate`` and ``maxSurge: 0`` (``0%`` too). When the strategy
is omitted the API server (Deployment) and KServe (RawDeployment predictor) use
RollingUpdate with 25% surge, which starts one extra pod. The InferenceService's strategy is
``spec.predictor.deploymentStrategy``. ``RollingUpdate`` with both ``maxSurge`` and
``maxUnavailable`` at 0 is reported too: the API server rejects it.

Source: seed 001 and 003 comments ("Every GPU card is allocated, so a rolling update leaves
the new pod Pending forever waiting for a card the old pod still holds"), coder.yaml
(Recreate on the InferenceService "still matters for the later swap"); spec facts table.

Does not check: StatefulSets (their RollingUpdate replaces a pod in place, no surge);
whether free cards would in fact hold a surge pod (gpu-card-allocation counts the surge);
parked workloads are judged too (unparking is one replicas change).
"""

from __future__ import annotations

from collections.abc import Mapping

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import facts
from core.problems import Finding
from policylib import resource_helpers as rh
from policylib import terms
from policylib import workloads

NAME = "gpu-rollout-recreate"


def _strategy(resource_type: str, props) -> tuple[Mapping, str]:
    spec = rh.mapping(props.get("spec"))
    if resource_type == workloads.ISVC_TYPE:
        return rh.mapping(rh.mapping(spec.get("predictor")).get("deploymentStrategy")), "spec.predictor.deploymentStrategy"
    return rh.mapping(spec.get("strategy")), "spec.strategy"


def validate(args, report_violation) -> None:
    if args.resource_type not in workloads.WORKLOAD_TYPES or args.resource_type.endswith(":StatefulSet"):
        return
    w = workloads.workload(args.resource_type, args.props, args.urn)
    if w is None or not w.is_gpu:
        return
    raw, path = _strategy(args.resource_type, args.props)
    stype, surge_raw, unavailable_raw = rh.surge_of(raw)
    if stype == facts.GPU_ROLLOUT_STRATEGY:
        return
    label = rh.workload_label(w)
    surge = rh.surge_pods(surge_raw)
    if surge == 0:
        if rh.surge_pods(unavailable_raw) == 0:
            report_violation(terms.message(w.annotations, Finding(
                label, f"{path} is RollingUpdate with maxSurge 0 and maxUnavailable 0, which the API server rejects",
                f"set {path}.type: {facts.GPU_ROLLOUT_STRATEGY}", "Kubernetes API, Deployment validation",
            )), args.urn)
        return
    written = "omitted, so RollingUpdate with maxSurge 25%" if not raw else f"{stype} with maxSurge {surge_raw}"
    report_violation(terms.message(w.annotations, Finding(
        label,
        f"pods hold {w.cards_per_pod} card(s) and {path} is {written}: the surge pod asks for cards "
        "the old pod still holds and waits Pending forever on a fully allocated node",
        f"set {path}.type: {facts.GPU_ROLLOUT_STRATEGY} (or RollingUpdate with maxSurge: 0)",
        "seeds 001 and 003 (a surge pod Pending for a card the old pod holds)",
    )), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="GPU workloads, InferenceServices included, roll out with Recreate (or maxSurge 0).",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Set spec.strategy.type: Recreate on the Deployment, or "
        "spec.predictor.deploymentStrategy.type: Recreate on the InferenceService "
        "(RollingUpdate with rollingUpdate.maxSurge: 0 and maxUnavailable: 1 also works)."
    ),
)
