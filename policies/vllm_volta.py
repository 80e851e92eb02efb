"""vllm-volta: vLLM on Volta (sm_70) cards avoids every kernel path sm_70 does not have.

Applies to a vLLM container whose pod holds cards and can land on a card below compute
capability 7.5 (``core.rules.needs_volta_path``; worker-1's V100 is 7.0). The nodes come
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
    sm80+; gptq is fine. The table is ``core.rules.QUANT_MIN_SM``, the one the
    program's config checks use too;
  - no fp8 KV cache (``--kv-cache-dtype fp8``, ``fp8_e4m3``, ``fp8_e5m2``);
  - env ``VLLM_USE_FLASHINFER_SAMPLER=0`` (FlashInfer's check_cuda_arch raises on 7.0), on the
    vLLM releases that sample with FlashInfer by default (from 0.8.0, the V1 engine; the release
    is read from the image tag, and a tag naming none is taken as a current release and said so);
  - ``VLLM_ATTENTION_BACKEND`` names neither FLASH_ATTN nor FLASHINFER (both need sm75+);
  - TP 2 on a node without NVLink: ``--disable-custom-all-reduce`` (above two PCIe-only cards vLLM
    disables its custom all-reduce itself: ``core.rules.custom_all_reduce_must_be_disabled``).

Source: coder.yaml (env block "Required on this hardware, not tuning"; the custom
all-reduce "went silent for 14+ minutes" after CUDA graph capture on the Volta/PCIe pair),
seed 001 (no INT4 / FP8 tensor cores on V100), spec "sm_70 needs ..." and "TP>1 on PCIe" rows.

Does not check: an unset ``VLLM_ATTENTION_BACKEND`` (left to vLLM's own selection; the
components set TRITON_ATTN, ``facts.VLLM_VOLTA_ENV``); env from ``envFrom`` / ``valueFrom``
(not visible in the manifest: a sampler variable given that way is reported as missing);
node affinity and node labels other than the hostname; GatedDeltaNet (fla) models on vLLM.
"""

from __future__ import annotations

from typing import Optional

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import facts, images, rules
from core.modelfacts import ModelFacts
from core.problems import Finding
from core import manifests
from core.engines import VllmConfig
from policylib import resource_helpers as rh
from policylib import views
from policylib import terms
from policylib import stackconfig

NAME = "vllm-volta"
SAMPLER_ENV = "VLLM_USE_FLASHINFER_SAMPLER"
BACKEND_ENV = "VLLM_ATTENTION_BACKEND"
NO_VOLTA_BACKENDS = ("FLASH_ATTN", "FLASHINFER")
CUSTOM_AR_FLAGS = (VllmConfig.FLAGS["disable_custom_all_reduce"], "--disable_custom_all_reduce")


#: One sm_70 problem: (what is wrong, the manifest fix, the stack-file fix with ``{key}``).
Problem = tuple[str, str, str]


def dtype_problem(server: manifests.ServerArgs, model: Optional[ModelFacts], sm: int = rules.SM_VOLTA,
                  house: bool = True) -> Optional[Problem]:
    """The ``--dtype`` problem on compute capability ``sm`` (:func:`core.rules.dtype_runs_on`,
    the predicate the stack file's ``dtype`` check calls), or None. Without ``house`` (the
    inventory's ``house_conventions``), ``auto`` on a checkpoint the stack's models say is float16
    passes: vLLM then takes float16, which sm_70 runs; the user's cluster asks for it explicitly."""
    dtype = (server.get(VllmConfig.FLAGS["dtype"]) or "").lower()
    if rules.dtype_runs_on("vllm", dtype, sm):
        return None
    stack_fix = "set dtype: float16 under {key}"
    if not dtype or dtype == "auto":
        if not house and model is not None and model.torch_dtype == "float16":
            return None
        ckpt = f" ({model.torch_dtype})" if model else ""
        return (f"no explicit --dtype, so vLLM takes the checkpoint's dtype{ckpt}; sm_{sm} needs an "
                "explicit half dtype", "add --dtype float16", stack_fix)
    if dtype in ("bfloat16", "bf16"):
        return f"--dtype bfloat16: sm_{sm} has no bf16 support", "use --dtype float16", stack_fix
    return f"--dtype {dtype} is not a half dtype; sm_{sm} serves float16", "use --dtype float16", stack_fix


def quantization_problem(server: manifests.ServerArgs, model: Optional[ModelFacts], sm: int = rules.SM_VOLTA) -> Optional[Problem]:
    """The quantization problem on a card of compute capability ``sm`` (x10), by the table the
    program's config checks use (``core.rules``), or None."""
    written = server.get(VllmConfig.FLAGS["quantization"]) or server.get("-q")
    method = written or (model.quantization.method if model and model.quantization else None)
    if rules.quantization_runs_on(method, sm):
        return None
    need = rules.quantization_min_sm(method)
    how = f"--quantization {method}" if written else f"the checkpoint's {method} quantization (picked up without --quantization)"
    return (f"{how}: its kernels need sm{need}+ (FP8 / INT4 tensor cores, Marlin), not sm_{sm}",
            "use a gptq or unquantized float16 checkpoint",
            "point model under {key} at a gptq or unquantized float16 checkpoint")


def kv_cache_problem(server: manifests.ServerArgs, sm: int = rules.SM_VOLTA) -> Optional[Problem]:
    kv = server.get(VllmConfig.FLAGS["kv_cache_dtype"]) or ""
    if not rules.kv_cache_dtype_runs_on(kv, sm):
        return (f"--kv-cache-dtype {kv}: sm_{sm} has no FP8", "use --kv-cache-dtype auto",
                "set kv_cache_dtype: auto under {key}")
    return None


def sampler_problem(env, image: str, sm: int = rules.SM_VOLTA) -> Optional[Problem]:
    """The FlashInfer sampler on sm_70, for the vLLM releases that turn it on by default
    (:func:`core.rules.flashinfer_sampler_on_by_default`, the release from the image tag,
    :attr:`core.images.ImageRef.version`); an explicit ``1`` is reported on any release."""
    value = env.get(SAMPLER_ENV)
    if value == "0":
        return None
    version = images.parse_image(image).version
    on = rules.flashinfer_sampler_on_by_default(version, sm, v1_disabled=env.get("VLLM_USE_V1") == "0")
    if value != "1" and on is False:
        return None
    shown = f"is {value!r}" if SAMPLER_ENV in env else "is not set"
    if version is None:
        release = (f"; the image tag {images.parse_image(image).shown_tag} names no release, so the sampler is taken as "
                   f"on, as in every release from {'.'.join(map(str, rules.VLLM_V1_PRE_AMPERE_FROM if sm < rules.SM_AMPERE else rules.VLLM_V1_FROM))} on sm_{sm}")
    else:
        release = f" (vLLM {'.'.join(map(str, version))} samples with FlashInfer unless it is 0)" if value != "1" else ""
    return (f"env {SAMPLER_ENV} {shown}: FlashInfer's sampler raises on sm_{sm}{release}",
            f"set {SAMPLER_ENV}=0", f"remove {SAMPLER_ENV} from env under {{key}}; the component sets it to 0")


def env_problems(env, image: str = "", sm: int = rules.SM_VOLTA) -> list[Problem]:
    problems = []
    sampler = sampler_problem(env, image, sm)
    if sampler:
        problems.append(sampler)
    backend = env.get(BACKEND_ENV, "")
    if any(bad in backend.upper() for bad in NO_VOLTA_BACKENDS):
        want = facts.VLLM_VOLTA_ENV[BACKEND_ENV]
        problems.append((
            f"env {BACKEND_ENV}={backend}: FlashAttention-2 and FlashInfer need sm75+",
            f"set {BACKEND_ENV}={want}",
            f"remove {BACKEND_ENV} from env under {{key}}; the component sets {want}",
        ))
    return problems


def all_reduce_problem(server: manifests.ServerArgs, no_nvlink: list) -> Optional[Problem]:
    tp = server.tensor_parallel
    if not no_nvlink or not rules.custom_all_reduce_must_be_disabled(tp, nvlink=False) or any(server.has(f) for f in CUSTOM_AR_FLAGS):
        return None
    names = ", ".join(n.name for n in no_nvlink)
    return (f"TP {tp} without NVLink ({names}) and no --disable-custom-all-reduce: vLLM's custom "
            "all-reduce deadlocked after CUDA graph capture on this Volta/PCIe pair",
            "add --disable-custom-all-reduce",
            "remove disable_custom_all_reduce: false under {key} (the component disables it without NVLink)")


def problems(c: manifests.Container, server: manifests.ServerArgs, model, volta: list, house: bool = True) -> list[Problem]:
    """Every sm_70 problem of one vLLM container; ``volta`` is the Volta nodes it can land on;
    ``house``: the inventory's ``house_conventions``."""
    sm = rules.lowest_sm([n.card.sm for n in volta if n.card])
    found = [dtype_problem(server, model, sm, house), quantization_problem(server, model, sm), kv_cache_problem(server, sm)]
    found += env_problems(c.env, c.image, sm)
    found.append(all_reduce_problem(server, [n for n in volta if n.card and not n.card.nvlink]))
    return [p for p in found if p]


def _model(server: manifests.ServerArgs, models) -> Optional[ModelFacts]:
    hit = models.find(server.model_arg) if models else None
    return hit[1] if hit else None


def validate(args, report_violation) -> None:
    w = views.of(args)
    if w is None or not w.is_gpu:
        return
    vllm = w.servers_of("vllm")
    if not vllm:
        return
    inv = rh.with_inventory(NAME, report_violation, args.urn)
    if inv is None:
        return
    try:
        models = stackconfig.models()
    except stackconfig.StackConfigError as err:
        report_violation(rh.config_error(NAME, err), args.urn)
        models = None
    nodes, pinned = rh.candidate_nodes(w, inv)
    volta = rh.pre_turing(nodes)
    if not volta:
        return
    where = rh.describe_nodes(volta, pinned)
    for c, server in vllm:
        for wrong, fix, stack_fix in problems(c, server, _model(server, models), volta, inv.house_conventions):
            report_violation(terms.message(w.annotations, Finding(
                f"{rh.workload_label(w)}, container {c.name} ({where})", wrong, fix,
                "seed 000 (coder.yaml: what vLLM v0.11.0 needs on the V100s, no NVLink)", stack_fix=stack_fix,
            )), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="vLLM on sm_70 cards: explicit float16, no bf16/fp8/awq/marlin, sampler and attention env, no custom all-reduce over PCIe.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    remediation_steps=(
        "On V100 (sm_70): pass --dtype float16, use gptq or float16 weights, --kv-cache-dtype auto, "
        "set env VLLM_USE_FLASHINFER_SAMPLER=0 and VLLM_ATTENTION_BACKEND=TRITON_ATTN, and with "
        "TP 2 over PCIe add --disable-custom-all-reduce (the VllmInferenceService component does all of it)."
    ),
)
