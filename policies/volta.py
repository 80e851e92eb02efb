"""How the pack reads the manifests for the policies :mod:`core.rulebook.volta` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core import rulebook
from core.capacity.inventory import Node
from core.catalog.modelfacts import ModelFacts
from core.engines.config import VllmConfig
from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from core.rulebook import volta as volta_env
from policylib import declare, stackconfig, views
from policylib import resource_helpers as rh

# --- vllm-volta: vLLM on Volta (sm_70) cards avoids every kernel path sm_70 does not have.

def breaches(c: manifests.Container, server: manifests.ServerArgs, model: ModelFacts | None, volta: list[Node],
             house: bool = True) -> list[Breach]:
    """Every sm_70 breach of one vLLM container, by the shared server rules
    (:mod:`core.rulebook.servers`) and the env rules (:mod:`core.rulebook.volta`); ``volta`` is
    the Volta nodes it can land on, judged by the lowest card; ``house``: the inventory's
    ``house_conventions`` (without it ``auto`` passes on a float16 checkpoint)."""
    card = min((n.card for n in volta if n.card), key=lambda k: k.sm)
    written = server.setting("quantization")
    method = written or (model.quantization.method if model and model.quantization else None)
    no_nvlink = [n for n in volta if n.card and not n.card.nvlink]
    dtype = (server.get(VllmConfig.FLAGS["dtype"]) or "").lower() or None
    found = [
        rulebook.half_dtype(card, dtype, "vllm", model.torch_dtype if model else None, explicit=house),
        rulebook.vllm_kernels(card, method, None, written=bool(written)),
        rulebook.vllm_kernels(card, None, server.get(VllmConfig.FLAGS["kv_cache_dtype"])),
        volta_env.flashinfer_sampler(c.env, c.image, card.sm),
        volta_env.attention_backend(c.env, card.sm),
    ]
    if no_nvlink:
        found.append(rulebook.custom_all_reduce(
            no_nvlink[0].card, server.tensor_parallel, server.has(VllmConfig.FLAGS["disable_custom_all_reduce"]),
            tuple(n.name for n in no_nvlink)))
    return [b for b in found if b]


def _model(server: manifests.ServerArgs, models: Any) -> ModelFacts | None:
    hit = models.find(server.model_arg) if models else None
    return hit[1] if hit else None


def vllm_volta(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not w.is_gpu:
        return
    vllm = w.servers_of("vllm")
    if not vllm:
        return
    inv = rh.with_inventory("vllm-volta", report_violation, args.urn)
    if inv is None:
        return
    try:
        models = stackconfig.models()
    except stackconfig.StackConfigError as err:
        report_violation(rh.config_error("vllm-volta", err), args.urn)
        models = None
    nodes, pinned = rh.candidate_nodes(w, inv)
    volta = rh.pre_turing(nodes)
    if not volta:
        return
    where = rh.describe_nodes(volta, pinned)
    for c, server in vllm:
        for breach in breaches(c, server, _model(server, models), volta, inv.house_conventions):
            report_violation(terms.message(
                w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name} ({where})")), args.urn)


declare.validate("vllm-volta", vllm_volta)
