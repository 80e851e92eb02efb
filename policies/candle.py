"""How the pack reads the manifests for the policies :mod:`core.rulebook.candle` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

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


declare.validate("candle-vllm-args", candle_vllm_args)
