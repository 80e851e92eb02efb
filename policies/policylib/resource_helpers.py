"""Shared pieces of the pack's resource policies (one resource at a time).

What :mod:`core.k8s.manifests` does not give: the raw pod specs of every kind that runs
containers (for the checks that also look at ``initContainers``, Pods, Jobs, DaemonSets),
image references, numbers as the analyzer protocol delivers them, the nodes a workload can
land on, probe budgets and the one violation a policy reports when the stack config is bad.

Numbers: over the analyzer gRPC protocol properties travel as a protobuf ``Struct``, so
every integer arrives as a float (``replicas: 0`` is ``0.0``). :func:`whole` reads both.

Pure functions; no Pulumi program code, no pulumi_kubernetes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from core.capacity.inventory import ClusterInventory, Node
from core.catalog import cards, images
from core.judging.problems import Finding
from core.judging.registry import MANIFEST
from core.k8s import manifests
from core.rulebook import stack_config
from policylib import stackconfig

# --- numbers and raw objects --------------------------------------------------------------

#: The read model's tolerant readers (:mod:`core.k8s.manifests.read`) under the names the policies use:
#: ``mapping`` (``{}`` unless a mapping), ``sequence`` (``()`` unless a list) and ``whole`` (an
#: integer field, or None).
mapping = manifests.as_map
sequence = manifests.as_seq
whole = manifests.whole_number


def annotations_of(props: Mapping) -> Mapping:
    """``metadata.annotations`` of an object's properties (``{}`` when absent or not a mapping)."""
    return mapping(mapping(props.get("metadata")).get("annotations"))


# --- pod specs of every kind that runs containers ----------------------------------------

#: Type token -> path from the object to its pod spec. An InferenceService has one pod spec
#: per component (predictor, transformer, explainer), handled by :func:`pod_specs`.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "kubernetes:core/v1:Pod": ("spec",),
    "kubernetes:apps/v1:Deployment": ("spec", "template", "spec"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template", "spec"),
    "kubernetes:batch/v1:Job": ("spec", "template", "spec"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
ISVC_COMPONENTS = ("predictor", "transformer", "explainer")
CONTAINER_TYPES = frozenset(POD_SPEC_PATHS) | {manifests.ISVC_TYPE}


def pod_specs(resource_type: str, props: Mapping) -> list[tuple[str, Mapping]]:
    """``(where, pod spec)`` for each pod template of the object; ``[]`` for other types.

    ``where`` names the template in messages: ``""`` for the only one, ``"predictor"`` /
    ``"transformer"`` / ``"explainer"`` for an InferenceService's components.
    """
    if resource_type == manifests.ISVC_TYPE:
        spec = mapping(props.get("spec"))
        return [(c, mapping(spec.get(c))) for c in ISVC_COMPONENTS if isinstance(spec.get(c), Mapping)]
    path = POD_SPEC_PATHS.get(resource_type)
    if path is None:
        return []
    node: Any = props
    for key in path:
        node = mapping(node).get(key)
    return [("", mapping(node))]


def raw_containers(pod_spec: Mapping) -> list[tuple[str, Mapping]]:
    """``(field, container)`` for every container and init container of a pod spec."""
    out = []
    for field in ("initContainers", "containers"):
        for c in sequence(pod_spec.get(field)):
            out.append((field, mapping(c)))
    return out


def object_label(props: Mapping, resource_type: str) -> str:
    """``"<Kind> <name>"`` as messages name the object, e.g. ``"Deployment candle-vllm"``."""
    kind = str(props.get("kind") or resource_type.rsplit(":", 1)[-1])
    return f"{kind} {mapping(props.get('metadata')).get('name', '')}"


def container_label(label: str, where: str, field: str, container: Mapping) -> str:
    """``"Deployment x, container c"``, ``"InferenceService y, predictor init container w"``: how the
    raw-container policies name a container (``where``/``field`` from :func:`pod_specs` /
    :func:`raw_containers`)."""
    place = f"{where} " if where else ""
    kind = "init container" if field == "initContainers" else "container"
    return f"{label}, {place}{kind} {container.get('name', '')}"


def workload_label(w: manifests.Workload) -> str:
    """``"<Kind> <name>"`` of a :class:`~core.k8s.manifests.pods.Workload`."""
    return f"{w.kind} {w.name}"


# --- images ------------------------------------------------------------------------------


#: One image parser for the stack file and the pack: ``core.catalog.images``.
ImageRef = images.ImageRef
parse_image = images.parse_image


def effective_pull_policy(ref: ImageRef, written: str | None) -> tuple[str, bool]:
    """``(policy, defaulted)``: the imagePullPolicy the API server stores for a container.

    When omitted, Kubernetes defaults it to ``Always`` for ``:latest`` or no tag and to
    ``IfNotPresent`` otherwise (Kubernetes docs, "Image pull policy"); ``defaulted`` says so.
    """
    if written:
        return str(written), False
    if ref.tag in (None, "latest") and not ref.pinned:
        return "Always", True
    return "IfNotPresent", True


# --- nodes a workload can land on ---------------------------------------------------------


def candidate_nodes(w: manifests.Workload, inv: ClusterInventory) -> tuple[list[Node], bool]:
    """``(nodes, pinned)``: the node a pod is pinned to (``nodeName`` or the hostname
    nodeSelector), else the nodes (or pools) with at least the pod's cards among those its
    nodeSelector's recorded labels pick (:meth:`core.capacity.inventory.ClusterInventory.placed_on`).

    A pin to a node missing from the inventory gives ``[]`` (gpu-card-allocation reports
    it). A required node affinity narrows the nodes like the nodeSelector.
    """
    if w.node:
        node = inv.node(w.node)
        return ([node] if node else []), True
    picked, narrowed = inv.placed_on(None, w.node_selector, w.node_affinity)
    nodes = picked if narrowed and picked else list(inv.nodes)
    return [n for n in nodes if n.cards >= max(w.cards_per_pod, 1)], False


def pre_turing(nodes: Sequence[Node]) -> list[Node]:
    """The nodes whose card gets the Volta rules (:func:`core.catalog.cards.needs_volta_path`: below
    sm_75; V100: sm_70)."""
    return [n for n in nodes if n.card is not None and cards.needs_volta_path(n.card.sm)]


def describe_nodes(nodes: Sequence[Node], pinned: bool) -> str:
    """``"on worker-1 (Tesla-V100-PCIE-32GB, sm_70)"``, or ``"could land on a (sm_70), b (sm_70)"``."""
    parts = ", ".join(
        f"{n.name} ({n.card.product}, sm_{n.card.sm})" if n.card else n.name for n in nodes
    )
    return ("on " if pinned else "could land on ") + parts


# --- probes ------------------------------------------------------------------------------

#: Kubernetes probe defaults (core/v1 Probe): period 10 s, failure threshold 3, delay 0 s.
PROBE_PERIOD_DEFAULT = 10
PROBE_FAILURE_THRESHOLD_DEFAULT = 3


def probe_budget(probe: Mapping) -> tuple[int, str]:
    """``(seconds, formula)``: how long a startup probe lets a container start before the
    kubelet kills it: initialDelaySeconds + periodSeconds x failureThreshold, with the
    Kubernetes defaults (0, 10, 3) for omitted fields. ``formula`` reads "120 x 15 s"."""
    period = whole(probe.get("periodSeconds")) or PROBE_PERIOD_DEFAULT
    failures = whole(probe.get("failureThreshold")) or PROBE_FAILURE_THRESHOLD_DEFAULT
    delay = whole(probe.get("initialDelaySeconds")) or 0
    formula = f"{failures} x {period} s" + (f" + {delay} s initial delay" if delay else "")
    return delay + period * failures, formula


# --- stack config ------------------------------------------------------------------------


def config_unreadable(subject: str, err: Exception, cannot: str, who: str = "") -> Finding:
    """The finding about ``subject`` when the stack's inventory or models cannot be read
    (``err``): the registered wording (:func:`core.rulebook.stack_config.config_readable`);
    ``cannot``: what the policy therefore cannot do; ``who``: the policy, when ``subject`` is the object."""
    breach = stack_config.config_readable(str(err), cannot, who)
    assert breach is not None
    wrong, fix = breach.render(MANIFEST)
    return Finding(subject, wrong, fix, breach.source)


def config_error(policy_name: str, err: stackconfig.StackConfigError) -> str:
    """The one message a resource policy reports when the inventory or models cannot be read."""
    return config_unreadable(f"policy {policy_name}", err, "judge this resource").render()


def with_inventory(
    policy_name: str, report: Callable[..., None], urn: str
) -> ClusterInventory | None:
    """The stack's inventory, or None after reporting one violation saying why it is unusable."""
    try:
        return stackconfig.inventory()
    except stackconfig.StackConfigError as err:
        report(config_error(policy_name, err), urn)
        return None


def gpu_containers(w: manifests.Workload) -> list[manifests.Container]:
    """The containers that hold cards (nvidia.com/gpu limit or request above 0)."""
    return [c for c in w.containers if c.cards > 0]
