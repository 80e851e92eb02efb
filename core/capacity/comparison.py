"""The estimate beside what was measured: each figure side by side (:func:`compare`), what the
estimate assumed (:func:`assumptions`), and the estimate the capacity rules judge, with the
measured KV pool in place of the estimated one (:func:`judged`). The measurement itself is
:class:`core.capacity.measured.Measured`.

Plain Python, no Pulumi import.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.capacity.estimator import GIB, Estimate
from core.capacity.measured import DISAGREEMENT, Measured


def kv_tokens(m: Measured, e: Estimate) -> int | None:
    """The measured KV pool in tokens: ``kv_tokens``, else ``kv_gib`` over the estimate's bytes a
    token (whole blocks), else None."""
    if m.kv_tokens is not None:
        return m.kv_tokens
    if m.kv_gib is None:
        return None
    blocks = int(m.kv_gib * GIB // (e.kv_bytes_per_token * e.block_size))
    return blocks * e.block_size


@dataclass(frozen=True)
class Figure:
    """One figure measured and estimated; ``delta`` (estimate - measured) / measured."""

    name: str
    measured: float
    estimated: float

    @property
    def delta(self) -> float:
        return (self.estimated - self.measured) / self.measured

    @property
    def disagrees(self) -> bool:
        """True beyond :data:`DISAGREEMENT`."""
        return abs(self.delta) > DISAGREEMENT

    def text(self, fmt: str) -> str:
        """``"KV tokens 137,000 measured, 124,400 estimated (-9.2%)"``."""
        return (f"{self.name} {format(self.measured, fmt)} measured, {format(self.estimated, fmt)} estimated "
                f"({self.delta:+.1%})")


def compare(m: Measured, e: Estimate) -> list[Figure]:
    """The figures ``m`` gives beside the estimate's: weights a card (GiB), KV tokens (``kv_gib``
    counted through :func:`kv_tokens`), concurrency."""
    out = []
    if m.weights_gib is not None:
        out.append(Figure("weights/card GiB", m.weights_gib, e.weights_gib_per_card))
    tokens = kv_tokens(m, e)
    if tokens is not None:
        out.append(Figure("KV tokens", tokens, e.kv_tokens))
    if m.concurrency is not None:
        out.append(Figure("concurrency", m.concurrency, e.concurrency))
    return out


def assumptions(e: Estimate) -> str:
    """What the estimate assumed, in one line, for a disagreement's report: the engine and its
    release, the card's total, the runtime memory and activation it counted."""
    version = f" {'.'.join(map(str, e.engine_version))}" if e.engine_version else ""
    return (f"{e.engine}{version}, {e.card} at {e.card_memory_gib:.2f} GiB, runtime {e.runtime_gib:.2f} GiB, "
            f"activation/workspace {e.activation_gib:.2f} GiB a rank")


def impossible(m: Measured, e: Estimate) -> list[tuple[str, float, str]]:
    """The figures of ``m`` no card of ``e`` can hold, each ``(field, value, bound)``: the
    weights a card or the KV pool a rank above the card's memory (``e.card_memory_gib``, what
    CUDA reports), or the KV pool and the weights (measured, else estimated) together above it.
    ``kv_tokens`` is counted at the estimate's bytes a token a rank. ``[]``: every figure is
    possible. A measurement is a log line copied by hand; one beyond the card explains nothing."""
    card = e.card_memory_gib
    out: list[tuple[str, float, str]] = []
    if m.weights_gib is not None and m.weights_gib > card:
        out.append(("weights_gib", m.weights_gib, f"at most the {card:.2f} GiB of one {e.card}"))
    weights = m.weights_gib if m.weights_gib is not None and m.weights_gib <= card else e.weights_gib_per_card
    whose = "measured" if m.weights_gib is not None and m.weights_gib <= card else "estimated"
    room = max(card - weights, 0.0)
    if m.kv_gib is not None and m.kv_gib > room:
        out.append(("kv_gib", m.kv_gib, f"at most {room:.2f} GiB a rank: the {card:.2f} GiB of one {e.card} "
                                         f"less {weights:.2f} GiB of weights a card ({whose})"))
    if m.kv_tokens is not None and m.kv_tokens * e.kv_bytes_per_token > room * GIB:
        most = int(room * GIB // e.kv_bytes_per_token) if e.kv_bytes_per_token else 0
        out.append(("kv_tokens", m.kv_tokens, f"at most {most:,} tokens: {e.kv_bytes_per_token:,} bytes a token a rank "
                                               f"in the {room:.2f} GiB of one {e.card} left after {weights:.2f} GiB "
                                               f"of weights a card ({whose})"))
    return out


def judged(e: Estimate, m: Measured | None) -> Estimate:
    """The estimate the capacity rules judge: ``e`` with its KV pool replaced by the measured one
    (:func:`kv_tokens`) when ``m`` gives it, so the policies and the stack-file checks judge
    against the measurement. vLLM: ``fits_kv`` is whether the measured pool holds one request of
    max-model-len (vLLM refuses to start otherwise). candle-vllm: the context is the model's
    window capped at the measured pool (candle-vllm clamps it, ``apply_kv_cache_limit``), so it
    still fits while one block is left. ``e`` unchanged without a measured KV figure, and with a
    figure no card can hold (:func:`impossible`: the stack file refuses it, the estimate is judged)."""
    tokens = kv_tokens(m, e) if m is not None else None
    if tokens is None:
        return e
    if impossible(m, e):  # type: ignore[arg-type]
        return replace(e, notes=e.notes + (f"a measured figure no {e.card} can hold is left out ({m.source})",))  # type: ignore[union-attr]
    blocks = tokens // e.block_size
    window = e.max_model_len
    if e.engine == "candle-vllm" and e.max_model_len == e.kv_tokens:  # the estimate clamped at its own pool
        window = tokens
    elif e.engine == "candle-vllm":
        window = min(window, tokens)
    per_request = -(-window // e.block_size)
    note = f"KV pool as measured: {tokens:,} tokens ({m.source})"  # type: ignore[union-attr]
    return replace(e, kv_tokens=tokens, kv_blocks=blocks, max_model_len=window,
                   concurrency=blocks / per_request if per_request else 0.0,
                   fits_kv=blocks > 0 if e.engine == "candle-vllm" else blocks >= per_request,
                   notes=e.notes + (note,))
