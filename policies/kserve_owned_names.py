"""kserve-owned-names: no Service or Deployment takes the name KServe gives an InferenceService's predictor.

Rule: for each InferenceService ``<isvc>`` in a namespace, no Service and no Deployment of the
stack in that namespace is named ``<isvc>-predictor`` (``core.facts.KSERVE_PREDICTOR_SUFFIX``):
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
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import facts, registry
from core.rulebook import kserve as rules
from core.terms import message
from policylib import declare
from policylib import resource_helpers as rh

NAME = "kserve-owned-names"
SOURCE = registry.RULES[NAME].source
OWNED_KINDS = ("kubernetes:core/v1:Service", "kubernetes:apps/v1:Deployment")


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
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


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
