"""kserve-owned-names: no Service or Deployment takes the name KServe gives an InferenceService's predictor.

Rule: for each InferenceService ``<isvc>`` in a namespace, no Service and no Deployment of the
stack in that namespace is named ``<isvc>-predictor`` (``core.facts.KSERVE_PREDICTOR_SUFFIX``):
KServe's RawDeployment reconciler creates and keeps its own Service and Deployment under that
name, so two owners overwrite each other's selector, ports and pods.

Source: KServe RawDeployment (``constants.PredictorServiceName``: ``<isvc>-predictor``); seed 001
(coder-service.yaml created the Service coder-predictor while the coder InferenceService was still
managed: the history stacks after-001 and after-003 carry both), reasoning-long-service.yaml
(the stable name beside KServe's own reasoning-predictor is reasoning-long-predictor); issue 9.

A stack policy, not a stack-file check, so the history stacks still load and the pack judges
them. Does not check: objects outside the stack (KServe's own are not in it).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Severity, StackValidationPolicy

from core import facts
from core.problems import Finding
from policylib import resource_helpers as rh
from policylib.terms import message

NAME = "kserve-owned-names"
SOURCE = ("KServe RawDeployment names its predictor Service and Deployment <isvc>-predictor; seed 001 "
          "(coder-service.yaml beside the still-managed coder InferenceService)")
OWNED_KINDS = ("kubernetes:core/v1:Service", "kubernetes:apps/v1:Deployment")


def validate(args, report_violation) -> None:
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
        isvc = taken.get((str(meta.get("namespace", "default")), str(meta.get("name", ""))))
        if isvc is None:
            continue
        kind = r.resource_type.rsplit(":", 1)[-1]
        finding = Finding(
            f"{kind} {meta.get('name')}",
            f"is named like the {kind} KServe creates for InferenceService {isvc} ({meta.get('name')}), so KServe "
            "and this stack overwrite each other's object",
            f"rename it (as reasoning-long-predictor sits beside KServe's reasoning-predictor), or stop managing "
            f"InferenceService {isvc}",
            SOURCE,
            f"rename {{key}} (e.g. {isvc}-stable-predictor), or remove or rename workload {isvc}",
        )
        report_violation(message(rh.mapping(meta.get("annotations")), finding), r.urn)


POLICY = StackValidationPolicy(
    name=NAME,
    description="No Service or Deployment is named <isvc>-predictor beside InferenceService <isvc>: KServe owns that name.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Give the stable Service its own name (reasoning-long-predictor beside KServe's reasoning-predictor), "
        "or stop managing the InferenceService whose predictor name it takes (seed 000 removed the coder "
        "InferenceService, freeing coder-predictor)."
    ),
)
