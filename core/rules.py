"""The rules' predicates over plain values.

The policy pack (``policies/``) judges by these, once, on the manifests a stack file renders and
on hand-written YAML alike; the stack file's cross-checks (:mod:`stackfile`) call the few the pack
does not judge. The finding is worded in its reader's terms (a stack-file key, a server flag)
by :mod:`core.registry`; the verdict is made here.

Compute capabilities are ``major * 10 + minor`` (V100: 70), as :attr:`core.inventory.CardSpec.sm`.

- :data:`SM_VOLTA`, :data:`SM_TURING`, :data:`SM_AMPERE`: the thresholds, named once;
- :func:`needs_volta_path`: a card below sm_75 gets the Volta rules and env (vllm-volta,
  candle-vllm-args, the VllmInferenceService env);
- :func:`dtype_runs_on`: an explicit half dtype below sm_80 (config ``dtype``; policies
  ``vllm-volta``, ``candle-vllm-args``);
- :func:`kv_cache_dtype_runs_on`: no FP8 KV cache below sm_80;
- :func:`custom_all_reduce_must_be_disabled`: TP = 2 without NVLink (vLLM disables it itself above);
- :func:`gdn_runs_on_vllm`: vLLM's GatedDeltaNet kernels need sm_75;
- :func:`parallel_matches_cards`: vLLM TP x PP (x DP) ranks equal the pod's cards;
- :func:`served_name_ok`: a served model name is one argv item;

- :func:`flashinfer_sampler_on_by_default`: the vLLM releases whose sampler is FlashInfer's
  unless ``VLLM_USE_FLASHINFER_SAMPLER=0`` (policy ``vllm-volta``; version from the image tag);
- :func:`quantization_min_sm`: the minimum compute capability of a vLLM quantization method
  (config ``rule_vllm_kernels``; policy ``vllm-volta``);
- :func:`startup_budget_covers`: a startup probe budget covers a cold start only when it
  exceeds it (config ``rule_startup_budget``; policy ``startup-probe-covers-cold-start``);
- :func:`await_timeout_seconds`: how long ``pulumi up`` waits for a workload (and the Service
  in front of it) to be ready, from its declared cold start (``pulumi.com/timeoutSeconds``);
- :func:`tp_sizes_that_divide`: the tensor parallel sizes suggested when one does not divide
  the model (config ``rule_tp_divides``; policy ``tensor-parallel-divisibility``);
- :func:`product_memory_mib`: the card memory a product name states (the inventory's
  ``memory_mib`` must agree with it);
- :data:`PROJECT_DIR`: a model's relative ``config_json`` path resolves against the project
  directory (where ``Pulumi.yaml`` and the ``Pulumi.<stack>.yaml`` files live, the Pulumi
  CLI's working directory), in the program, the pack (``policylib.stackconfig``) and the
  offline preview alike, whichever stack file is read.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.facts import MOST_TOKENS

if TYPE_CHECKING:  # pragma: no cover
    from core.modelfacts import ModelFacts

#: The environment variable that names the project directory (``--project DIR`` of the
#: commands sets it for the processes they start: the policy pack).
PROJECT_ENV = "LLM_SERVING_PROJECT"


def project_dir(explicit: Path | None = None) -> Path:
    """The project directory: ``explicit`` (``--project DIR``), else ``$LLM_SERVING_PROJECT``,
    else the checkout this code runs from when it holds ``Pulumi.yaml`` (``pip install -e .``, as
    ``python3 dev.py`` does), else the current directory (an installed package: the Pulumi CLI runs
    the program there, and a user runs ``llm-serving`` there)."""
    if explicit is not None:
        return Path(explicit).resolve()
    if os.environ.get(PROJECT_ENV):
        return Path(os.environ[PROJECT_ENV]).resolve()
    checkout = Path(__file__).resolve().parent.parent
    return checkout if (checkout / "Pulumi.yaml").is_file() else Path.cwd().resolve()


#: The project directory (:func:`project_dir`): ``Pulumi.yaml`` and the stack files; relative
#: ``config_json`` paths of ``llm-serving:models`` resolve against it.
PROJECT_DIR = project_dir()

#: V100 (worker-1's card): compute capability 7.0. Source: nvidia-smi on worker-1 (spec), 001.
SM_VOLTA = 70
#: Turing: below it there is no FlashInfer, FlashAttention-2, AWQ or GatedDeltaNet (fla)
#: kernel, so the Volta rules and env apply. Source: coder.yaml, 001.
SM_TURING = 75
#: Ampere: bf16 and FP8 (weights, KV cache) kernels start here. Source: 001, coder.yaml.
SM_AMPERE = 80

#: Half dtypes each engine accepts as the explicit dtype below sm_80, preferred first
#: (vLLM ``--dtype``: coder.yaml float16; candle-vllm ``--dtype``: seed 001 f16).
HALF_DTYPES: dict[str, tuple[str, ...]] = {"vllm": ("float16", "half"), "candle-vllm": ("f16",)}


def needs_volta_path(sm: int) -> bool:
    """True below sm_75 (:data:`SM_TURING`): the card gets the Volta rules and env."""
    return sm < SM_TURING


def dtype_runs_on(engine: str, dtype: str | None, sm: int) -> bool:
    """True when ``dtype`` (as written; None or ``auto``: the checkpoint's, bf16 for most)
    runs on compute capability ``sm``: any from sm_80, an explicit half dtype of ``engine``
    (:data:`HALF_DTYPES`) below it."""
    if sm >= SM_AMPERE:
        return True
    return (dtype or "").lower() in HALF_DTYPES[engine]


def half_dtype(engine: str) -> str:
    """The half dtype to write for ``engine``: ``float16`` (vLLM) or ``f16`` (candle-vllm)."""
    return HALF_DTYPES[engine][0]


def kv_cache_dtype_runs_on(kv_cache_dtype: str | None, sm: int) -> bool:
    """An FP8 KV cache (``fp8``, ``fp8_e4m3``, ``fp8_e5m2``) needs sm_80; anything else runs."""
    return not (kv_cache_dtype or "").lower().startswith("fp8") or sm >= SM_AMPERE


def custom_all_reduce_must_be_disabled(tp: int, nvlink: bool) -> bool:
    """VLLM's custom all-reduce deadlocked after CUDA graph capture at TP = 2 over PCIe
    (coder.yaml): it must be disabled when TP is 2 and the cards have no NVLink. Above two
    PCIe-only cards vLLM turns it off itself ("Custom allreduce is disabled because it's not
    supported on more than two PCIe-only GPUs", vllm/distributed/device_communicators/
    custom_all_reduce.py), so the flag is not needed there."""
    return tp == 2 and not nvlink


def gdn_runs_on_vllm(is_hybrid: bool, sm: int) -> bool:
    """VLLM's GatedDeltaNet kernels (hybrid models) need sm_75 and the fla module (coder.yaml)."""
    return not is_hybrid or sm >= SM_TURING


def parallel_matches_cards(tp: int, pp: int, cards: int, dp: int = 1) -> bool:
    """VLLM starts TP x PP x DP ranks, one a card: they must equal the pod's cards."""
    return tp * pp * dp == cards


def served_name_ok(name: str) -> bool:
    """A served model name is one argv item: not empty, no comma, no whitespace (002
    reasoning.yaml: ``--served-model-name reasoning,reasoning-long`` serves ONE model whose
    name contains the comma)."""
    return bool(name) and not any(ch == "," or ch.isspace() for ch in name)


#: An image reference pinned by digest: ``...@sha256:`` and 64 hex digits.
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def is_digest_pinned(image: str) -> bool:
    """True when ``image`` ends in ``@sha256:<64 hex>`` (a digest never moves; coder.yaml: the
    vLLM image is pinned, 003: a moving tag is pulled Always)."""
    return bool(DIGEST.search(image))


#: The memory a card's product name states: ``Tesla-V100-PCIE-32GB``, ``NVIDIA-A100-SXM4-80GB``
#: (the device plugin's ``nvidia.com/gpu.product`` form), the GB figure being GiB of card memory.
_PRODUCT_MEMORY = re.compile(r"(?:^|[-_ ])(\d+)\s?GB(?:$|[-_ ])", re.IGNORECASE)


def product_memory_mib(product: str) -> int | None:
    """The card memory in MiB the product name states (``Tesla-V100-PCIE-32GB`` -> 32768), or
    None when it names no size (``Tesla-T4``). Source: the inventory's own V100 entry (32768)."""
    m = _PRODUCT_MEMORY.search(product)
    return int(m.group(1)) * 1024 if m else None




#: Minimum compute capability (x10) of vLLM quantization kernels, by a fragment of the method
#: name (lowercase, ``_`` written ``-``). A method needs the highest value among the fragments
#: it contains (``awq_marlin``: awq 75 and marlin 80, so 80). From each method's
#: ``get_min_capability`` in vLLM's ``model_executor/layers/quantization/`` (AWQ 75, FP8 80,
#: the Marlin kernels 80), seed 001 (no INT4 / FP8 tensor cores on V100) and coder.yaml.
#: compressed-tensors, modelopt and FP4 are counted as having no sm_70 path (their INT8 / FP8
#: schemes need 7.5+, their 4-bit paths Marlin or FP4 kernels). Not listed, so allowed on
#: sm_70: gptq (6.0; seed 002 reasoning.yaml, coder.yaml) and bitsandbytes (7.0).
QUANT_MIN_SM: dict[str, int] = {
    "awq": 75,
    "compressed-tensors": 75,
    "fp8": 80,
    "fp4": 80,
    "marlin": 80,
    "modelopt": 80,
}


def quantization_min_sm(method: str | None) -> int | None:
    """The minimum compute capability (x10) of quantization ``method``; None: no known minimum
    above sm_70 (gptq, bitsandbytes, unquantized)."""
    if not method:
        return None
    name = method.lower().replace("_", "-")
    needs = [sm for fragment, sm in QUANT_MIN_SM.items() if fragment in name]
    return max(needs) if needs else None


def quantization_runs_on(method: str | None, sm: int) -> bool:
    """True when ``method`` has kernels for compute capability ``sm`` (x10, e.g. 70)."""
    need = quantization_min_sm(method)
    return need is None or sm >= need


def startup_budget_covers(budget_s: float, cold_start_s: float) -> bool:
    """A startup probe budget covers the declared cold start only when it EXCEEDS it (spec:
    the budget "must exceed" the cold start; equal leaves no margin for the last probe)."""
    return budget_s > cold_start_s


def startup_threshold_needed(cold_start_s: int, period_s: int, initial_delay_s: int = 0) -> int:
    """The smallest failure threshold whose budget (delay + period x threshold) exceeds the cold start."""
    return max(1, (cold_start_s - initial_delay_s) // period_s + 1)


#: The await's margin over the declared cold start: a start this much slower than measured
#: (cold page cache of the weights on the PVC, a busy node) is still waited for.
AWAIT_SLOW_START_FACTOR = 1.5
#: Seconds added to every await for what happens before the cold start begins: the old pod's
#: termination under Recreate (terminationGracePeriodSeconds, 30 s by default), scheduling, the
#: pull of an unchanged moving tag (Always: a digest check), and the readiness probe's period
#: (10 s, coder.yaml).
AWAIT_ROLLOUT_SECONDS = 60


def await_timeout_seconds(cold_start_s: int) -> int:
    """Seconds ``pulumi up`` waits for a workload whose declared cold start is ``cold_start_s``
    seconds to become ready (the ``pulumi.com/timeoutSeconds`` annotation on the workload and on
    the Service in front of it): ``ceil(1.5 x cold start) + 60``. Prod: reasoning 600 s -> 960 s
    (the provider's default, 600 s, would fail it at its declared cold start), candle-vllm 300 s
    -> 510 s, clef-candle 180 s -> 330 s, clef-serve 240 s -> 420 s.

    Always above the cold start, so ``pulumi up`` does not fail a start that is on time; bounded,
    so a pod that never becomes ready fails the update instead of holding it for the default.
    """
    return math.ceil(cold_start_s * AWAIT_SLOW_START_FACTOR) + AWAIT_ROLLOUT_SECONDS


#: A Deployment's ``spec.progressDeadlineSeconds`` when it is not written (Kubernetes apps/v1 default).
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600


def progress_deadline_seconds(cold_start_s: int) -> int | None:
    """The ``progressDeadlineSeconds`` a Deployment whose declared cold start is ``cold_start_s`` needs:
    None while Kubernetes' default (600 s) exceeds the cold start (nothing is written, prod's rendering
    stays as it was), else :func:`await_timeout_seconds` (past the deadline the Deployment reports
    ProgressDeadlineExceeded and the provider's await fails the deploy; rollout-deadlines-cover-cold-start)."""
    return None if cold_start_s < DEFAULT_PROGRESS_DEADLINE_SECONDS else await_timeout_seconds(cold_start_s)


#: The largest tensor parallel size suggested in messages (a node rarely has more than 8 cards).
MAX_SUGGESTED_TP = 8


def tp_sizes_that_divide(facts: ModelFacts, max_cards: int = MAX_SUGGESTED_TP, engine: str = "candle-vllm") -> list[int]:
    """Tensor parallel sizes 1 .. ``max_cards`` that divide every dimension ``engine`` shards
    (:meth:`core.modelfacts.ModelFacts.tp_divisibility_problems`; candle-vllm's rule, the
    stricter, by default)."""
    return [tp for tp in range(1, max_cards + 1) if not facts.tp_divisibility_problems(tp, engine)]


# --- vLLM --gpu-memory-utilization ----------------------------------------------------------

#: The usual ceiling of vLLM's ``--gpu-memory-utilization``: above it vLLM leaves the card too
#: little room for what it allocates after the KV cache (CUDA graph capture, NCCL, the sampler);
#: 0.98 ran out of memory in CUDA-graph capture (vllm-project/vllm #15598). vLLM's own default
#: is 0.90 (coder.yaml's value). Lifted only by ``--enforce-eager`` (no CUDA graphs are captured)
#: or an explicit override (stack file ``gpu_memory_utilization_override``; manifests
#: ``facts.GMU_OVERRIDE_ANNOTATION``).
GPU_MEMORY_UTILIZATION_CEILING = 0.95
#: vLLM's own ``--gpu-memory-utilization`` when the flag is absent (vllm/engine/arg_utils.py; coder.yaml
#: writes it): the stack file's default, and what the estimate and the pack take for an argv without it.
GPU_MEMORY_UTILIZATION_DEFAULT = 0.90


def gpu_memory_utilization_ok(value: float, *, enforce_eager: bool = False, overridden: bool = False) -> bool:
    """True when ``value`` (a fraction of the card) is at most :data:`GPU_MEMORY_UTILIZATION_CEILING`,
    or above it with ``--enforce-eager`` or a declared override (vllm-project/vllm #15598)."""
    return value <= GPU_MEMORY_UTILIZATION_CEILING or enforce_eager or overridden


def gpu_memory_utilization_credited(value: float) -> float:
    """The utilization a capacity estimate may credit: ``value`` capped at the ceiling, so a
    value near 1 never shows more KV room than the bound allows."""
    return min(value, GPU_MEMORY_UTILIZATION_CEILING)


# --- the context window -----------------------------------------------------------------------

#: RoPE types vLLM does not scale the derived window by (vLLM v0.11.0 ``_get_and_verify_max_len``
#: in vllm/config/model.py: ``su``/``longrope`` carry their own window, ``llama3`` keeps it).
ROPE_TYPES_NOT_SCALING_WINDOW = ("su", "longrope", "llama3")


def derived_max_model_len(max_position_embeddings: int, rope_scaling: Mapping[str, Any] | None = None) -> int:
    """The longest ``--max-model-len`` vLLM accepts without ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``, in
    tokens, as vLLM v0.11.0 derives it (``_get_and_verify_max_len``): the model's
    ``max_position_embeddings``; with ``rope_scaling`` (config.json's, or ``--hf-overrides``
    ``{"rope_scaling": ...}``) of a scaling type, times ``factor``, YaRN counting from its
    ``original_max_position_embeddings``. Qwen3-30B-A3B (40,960) with the Qwen3 card's YaRN
    ``{"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 32768}``: 65,536.
    A rope_scaling without a numeric factor leaves the window as it is."""
    derived = max_position_embeddings
    if not rope_scaling:
        return derived
    rope_type = str(rope_scaling.get("rope_type") or rope_scaling.get("type") or "")
    factor = rope_scaling.get("factor")
    if (rope_type in ROPE_TYPES_NOT_SCALING_WINDOW or isinstance(factor, bool) or not isinstance(factor, (int, float))
            or not math.isfinite(factor) or factor <= 0):
        return derived  # no usable factor (an infinite or NaN one from JSON's 1e400 / NaN included)
    if rope_type == "yarn" and isinstance(rope_scaling.get("original_max_position_embeddings"), (int, float)):
        derived = int(rope_scaling["original_max_position_embeddings"])
    scaled = derived * factor
    return int(scaled) if scaled <= MOST_TOKENS else max_position_embeddings  # beyond int32: no usable factor


def yarn_factor_needed(max_model_len: int, window: int) -> float:
    """The YaRN factor that stretches a ``window`` of tokens to at least ``max_model_len``, rounded
    up to one decimal (65,536 over Qwen3's 32,768 original: 2.0), for fixes that name it; whether
    the model supports YaRN at all is its model card's to say."""
    return math.ceil(max_model_len / window * 10) / 10


def max_model_len_ok(max_model_len: int, max_position_embeddings: int,
                     rope_scaling: Mapping[str, Any] | None = None, allow_long: bool = False) -> bool:
    """VLLM starts with ``max_model_len`` (tokens) only when it is at most
    :func:`derived_max_model_len`, or when ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is set (vLLM then
    warns that outputs may be wrong or the kernels may fail)."""
    return allow_long or max_model_len <= derived_max_model_len(max_position_embeddings, rope_scaling)


def env_flag_on(value: str | None) -> bool:
    """How vLLM's envs.py reads a boolean variable such as ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``:
    ``"1"`` or ``"true"`` (any case) is on; unset or anything else is off."""
    return (value or "").strip().lower() in ("1", "true")


# --- Kubernetes service links -----------------------------------------------------------------


def service_link_env_names(service: str, ports: Sequence[tuple[str | None, int, str]]) -> list[str]:
    """The variables the kubelet injects into every pod of the namespace with service links on
    (``enableServiceLinks`` unset or true) for Service ``service``, docker-links style
    (kubernetes pkg/kubelet/envvars ``FromServices``): the name upper-cased with ``-`` as ``_``,
    then ``_SERVICE_HOST``, ``_SERVICE_PORT``, ``_SERVICE_PORT_<PORT NAME>`` for each named
    port, ``_PORT`` (``tcp://<ip>:<port>`` of the first port) and, for each port,
    ``_PORT_<port>_<PROTO>`` with ``_PROTO``, ``_PORT`` and ``_ADDR``. ``ports``: (name,
    port, protocol) as the Service lists them. Service ``vllm`` gives ``VLLM_PORT``."""
    base = service.upper().replace("-", "_")
    names = [f"{base}_SERVICE_HOST", f"{base}_SERVICE_PORT"]
    names += [f"{base}_SERVICE_PORT_{name.upper().replace('-', '_')}" for name, _, _ in ports if name]
    if ports:
        names.append(f"{base}_PORT")
    for _, port, proto in ports:
        pp = f"{base}_PORT_{port}_{proto.upper()}"
        names += [pp, f"{pp}_PROTO", f"{pp}_PORT", f"{pp}_ADDR"]
    return names


def env_collisions(names: Sequence[str], prefix: str) -> list[str]:
    """The ``names`` in an engine's own environment namespace ``prefix`` (``VLLM_``)."""
    return [n for n in names if n.startswith(prefix)]


# --- where a server listens -------------------------------------------------------------------


def loopback_host(host: str | None) -> bool:
    """True for a listen address only the pod itself reaches (``127.0.0.0/8``, ``localhost``,
    ``::1``): the Service's endpoints and the kubelet's probes connect to the pod IP, so a
    server bound there is unreachable. None (the engine's default: every interface) is False."""
    if host is None:
        return False
    h = host.strip().strip("[]").lower()
    return h in ("localhost", "::1", "ip6-localhost") or h.startswith("127.")


# --- host memory of a GPU workload ------------------------------------------------------------


def gpu_memory_declared(request_mib: float | None, limit_mib: float | None) -> bool:
    """A container holding cards declares a memory request and a memory limit (MiB; None: not
    declared). A limit alone counts as both: the API server copies it into the missing request.
    Without either the scheduler and node-memory-allocation count the pod as 0 MiB; without a
    limit nothing bounds what it takes from the node. coder.yaml: 12Gi request, 40Gi limit."""
    request = request_mib if request_mib is not None else limit_mib
    return request is not None and limit_mib is not None


#: The first vLLM releases that run the V1 engine by default: 0.8.0 (release notes); on cards
#: below sm_80 V1's oracle fell back to V0 ("Compute Capability < 8.0") until 0.10.0. The one
#: statement of this fact: the capacity figures (core.capacity) and the sampler rule use it.
VLLM_V1_FROM = (0, 8, 0)
VLLM_V1_PRE_AMPERE_FROM = (0, 10, 0)


def vllm_v1_by_default(version: tuple[int, ...], sm: int) -> bool:
    """Whether vLLM ``version`` runs its V1 engine by default on a card of compute capability
    ``sm`` (x10): from :data:`VLLM_V1_FROM`, below sm_80 from :data:`VLLM_V1_PRE_AMPERE_FROM`."""
    return tuple(version) >= (VLLM_V1_FROM if sm >= SM_AMPERE else VLLM_V1_PRE_AMPERE_FROM)


#: V1's TopKTopPSampler takes FlashInfer's sampling kernels whenever FlashInfer is installed (the
#: release images ship it) and ``VLLM_USE_FLASHINFER_SAMPLER`` is not ``0``
#: (vllm/v1/sample/ops/topk_topp_sampler.py); the V0 sampler used them only when the variable
#: was ``1``. Source: coder.yaml (v0.11.0 on sm_70: FlashInfer's check_cuda_arch raises).
def flashinfer_sampler_on_by_default(version: tuple[int, ...] | None, sm: int = SM_AMPERE,
                                     v1_disabled: bool = False) -> bool | None:
    """Whether vLLM ``version`` samples with FlashInfer unless told not to on a card of compute
    capability ``sm``: when it runs V1 by default there (:func:`vllm_v1_by_default`) and
    ``VLLM_USE_V1=0`` does not select V0; None when the version is unknown (a tag naming no
    release: callers take the newer, V1 behaviour and say the version is unknown)."""
    if version is None:
        return None
    return vllm_v1_by_default(version, sm) and not v1_disabled
