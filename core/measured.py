"""What was measured on the cluster for one model server, and how the estimate compares with it.

A workload of the stack file (``llm-serving:workloads.<name>.measured``) or, for plain
manifests, the inventory (``llm-serving:cluster`` ``measured: {<server name>: ...}``) may carry
the figures a server's own startup log gave: the KV cache (tokens or GiB), the weights a card,
the concurrency at max-model-len, with the engine version, the date and where it was read.
The preview shows them beside the estimate (:func:`compare`); a figure more than
:data:`DISAGREEMENT` away is reported with what the estimate assumed; the capacity policies
judge against the measured KV pool where there is one (:func:`kv_tokens`).

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.values import Int, Real

if TYPE_CHECKING:  # pragma: no cover
    from core.capacity import Estimate

#: How far (as a share of the measured figure) an estimate may be from a measurement before the
#: preview reports the disagreement: the bound the public logs are held to
#: (``tests/test_capacity_public.py``, docs/capacity.md).
DISAGREEMENT = 0.05

#: Bytes in a GiB, as the engines' logs print it.
GIB = 1 << 30


class Measured(BaseModel):
    """Figures read from one model server's own log on the cluster. At least one of
    ``kv_tokens``, ``kv_gib`` and ``weights_gib`` is given; ``source`` says where they were read
    (a seed, a log line). ``facts_confirmed`` false: the model's facts are not confirmed, so a
    disagreement may be the facts', not the estimator's (clef-flash, seed 000)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kv_tokens: Optional[Int] = Field(default=None, gt=0, description="KV cache in tokens (vLLM: 'GPU KV cache size: N tokens').")
    kv_gib: Optional[Real] = Field(default=None, gt=0, description="KV cache a rank in GiB (vLLM: 'Available KV cache memory').")
    weights_gib: Optional[Real] = Field(default=None, gt=0, description="Weights a card in GiB ('Model loading took N GiB').")
    concurrency: Optional[Real] = Field(default=None, gt=0, description="Requests of max-model-len that fit at once ('Maximum concurrency').")
    engine_version: Optional[str] = Field(default=None, min_length=1, description="The engine release measured, e.g. v0.11.0.")
    date: Optional[str] = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="Day of the measurement, YYYY-MM-DD.")
    source: str = Field(min_length=1, description="Where the figures were read: the seed and manifest, or the log.")
    facts_confirmed: bool = Field(
        default=True, description="False when the model's facts are not confirmed from its config.json.")
    note: str = Field(default="", description="What a reader needs beside the figures (flags not known...).")

    @model_validator(mode="after")
    def _some_figure(self) -> "Measured":
        if self.kv_tokens is None and self.kv_gib is None and self.weights_gib is None:
            raise ValueError("a measurement gives at least one of kv_tokens, kv_gib and weights_gib")
        return self


def kv_tokens(m: Measured, e: "Estimate") -> Optional[int]:
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


def compare(m: Measured, e: "Estimate") -> list[Figure]:
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


def assumptions(e: "Estimate") -> str:
    """What the estimate assumed, in one line, for a disagreement's report: the engine and its
    release, the card's total, the runtime memory and activation it counted."""
    version = f" {'.'.join(map(str, e.engine_version))}" if e.engine_version else ""
    return (f"{e.engine}{version}, {e.card} at {e.card_memory_gib:.2f} GiB, runtime {e.runtime_gib:.2f} GiB, "
            f"activation/workspace {e.activation_gib:.2f} GiB a rank")


def measurements(workloads: Mapping[str, Any], inventory_measured: Mapping[str, Measured]) -> dict[str, Measured]:
    """Server name -> :class:`Measured`, from the stack file's workloads (raw mappings whose
    ``measured`` key is validated here) and the inventory's ``measured`` map (plain manifests);
    a workload's own figures win. Raises ValueError for an invalid ``measured``."""
    out = dict(inventory_measured)
    for name, raw in workloads.items():
        value = raw.get("measured") if isinstance(raw, Mapping) else getattr(raw, "measured", None)
        if value is not None:
            out[name] = value if isinstance(value, Measured) else Measured.model_validate(value)
    return out


def judged(e: "Estimate", m: Optional[Measured]) -> "Estimate":
    """The estimate the capacity rules judge: ``e`` with its KV pool replaced by the measured one
    (:func:`kv_tokens`) when ``m`` gives it, so the policies and the stack-file checks judge
    against the measurement. vLLM: ``fits_kv`` is whether the measured pool holds one request of
    max-model-len (vLLM refuses to start otherwise). candle-vllm: the context is the model's
    window capped at the measured pool (candle-vllm clamps it, ``apply_kv_cache_limit``), so it
    still fits while one block is left. ``e`` unchanged without a measured KV figure."""
    from dataclasses import replace

    tokens = kv_tokens(m, e) if m is not None else None
    if tokens is None:
        return e
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
