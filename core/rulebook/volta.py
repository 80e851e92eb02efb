"""vLLM's environment on a card below sm_75 (worker-1's V100: sm_70): the FlashInfer sampler and
the attention backend, which the VllmInferenceService component sets (``facts.VLLM_VOLTA_ENV``)
and a hand-written manifest must. The card's dtype, kernels and all-reduce rules are
:mod:`core.rulebook.servers`'.

Source: coder.yaml (env block "Required on this hardware, not tuning"); FlashInfer's
check_cuda_arch; vLLM's attention backend selection (FLASH_ATTN and FLASHINFER need sm_75).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.base import facts
from core.catalog import cards, images
from core.engines import contracts
from core.judging.registry import MANIFEST, STACK, Breach, declare_policy, only, rule

SAMPLER_ENV = "VLLM_USE_FLASHINFER_SAMPLER"
BACKEND_ENV = "VLLM_ATTENTION_BACKEND"
#: Attention backends with no sm_70 path.
NO_VOLTA_BACKENDS = ("FLASH_ATTN", "FLASHINFER")


def _env_fix(name: str, value: str) -> str:
    """Set ``name=value`` in the manifest; in the stack file the component sets it, so drop the override."""
    return (only(MANIFEST, f"set env {name}={value}")
            + only(STACK, f"remove {name} from env (the component sets it to {value})"))


@rule("vllm-volta-sampler", "FlashInfer's sampler is off below sm_75.",
      "coder.yaml (VLLM_USE_FLASHINFER_SAMPLER=0, required on this hardware); FlashInfer check_cuda_arch; the release's "
      "vllm/v1/sample/ops/topk_topp_sampler.py (core/data/vllm_releases.json)",
      policy="vllm-volta")
def flashinfer_sampler(env: Mapping[str, str], image: str, sm: int = cards.SM_VOLTA) -> Breach | None:
    """The FlashInfer sampler on compute capability ``sm``, as the release the image's tag names
    does it: for a release the engine contract covers (:mod:`core.engines.contracts`), its sampler's own
    default (on unless ``0`` through 0.11; opt-in with ``1`` later) and what it does on a card
    FlashInfer lacks (no check: FlashInfer raises when it samples; vLLM's own check raises at
    start; or a fall back, which is no breach). Other releases: on by default from the V1 engine
    (:func:`core.engines.contracts.flashinfer_sampler_on_by_default`; a tag naming none is taken as a current
    release). ``VLLM_USE_V1=0`` selects V0, which samples with FlashInfer only when it is ``1``."""
    value = env.get(SAMPLER_ENV)
    if value == "0":
        return None
    ref = images.parse_image(image)
    version = ref.version
    shown = f"is {value!r}" if SAMPLER_ENV in env else "is not set"
    release = contracts.release(version) if version is not None else None
    sampler = release.sampler if release is not None else None
    if release is not None and sampler is not None and sampler.flashinfer_by_default is not None:
        v0 = env.get("VLLM_USE_V1") == "0" and "VLLM_USE_V1" in release.env_names
        on = value == "1" or (sampler.flashinfer_by_default and not v0)
        if not on or sampler.flashinfer_on_unsupported_card == "falls back":
            return None
        if sampler.flashinfer_on_unsupported_card == "raises":
            return Breach(f"env {SAMPLER_ENV} {shown}: {release.label} refuses to start on sm_{sm} "
                          f"(\"FlashInfer does not support compute capability\", {sampler.file})",
                          _env_fix(SAMPLER_ENV, "0"))
        why = "" if value == "1" else f" ({release.label} samples with FlashInfer unless it is 0)"
        return Breach(f"env {SAMPLER_ENV} {shown}: FlashInfer's sampler raises on sm_{sm}{why}", _env_fix(SAMPLER_ENV, "0"))
    by_default = contracts.flashinfer_sampler_on_by_default(version, sm, v1_disabled=env.get("VLLM_USE_V1") == "0")
    if value != "1" and by_default is False:
        return None
    if version is None:
        since = contracts.VLLM_V1_PRE_AMPERE_FROM if sm < cards.SM_AMPERE else contracts.VLLM_V1_FROM
        why = (f"; the image tag {ref.shown_tag} names no release, so the sampler is taken as on, as in every "
               f"release from {'.'.join(map(str, since))} on sm_{sm}")
    else:
        why = f" (vLLM {'.'.join(map(str, version))} samples with FlashInfer unless it is 0)" if value != "1" else ""
    return Breach(f"env {SAMPLER_ENV} {shown}: FlashInfer's sampler raises on sm_{sm}{why}",
                  _env_fix(SAMPLER_ENV, "0"))


@rule("vllm-volta-attention-backend", "No FlashAttention-2 or FlashInfer attention backend below sm_75.",
      "coder.yaml (VLLM_ATTENTION_BACKEND=TRITON_ATTN on the V100s)", policy="vllm-volta")
def attention_backend(env: Mapping[str, str], sm: int = cards.SM_VOLTA) -> Breach | None:
    """``VLLM_ATTENTION_BACKEND`` names neither FLASH_ATTN nor FLASHINFER (both need sm_75); unset
    is left to vLLM's own selection."""
    backend = env.get(BACKEND_ENV, "")
    if not any(bad in backend.upper() for bad in NO_VOLTA_BACKENDS):
        return None
    return Breach(f"env {BACKEND_ENV}={backend}: FlashAttention-2 and FlashInfer need sm_75, the card is sm_{sm}",
                  _env_fix(BACKEND_ENV, facts.VLLM_VOLTA_ENV[BACKEND_ENV]))


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "vllm-volta",
    "vLLM on sm_70 cards: explicit float16, no bf16/fp8/awq/marlin, sampler and attention env, no custom all-reduce over PCIe.",
    (
        "On V100 (sm_70): pass --dtype float16, use gptq or float16 weights, --kv-cache-dtype auto, set env "
        "VLLM_USE_FLASHINFER_SAMPLER=0 and VLLM_ATTENTION_BACKEND=TRITON_ATTN, and with TP 2 over PCIe add "
        "--disable-custom-all-reduce (the VllmInferenceService component does all of it)."
    ),
    kind="resource",
    level="mandatory",
    severity="critical",
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
