"""How the pack reads the manifests for the policies :mod:`core.rulebook.contract` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core.catalog import cards as catalog_cards
from core.engines import contracts
from core.engines.config import VllmConfig
from core.judging import terms
from core.rulebook import contract
from policylib import declare, stackconfig, views
from policylib import resource_helpers as rh

# --- engine-contract: a model server against the contract of the release its image runs.

def engine_contract(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    for c, server in w.servers_of("candle-vllm"):
        commit = contracts.candle_commit_of_image(c.image)
        if commit is not None:
            for breach in contract.flag_breaches(commit, server.flags, server.raw):
                report_violation(terms.message(
                    w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")), args.urn)
    vllm = w.servers_of("vllm")
    if not vllm:
        return
    nodes = None
    try:
        models = stackconfig.models()
    except stackconfig.StackConfigError:
        models = None
    for c, server in vllm:
        rel = contracts.release_of_image(c.image)
        if rel is None:
            continue
        where = f"{rh.workload_label(w)}, container {c.name}"
        known = models.find(server.model_arg) if models else None
        model = known[1] if known else None
        found = contract.flag_breaches(rel, server.flags, server.raw, model) + contract.env_breaches(rel, c.env)
        offload = contract.flag_value(rel, contract.CPU_OFFLOAD_FLAG, ())
        if offload is None and server.get(contract.CPU_OFFLOAD_FLAG):
            try:
                gib = float(server.get(contract.CPU_OFFLOAD_FLAG) or 0)
            except ValueError:
                gib = 0.0
            ranks = server.tensor_parallel * server.pipeline_parallel
            hit = contract.cpu_offload(rel, gib, ranks, c.memory_limit_mib)
            found += [hit] if hit else []
        dtype = (server.get(VllmConfig.FLAGS["dtype"]) or "").lower() or None
        cards: set[tuple[int, str]] = set()
        if c.cards > 0:
            if nodes is None:
                try:
                    inv = stackconfig.inventory()
                except stackconfig.StackConfigError:
                    inv = None
                nodes = rh.candidate_nodes(w, inv)[0] if inv is not None else []
            cards = {(n.card.sm, n.card.product) for n in nodes if n.card is not None}
            for sm, product in sorted(cards):
                hit = contract.image_capability(rel, c.image, sm, product)
                found += [hit] if hit else []
                if not catalog_cards.needs_volta_path(sm):  # below sm_75 vllm-volta judges dtype and kernels
                    hit = contract.card_capability(rel, dtype, server.setting("quantization"), sm, product, model)
                    found += [hit] if hit else []
        on: list[tuple[int | None, str | None]] = [*sorted(cards)] or [(None, None)]
        for sm_, product_ in on:
            hit = contract.model_type_dtype(rel, dtype, model, sm_, product_)
            found += [hit] if hit else []
        for breach in found:
            report_violation(terms.message(w.annotations, breach.finding(where)), args.urn)


declare.validate("engine-contract", engine_contract)
