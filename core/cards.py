"""A catalog of common GPU cards by product name: nameplate memory and the memory CUDA reports.

A card's nameplate ("32GB", "80GB") is not what an engine budgets from. vLLM and candle-vllm
size their caches from ``cudaMemGetInfo``'s total (``torch.cuda.mem_get_info()[1]``), which is
smaller: the driver keeps part of the memory (page tables, ECC on some cards, the reserved
region). The inventory's :class:`~core.inventory.CardSpec` names the product; the capacity
estimator (:mod:`core.capacity`) takes the card's CUDA-visible total from here
(:func:`lookup`), and falls back to the nameplate for a product the catalog does not know.

Each entry carries its source. ``measured`` is True for a figure a public log states
(vLLM's "total_gpu_memory", PyTorch's out-of-memory message "GPU 0 has a total capacity of
X GiB", CUDA's deviceQuery) and False for one derived from the nameplate (then the estimate
errs high by the driver's reservation, typically 1-3%). The logs print GiB (2^30 bytes) to
two decimals: the entry's bytes are that figure x 2^30, rounded; the V100's is the exact byte
count of deviceQuery.

Product names are the device plugin's / GPU feature discovery's ``nvidia.com/gpu.product``
label (spaces written ``-``); :func:`lookup` also accepts them with spaces, in any case, and
without the ``NVIDIA`` / ``Tesla`` / ``GeForce`` prefixes.

The entries are data, ``core/data/cards.yaml`` (one per card, with its ``source``), validated
at import by :class:`CardModel` (:mod:`core.datafile`; its schema: ``core/data/cards.schema.json``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from core import datafile
from core.problems import ConfigError, Problem

GIB = 1 << 30
MIB = 1 << 20


class CardModel(BaseModel):
    """One card product, one entry of ``core/data/cards.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    product: str = Field(min_length=1, description="The device plugin's product name, e.g. Tesla-V100-PCIE-32GB.")
    aliases: tuple[str, ...] = Field(default=(), description="Other product names of the same card.")
    memory_mib: int = Field(strict=True, gt=0, description="The nameplate in MiB (32 GB: 32768).")
    cuda_total_bytes: int = Field(
        strict=True, gt=0, description="The total CUDA reports, in bytes (a log's GiB figure x 2^30, rounded)."
    )
    compute_capability: str = Field(pattern=r"^\d+\.\d+$", description='"major.minor", e.g. "7.0".')
    measured: bool = Field(
        strict=True, description="True: cuda_total_bytes is from a public log; False: derived from the nameplate."
    )
    source: str = Field(min_length=1, description="Where cuda_total_bytes comes from: the log, or how it is derived.")

    @property
    def cuda_total_gib(self) -> float:
        """``cuda_total_bytes`` in GiB."""
        return self.cuda_total_bytes / GIB

    @property
    def names(self) -> tuple[str, ...]:
        """The product name and its aliases."""
        return (self.product, *self.aliases)


#: The card catalog's file, ``core/data/cards.yaml`` (:mod:`core.datafile`).
CARDS_FILE = datafile.Catalog(
    "cards", TypeAdapter(tuple[CardModel, ...]), "The card catalog (core/data/cards.yaml)",
    "Common GPU cards by product name: nameplate memory, the memory CUDA reports, and its source.",
    name_key="product")

#: The catalog, in the file's order.
CARDS: tuple[CardModel, ...] = CARDS_FILE.load()

_PREFIXES = ("nvidia", "tesla", "geforce")


def _key(name: str) -> str:
    """``"NVIDIA GeForce RTX 4090"`` / ``"NVIDIA-GeForce-RTX-4090"`` -> ``"rtx4090"``."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    while words and words[0] in _PREFIXES:
        words.pop(0)
    return "".join(words)


def _by_key(cards: tuple[CardModel, ...]) -> dict[str, CardModel]:
    """Each name's :func:`_key` -> its card; raises :class:`core.problems.ConfigError` when two
    names of the catalog come to the same key (one would hide the other from :func:`lookup`)."""
    out: dict[str, CardModel] = {}
    clashes = []
    for card in cards:
        for name in card.names:
            if _key(name) in out:
                clashes.append(Problem(f"core/data/cards.yaml, entry {card.product}", name,
                                       f"names the same card as {out[_key(name)].product!r} does, once spaces, "
                                       "case and the NVIDIA / Tesla / GeForce prefix are set aside",
                                       "name each card once"))
            out.setdefault(_key(name), card)
    if clashes:
        raise ConfigError(clashes, "core/data/cards.yaml")
    return out


_BY_KEY = _by_key(CARDS)


def lookup(product: str) -> CardModel | None:
    """The catalog entry for a product name (device-plugin spelling, spaces, any case, with or
    without the NVIDIA / Tesla / GeForce prefix), or None when the catalog does not know it."""
    return _BY_KEY.get(_key(product))
