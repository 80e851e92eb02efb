"""model-mounts-read-only: the models PVC is mounted read-only in every container.

Rule: a container's volumeMount of the models PVC (a persistentVolumeClaim volume with claim
``llm-models``, ``core.facts.MODELS_PVC``) or of anything at ``/mnt/models``
(``facts.MODELS_MOUNT_PATH``) sets ``readOnly: true``. The PVC holds every model's weights and
the fixed candle-vllm binary that clef-candle runs: a server that can write there can corrupt
what every other server loads.

Source: spec "storage" row (PVC llm-models, read-only mount at /mnt/models; 001, 003); coder.yaml
mounted it writable for vLLM's Hugging Face cache (HF_HOME=/mnt/models), which the vLLM
component now reads with HF_HUB_OFFLINE=1.

The rule is judged and worded once, in :mod:`core.rulebook.pod_security`; this module walks the
pods (:mod:`policylib.podsec`) and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from policylib import declare, podsec

NAME = "model-mounts-read-only"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    checks = [c for _, spec, containers in podsec.pods(args.resource_type, args.props)
              for c in podsec.writable_model_mounts(spec, containers)]
    podsec.report_breaches(args, checks, report_violation)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
