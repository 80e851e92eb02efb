"""What KServe does to an InferenceService: it reports Ready=True at zero replicas, and it owns the
``<isvc>-predictor`` Service and Deployment. Judged once for the pack (isvc-not-parked-silently,
kserve-owned-names).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from core.base import facts
from core.judging.registry import MANIFEST, STACK, Breach, describe_policy, only, rule

OWNED_SOURCE = ("KServe RawDeployment names its predictor Service and Deployment <isvc>-predictor; seed 001 "
                "(coder-service.yaml beside the still-managed coder InferenceService)")


@rule("isvc-not-parked-silently", "An InferenceService at zero replicas is declared parked.",
      "seed 000 (kustomization: ornith at zero replicas, Ready)", policy="isvc-not-parked-silently")
def parked_declared(zero: str | None, reason: str | None) -> Breach | None:
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
def predictor_name_free(kind: str, name: str, isvc: str | None) -> Breach | None:
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


@rule("isvc-raw-min-replicas", "A RawDeployment InferenceService is not scaled to zero by minReplicas 0.",
      "kserve #3514 (RawDeployment: minReplicas 0 gives no error and runs one replica)",
      policy="isvc-raw-min-replicas")
def raw_min_replicas(mode: str | None, min_replicas: int | None, max_replicas: int | None,
                     cards: int) -> Breach | None:
    """``mode``: the InferenceService's deployment mode (annotation); the predictor's ``minReplicas``
    and ``maxReplicas`` (None: unset); ``cards``: what one pod holds. Min and max both 0 parks it
    (isvc-not-parked-silently)."""
    if mode != facts.KSERVE_RAW_MODE or min_replicas != 0 or max_replicas == 0:
        return None
    held = f", which holds {cards} card(s) of {facts.GPU_RESOURCE}" if cards else ""
    return Breach(f"predictor has minReplicas 0 in {facts.KSERVE_RAW_MODE} mode: that is not scale-to-zero (KServe's "
                  f"Deployment and HPA keep one pod{held}); the allocation counts that pod",
                  "set minReplicas: 1 to say what runs; to park it, set minReplicas and maxReplicas to 0 with "
                  f"annotation {facts.PARKED_ANNOTATION}: <reason>; for scale-to-zero use Serverless mode")


@rule("kserve-deployment-mode", "An InferenceService runs in a deployment mode the cluster serves.",
      "kserve #1768 (no Knative: never ready); a Knative revision surges a second GPU pod at every update",
      policy="kserve-deployment-mode")
def deployment_mode(written: str | None, cluster_default: str, cards: int) -> Breach | None:
    """``written``: the annotation's mode (None: unset, so ``cluster_default``, the inventory's
    ``kserve_deployment_mode``); ``cards``: what one predictor pod holds."""
    mode = written or cluster_default
    if mode == facts.KSERVE_RAW_MODE:
        return None
    shown = f"annotation {facts.KSERVE_DEPLOYMENT_MODE_ANNOTATION} {written}" if written else (
        f"no annotation {facts.KSERVE_DEPLOYMENT_MODE_ANNOTATION}, so the cluster's default "
        f"({cluster_default} in the inventory)")
    if cluster_default == "NoKnative":
        effect = "this cluster has no Knative, so the Knative Service is never created and it is never ready"
    elif cards:
        effect = (f"it becomes a Knative revision, and each update starts a new revision's pod beside the old one, "
                  f"asking {cards} more card(s) of a node that has none free")
    else:
        return None
    return Breach(f"has {shown}: {effect}",
                  f"set annotation {facts.KSERVE_DEPLOYMENT_MODE_ANNOTATION}: {facts.KSERVE_RAW_MODE}")


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


describe_policy(
    'isvc-raw-min-replicas',
    'A RawDeployment InferenceService does not rely on minReplicas 0 to scale to zero (KServe keeps one pod).',
    (
        'Set minReplicas: 1; to park the predictor set minReplicas and maxReplicas to 0 with the parked annot'
        "ation; for scale-to-zero use KServe's Serverless mode."
    ),
)


describe_policy(
    'kserve-deployment-mode',
    "An InferenceService names deploymentMode RawDeployment where the cluster's default would not serve it.",
    (
        'Annotate the InferenceService serving.kserve.io/deploymentMode: RawDeployment (the components do), a'
        "nd record the cluster's default in the inventory (llm-serving:cluster kserve_deployment_mode)."
    ),
)


RUNTIME_SOURCE = ("kserve/kserve #3632, #4298 (\"no runtime found to support predictor with model type\"); KServe "
                  "ServingRuntime supportedModelFormats")


@rule("isvc-runtime-supports-format", "The ServingRuntime an InferenceService names supports its model format.",
      RUNTIME_SOURCE, policy="isvc-runtime-supports-format")
def runtime_supports(runtime: str, model_format: str, supported: str, supports: bool) -> Breach | None:
    """``supported``: the runtime's formats, worded (``vllm, huggingface``); ``supports``: it serves the format."""
    if supports:
        return None
    return Breach(f"it names runtime {runtime}, whose supportedModelFormats ({supported or 'none'}) do not include "
                  f"{model_format}: KServe does not create the predictor and the InferenceService is never ready",
                  f"set spec.predictor.model.modelFormat.name to one the runtime supports, or add {model_format} to "
                  f"the ServingRuntime's supportedModelFormats")


describe_policy("isvc-runtime-supports-format",
                "An InferenceService that names a ServingRuntime of the manifests uses a model format the runtime supports.",
                "Match the predictor's modelFormat to the runtime's supportedModelFormats.")
