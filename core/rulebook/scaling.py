"""What scales or disrupts a model server's pods, judged against its cards: a HorizontalPodAutoscaler's
``maxReplicas`` against the node's cards (``autoscaler-within-cards``), a PodDisruptionBudget that
lets no pod of a server be evicted (``disruption-budget-allows-drain``), and a LeaderWorkerSet group's
cards against the ranks its vLLM starts (``lws-group-ranks``); an autoscaler whose utilization metric
the pods do not request (``autoscaler-metric-has-requests``). The policies read the objects
(:mod:`core.k8s.manifests.objects`) and call these judges.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from core.judging.registry import Breach, declare_policy, rule

HPA_SOURCE = ("kserve/kserve #871 (an autoscaler scaled a GPU predictor to 50 pods on a node with 2 cards: most stayed "
              "Pending); vllm-project/aibrix #2670 (replicas pile up while the ones asked stay pending); Kubernetes "
              "HorizontalPodAutoscaler, KEDA ScaledObject (maxReplicaCount default 100)")
PDB_SOURCE = ("kubernetes/kubernetes #48307 (a budget on a single-replica workload blocks every drain; \"this strongly "
              "affects GPU workloads which often cannot run with HA\"); NVIDIA/gpu-operator #901 (the driver upgrade "
              "drains GPU nodes)")
METRIC_SOURCE = ("bentoml/Yatai #187 (\"the HPA was unable to compute the replica count: failed to get cpu utilization: "
                 "missing request for cpu\"); kubernetes/kubernetes #78846")
LWS_SOURCE = ("vllm-project/vllm #6938 (a Ray cluster of a multi-node vLLM must hold exactly TP x PP GPUs); "
              "vllm-project/vllm #36861 (\"Tensor parallel size (4) exceeds available GPUs\"); LeaderWorkerSet "
              "leaderWorkerTemplate.size")


@rule("autoscaler-within-cards", "An autoscaler's maxReplicas of a GPU workload fit the cards of its node.",
      HPA_SOURCE, policy="autoscaler-within-cards")
def autoscaler_within_cards(hpa: str, max_replicas: int, cards_per_pod: int, node: str, free: int,
                            replicas: int, unit: str = "pods", bound: str = "") -> Breach | None:
    """``free``: the node's cards left for this workload (its cards minus every other workload's and the
    reserved ones); ``replicas``: the replicas the workload asks without the autoscaler; ``unit``: what a
    replica is (``pods``; a LeaderWorkerSet's ``groups``), ``cards_per_pod`` the cards of one; ``bound``: the
    upper bound as written (``maxReplicaCount 100 (KEDA's default)``; default ``maxReplicas <n>``)."""
    need = max_replicas * cards_per_pod
    if need <= free:
        return None
    fits = max(free // cards_per_pod, 0) if cards_per_pod else 0
    one = unit[:-1]
    return Breach(f"{hpa} may scale it to {bound or f'maxReplicas {max_replicas}'} {unit} x {cards_per_pod} cards = {need} "
                  "cards, but "
                  f"{node} has {free} cards left for it: every {one} past {fits} stays Pending (Insufficient nvidia.com/gpu)",
                  f"set {(bound or 'maxReplicas').split(' ')[0]} to at most {max(fits, replicas)} (the cards left / cards a {one}), or add cards to the inventory")


@rule("autoscaler-metric-has-requests", "Every container of the pods an autoscaler scales on utilization requests that resource.",
      METRIC_SOURCE, policy="autoscaler-metric-has-requests")
def metric_has_requests(hpa: str, resource: str, missing: str) -> Breach | None:
    """``missing``: the containers (``container vllm``) that request no ``resource``, comma-joined ('' for none)."""
    if not missing:
        return None
    return Breach(f"{hpa} scales on {resource} utilization, but {missing} requests no {resource}: the HPA cannot compute "
                  f"utilization (\"missing request for {resource}\") and never scales",
                  f"set resources.requests.{resource} on every container of the pod (sidecars included), or scale on a "
                  "Pods metric (vllm:num_requests_waiting)")


@rule("disruption-budget-allows-drain", "A PodDisruptionBudget lets at least one pod of a model server be evicted.",
      PDB_SOURCE, policy="disruption-budget-allows-drain")
def budget_allows_drain(budget: str, setting: str, pods: int, allowed: int | None) -> Breach | None:
    """``pods``: the server's running pods the budget selects; ``allowed``: the evictions the budget allows
    with all of them healthy (None: not computable)."""
    if allowed is None or allowed > 0 or pods == 0:
        return None
    return Breach(f"PodDisruptionBudget {budget} ({setting}) allows 0 evictions of its {pods} pod(s): every node drain "
                  "(kubectl drain, a GPU driver upgrade, a node upgrade) waits on it forever",
                  "set maxUnavailable: 1 (a single-replica server cannot stay available through a drain: the budget "
                  "only blocks it), or run more replicas than minAvailable")


@rule("lws-group-ranks", "A LeaderWorkerSet group's cards equal the ranks its vLLM starts (TP x PP).",
      LWS_SOURCE, policy="lws-group-ranks")
def group_ranks(tp: int, pp: int, size: int, cards: int) -> Breach | None:
    """``size``: pods a group (leader included); ``cards``: the cards of the group's pods together."""
    ranks, cards_per_pod = tp * pp, cards // max(size, 1)
    if ranks == cards or cards == 0:
        return None
    return Breach(f"its vLLM starts --tensor-parallel-size={tp} x --pipeline-parallel-size={pp} = {ranks} ranks, but a group "
                  f"of size {size} holds {cards} cards: Ray cannot place the ranks "
                  + ("and the leader waits for GPUs that never join" if ranks > cards else "and the group's extra cards idle"),
                  f"make TP x PP equal size x cards a pod ({cards}), e.g. --pipeline-parallel-size={size} with "
                  f"--tensor-parallel-size={cards_per_pod}")


declare_policy("autoscaler-within-cards",
                "A HorizontalPodAutoscaler's maxReplicas of a GPU workload fit the cards its node has left.",
                "Lower maxReplicas to the pods whose cards the node holds, or add cards to the inventory.",
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""autoscaler-within-cards: an autoscaler of a GPU workload scales it only to pods whose cards its node has.

Rule: for each autoscaler (a HorizontalPodAutoscaler, KEDA's ScaledObject, whose maxReplicaCount defaults
to 100, AIBrix's PodAutoscaler) whose scaleTargetRef is a running GPU workload of the manifests
pinned to a node of the inventory (or on the inventory's only node), ``maxReplicas`` x its cards a pod
fit the node's cards less the reserved ones and every other running GPU workload's on it (replicas x
cards a pod; an unpinned one counts on the inventory's only node). A pod past them stays Pending. A
LeaderWorkerSet scales by groups: its cards a group (the leader's and ``size - 1`` workers') count. The HPA's bounds are read once (:mod:`core.k8s.manifests.objects`).

Source: kserve #871 (50 autoscaled GPU pods on a 2-card node, most Pending), vllm-project/aibrix #2670. Does not check: surge
pods (gpu-card-allocation), autoscalers of an InferenceService's own predictor (KServe makes them from
minReplicas / maxReplicas, which gpu-card-allocation counts).
Judged and worded once, in :mod:`core.rulebook.scaling`.
""",
)
declare_policy("autoscaler-metric-has-requests",
                "An autoscaler that scales on a resource's utilization scales pods whose every container requests it.",
                "Set the resource's request on every container, or scale on a Pods metric of the server.",
    kind="stack",
    level="advisory",
    severity="medium",
    doc="""autoscaler-metric-has-requests: an autoscaler scaling on utilization scales pods that request the resource.

Rule: for each HorizontalPodAutoscaler with a ``Resource`` metric of target type ``Utilization`` (or
autoscaling/v1's ``targetCPUUtilizationPercentage``) whose scaleTargetRef is a workload of the manifests,
every container of the workload's pods requests that resource, after the namespace's LimitRange defaults
(:func:`core.k8s.manifests.objects.admitted`). The HPA computes utilization as usage over the pods' summed
requests; one container without it ("missing request for cpu") leaves it unable to scale.

Advisory: the server keeps serving at its current replicas; it does not scale under load.
Source: bentoml/Yatai #187, kubernetes #78846. Judged and worded once, in :mod:`core.rulebook.scaling`.
""",
)
declare_policy("disruption-budget-allows-drain",
                "A PodDisruptionBudget of a model server allows at least one eviction, so nodes can be drained.",
                "Use maxUnavailable: 1, or minAvailable below the replicas.",
    kind="stack",
    level="advisory",
    severity="medium",
    doc="""disruption-budget-allows-drain: a PodDisruptionBudget over a model server allows an eviction.

Rule: for each PodDisruptionBudget whose selector matches the pods of running model servers (a vLLM or
candle-vllm container, or a pod with cards), the evictions it allows with all of them healthy
(minAvailable / maxUnavailable as the disruption controller computes them) are at least one. A budget
of minAvailable equal to the replicas, or maxUnavailable 0, blocks every drain: the GPU Operator's
driver upgrade, a node upgrade and ``kubectl drain`` wait forever. Read once in
:mod:`core.k8s.manifests.objects`.

Advisory: the server keeps serving; maintenance of its node is what stops.
Source: kubernetes/kubernetes #48307, NVIDIA/gpu-operator #901. Judged and worded once, in
:mod:`core.rulebook.scaling`.
""",
)
declare_policy("lws-group-ranks",
                "A LeaderWorkerSet's vLLM starts as many ranks (TP x PP) as its group holds cards (size x cards a pod).",
                "Set --tensor-parallel-size to the cards a pod and --pipeline-parallel-size to the group's size.",
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""lws-group-ranks: a LeaderWorkerSet's vLLM starts as many ranks as its group holds cards.

Rule: for each LeaderWorkerSet whose leader runs vLLM with a known argv, TP x PP equals the group's
cards (the leader's plus ``size - 1`` workers'). Ray places one rank on each card of the group; with
more ranks the leader waits for GPUs that never join, with fewer the cards idle.

Source: vllm #6938, #36861. Judged and worded once, in :mod:`core.rulebook.scaling`.
""",
)
