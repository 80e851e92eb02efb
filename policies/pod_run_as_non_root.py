"""pod-run-as-non-root: containers run as a non-root user, or the workload says why not.

Rule: every container of a Deployment, StatefulSet, InferenceService (or other pod owner) has
``runAsNonRoot: true`` (on the container or the pod) and no ``runAsUser: 0``
(:func:`policylib.podsec.root_containers`), unless the object carries the annotation
``llm-serving.riotpiao.com/runs-as-root`` with the reason (``core.facts.RUNS_AS_ROOT_ANNOTATION``).
The components write that reason for every server here by default
(``core.facts.ROOT_REASONS``: the vllm/vllm-openai image runs as root, the candle-vllm images
set no USER, clef-serve pip-installs at start); ``run_as_user: <uid>`` in the stack file runs
the workload as that user instead.

Source: Kubernetes Pod Security Standards, Restricted ("Running as Non-root"): run as
non-root where the image allows, and say where it does not.

The rule is judged and worded once, in :mod:`core.rulebook.pod_security`; this module walks the
pods (:mod:`policylib.podsec`) and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import facts, registry
from policylib import declare, podsec
from policylib import resource_helpers as rh

NAME = "pod-run-as-non-root"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    annotations = rh.mapping(rh.mapping(args.props.get("metadata")).get("annotations"))
    if str(annotations.get(facts.RUNS_AS_ROOT_ANNOTATION) or "").strip():
        return
    checks = [c for _, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.root_containers(spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.MEDIUM)
