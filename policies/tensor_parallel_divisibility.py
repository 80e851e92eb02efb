"""tensor-parallel-divisibility: tensor parallel size divides the model's sharded dimensions.

Rule, per vLLM / candle-vllm container with tensor parallel above 1 (vLLM
``--tensor-parallel-size``, candle-vllm the count of ``--d`` devices), by engine
(:meth:`core.modelfacts.ModelFacts.tp_divisibility_problems`): candle-vllm needs attention
heads, KV heads, intermediate size and vocabulary to divide by TP (it divides heads by the
rank count with integer division, qwen.rs, so the shards no longer match the layer shapes);
vLLM needs the attention heads to divide, replicates the KV heads when TP exceeds them (TP a
multiple of them), pads the vocabulary, and asserts a dense MLP's split (``divide`` in
vllm/distributed/utils.py). Both: the experts' width of an MoE model and, for a GPTQ
checkpoint, the quantization groups of the row-parallel projections. A server
whose model is not in the stack's models is reported with how to add it where the inventory holds
the house conventions (the user's cluster), and not judged elsewhere; a stack that lists no
model at all (``llm-serving:models`` absent: someone else's cluster) is not judged, and the
analyze summary says so.

Source: seed 001 (coder-14b-fp16.yaml: "Every dimension divides by 2: attention heads 40 ->
20, KV heads 8 -> 4, intermediate_size 13824 -> 6912, vocab 152064 -> 76032. Verify this first
for any replacement model"); spec "Tensor parallel needs attention heads, KV heads ... to divide" row.

Does not check: TP x PP against the pod's cards (vllm-parallelism, candle-vllm-args); that a
hybrid (GDN) model runs on one card (seed 003; the components refuse it); TP=1 servers.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import capacity_view as cv
from core import registry, rulebook, terms
from core.registry import Breach
from policylib import declare, stackconfig, views
from policylib import resource_helpers as rh

NAME = "tensor-parallel-divisibility"
SOURCE = registry.RULES[NAME].source
#: Where the model facts come from, for a server whose model the stack does not list.
INVENTORY = "the pack's inventory (the stack config)"


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    parallel = [(c, s) for c, s in w.servers if s.tensor_parallel > 1]
    if not parallel:
        return
    try:
        models = stackconfig.models()
    except stackconfig.StackConfigError as err:
        report_violation(rh.config_error(NAME, err), args.urn)
        return
    if not models.entries:
        return  # the stack describes no model: not judged (policylib.coverage says so)
    for c, s in parallel:
        where = f"{w.kind} {w.name}" + (f", container {c.name}" if len(w.servers) > 1 else "")
        found = models.find(s.model_arg)
        if found is None and not stackconfig.house_conventions():
            continue  # a model the stack does not list, on someone else's cluster: not judged (coverage)
        if found is None:
            unknown, _, add = cv.unknown_model_message(s.model_arg, s.engine).partition("; ")
            unlisted = Breach(f"cannot check tensor parallel {s.tensor_parallel}: {unknown}",
                              add or f"add the model to {stackconfig.PROJECT}:models", INVENTORY)
            report_violation(terms.message(w.annotations, unlisted.finding(where)), args.urn)
            continue
        key, facts = found
        breach = rulebook.tp_divides(key, facts, s.tensor_parallel, s.engine)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(where)), args.urn)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
