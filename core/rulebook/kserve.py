"""What KServe does to an InferenceService: it reports Ready=True at zero replicas, and it owns the
``<isvc>-predictor`` Service and Deployment. Judged once for the pack (isvc-not-parked-silently,
kserve-owned-names).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from core.base import facts
from core.judging.registry import MANIFEST, STACK, Breach, declare_policy, only, rule
from core.k8s.manifests.read import ISVC_TYPE, as_map, whole_number

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


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "isvc-not-parked-silently",
    "An InferenceService at zero replicas is declared parked (it still reports Ready=True).",
    (
        "Either give the predictor minReplicas/maxReplicas of 1 or more, or annotate the InferenceService with "
        "llm-serving.riotpiao.com/parked: '<why it is parked>' (the components write it for a parked workload), or delete the "
        "InferenceService."
    ),
    kind="resource",
    level="advisory",
    severity="medium",
    doc="""isvc-not-parked-silently: an InferenceService at zero replicas is declared parked.

Rule: an InferenceService whose predictor sits at zero replicas (``minReplicas: 0`` and
``maxReplicas: 0``, or ``replicas: 0``) carries annotation ``facts.PARKED_ANNOTATION`` with
the reason as its value (non-empty). Numbers are read as written or as the analyzer's gRPC
protocol delivers them (``0.0``).

Source: seed kustomization.yaml ("ornith is retired: its InferenceService still reports
Ready=True while running zero replicas, because desired equals available at 0"), spec facts
row "An InferenceService at zero replicas still reports Ready=True". Zero replicas on purpose
is fine (seed 000 parked clef-serve "to free the only V100"), but then it says so, so no
dashboard's Ready=True is taken for a serving model.

Advisory, not mandatory: an undeclared zero breaks no serving path by itself (no card is
held, no Service changes); it misleads whoever reads Ready=True. Judgement, so it warns.

Does not check: Deployments at zero (they report 0/0 honestly; service-selector-uniqueness
judges a Service left without endpoints); ``minReplicas: 0`` with a positive or omitted
``maxReplicas`` (scale-to-zero in Serverless mode, which answers after a cold start); that a
parked InferenceService is also left out of Services.

""",
)

declare_policy(
    "kserve-owned-names",
    "No Service or Deployment is named <isvc>-predictor beside InferenceService <isvc>: KServe owns that name.",
    (
        "Give the stable Service its own name (reasoning-long-predictor beside KServe's reasoning-predictor), or stop managing "
        "the InferenceService whose predictor name it takes (seed 000 removed the coder InferenceService, freeing "
        "coder-predictor)."
    ),
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""kserve-owned-names: no Service or Deployment takes the name KServe gives an InferenceService's predictor.

Rule: for each InferenceService ``<isvc>`` in a namespace, no Service and no Deployment of the
stack in that namespace is named ``<isvc>-predictor`` (``core.base.facts.KSERVE_PREDICTOR_SUFFIX``):
KServe's RawDeployment reconciler creates and keeps its own Service and Deployment under that
name, so two owners overwrite each other's selector, ports and pods.

Source: KServe RawDeployment (``constants.PredictorServiceName``: ``<isvc>-predictor``); seed 001
(coder-service.yaml created the Service coder-predictor while the coder InferenceService was still
managed: the history stacks after-001 and after-003 carry both), reasoning-long-service.yaml
(the stable name beside KServe's own reasoning-predictor is reasoning-long-predictor).

A stack policy, not a stack-file check, so the history stacks still load and the pack judges
them. Does not check: objects outside the stack (KServe's own are not in it).

""",
)


def raw_min_replicas_check(w, manifest, config) -> Breach | None:
    """isvc-raw-min-replicas on one workload: an InferenceService's mode, its predictor's
    ``minReplicas`` and ``maxReplicas`` as written, and the cards a pod holds."""
    if w.type != ISVC_TYPE:
        return None
    predictor = as_map(as_map(manifest.get("spec")).get("predictor"))
    return raw_min_replicas(w.deployment_mode, whole_number(predictor.get("minReplicas")),
                            whole_number(predictor.get("maxReplicas")), w.cards_per_pod)


declare_policy(
    'isvc-raw-min-replicas',
    'A RawDeployment InferenceService does not rely on minReplicas 0 to scale to zero (KServe keeps one pod).',
    (
        'Set minReplicas: 1; to park the predictor set minReplicas and maxReplicas to 0 with the parked annot'
        "ation; for scale-to-zero use KServe's Serverless mode."
    ),
    kind="resource",
    level="advisory",
    severity="medium",
    check=raw_min_replicas_check,
    doc="""isvc-raw-min-replicas: ``minReplicas: 0`` does not scale a RawDeployment InferenceService to zero.

Rule: an InferenceService annotated ``serving.kserve.io/deploymentMode: RawDeployment`` whose
predictor has ``minReplicas: 0`` and a ``maxReplicas`` other than 0 is reported: KServe gives no
error and runs one pod (its HPA cannot scale to zero), which holds its cards. The pack's allocation
counts that pod (:func:`core.k8s.manifests.pods.workload`). Both at 0 parks it (isvc-not-parked-silently).

Advisory: the pod runs; the manifest says something else.
Source: kserve #3514. Judged and worded once, in :mod:`core.rulebook.kserve`.
""",
)


declare_policy(
    'kserve-deployment-mode',
    "An InferenceService names deploymentMode RawDeployment where the cluster's default would not serve it.",
    (
        'Annotate the InferenceService serving.kserve.io/deploymentMode: RawDeployment (the components do), a'
        "nd record the cluster's default in the inventory (llm-serving:cluster kserve_deployment_mode)."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""kserve-deployment-mode: an InferenceService runs in a deployment mode the cluster serves.

Rule, on a cluster whose inventory records ``kserve_deployment_mode``: an InferenceService without
``serving.kserve.io/deploymentMode: RawDeployment`` takes the cluster's default. Where the cluster has
no Knative (``NoKnative``) it is never ready; where the default is Serverless, a predictor that holds
cards becomes a Knative revision, and every update starts the new revision's pod beside the old one.
Not judged where the inventory does not record the mode.

Source: kserve #1768. Judged and worded once, in :mod:`core.rulebook.kserve`.
""",
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


declare_policy("isvc-runtime-supports-format",
                "An InferenceService that names a ServingRuntime of the manifests uses a model format the runtime supports.",
                "Match the predictor's modelFormat to the runtime's supportedModelFormats.",
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""isvc-runtime-supports-format: the ServingRuntime an InferenceService names supports its model format.

Rule: for each InferenceService whose ``spec.predictor.model.runtime`` names a ServingRuntime of the
manifests in its namespace, that runtime is not disabled and one of its ``supportedModelFormats`` is the
predictor's ``modelFormat`` (name, case-insensitive, and version when both give one). KServe refuses
the predictor otherwise and the InferenceService never becomes ready. A runtime that is not among the
manifests (another namespace's, a ClusterServingRuntime) is not judged.

Source: kserve #3632, #4298. Judged and worded once, in :mod:`core.rulebook.kserve`.
""",
)
