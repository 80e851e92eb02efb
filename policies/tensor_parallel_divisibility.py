"""tensor-parallel-divisibility: tensor parallel size divides the model's sharded dimensions.

Rule, per vLLM / candle-vllm container with tensor parallel above 1 (vLLM
``--tensor-parallel-size``, candle-vllm the count of ``--d`` devices): attention heads, KV
heads, intermediate size and vocabulary divide by TP, and so do the experts' width of an MoE
model and, for a GPTQ checkpoint, the quantization groups of the row-parallel projections
(:meth:`core.modelfacts.ModelFacts.tp_divisibility_problems`). An uneven split fails
at load: vLLM asserts the divisions (``divide`` in vllm/distributed/utils.py); candle-vllm
divides heads by the rank count with integer division (qwen.rs), so the shards no longer
match the layer shapes. A server
whose model is not in the stack's models is reported with how to add it.

Source: seed 001 (coder-14b-fp16.yaml: "Every dimension divides by 2: attention heads 40 ->
20, KV heads 8 -> 4, intermediate_size 13824 -> 6912, vocab 152064 -> 76032. Verify this first
for any replacement model"); issue 3 ("TP divides the model's attention and KV heads").

Does not check: TP x PP against the pod's cards (vllm-parallelism, candle-vllm-args); that a
hybrid (GDN) model runs on one card (seed 003; the components refuse it); TP=1 servers.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import rules
from core.modelfacts import ModelFacts
from policylib import capacity_helpers as ch
from core.problems import Finding
from policylib import stackconfig, terms, workloads

NAME = "tensor-parallel-divisibility"


def sizes_that_divide(facts: ModelFacts) -> list[int]:
    """The TP sizes suggested in messages: those up to ``rules.MAX_SUGGESTED_TP`` that divide
    every sharded dimension (``core.rules.tp_sizes_that_divide``, as the config check)."""
    return rules.tp_sizes_that_divide(facts)


def validate(args, report_violation) -> None:
    w = workloads.of(args)
    if w is None:
        return
    parallel = [(c, s) for c, s in w.servers if s.tensor_parallel > 1]
    if not parallel:
        return
    try:
        models = stackconfig.models()
    except stackconfig.StackConfigError as err:
        report_violation(terms.message(w.annotations, Finding(
            f"{w.kind} {w.name}", f"{NAME} cannot check its tensor parallel size: {err}",
            f"give the stack config {stackconfig.PROJECT}:models in the format of Pulumi.prod.yaml",
            "the pack's inventory (the stack config)",
        )), args.urn)
        return
    for c, s in parallel:
        where = f"{w.kind} {w.name}" + (f", container {c.name}" if len(w.servers) > 1 else "")
        found = models.find(s.model_arg)
        if found is None:
            unknown, _, add = ch.unknown_model_message(s.model_arg, s.engine).partition("; ")
            report_violation(terms.message(w.annotations, Finding(
                where, f"cannot check tensor parallel {s.tensor_parallel}: {unknown}",
                add or f"add the model to {stackconfig.PROJECT}:models", "the pack's inventory (the stack config)",
            )), args.urn)
            continue
        key, facts = found
        problems = facts.tp_divisibility_problems(s.tensor_parallel)
        if problems:
            fits = ", ".join(str(tp) for tp in sizes_that_divide(facts))
            report_violation(terms.message(w.annotations, Finding(
                where,
                f"tensor parallel {s.tensor_parallel} does not divide model {key}: {'; '.join(problems)}; "
                "the shards would be uneven and the server fails at load",
                f"use a tensor parallel size that divides them ({fits}), with the pod's nvidia.com/gpu to match",
                "seed 001 (candle-vllm TP must divide the attention heads, KV heads and vocabulary)",
                stack_fix=f"set cards under {{key}} to one of {fits}",
            )), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Tensor parallel size divides the model's attention heads, KV heads, intermediate size and vocabulary.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Choose a tensor parallel size (vLLM --tensor-parallel-size, candle-vllm --d device list) that divides "
        "num_attention_heads, num_key_value_heads, intermediate_size (and moe_intermediate_size) and vocab_size "
        "of the model, and give the pod that many nvidia.com/gpu cards."
    ),
)
