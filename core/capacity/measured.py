"""What was measured on the cluster for one model server, and how the estimate compares with it.

A workload of the stack file (``llm-serving:workloads.<name>.measured``) or, for plain
manifests, the inventory (``llm-serving:cluster`` ``measured: {<server name>: ...}``) may carry
the figures a server's own startup log gave: the KV cache (tokens or GiB), the weights a card,
the concurrency at max-model-len, with the engine version, the date and where it was read.
The preview shows them beside the estimate; a figure more than :data:`DISAGREEMENT` away is
reported with what the estimate assumed; the capacity policies judge against the measured KV pool
where there is one (:mod:`core.capacity.comparison`, which compares them with an estimate).

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.k8s.values import Int, Real, rule_error

#: How far (as a share of the measured figure) an estimate may be from a measurement before the
#: preview reports the disagreement: the bound the public logs are held to
#: (``tests/core/test_capacity_public.py``, docs/capacity.md).
DISAGREEMENT = 0.05

class Measured(BaseModel):
    """Figures read from one model server's own log on the cluster. At least one of
    ``kv_tokens``, ``kv_gib`` and ``weights_gib`` is given; ``source`` says where they were read
    (a seed, a log line). ``facts_confirmed`` false: the model's facts are not confirmed, so a
    disagreement may be the facts', not the estimator's (clef-flash, seed 000)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kv_tokens: Int | None = Field(default=None, gt=0, description="KV cache in tokens (vLLM: 'GPU KV cache size: N tokens').")
    kv_gib: Real | None = Field(default=None, gt=0, description="KV cache a rank in GiB (vLLM: 'Available KV cache memory').")
    weights_gib: Real | None = Field(default=None, gt=0, description="Weights a card in GiB ('Model loading took N GiB').")
    concurrency: Real | None = Field(default=None, gt=0, description="Requests of max-model-len that fit at once ('Maximum concurrency').")
    engine_version: str | None = Field(default=None, min_length=1, description="The engine release measured, e.g. v0.11.0.")
    date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="Day of the measurement, YYYY-MM-DD.")
    source: str = Field(min_length=1, description="Where the figures were read: the seed and manifest, or the log.")
    facts_confirmed: bool = Field(
        default=True, description="False when the model's facts are not confirmed from its config.json.")
    note: str = Field(default="", description="What a reader needs beside the figures (flags not known...).")

    @field_validator("date")
    @classmethod
    def _a_day_that_exists(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                datetime.date.fromisoformat(v)
            except ValueError:
                raise rule_error(f"date {v} is no day of the calendar (YYYY-MM-DD: month 01-12, a day the month has)",
                                 "write the day of the measurement as it was, e.g. 2025-11-03") from None
        return v

    @model_validator(mode="after")
    def _some_figure(self) -> Measured:
        if self.kv_tokens is None and self.kv_gib is None and self.weights_gib is None:
            raise ValueError("a measurement gives at least one of kv_tokens, kv_gib and weights_gib")
        return self


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
