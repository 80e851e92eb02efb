"""What a namespace's ResourceQuota and LimitRange admit, judged against the model servers' pods:
a quota the servers' cards exceed, a quota on a resource a container does not set
(``quota-admits-servers``), a container's request or limit outside a LimitRange's bounds, or a default
limit below the container's own request (``limit-range-admits-servers``). The admission plugins
(ResourceQuota, LimitRanger) refuse such a pod, so the ReplicaSet never creates it. The policies read
the objects (:mod:`core.k8s.manifests.objects`) and call these judges.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.judging.registry import Breach, declare_policy, rule

QUOTA_SOURCE = ("kserve/kserve #1242 (\"pods ... is forbidden: failed quota: kf-resource-quota: must specify memory\"); "
                "kserve/kserve #867 (ResourceQuota and LimitRange: the predictor's pod is not created); Kubernetes "
                "ResourceQuota admission")
LIMITS_SOURCE = ("kserve/kserve #867 (a LimitRange max of 1 CPU and 1Gi under the predictor's limits: the pod is never "
                 "created); Kubernetes LimitRanger admission")


@rule("quota-cards", "The cards a namespace's servers ask fit its ResourceQuota of nvidia.com/gpu.",
      QUOTA_SOURCE, policy="quota-admits-servers")
def quota_cards(quota: str, resource: str, hard: str, asked: int, who: str) -> Breach | None:
    """``asked``: the cards the namespace's running pods ask (replicas x cards a pod, summed); ``who``: by whom."""
    try:
        limit = float(hard)
    except ValueError:
        return None
    if asked <= limit:
        return None
    return Breach(f"it allows {resource}: {hard}, but the namespace's pods ask {asked} cards ({who}): "
                  "the pods past the quota are refused at admission (exceeded quota) and never created",
                  f"raise {resource} in ResourceQuota {quota} to at least {asked}, or ask fewer cards")


@rule("quota-must-specify", "Every container sets each resource its namespace's ResourceQuota limits.",
      QUOTA_SOURCE, policy="quota-admits-servers")
def quota_must_specify(quota: str, missing: Sequence[str], container: str) -> Breach | None:
    """``missing``: the quota's resources (``limits.memory``) the container leaves unset, after LimitRange defaults."""
    if not missing:
        return None
    return Breach(f"ResourceQuota {quota} limits {', '.join(missing)}, which {container} does not set (and no LimitRange "
                  f"in the manifests defaults): the pod is forbidden (\"failed quota: {quota}: must specify "
                  f"{','.join(missing)}\") and never created",
                  f"set {', '.join('resources.' + m for m in missing)} on every container and init container of the pod")


@rule("limit-range-admits-servers", "A container's requests and limits lie within its namespace's LimitRange.",
      LIMITS_SOURCE, policy="limit-range-admits-servers")
def within_limit_range(limit_range: str, container: str, problems: Sequence[str]) -> Breach | None:
    """``problems``: each bound crossed, worded (``limits.memory 40Gi is above max 16Gi``)."""
    if not problems:
        return None
    return Breach(f"LimitRange {limit_range}: {container}: {'; '.join(problems)}: the LimitRanger admission refuses the "
                  "pod, so it is never created",
                  f"bring the container's resources within LimitRange {limit_range}, or raise its bounds for the model "
                  "servers' namespace")


declare_policy("quota-admits-servers",
                "A namespace's ResourceQuota admits its model servers' pods: their cards fit it, and every container "
                "sets what it limits.",
                "Raise the quota to the cards the servers ask, and set every resource the quota limits on every container.",
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""quota-admits-servers: a namespace's ResourceQuota admits its model servers' pods.

Rule: for each ResourceQuota of the manifests, (1) the cards its namespace's running workloads ask
(replicas x cards a pod) fit its ``requests.nvidia.com/gpu`` (or ``limits.nvidia.com/gpu``); (2) every
container and init container of a Deployment, StatefulSet or LeaderWorkerSet in its namespace sets each
cpu / memory resource the quota limits (``requests.memory``, ``limits.cpu``, ``memory``, ...), after the
namespace's LimitRanges of the manifests default them (:func:`core.k8s.manifests.objects.admitted`). The
ResourceQuota admission refuses the pod otherwise ("must specify ..."; "exceeded quota").

An InferenceService's predictor is not judged by (2): KServe gives its containers default resources. A
quota with ``scopes`` or a ``scopeSelector`` (it counts only the pods they match) is not judged.
Source: kserve #1242, #867. Judged and worded once, in :mod:`core.rulebook.limits`.
""",
)
declare_policy("limit-range-admits-servers",
                "Each container's requests and limits, after a LimitRange's defaults, lie within its min and max, and a "
                "default limit is not below the container's request.",
                "Bring the container's requests and limits within the LimitRange, or raise its bounds.",
    kind="stack",
    level="mandatory",
    severity="high",
    doc="""limit-range-admits-servers: each container's resources, after a LimitRange's defaults, lie within it.

Rule: for each running Deployment, StatefulSet or LeaderWorkerSet and each of its containers and init
containers, with the namespace's LimitRanges of the manifests applied as the LimitRanger admission applies
them (:func:`core.k8s.manifests.objects.admitted`: a missing limit from ``default``, a missing request from
``defaultRequest``): every request and limit is at least ``min`` and at most ``max``, and no request
exceeds its (defaulted) limit. The admission refuses the pod otherwise, so it is never created.

An InferenceService's predictor is not judged: KServe sets its containers' resources.
Source: kserve #867. Judged and worded once, in :mod:`core.rulebook.limits`.
""",
)
