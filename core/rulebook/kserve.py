"""What KServe does to an InferenceService: it reports Ready=True at zero replicas, and it owns the
``<isvc>-predictor`` Service and Deployment. Judged once for the pack (isvc-not-parked-silently,
kserve-owned-names).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from typing import Optional

from core import facts
from core.registry import describe_policy, MANIFEST, STACK, Breach, only, rule

OWNED_SOURCE = ("KServe RawDeployment names its predictor Service and Deployment <isvc>-predictor; seed 001 "
                "(coder-service.yaml beside the still-managed coder InferenceService)")


@rule("isvc-not-parked-silently", "An InferenceService at zero replicas is declared parked.",
      "seed 000 (kustomization: ornith at zero replicas, Ready)", policy="isvc-not-parked-silently")
def parked_declared(zero: Optional[str], reason: Optional[str]) -> Optional[Breach]:
    """``zero``: how the predictor is at zero (``"minReplicas 0, maxReplicas 0"``; None: it is
    not); ``reason``: the parked annotation's value (None: absent)."""
    if zero is None or (reason is not None and reason.strip()):
        return None
    declared = "an empty parked annotation" if reason is not None else "no parked annotation"
    return Breach(
        f"predictor at zero replicas ({zero}) with {declared}; it still reports Ready=True (desired equals "
        "available at 0), so it looks like it serves while it serves nothing",
        only(STACK, "set parked: {reason: ...}")
        + only(MANIFEST, f"declare it parked with annotation {facts.PARKED_ANNOTATION}: <reason>, give it replicas, "
               "or delete it"),
    )


@rule("kserve-owned-names", "No Service or Deployment takes the name KServe gives an InferenceService's predictor.",
      OWNED_SOURCE, policy="kserve-owned-names")
def predictor_name_free(kind: str, name: str, isvc: Optional[str]) -> Optional[Breach]:
    """``isvc``: the InferenceService whose ``<isvc>-predictor`` is ``name`` (None: no such one)."""
    if isvc is None:
        return None
    return Breach(
        f"is named like the {kind} KServe creates for InferenceService {isvc} ({name}), so KServe and this stack "
        "overwrite each other's object",
        "rename it" + only(STACK, f" (e.g. {isvc}-stable-predictor)")
        + only(MANIFEST, " (as reasoning-long-predictor sits beside KServe's reasoning-predictor)")
        + f", or stop managing InferenceService {isvc}"
        + only(STACK, f" (remove or rename workload {isvc})"),
    )


# --- the pack policies' own text -----------------------------------------------------------------

describe_policy(
    "isvc-not-parked-silently",
    "An InferenceService at zero replicas is declared parked (it still reports Ready=True).",
    (
        "Either give the predictor minReplicas/maxReplicas of 1 or more, or annotate the InferenceService with "
        "llm-serving.riotpiao.com/parked: '<why it is parked>' (the components write it for a parked workload), or delete the "
        "InferenceService."
    ),
)

describe_policy(
    "kserve-owned-names",
    "No Service or Deployment is named <isvc>-predictor beside InferenceService <isvc>: KServe owns that name.",
    (
        "Give the stable Service its own name (reasoning-long-predictor beside KServe's reasoning-predictor), or stop managing "
        "the InferenceService whose predictor name it takes (seed 000 removed the coder InferenceService, freeing "
        "coder-predictor)."
    ),
)
