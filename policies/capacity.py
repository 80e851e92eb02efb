"""How the pack reads the manifests for the policies :mod:`core.rulebook.capacity` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

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


declare.validate("kv-cache-fits-max-model-len", kv_cache_fits_max_model_len)


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


declare.validate("weights-fit-card", weights_fit_card)
