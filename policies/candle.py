"""The pack's policies judged by :mod:`core.rulebook.candle`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import rulebook
from core.engines.config import CandleConfig
from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from core.rulebook import candle
from policylib import declare, views
from policylib import resource_helpers as rh

# --- candle-vllm-args: candle-vllm gets ``--dtype f16`` on sm_70 and one ``--d`` device per card.


def device_breaches(server: manifests.ServerArgs, cards: int) -> list[Breach]:
    """What is wrong with ``--d`` against the container's ``cards``
    (:func:`core.rulebook.candle.device_count`, :func:`~core.rulebook.candle.device_ordinals`)."""
    values = server.values(CandleConfig.FLAGS["devices"])
    return [b for b in (candle.device_count(values, cards), candle.device_ordinals(values, cards)) if b]


def candle_vllm_args(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    candle_servers = w.servers_of("candle-vllm")
    if not candle_servers:
        return
    label = rh.workload_label(w)
    for c, server in candle_servers:
        for breach in device_breaches(server, c.cards):
            report_violation(terms.message(w.annotations, breach.finding(f"{label}, container {c.name}")), args.urn)
    inv = rh.with_inventory("candle-vllm-args", report_violation, args.urn)
    if inv is None:
        return
    nodes, pinned = rh.candidate_nodes(w, inv)
    volta = rh.pre_turing(nodes)
    if not volta:
        return
    where = rh.describe_nodes(volta, pinned)
    card = min((n.card for n in volta if n.card), key=lambda k: k.sm)
    for c, server in candle_servers:
        dtype = rulebook.half_dtype(card, server.get(CandleConfig.FLAGS["dtype"]), "candle-vllm")
        if dtype:
            report_violation(terms.message(w.annotations, dtype.finding(f"{label}, container {c.name} ({where})")),
                             args.urn)


declare.resource_policy(
    "candle-vllm-args", candle_vllm_args, EnforcementLevel.MANDATORY, Severity.HIGH,
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
