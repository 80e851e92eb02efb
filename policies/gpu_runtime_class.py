"""gpu-runtime-class: every GPU pod sets ``runtimeClassName: nvidia``.

Rule: a Deployment, StatefulSet or InferenceService predictor whose pods hold cards
(nvidia.com/gpu above 0 in any container) sets the pod's ``runtimeClassName`` to the GPU
runtime class (parameter ``runtimeClassName``, default ``nvidia``, ``facts.GPU_RUNTIME_CLASS``).

Source: seed 001 (the candle-vllm Deployment ran under runc: libcuda.so was never injected
and candle-vllm panicked in cudarc, "Unable to dynamically load the cuda shared library"),
seed 003 (clef-candle.yaml carries the same comment), spec "GPU runtime" row.

Does not check: that the RuntimeClass object exists on the cluster; pods that reach a GPU
without requesting nvidia.com/gpu (NVIDIA_VISIBLE_DEVICES=all); parked workloads are judged
too (unparking is one replicas change).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationPolicy, Severity

from core import facts
from core.problems import Finding
from policylib import resource_helpers as rh
from policylib import terms
from policylib import workloads

NAME = "gpu-runtime-class"


def validate(args, report_violation) -> None:
    w = workloads.of(args)
    if w is None or not w.is_gpu:
        return
    want = str(args.get_config().get("runtimeClassName", facts.GPU_RUNTIME_CLASS))
    if w.runtime_class == want:
        return
    written = f"runtimeClassName {w.runtime_class}" if w.runtime_class else "no runtimeClassName"
    report_violation(terms.message(w.annotations, Finding(
        rh.workload_label(w),
        f"pods hold {w.cards_per_pod} card(s) of {facts.GPU_RESOURCE} but set {written}; GPU pods "
        f"need runtimeClassName {want}, or libcuda.so is not injected and the server crashes at start",
        f"set runtimeClassName: {want} in the pod spec",
        "seeds 001 and 003 (candle-vllm under runc: cudarc could not load libcuda.so)",
    )), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="GPU pods (nvidia.com/gpu > 0) set runtimeClassName nvidia, so libcuda.so is injected.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Set runtimeClassName: nvidia in the pod spec (Deployment spec.template.spec, "
        "InferenceService spec.predictor). The components set it for every workload with cards."
    ),
    config_schema=PolicyConfigSchema(
        properties={
            "runtimeClassName": {
                "type": "string",
                "default": facts.GPU_RUNTIME_CLASS,
                "description": "The RuntimeClass that injects the NVIDIA driver libraries (seed 001).",
            }
        }
    ),
)
