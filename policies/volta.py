"""The pack's policies judged by :mod:`core.rulebook.volta`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

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


declare.resource_policy(
    "vllm-volta", vllm_volta, EnforcementLevel.MANDATORY, Severity.CRITICAL,
    doc="""vllm-volta: vLLM on Volta (sm_70) cards avoids every kernel path sm_70 does not have.

Applies to a vLLM container whose pod holds cards and can land on a card below compute
capability 7.5 (``core.catalog.cards.needs_volta_path``; worker-1's V100 is 7.0). The nodes come
from the stack's inventory (``llm-serving:cluster``): a pinned pod (``nodeName`` or the
``kubernetes.io/hostname`` nodeSelector) is judged on its node; an unpinned pod on every node
with enough cards, and the rules apply if ANY of them is Volta, because the scheduler may put
it there. One violation per problem:
  - ``--dtype`` is explicitly ``float16`` / ``half`` (auto takes the checkpoint's dtype,
    bfloat16 for most; ``bfloat16`` has no sm_70 path); on a cluster without the team's
    conventions (``house_conventions``) ``auto`` passes for a checkpoint the models say is float16;
  - no ``--quantization`` (or checkpoint quantization, from the stack's model facts when
    vLLM would pick it up by itself) whose kernels need more than the card's compute
    capability: fp8 / fp4 / awq / any marlin / compressed-tensors / modelopt need sm75+ or
    sm80+; gptq is fine. The table is ``core.catalog.cards.QUANT_MIN_SM``, the one the
    program's config checks use too;
  - no fp8 KV cache (``--kv-cache-dtype fp8``, ``fp8_e4m3``, ``fp8_e5m2``);
  - env ``VLLM_USE_FLASHINFER_SAMPLER=0`` (FlashInfer's check_cuda_arch raises on 7.0), on the
    vLLM releases that sample with FlashInfer by default (from 0.8.0, the V1 engine; the release
    is read from the image tag, and a tag naming none is taken as a current release and said so);
  - ``VLLM_ATTENTION_BACKEND`` names neither FLASH_ATTN nor FLASHINFER (both need sm75+);
  - TP 2 on a node without NVLink: ``--disable-custom-all-reduce`` (above two PCIe-only cards vLLM
    disables its custom all-reduce itself: ``core.engines.config.custom_all_reduce_must_be_disabled``).

Source: coder.yaml (env block "Required on this hardware, not tuning"; the custom
all-reduce "went silent for 14+ minutes" after CUDA graph capture on the Volta/PCIe pair),
seed 001 (no INT4 / FP8 tensor cores on V100), spec "sm_70 needs ..." and "TP>1 on PCIe" rows.

Does not check: an unset ``VLLM_ATTENTION_BACKEND`` (left to vLLM's own selection; the
components set TRITON_ATTN, ``facts.VLLM_VOLTA_ENV``); env from ``envFrom`` / ``valueFrom``
(not visible in the manifest: a sampler variable given that way is reported as missing);
node affinity and node labels other than the hostname; GatedDeltaNet (fla) models on vLLM.
""",
)
