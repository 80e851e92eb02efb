"""vllm-gpu-memory-utilization: vLLM's --gpu-memory-utilization stays below its usual ceiling.

Rule: each vLLM container's ``--gpu-memory-utilization`` (vLLM's default 0.90 when absent) is at
most ``core.rules.GPU_MEMORY_UTILIZATION_CEILING`` (0.95), by
:func:`core.rules.gpu_memory_utilization_ok`, the predicate the stack file's check uses too.
The bound is lifted only by ``--enforce-eager`` (no CUDA graphs are captured, so the headroom
they need is not needed) or an explicit override: the annotation
``facts.GMU_OVERRIDE_ANNOTATION`` with the reason (the components write it from the stack
file's ``gpu_memory_utilization_override: {reason: ...}``).

Why: vLLM sizes the KV cache to fill ``utilization x card`` and captures CUDA graphs, NCCL
buffers and the sampler's scratch afterwards from what is left: at 0.98 that ran out of memory
in CUDA-graph capture (vllm-project/vllm #15598). The capacity estimate never credits more than
the ceiling either (``core.capacity.estimate``), so the preview's table shows no extra room for it.

Source: vllm-project/vllm #15598; coder.yaml runs 0.90. Does not check: values outside (0, 1]
(the capacity policies report what the estimator refuses); candle-vllm (its ``--kv-fraction``
is a share of the memory free after load, bounded by the estimator).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import facts, rules
from core.problems import Finding
from core.engines import VllmConfig
from policylib import views
from policylib import resource_helpers as rh
from policylib import terms

NAME = "vllm-gpu-memory-utilization"
SOURCE = "vllm-project/vllm #15598 (0.98 ran out of memory in CUDA-graph capture)"
VLLM_DEFAULT = 0.90


def validate(args, report_violation) -> None:
    w = views.of(args)
    if w is None:
        return
    overridden = facts.GMU_OVERRIDE_ANNOTATION in w.annotations
    ceiling = rules.GPU_MEMORY_UTILIZATION_CEILING
    for c, s in w.servers_of("vllm"):
        written = s.get(VllmConfig.FLAGS["gpu_memory_utilization"])
        value = s.settings().gpu_memory_utilization
        if value is None:
            value = VLLM_DEFAULT if written is None else None
        eager = s.has(VllmConfig.FLAGS["enforce_eager"])  # parse_args reads --enforce_eager as this
        if value is None or rules.gpu_memory_utilization_ok(value, enforce_eager=eager, overridden=overridden):
            continue
        finding = Finding(
            f"{rh.workload_label(w)}, container {c.name}",
            f"--gpu-memory-utilization is {written}, above the {ceiling} ceiling, without --enforce-eager or the "
            f"{facts.GMU_OVERRIDE_ANNOTATION} annotation: vLLM fills {written} of the card with weights and KV cache and "
            "has too little left for CUDA graph capture and NCCL",
            f"lower it to at most {ceiling} (vLLM's default is {VLLM_DEFAULT:.2f}), add --enforce-eager, or declare the "
            f"measured exception as annotation {facts.GMU_OVERRIDE_ANNOTATION}: <reason>",
            SOURCE,
            stack_fix=(f"lower gpu_memory_utilization to at most {ceiling} under {{key}}, set enforce_eager: true, or "
                       "declare gpu_memory_utilization_override: {reason: ...}"),
        )
        report_violation(terms.message(w.annotations, finding), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="vLLM --gpu-memory-utilization is at most 0.95, unless --enforce-eager or a declared override.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Keep --gpu-memory-utilization at or below 0.95 (coder.yaml: 0.90). Above it, run with --enforce-eager "
        "or declare the measured exception (stack file: gpu_memory_utilization_override: {reason: ...}; "
        "plain YAML: annotation llm-serving.riotpiao.com/gpu-memory-utilization-override)."
    ),
)
