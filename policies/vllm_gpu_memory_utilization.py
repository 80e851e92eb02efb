"""vllm-gpu-memory-utilization: vLLM's --gpu-memory-utilization stays below its usual ceiling.

Rule: each vLLM container's ``--gpu-memory-utilization`` (vLLM's default 0.90 when absent) is at
most ``core.rules.GPU_MEMORY_UTILIZATION_CEILING`` (0.95), by
:func:`core.rulebook.gpu_memory_utilization`, the rule the stack file judges by too.
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

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import facts, registry, rulebook, rules, terms
from core.engines import VllmConfig
from policylib import declare, views
from policylib import resource_helpers as rh

NAME = "vllm-gpu-memory-utilization"
SOURCE = registry.RULES[NAME].source
VLLM_DEFAULT = rules.GPU_MEMORY_UTILIZATION_DEFAULT


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    overridden = facts.GMU_OVERRIDE_ANNOTATION in w.annotations
    for c, s in w.servers_of("vllm"):
        written = s.get(VllmConfig.FLAGS["gpu_memory_utilization"])
        value = s.settings().gpu_memory_utilization
        if value is None:
            value = VLLM_DEFAULT if written is None else None
        if value is None:
            continue  # not a number: the capacity policies report what the estimator refuses
        eager = s.has(VllmConfig.FLAGS["enforce_eager"])  # parse_args reads --enforce_eager as this
        breach = rulebook.gpu_memory_utilization(value, eager, overridden)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
