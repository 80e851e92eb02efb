"""model-mounts-read-only: the models PVC is mounted read-only in every container.

Rule: a container's volumeMount of the models PVC (a persistentVolumeClaim volume with claim
``llm-models``, ``core.facts.MODELS_PVC``) or of anything at ``/mnt/models``
(``facts.MODELS_MOUNT_PATH``) sets ``readOnly: true``. The PVC holds every model's weights and
the fixed candle-vllm binary that clef-candle runs: a server that can write there can corrupt
what every other server loads.

Source: spec "storage" row (PVC llm-models, read-only mount at /mnt/models; 001, 003); coder.yaml
mounted it writable for vLLM's Hugging Face cache (HF_HOME=/mnt/models), which the vLLM
component now reads with HF_HUB_OFFLINE=1; issue 9.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import facts
from policylib import podsec
from policylib import resource_helpers as rh

NAME = "model-mounts-read-only"
SOURCE = "spec storage row (llm-models mounted read-only at /mnt/models, seeds 001 and 003); issue 9"


def validate(args, report_violation) -> None:
    checks = []
    for _, spec, containers in podsec.pods(args.resource_type, args.props):
        models = {str(rh.mapping(v).get("name")) for v in rh.sequence(spec.get("volumes"))
                  if rh.mapping(rh.mapping(v).get("persistentVolumeClaim")).get("claimName") == facts.MODELS_PVC}
        for where, c in containers:
            for m in rh.sequence(c.get("volumeMounts")):
                m = rh.mapping(m)
                path = str(m.get("mountPath", ""))
                if (str(m.get("name")) in models or path.rstrip("/") == facts.MODELS_MOUNT_PATH) and m.get("readOnly") is not True:
                    checks.append((where, f"mounts {m.get('name')} ({facts.MODELS_PVC}) at {path} writable "
                                          f"(readOnly {podsec.shown(m.get('readOnly'))})",
                                   f"set readOnly: true on the volumeMount at {path}"))
    podsec.report(args, checks, SOURCE, report_violation,
                  "the components mount it read-only for {key}; an older rendering lacks it: preview again")


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="The models PVC (llm-models at /mnt/models) is mounted readOnly in every container.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Set readOnly: true on every volumeMount of the llm-models PVC (/mnt/models). vLLM reads its Hugging "
        "Face cache there with HF_HUB_OFFLINE=1; download a new model to the PVC beforehand."
    ),
)
