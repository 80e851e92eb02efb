"""candle-vllm's device list: ``--d`` names the pod's cards as distinct ordinals ``0..n-1``, one
per card. The stack file has no such key: the CandleDeployment component writes ``--d`` from
``cards``, so a breach tells a stack-file user to set ``cards``.

Source: seeds 001 and 003 (coder-14b-fp16.yaml ``--d 0,1`` for TP=2 on 2 cards, clef-candle.yaml
``--d "0"``); the candle-vllm README (``--d``: device ids).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.base import facts
from core.engines import flags
from core.engines.settings import S, flag_setting
from core.judging.registry import MANIFEST, STACK, Breach, declare_policy, only, rule

#: candle-vllm's device list; the stack file has no key for it (the component writes it from cards).
DEVICES = flag_setting("devices", flags.CANDLE, id_="candle_devices", in_stack_file=False)

_SOURCE = "seeds 001 and 003 (candle-vllm.yaml, clef-candle.yaml: --d lists the pod's cards)"


def _listed(values: Sequence[str]) -> tuple[str, list[str]]:
    """``(shown, items)``: the ``--d`` as written (``no --d`` means device 0) and its items."""
    written = values[0] if values else None
    shown = f"--d {written}" if written is not None else "no --d (device 0 only)"
    return shown, [d.strip() for d in (written or "0").split(",") if d.strip()]


def _want(n: int) -> str:
    return ",".join(str(i) for i in range(max(n, 1)))


def _fix(devices: str) -> str:
    return (only(MANIFEST, f"set {DEVICES.to(devices)}")
            + only(STACK, f"set {S.cards} to the tensor parallel size; the component writes --d"))


@rule("candle-vllm-args", "candle-vllm's --d names one device per card of the container.", _SOURCE,
      policy="candle-vllm-args")
def device_count(values: Sequence[str], cards: int) -> Breach | None:
    """``values``: the items after each ``--d`` (``[]``: no ``--d``, device 0 only); their
    count equals the container's ``cards`` (the tensor-parallel ranks)."""
    if len(values) > 1:
        return None  # device_ordinals reports the shape
    shown, items = _listed(values)
    if len(items) == cards or not all(d.isdigit() for d in items):
        return None
    return Breach(
        f"{shown} names {len(items)} device(s) but the container holds {cards} {facts.GPU_RESOURCE}; the "
        "tensor-parallel ranks must equal the cards",
        _fix(_want(cards)) + only(MANIFEST, f", or {S.cards.to(len(items))}"),
    )


@rule("candle-device-ordinals", "candle-vllm's --d is one comma-separated list of distinct ordinals 0..n-1.",
      _SOURCE, policy="candle-vllm-args")
def device_ordinals(values: Sequence[str], cards: int) -> Breach | None:
    """One ``--d`` item, numbers, distinct and ``0..n-1``: inside the container the device
    plugin's cards are numbered from 0, so ``--d 1`` on a one-card pod names no device."""
    if len(values) > 1:
        return Breach(f"--d is followed by {len(values)} items ({' '.join(values)}); candle-vllm takes one "
                      "comma-separated list", _fix(",".join(values)))
    shown, items = _listed(values)
    if not all(d.isdigit() for d in items):
        return Breach(f"{shown} has a device that is not a number", _fix(_want(cards)))
    ordinals = [int(d) for d in items]
    if len(set(ordinals)) == len(ordinals) and sorted(ordinals) == list(range(len(ordinals))):
        return None
    return Breach(f"{shown} is not distinct devices 0..n-1: the pod's cards are numbered from 0 inside the "
                  "container", _fix(_want(len(set(ordinals)))))


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "candle-vllm-args",
    "candle-vllm runs --dtype f16 on sm_70 and lists one --d device per card, 0..n-1.",
    (
        "Pass --dtype f16 on V100 nodes and --d 0,1,...,n-1 with n = the container's nvidia.com/gpu (--d 0 for one card, --d 0,1"
        " for TP=2); CandleDeployment derives --d from cards."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""candle-vllm-args: candle-vllm gets ``--dtype f16`` on sm_70 and one ``--d`` device per card.

Rule, for every candle-vllm container (recognised by image or command, ``core.k8s.manifests``):
  - ``--d`` lists the devices as one comma-separated item of distinct ordinals ``0..n-1``
    (inside the container the device plugin's cards are numbered from 0, so ``--d 1`` on a
    one-card pod names a device that does not exist), and n equals the container's
    ``nvidia.com/gpu``; no ``--d`` means device 0 only;
  - on a card below sm_75 (worker-1's V100: sm_70; the node from the inventory, unpinned pods
    judged against every node with enough cards, as vllm-volta does): ``--dtype f16``. bf16
    has no tensor-core path on Volta, and without ``--dtype`` candle-vllm takes the
    checkpoint's dtype (bfloat16 for the Qwen checkpoints).

Source: seed 001 coder-14b-fp16.yaml (``--d 0,1`` for TP=2 on 2 cards, ``--dtype f16``:
"the V100 has FP16 tensor cores"), seed 003 clef-candle.yaml (``--d "0"``, ``--dtype f16``
on one card), candle-vllm README (``--d``: device ids; "number of GPUs (--d) used must be
aligned to 2^n").

Does not check: that TP divides the model's heads (TP divisibility policy); ``--mem`` /
``--kv-fraction`` sizes (kv-cache policies); the README's "aligned to 2^n" device counts
(on 4 cards only 1, 2 and 4 fit anyway; 3 would fail TP divisibility of the Qwen heads).
""",
)
