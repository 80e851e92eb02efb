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

Source: issue 4; coder.yaml ("Qwen ships this model only as BF16 (61.1 GB) ... 4-bit GPTQ is
the only form that fits one 32 GB card"), seed 001 (the 14B fp16 split over two V100s). The
card is the pinned node's, else the smallest card among nodes with enough cards.

Does not check: whether the remaining KV cache holds max-model-len
(kv-cache-fits-max-model-len); host memory (node-memory-allocation); memory the CUDA
context and NCCL take besides the weights, which the estimate leaves out (so it errs on the
side of fitting).
"""

from __future__ import annotations

from typing import Optional

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import capacity
from policylib import capacity_helpers as ch

NAME = "weights-fit-card"


#: How the messages name a server (``policylib.capacity_helpers.server_label``).
label = ch.server_label


def smallest_tp_that_fits(sc: ch.ServerCapacity, cards_on_node: int) -> Optional[int]:
    """The smallest TP (doubling from the current one, within the node's cards and dividing
    the model) at which the weights a card fit, else None."""
    assert sc.facts is not None and sc.card is not None and sc.estimate is not None
    e = sc.estimate
    tp = e.tp * 2
    while tp * e.pp <= cards_on_node:
        if not sc.facts.tp_divisibility_problems(tp):
            weights = capacity.weights_per_card(sc.facts, tp, pp=e.pp, engine=e.engine)
            if e.engine == "vllm":
                act = capacity.vllm_activation_bytes(
                    sc.facts,
                    tp,
                    max_num_batched_tokens=ch.human_int(ch.arg(sc.server, "--max-num-batched-tokens"))
                    or capacity.VLLM_DEFAULT_MAX_NUM_BATCHED_TOKENS,
                    max_num_seqs=ch.human_int(ch.arg(sc.server, "--max-num-seqs")) or capacity.VLLM_DEFAULT_MAX_NUM_SEQS,
                )
                if weights + act < e.budget_gib * capacity.GIB:
                    return tp
            elif weights < e.card_memory_gib * capacity.GIB:
                return tp
        tp *= 2
    return None


def message(sc: ch.ServerCapacity, cards_on_node: int) -> Optional[str]:
    """The violation for one server, or None when its weights fit."""
    e = sc.estimate
    if e is None:
        if sc.facts is None:
            wrong, _, fix = (sc.problem or "").partition("; ")
            return ch.finding(sc, f"cannot check that the weights fit the card: {wrong}",
                              fix or "add the model to llm-serving:models", ch.INVENTORY_SOURCE)
        return None  # no card (gpu-card-allocation) or an argument the KV policy reports
    if e.fits_weights:
        return None
    card = sc.card.product if sc.card else "?"
    what = f"{e.weights_gib_per_card:.2f} GiB of weights a card ({sc.model_key}, TP={e.tp})"
    if e.weights_gib_per_card >= e.card_memory_gib:
        why = f"{what} exceed the {e.card_memory_gib:.2f} GiB of a {card}, so the model never loads"
    else:
        why = (
            f"{what} plus {e.activation_gib:.2f} GiB of profiled activations exceed gpu-memory-utilization "
            f"{e.budget_gib / e.card_memory_gib:.2f} x {e.card_memory_gib:.2f} GiB = {e.budget_gib:.2f} GiB of a "
            f"{card}, so vLLM finds no memory for the KV cache and fails after loading"
        )
    tp = smallest_tp_that_fits(sc, cards_on_node)
    fix = f"split it over {tp * e.pp} cards (TP={tp})" if tp else "use a quantized checkpoint or a larger card"
    stack_fix = f"set cards under {{key}} to {tp * e.pp}" if tp else "point model under {key} at a quantized checkpoint"
    return ch.finding(sc, why, fix, stack_fix=stack_fix)


def validate(args, report_violation) -> None:
    ch.validate_servers(args, report_violation, NAME, "its weights", message)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="A model server's weights a card (after quantization and tensor parallel split) fit the card with room for a KV cache.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    remediation_steps=(
        "Split the model over more cards (vLLM --tensor-parallel-size, candle-vllm --d, with the pod's "
        "nvidia.com/gpu to match), use a quantized checkpoint that the card supports (GPTQ on sm_70), or "
        "move the server to a node with larger cards. Add a model the stack does not know to llm-serving:models."
    ),
)
