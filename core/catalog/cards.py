"""A catalog of common GPU cards by product name: nameplate memory and the memory CUDA reports.

A card's nameplate ("32GB", "80GB") is not what an engine budgets from. vLLM and candle-vllm
size their caches from ``cudaMemGetInfo``'s total (``torch.cuda.mem_get_info()[1]``), which is
smaller: the driver keeps part of the memory (page tables, ECC on some cards, the reserved
region). The inventory's :class:`~core.capacity.inventory.CardSpec` names the product; the capacity
estimator (:mod:`core.capacity.estimator`) takes the card's CUDA-visible total from here
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
at import by :class:`CardModel` (:mod:`core.catalog.datafile`; its schema: ``core/data/cards.schema.json``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from core.catalog import datafile
from core.judging.problems import ConfigError, Problem

#: V100 (worker-1's card): compute capability 7.0. Source: nvidia-smi on worker-1 (spec), 001.
SM_VOLTA = 70
#: Turing: below it there is no FlashInfer, FlashAttention-2, AWQ or GatedDeltaNet (fla)
#: kernel, so the Volta rules and env apply. Source: coder.yaml, 001.
SM_TURING = 75
#: Ampere: bf16 and FP8 (weights, KV cache) kernels start here. Source: 001, coder.yaml.
SM_AMPERE = 80

#: Half dtypes each engine accepts as the explicit dtype below sm_80, preferred first
#: (vLLM ``--dtype``: coder.yaml float16; candle-vllm ``--dtype``: seed 001 f16).
HALF_DTYPES: dict[str, tuple[str, ...]] = {"vllm": ("float16", "half"), "candle-vllm": ("f16",)}


def needs_volta_path(sm: int) -> bool:
    """True below sm_75 (:data:`SM_TURING`): the card gets the Volta rules and env."""
    return sm < SM_TURING


def dtype_runs_on(engine: str, dtype: str | None, sm: int) -> bool:
    """True when ``dtype`` (as written; None or ``auto``: the checkpoint's, bf16 for most)
    runs on compute capability ``sm``: any from sm_80, an explicit half dtype of ``engine``
    (:data:`HALF_DTYPES`) below it."""
    if sm >= SM_AMPERE:
        return True
    return (dtype or "").lower() in HALF_DTYPES[engine]


def half_dtype(engine: str) -> str:
    """The half dtype to write for ``engine``: ``float16`` (vLLM) or ``f16`` (candle-vllm)."""
    return HALF_DTYPES[engine][0]


def kv_cache_dtype_runs_on(kv_cache_dtype: str | None, sm: int) -> bool:
    """An FP8 KV cache (``fp8``, ``fp8_e4m3``, ``fp8_e5m2``) needs sm_80; anything else runs."""
    return not (kv_cache_dtype or "").lower().startswith("fp8") or sm >= SM_AMPERE


def gdn_runs_on_vllm(is_hybrid: bool, sm: int) -> bool:
    """VLLM's GatedDeltaNet kernels (hybrid models) need sm_75 and the fla module (coder.yaml)."""
    return not is_hybrid or sm >= SM_TURING


#: The memory a card's product name states: ``Tesla-V100-PCIE-32GB``, ``NVIDIA-A100-SXM4-80GB``
#: (the device plugin's ``nvidia.com/gpu.product`` form), the GB figure being GiB of card memory.
_PRODUCT_MEMORY = re.compile(r"(?:^|[-_ ])(\d+)\s?GB(?:$|[-_ ])", re.IGNORECASE)


def product_memory_mib(product: str) -> int | None:
    """The card memory in MiB the product name states (``Tesla-V100-PCIE-32GB`` -> 32768), or
    None when it names no size (``Tesla-T4``). Source: the inventory's own V100 entry (32768)."""
    m = _PRODUCT_MEMORY.search(product)
    return int(m.group(1)) * 1024 if m else None


#: Minimum compute capability (x10) of vLLM quantization kernels, by a fragment of the method
#: name (lowercase, ``_`` written ``-``). A method needs the highest value among the fragments
#: it contains (``awq_marlin``: awq 75 and marlin 80, so 80). From each method's
#: ``get_min_capability`` in vLLM's ``model_executor/layers/quantization/`` (AWQ 75, FP8 80,
#: the Marlin kernels 80), seed 001 (no INT4 / FP8 tensor cores on V100) and coder.yaml.
#: compressed-tensors, modelopt and FP4 are counted as having no sm_70 path (their INT8 / FP8
#: schemes need 7.5+, their 4-bit paths Marlin or FP4 kernels). Not listed, so allowed on
#: sm_70: gptq (6.0; seed 002 reasoning.yaml, coder.yaml) and bitsandbytes (7.0).
QUANT_MIN_SM: dict[str, int] = {
    "awq": 75,
    "compressed-tensors": 75,
    "fp8": 80,
    "fp4": 80,
    "marlin": 80,
    "modelopt": 80,
}


def quantization_min_sm(method: str | None) -> int | None:
    """The minimum compute capability (x10) of quantization ``method``; None: no known minimum
    above sm_70 (gptq, bitsandbytes, unquantized)."""
    if not method:
        return None
    name = method.lower().replace("_", "-")
    needs = [sm for fragment, sm in QUANT_MIN_SM.items() if fragment in name]
    return max(needs) if needs else None


def quantization_runs_on(method: str | None, sm: int) -> bool:
    """True when ``method`` has kernels for compute capability ``sm`` (x10, e.g. 70)."""
    need = quantization_min_sm(method)
    return need is None or sm >= need


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


#: The card catalog's file, ``core/data/cards.yaml`` (:mod:`core.catalog.datafile`).
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
    """Each name's :func:`_key` -> its card; raises :class:`core.judging.problems.ConfigError` when two
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
