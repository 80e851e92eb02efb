"""The engine contract's generator (``python3 dev.py contract``, :mod:`tools.contract.__main__`):
vLLM's releases read from their sdists by :mod:`tools.contract.vllm_source`."""

from __future__ import annotations

#: The vLLM releases the contract covers: prod's (0.11.0), one older, two newer.
RELEASES = ("0.10.1.1", "0.11.0", "0.14.1", "0.19.1")
#: The line the generator prints for each release it downloads and reads.
RELEASES_READ_LINE = tuple(f"contract: reading vLLM {r} from vllm-{r}.tar.gz" for r in RELEASES)
