"""A model server's memory on its card: the weights fit with room for a KV cache, and the KV
cache holds one request of the context. Judged once for the stack file (``stackfile/checks.py``)
and the pack (weights-fit-card, kv-cache-fits-max-model-len) on :func:`core.capacity.estimator.estimate`'s
:class:`~core.capacity.estimator.Estimate`.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.base import facts
from core.engines import flags
from core.engines.settings import S, flag_setting
from core.judging.registry import MANIFEST, STACK, Breach, declare_policy, only, rule

if TYPE_CHECKING:  # pragma: no cover
    from core.capacity.estimator import Estimate

#: Where the capacity rules come from.
CAPACITY_SOURCE = "spec, the user's measured figures (README Capacity); core/capacity/estimator.py"

#: candle-vllm's share of the free card memory for the KV cache.
KV_FRACTION = flag_setting("kv_fraction", flags.CANDLE)


def ranks(e: Estimate) -> str:
    """``"one Tesla-V100-PCIE-32GB"`` or ``"each of 2 Tesla-V100-PCIE-32GB cards"``."""
    n = e.tp * e.pp
    return f"one {e.card}" if n == 1 else f"each of {n} {e.card} cards"


def _more_cards(tp: int, pp: int) -> str:
    """VLLM at TP ``tp``: ``cards: 2`` / ``--tensor-parallel-size=2 and nvidia.com/gpu 2``."""
    return only(STACK, S.cards.to(tp * pp)) + only(MANIFEST, f"{S.tp.to(tp)} and {facts.GPU_RESOURCE} {tp * pp}")


@rule("weights-fit-card", "A model server's weights a card fit the card with room for a KV cache.",
      CAPACITY_SOURCE, policy="weights-fit-card")
def weights_fit_card(model_key: str, e: Estimate, split_tp: int | None = None,
                     searched: bool = False) -> Breach | None:
    """``e`` the server's estimate; ``split_tp``: the smallest TP at which the weights fit on the
    node's cards (``searched`` True: looked for, None when none does; False: not looked for)."""
    if e.fits_weights:
        return None
    what = f"{e.weights_gib_per_card:.2f} GiB of weights a card ({model_key}, TP={e.tp})"
    if e.weights_gib_per_card >= e.card_memory_gib:
        why = f"{what} exceed the {e.card_memory_gib:.2f} GiB of a {e.card}, so the model never loads"
    else:
        why = (
            f"{what} plus {e.activation_gib:.2f} GiB of profiled activations and {e.runtime_gib:.2f} GiB of runtime "
            f"memory (CUDA, NCCL) exceed {S.gmu} {e.budget_gib / e.card_memory_gib:.2f} x "
            f"{e.card_memory_gib:.2f} GiB = {e.budget_gib:.2f} GiB of a {e.card}, so vLLM finds no memory for the "
            "KV cache and fails after loading"
        )
    if split_tp:
        fix = f"split it over {split_tp * e.pp} cards (TP={split_tp})" + only(STACK, f": set {S.cards.to(split_tp * e.pp)}")
    elif searched:
        fix = f"point {S.model} at a quantized checkpoint the card supports (GPTQ on sm_70), or use a larger card"
    else:
        fix = (f"raise {S.cards} so the weights split further, or point {S.model} at a quantized checkpoint the "
               "card supports (GPTQ on sm_70)")
    return Breach(why, fix)


@rule("kv-cache-fits-max-model-len", "A vLLM server's KV cache holds one request of its max-model-len.",
      CAPACITY_SOURCE, policy="kv-cache-fits-max-model-len")
def kv_cache_fits(model_key: str, e: Estimate, explicit: bool = True, house: bool = True,
                  larger: tuple[int, Estimate] | None = None, searched: bool = False) -> Breach | None:
    """vLLM: ``e`` the estimate; ``explicit`` False: no ``--max-model-len`` (the model's window is
    used; a breach only where the cluster's conventions apply, ``house``); ``larger``: a TP that
    fits and its estimate (``searched`` True: looked for on the node's cards)."""
    parts = []
    if not explicit:
        parts.append(f"no {S.max_model_len}, so vLLM uses the model's max_position_embeddings "
                     f"{e.max_model_len:,} ({model_key})")
    if not e.fits_kv:
        parts.append(
            f"{S.max_model_len} {e.max_model_len:,} needs {e.max_model_len:,} tokens of KV cache; the pool holds "
            f"about {e.kv_tokens:,} tokens on {ranks(e)} at {S.gmu} {e.budget_gib / e.card_memory_gib:.2f} "
            f"({e.weights_gib_per_card:.2f} GiB of weights a card, TP={e.tp}), so vLLM refuses to start"
        )
    if not parts or (e.fits_kv and not house):
        return None  # it starts; an explicit max-model-len is this cluster's convention only
    if e.fits_kv:
        fix = f"set {S.max_model_len} explicitly (the pool holds about {e.kv_tokens:,} tokens)"
    elif larger:
        tp, trial = larger
        fix = (f"lower {S.max_model_len} to at most {e.kv_tokens:,}, or run TP={tp} on {tp * e.pp} cards "
               f"({_more_cards(tp, e.pp)}), where the pool holds about {trial.kv_tokens:,} tokens")
    elif searched:
        fix = f"lower {S.max_model_len} to at most {e.kv_tokens:,}, or give the server more cards (a larger {S.tp})"
    else:
        fix = f"lower {S.max_model_len} to at most {e.kv_tokens:,}, or raise {S.cards} or {S.gmu}"
    return Breach("; ".join(parts), fix)


@rule("candle-kv-fraction", "candle-vllm's --kv-fraction leaves room for a KV cache.", CAPACITY_SOURCE,
      policy="kv-cache-fits-max-model-len")
def candle_kv_room(e: Estimate, kv_fraction: object) -> Breach | None:
    """candle-vllm caps its context to the pool, so only an empty pool is a breach."""
    if e.fits_kv or not e.fits_weights:
        return None
    free = e.card_memory_gib - e.weights_gib_per_card
    return Breach(
        f"{KV_FRACTION} {kv_fraction} of the {free:.2f} GiB free after {e.weights_gib_per_card:.2f} GiB of weights "
        f"on {ranks(e)}, less the {e.activation_gib * 1024:.0f} MiB workspace reserve, leaves no room for a KV cache",
        f"raise {KV_FRACTION}, or spread the model over more cards ({S.cards})",
    )


@rule("capacity-estimable", "The capacity estimator accepts a server's settings.", CAPACITY_SOURCE,
      policy="kv-cache-fits-max-model-len")
def estimable(refusal: str | None) -> Breach | None:
    """``refusal``: :func:`core.capacity.estimator.estimate`'s ValueError text (a utilization above 1, a
    fraction of 0); None: it estimated."""
    if refusal is None:
        return None
    return Breach(f"the capacity estimator refuses the settings, so the KV cache cannot be estimated: {refusal}",
                  "correct the setting it names")


@rule("measured-within-card", "A measured figure fits the card it was measured on.", CAPACITY_SOURCE)
def measured_within_card(field: str, value: float, bound: str) -> Breach | None:
    """One figure of :func:`core.capacity.comparison.impossible`: ``field`` of ``measured``, the
    ``value`` written and the ``bound`` it exceeds. Judged on every figure it returns."""
    return Breach(f"measured {field} {value:,} is beyond what the card can hold ({bound}), so it explains no "
                  "estimate and the estimate is judged instead",
                  f"copy {field} from the server's own startup log on this card, or remove it")


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "kv-cache-fits-max-model-len",
    "A model server's KV cache holds one request of its max-model-len; vLLM sets --max-model-len explicitly.",
    (
        "Set vLLM's --max-model-len explicitly and no larger than the KV pool the message names; or raise --tensor-parallel-size"
        " together with the pod's nvidia.com/gpu (KV heads and weights split across cards); or raise --gpu-memory-utilization. "
        "For candle-vllm raise --kv-fraction. Add a model the stack does not know to llm-serving:models (catalog, facts or "
        "config_json)."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""kv-cache-fits-max-model-len: a model server's KV cache holds one request of its context.

Rule, per vLLM / candle-vllm container of a Deployment, StatefulSet or InferenceService:

- vLLM: on a cluster whose inventory holds the team's conventions (``llm-serving:cluster``
  ``house_conventions: true``, the user's), ``--max-model-len`` is given explicitly (without it
  vLLM takes the model's ``max_position_embeddings``, 262,144 tokens for Qwen3-Coder, and a
  ten-minute start ends in an error); everywhere, the KV pool estimated by :func:`core.capacity.estimator.estimate_vllm` holds
  at least ``max-model-len`` tokens (vLLM v0.11 ``check_enough_kv_cache_memory`` refuses to
  start otherwise: "To serve at least one request with the models's max seq len ...").
- candle-vllm: ``--kv-fraction`` leaves a KV pool of at least one block after the workspace
  reserve (candle-vllm caps its context to the pool instead of refusing to start, so a
  smaller pool is not a violation; the preview shows the cap).
- The server's model must be in the stack's models (``llm-serving:models``): an unknown
  model is reported with how to add it, not skipped.

Source: coder.yaml (Qwen3-Coder-30B-A3B GPTQ at max-model-len 262,144: the
measured single-V100 pool was 132,672 tokens, so it needed TP=2); spec "Measured figures".
The card is the pinned node's, else the smallest card among nodes with enough cards
(policylib/capacity_helpers.py).

Does not check: max-model-len against the model's native window (rope scaling such as YaRN
may extend it, and the flags that set it are not modelled); pipeline-parallel stages beyond
an even split; memory other than the KV cache (weights-fit-card); a server whose node is not
in the inventory (gpu-card-allocation reports that).

""",
)

declare_policy(
    "weights-fit-card",
    "A model server's weights a card (after quantization and tensor parallel split) fit the card with room for a KV cache.",
    (
        "Split the model over more cards (vLLM --tensor-parallel-size, candle-vllm --d, with the pod's nvidia.com/gpu to match),"
        " use a quantized checkpoint that the card supports (GPTQ on sm_70), or move the server to a node with larger cards. Add"
        " a model the stack does not know to llm-serving:models."
    ),
    kind="resource",
    level="mandatory",
    severity="critical",
    doc="""weights-fit-card: a model server's weights fit its card and leave room for a KV cache.

Rule, per vLLM / candle-vllm container of a Deployment, StatefulSet or InferenceService,
with the weights one card holds after quantization and tensor parallel split
(:func:`core.capacity.estimator.weights_per_card`):

- vLLM: weights a card plus the activation peak of its memory profile stay below
  ``gpu-memory-utilization`` x the card's memory (vLLM v0.11 ``determine_available_memory``
  leaves nothing for the KV cache otherwise and the engine fails at start, after the weights
  were loaded: minutes lost).
- candle-vllm: weights a rank (the embedding and LM head whole on every rank) stay below the
  card's memory.
- The server's model must be in the stack's models (``llm-serving:models``): an unknown
  model is reported with how to add it.

Source: coder.yaml ("Qwen ships this model only as BF16 (61.1 GB) ... 4-bit GPTQ is
the only form that fits one 32 GB card"), seed 001 (the 14B fp16 split over two V100s). The
card is the pinned node's, else the smallest card among nodes with enough cards.

Does not check: whether the remaining KV cache holds max-model-len
(kv-cache-fits-max-model-len); host memory (node-memory-allocation); memory the CUDA
context and NCCL take besides the weights, which the estimate leaves out (so it errs on the
side of fitting).

""",
)
