"""weights-fit-card: a model server's weights fit its card and leave room for a KV cache.

Rule, per vLLM / candle-vllm container of a Deployment, StatefulSet or InferenceService,
with the weights one card holds after quantization and tensor parallel split
(:func:`core.capacity.weights_per_card`):

- vLLM: weights a card plus the activation peak of its memory profile stay below
  ``gpu-memory-utilization`` x the card's memory (vLLM v0.11 ``determine_available_memory``
  leaves nothing for the KV cache otherwise and the engine fails at start, after the weights
  were loaded: minutes lost).
- candle-vllm: weights a rank (the embedding and LM head whole on every rank) stay below the
  card's memory.
- The server's model must be in the stack's models (``llm-serving:models``): an unknown
  model is reported with how to add it.

Source: coder.yaml ("Qwen ships this model only as BF16 (61.1 GB) ... 4-bit GPTQ is
the only form that fits one 32 GB card"), seed 001 (the 14B fp16 split over two V100s). The
card is the pinned node's, else the smallest card among nodes with enough cards.

Does not check: whether the remaining KV cache holds max-model-len
(kv-cache-fits-max-model-len); host memory (node-memory-allocation); memory the CUDA
context and NCCL take besides the weights, which the estimate leaves out (so it errs on the
side of fitting).

The rule is judged and worded once, in :mod:`core.rulebook.capacity`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import capacity, registry
from core import capacity_view as cv
from core.rulebook import capacity as rules
from policylib import capacity_helpers as ch
from policylib import declare

NAME = "weights-fit-card"
SOURCE = registry.RULES[NAME].source


#: How the messages name a server (``core.capacity_view.server_label``).
label = cv.server_label


def smallest_tp_that_fits(sc: cv.ServerCapacity, cards_on_node: int) -> int | None:
    """The smallest TP (doubling from the current one, within the node's cards and dividing
    the model) at which the weights a card fit, else None."""
    assert sc.facts is not None and sc.card is not None and sc.estimate is not None
    e = sc.estimate
    tp = e.tp * 2
    while tp * e.pp <= cards_on_node:
        if not sc.facts.tp_divisibility_problems(tp, sc.server.engine):
            if e.engine == "vllm":
                if cv.vllm_estimate(sc.server, sc.facts, sc.card, tp=tp, image=sc.container.image or None)[0].fits_weights:
                    return tp
            elif (capacity.weights_per_card(sc.facts, tp, pp=e.pp, engine=e.engine)
                  + capacity.runtime_bytes(e.engine, tp, sc.card)) < e.card_memory_gib * capacity.GIB:
                return tp
        tp *= 2
    return None


def message(sc: cv.ServerCapacity, cards_on_node: int) -> str | None:
    """The violation for one server, or None when its weights fit."""
    e = sc.estimate
    if e is None:
        if sc.facts is None:
            return ch.report(sc, ch.unknown_model(sc, "that the weights fit the card"))
        return None  # no card (gpu-card-allocation) or an argument the KV policy reports
    if e.fits_weights:
        return None
    return ch.report(sc, rules.weights_fit_card(sc.model_key or "?", e, smallest_tp_that_fits(sc, cards_on_node),
                                                   searched=True))


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    ch.validate_servers(args, report_violation, NAME, "its weights", message)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.CRITICAL)
