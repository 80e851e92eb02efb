"""Rules the program and the policy pack both enforce, as predicates over plain values.

The program's stack-file checks (:mod:`components.config`, and through it the component
argument models) and the policy pack (``policies/``) call these, so a stack file the program
accepts renders manifests the pack accepts on the same rule, and the other way round
(``tests/test_one_source.py`` asserts it over generated stack files). Each side words the
finding in its user's terms (a stack-file key, a server flag); the verdict is made here.

Compute capabilities are ``major * 10 + minor`` (V100: 70), as :attr:`core.inventory.CardSpec.sm`.

- :data:`SM_VOLTA`, :data:`SM_TURING`, :data:`SM_AMPERE`: the thresholds, named once;
- :func:`needs_volta_path`: a card below sm_75 gets the Volta rules and env (vllm-volta,
  candle-vllm-args, the VllmInferenceService env);
- :func:`dtype_runs_on`: an explicit half dtype below sm_80 (config ``dtype``; policies
  ``vllm-volta``, ``candle-vllm-args``);
- :func:`kv_cache_dtype_runs_on`: no FP8 KV cache below sm_80;
- :func:`custom_all_reduce_must_be_disabled`: TP >= 2 without NVLink;
- :func:`gdn_runs_on_vllm`: vLLM's GatedDeltaNet kernels need sm_75;
- :func:`parallel_matches_cards`: vLLM TP x PP (x DP) ranks equal the pod's cards;
- :func:`served_name_ok`: a served model name is one argv item;

- :func:`quantization_min_sm`: the minimum compute capability of a vLLM quantization method
  (config ``rule_vllm_kernels``; policy ``vllm-volta``);
- :func:`startup_budget_covers`: a startup probe budget covers a cold start only when it
  exceeds it (config ``rule_startup_budget``; policy ``startup-probe-covers-cold-start``);
- :func:`await_timeout_seconds`: how long ``pulumi up`` waits for a workload (and the Service
  in front of it) to be ready, from its declared cold start (``pulumi.com/timeoutSeconds``);
- :func:`tp_sizes_that_divide`: the tensor parallel sizes suggested when one does not divide
  the model (config ``rule_tp_divides``; policy ``tensor-parallel-divisibility``);
- :data:`PROJECT_DIR`: a model's relative ``config_json`` path resolves against the project
  directory (where ``Pulumi.yaml`` and the ``Pulumi.<stack>.yaml`` files live, the Pulumi
  CLI's working directory), in the program, the pack (``policylib.stackconfig``) and the
  offline preview alike, whichever stack file is read.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from core.modelfacts import ModelFacts

#: The project directory: ``Pulumi.yaml`` and the stack files; relative ``config_json`` paths
#: of ``llm-serving:models`` resolve against it.
PROJECT_DIR = Path(__file__).resolve().parent.parent

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


def dtype_runs_on(engine: str, dtype: Optional[str], sm: int) -> bool:
    """True when ``dtype`` (as written; None or ``auto``: the checkpoint's, bf16 for most)
    runs on compute capability ``sm``: any from sm_80, an explicit half dtype of ``engine``
    (:data:`HALF_DTYPES`) below it."""
    if sm >= SM_AMPERE:
        return True
    return (dtype or "").lower() in HALF_DTYPES[engine]


def half_dtype(engine: str) -> str:
    """The half dtype to write for ``engine``: ``float16`` (vLLM) or ``f16`` (candle-vllm)."""
    return HALF_DTYPES[engine][0]


def kv_cache_dtype_runs_on(kv_cache_dtype: Optional[str], sm: int) -> bool:
    """An FP8 KV cache (``fp8``, ``fp8_e4m3``, ``fp8_e5m2``) needs sm_80; anything else runs."""
    return not (kv_cache_dtype or "").lower().startswith("fp8") or sm >= SM_AMPERE


def custom_all_reduce_must_be_disabled(tp: int, nvlink: bool) -> bool:
    """vLLM's custom all-reduce deadlocked after CUDA graph capture at TP >= 2 over PCIe
    (coder.yaml): it must be disabled when TP >= 2 and the cards have no NVLink."""
    return tp >= 2 and not nvlink


def gdn_runs_on_vllm(is_hybrid: bool, sm: int) -> bool:
    """vLLM's GatedDeltaNet kernels (hybrid models) need sm_75 and the fla module (coder.yaml)."""
    return not is_hybrid or sm >= SM_TURING


def parallel_matches_cards(tp: int, pp: int, cards: int, dp: int = 1) -> bool:
    """vLLM starts TP x PP x DP ranks, one a card: they must equal the pod's cards."""
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


def lowest_sm(sms: Sequence[int], default: int = SM_VOLTA) -> int:
    """The lowest compute capability of the cards a pod may land on (``default`` when none known)."""
    return min(sms, default=default)


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


def quantization_min_sm(method: Optional[str]) -> Optional[int]:
    """The minimum compute capability (x10) of quantization ``method``; None: no known minimum
    above sm_70 (gptq, bitsandbytes, unquantized)."""
    if not method:
        return None
    name = method.lower().replace("_", "-")
    needs = [sm for fragment, sm in QUANT_MIN_SM.items() if fragment in name]
    return max(needs) if needs else None


def quantization_runs_on(method: Optional[str], sm: int) -> bool:
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


#: The largest tensor parallel size suggested in messages (a node rarely has more than 8 cards).
MAX_SUGGESTED_TP = 8


def tp_sizes_that_divide(facts: "ModelFacts", max_cards: int = MAX_SUGGESTED_TP) -> list[int]:
    """Tensor parallel sizes 1 .. ``max_cards`` that divide every sharded dimension of the model."""
    return [tp for tp in range(1, max_cards + 1) if not facts.tp_divisibility_problems(tp)]
