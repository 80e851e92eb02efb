"""Rules the program and the policy pack both enforce: one copy, imported by both.

The program's config checks (:mod:`components.config`, and through it the component argument
models) and the policy pack (``policies/``, which has the repository root on ``sys.path``)
import these, so a stack file the program accepts is not refused by the pack on the same
rule, and the other way round.

- :func:`quantization_min_sm`: the minimum compute capability of a vLLM quantization method
  (config ``rule_vllm_kernels``; policy ``vllm-volta``);
- :func:`startup_budget_covers`: a startup probe budget covers a cold start only when it
  exceeds it (config ``rule_startup_budget``; policy ``startup-probe-covers-cold-start``);
- :func:`tp_sizes_that_divide`: the tensor parallel sizes suggested when one does not divide
  the model (config ``rule_tp_divides``; policy ``tensor-parallel-divisibility``);
- :data:`PROJECT_DIR`: a model's relative ``config_json`` path resolves against the project
  directory (where ``Pulumi.yaml`` and the ``Pulumi.<stack>.yaml`` files live, the Pulumi
  CLI's working directory), in the program, the pack (``policylib.stackconfig``) and the
  offline preview alike, whichever stack file is read.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # pragma: no cover
    from components.modelfacts import ModelFacts

#: The project directory: ``Pulumi.yaml`` and the stack files; relative ``config_json`` paths
#: of ``llm-serving:models`` resolve against it.
PROJECT_DIR = Path(__file__).resolve().parent.parent

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


#: The largest tensor parallel size suggested in messages (a node rarely has more than 8 cards).
MAX_SUGGESTED_TP = 8


def tp_sizes_that_divide(facts: "ModelFacts", max_cards: int = MAX_SUGGESTED_TP) -> list[int]:
    """Tensor parallel sizes 1 .. ``max_cards`` that divide every sharded dimension of the model."""
    return [tp for tp in range(1, max_cards + 1) if not facts.tp_divisibility_problems(tp)]
