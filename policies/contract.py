"""The pack's policies judged by :mod:`core.rulebook.contract`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

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


declare.resource_policy(
    "engine-contract", engine_contract, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""engine-contract: a model server against the contract of the release its image runs.

Applies to every vLLM container (any workload kind the read model knows) whose image tag names a
release the contract covers (``core/data/vllm_releases.json``, generated from each release's
sdist: ``python3 dev.py contract``). The release is the image's, not the one the catalog assumes.
One violation per problem (:mod:`core.rulebook.contract`):
  - a flag the release does not declare: "did you mean" the closest, or, for a flag a covered
    older release had, both releases and the replacement its deprecation named;
  - a value not of the flag's type or not among its choices; a switch written with ``=value``;
  - a parser name (``--reasoning-parser``, ``--tool-call-parser``) the release does not register,
    unless a parser plugin flag may register it;
  - a ``VLLM_*`` env name that is a near miss of one the release's ``vllm/envs.py`` reads;
  - on a pod that holds cards, a card whose compute capability the image build does not carry
    (the Dockerfile's ``torch_cuda_arch_list`` within CMakeLists.txt's supported list);
  - on a card of sm_75 or more (below it ``vllm-volta`` judges them), ``--dtype bfloat16`` below the
    release's dtype rule and a ``--quantization`` method below its config class's minimum capability;
  - ``--dtype float16`` (or ``half``) on a model whose config.json ``model_type`` the release refuses
    float16 for (``_check_valid_dtype``: gemma2, gemma3, glm4, plamo2), on any card; the fix names
    bfloat16 on a card of sm_80 or more, float32 below it;
  - ``--quantization`` that is neither the checkpoint's config.json ``quant_method`` (the stack's or
    the catalog's model of ``--model``) nor one an override of the release takes for it; a written
    ``--dtype`` the method's activation dtypes lack (awq, gptq: float16);
  - ``--cpu-offload-gb`` x the pod's ranks above the container's memory limit.

A candle-vllm server is judged the same way for its flags (unknown: "did you mean"; a value not
of the flag's type; a switch written with a value) when its image tag names a commit the data
covers by a prefix of 7 or more hex digits (``core/data/candle_vllm_commits.json``, read from
a checkout of candle-vllm's ``src/main.rs``).

Source: the release's own files, named in each message. Does not check: a tag that names no
covered release or commit (the coverage lines of ``analyze`` say so), JSON-valued flags'
contents, a flag set through a config file (``--config``), CPU for worker processes.
""",
)
