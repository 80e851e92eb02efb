"""The pack's policies judged by :mod:`core.rulebook.capacity`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core.capacity import estimator as capacity
from core.engines.config import CandleConfig
from core.rulebook import capacity as rules
from core.rulebook import capacity_view as cv
from policylib import capacity_helpers as ch
from policylib import declare, stackconfig

# --- kv-cache-fits-max-model-len: a model server's KV cache holds one request of its context.


#: How the messages name a server (``core.rulebook.capacity_view.server_label``).
kv_cache_fits_max_model_len_label = cv.server_label


def larger_tp_that_fits(sc: cv.ServerCapacity, cards_on_node: int) -> tuple[int, capacity.Estimate] | None:
    """The smallest TP above the current one (doubling, while TP x PP fits the node's cards
    and TP divides the model) at which the same vLLM settings fit, with its estimate."""
    assert sc.facts is not None and sc.card is not None
    tp = sc.server.tensor_parallel * 2
    while tp * sc.server.pipeline_parallel <= cards_on_node:
        if not sc.facts.tp_divisibility_problems(tp, sc.server.engine):
            trial, _ = cv.vllm_estimate(sc.server, sc.facts, sc.card, tp=tp)
            if trial.fits_kv and trial.fits_weights:
                return tp, trial
        tp *= 2
    return None


def vllm_message(sc: cv.ServerCapacity, cards_on_node: int) -> str | None:
    """The violation for a vLLM server, or None when it fits with an explicit max-model-len."""
    e = sc.estimate
    assert e is not None and sc.facts is not None
    larger = larger_tp_that_fits(sc, cards_on_node) if not e.fits_kv else None
    return ch.report(sc, rules.kv_cache_fits(sc.model_key or "?", e, sc.explicit_max_model_len,
                                             stackconfig.house_conventions(), larger, searched=True))


def candle_message(sc: cv.ServerCapacity) -> str | None:
    """The violation for a candle-vllm server whose pool is empty, else None."""
    assert sc.estimate is not None
    fraction = sc.server.get(CandleConfig.FLAGS["kv_fraction"]) or str(capacity.CANDLE_DEFAULT_KV_FRACTION)
    return ch.report(sc, rules.candle_kv_room(sc.estimate, fraction))


def check(sc: cv.ServerCapacity, inv_cards: int) -> str | None:
    """The violation message for one server, or None."""
    if sc.estimate is None:
        if sc.facts is None:
            return ch.report(sc, ch.unknown_model(sc, "the KV cache against max-model-len"))
        if sc.card is not None:  # the estimator refused an argument
            return ch.report(sc, rules.estimable(sc.problem))
        return None  # no card: gpu-card-allocation reports the node
    if not sc.estimate.fits_weights:
        return None  # weights-fit-card reports it
    if sc.server.engine == "vllm":
        return vllm_message(sc, inv_cards)
    return candle_message(sc)


def kv_cache_fits_max_model_len(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    ch.validate_servers(args, report_violation, "kv-cache-fits-max-model-len", "its KV cache", check)


declare.resource_policy(
    "kv-cache-fits-max-model-len", kv_cache_fits_max_model_len, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""kv-cache-fits-max-model-len: a model server's KV cache holds one request of its context.

Rule, per vLLM / candle-vllm container of a Deployment, StatefulSet or InferenceService:

- vLLM: on a cluster whose inventory holds the team's conventions (``llm-serving:cluster``
  ``house_conventions: true``, the user's), ``--max-model-len`` is given explicitly (without it
  vLLM takes the model's ``max_position_embeddings``, 262,144 tokens for Qwen3-Coder, and a
  ten-minute start ends in an error); everywhere, the KV pool estimated by :func:`core.capacity.estimator.estimate_vllm` holds
  at least ``max-model-len`` tokens (vLLM v0.11 ``check_enough_kv_cache_memory`` refuses to
  start otherwise: "To serve at least one request with the models's max seq len ...").
- candle-vllm: ``--kv-fraction`` leaves a KV pool of at least one block after the workspace
  reserve (candle-vllm caps its context to the pool instead of refusing to start, so a
  smaller pool is not a violation; the preview shows the cap).
- The server's model must be in the stack's models (``llm-serving:models``): an unknown
  model is reported with how to add it, not skipped.

Source: coder.yaml (Qwen3-Coder-30B-A3B GPTQ at max-model-len 262,144: the
measured single-V100 pool was 132,672 tokens, so it needed TP=2); spec "Measured figures".
The card is the pinned node's, else the smallest card among nodes with enough cards
(policylib/capacity_helpers.py).

Does not check: max-model-len against the model's native window (rope scaling such as YaRN
may extend it, and the flags that set it are not modelled); pipeline-parallel stages beyond
an even split; memory other than the KV cache (weights-fit-card); a server whose node is not
in the inventory (gpu-card-allocation reports that).

The rule is judged and worded once, in :mod:`core.rulebook.capacity`; this module reads the manifests
and reports its breaches.
""",
)


# --- weights-fit-card: a model server's weights fit its card and leave room for a KV cache.


#: How the messages name a server (``core.rulebook.capacity_view.server_label``).
weights_fit_card_label = cv.server_label


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


def weights_fit_card(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    ch.validate_servers(args, report_violation, "weights-fit-card", "its weights", message)


declare.resource_policy(
    "weights-fit-card", weights_fit_card, EnforcementLevel.MANDATORY, Severity.CRITICAL,
    doc="""weights-fit-card: a model server's weights fit its card and leave room for a KV cache.

Rule, per vLLM / candle-vllm container of a Deployment, StatefulSet or InferenceService,
with the weights one card holds after quantization and tensor parallel split
(:func:`core.capacity.estimator.weights_per_card`):

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
""",
)
