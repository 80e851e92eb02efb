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
errs high by the driver's reservation, typically 1-3%). Figures are GiB (2^30 bytes) to the
two decimals the logs print; the V100's is the exact byte count of deviceQuery.

Product names are the device plugin's / GPU feature discovery's ``nvidia.com/gpu.product``
label (spaces written ``-``); :func:`lookup` also accepts them with spaces, in any case, and
without the ``NVIDIA`` / ``Tesla`` / ``GeForce`` prefixes. Plain Python, no pydantic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

GIB = 1 << 30
MIB = 1 << 20


@dataclass(frozen=True)
class CardModel:
    """One card product.

    ``product``: the device plugin's name; ``aliases``: other names of the same card;
    ``memory_mib``: the nameplate in MiB (32 GB -> 32,768); ``cuda_total_bytes``: the total
    CUDA reports, in bytes; ``compute_capability``: ``"major.minor"``; ``measured``: whether
    ``cuda_total_bytes`` comes from a public log (see the module docstring); ``source``: where.
    """

    product: str
    memory_mib: int
    cuda_total_bytes: int
    compute_capability: str
    measured: bool
    source: str
    aliases: tuple[str, ...] = ()

    @property
    def cuda_total_gib(self) -> float:
        """``cuda_total_bytes`` in GiB."""
        return self.cuda_total_bytes / GIB

    @property
    def names(self) -> tuple[str, ...]:
        """The product name and its aliases."""
        return (self.product, *self.aliases)


def _gib(value: float) -> int:
    """Bytes of a figure a log prints in GiB with two decimals."""
    return round(value * GIB)


_OOM = ("PyTorch's out-of-memory message on this card in public reports ('GPU 0 has a total capacity of {} GiB'; "
        "recalled, not re-checked here)")

#: The catalog. Sources: the log named in each entry. ``measured=False`` entries are derived
#: (nameplate less the typical 1-2% the driver keeps) and say so.
CARDS: tuple[CardModel, ...] = (
    CardModel("Tesla-V100-PCIE-32GB", 32768, 34_089_730_048, "7.0", True,
              "CUDA deviceQuery on a Tesla V100-PCIE-32GB: 'Total amount of global memory: 32510 MBytes "
              "(34089730048 bytes)' (31.75 GiB; vLLM logs round it to 31.74)",
              ("Tesla-V100-SXM2-32GB", "Tesla-V100S-PCIE-32GB")),
    CardModel("Tesla-V100-SXM2-16GB", 16384, _gib(15.77), "7.0", True, _OOM.format("15.77"),
              ("Tesla-V100-PCIE-16GB",)),
    CardModel("Tesla-T4", 15360, _gib(14.75), "7.5", True, _OOM.format("14.75")),
    CardModel("NVIDIA-GeForce-RTX-3090", 24576, _gib(23.58), "8.6", True,
              "vllm-project/vllm #10517, vLLM's profiling log: total_gpu_memory=23.58GiB"),
    CardModel("NVIDIA-GeForce-RTX-4090", 24576, _gib(23.65), "8.9", True, _OOM.format("23.65")),
    CardModel("NVIDIA-RTX-A6000", 49152, _gib(47.54), "8.6", True, _OOM.format("47.54")),
    CardModel("NVIDIA-A10G", 24576, _gib(21.99), "8.6", True, _OOM.format("21.99")),
    CardModel("NVIDIA-L4", 24576, _gib(22.05), "8.9", False,
              "derived: nvidia-smi's 23,034 MiB less the driver's reservation (about 0.45 GiB); unverified"),
    CardModel("NVIDIA-L40S", 49152, _gib(44.52), "8.9", False,
              "derived: nvidia-smi's 46,068 MiB less the driver's reservation (about 0.47 GiB); unverified"),
    CardModel("NVIDIA-A100-SXM4-40GB", 40960, _gib(39.39), "8.0", True, _OOM.format("39.39"),
              ("NVIDIA-A100-PCIE-40GB",)),
    CardModel("NVIDIA-A100-SXM4-80GB", 81920, _gib(79.15), "8.0", True, _OOM.format("79.15"),
              ("NVIDIA-A100-80GB-PCIe",)),
    CardModel("NVIDIA-H100-80GB-HBM3", 81920, _gib(79.19), "9.0", True,
              "llm-d planner accuracy report, vLLM's log on an H100-80GB: total_gpu_memory 79.19 GiB",
              ("NVIDIA-H100-PCIe", "NVIDIA-H100-SXM5-80GB")),
    CardModel("NVIDIA-H200", 144384, _gib(139.8), "9.0", False,
              "derived: nvidia-smi's 143,771 MiB less the driver's reservation (about 0.6 GiB); unverified",
              ("NVIDIA-H200-141GB-HBM3e",)),
)

_PREFIXES = ("nvidia", "tesla", "geforce")


def _key(name: str) -> str:
    """``"NVIDIA GeForce RTX 4090"`` / ``"NVIDIA-GeForce-RTX-4090"`` -> ``"rtx4090"``."""
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w]
    while words and words[0] in _PREFIXES:
        words.pop(0)
    return "".join(words)


_BY_KEY: dict[str, CardModel] = {_key(n): card for card in CARDS for n in card.names}


def lookup(product: str) -> Optional[CardModel]:
    """The catalog entry for a product name (device-plugin spelling, spaces, any case, with or
    without the NVIDIA / Tesla / GeForce prefix), or None when the catalog does not know it."""
    return _BY_KEY.get(_key(product))
