"""How the pack reads the manifests for the policies :mod:`core.rulebook.pods` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core.base import facts
from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from core.k8s.quantity import QuantityError
from core.rulebook import pods as rules
from policylib import containers, declare, stackconfig, views
from policylib import resource_helpers as rh

# --- gpu-runtime-class: on a cluster whose GPU pods need a RuntimeClass, every GPU pod names it.


def required_class(config: Mapping[str, Any] | None) -> str | None:
    """The RuntimeClass GPU pods must name: the ``runtimeClassName`` parameter, else the
    inventory's ``gpu_runtime_class``; None when neither says (or the inventory is unreadable,
    which the stack policies report): the policy does not run."""
    given = (config or {}).get("runtimeClassName")
    if given:
        return str(given)
    try:
        return stackconfig.inventory().gpu_runtime_class
    except stackconfig.StackConfigError:
        return None


def gpu_runtime_class(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not w.is_gpu:
        return
    breach = rules.runtime_class(w.cards_per_pod, w.runtime_class or None, required_class(args.get_config()))
    if breach is not None:
        report_violation(terms.message(w.annotations, breach.finding(rh.workload_label(w))), args.urn)


declare.validate("gpu-runtime-class", gpu_runtime_class)


# --- gpu-runtime-class-without-cards: a pod under the GPU RuntimeClass that requests no card does not see them all.

#: The class judged when the inventory names none (the NVIDIA GPU Operator's).
DEFAULT_CLASS = "nvidia"


def gpu_runtime_class_without_cards(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or w.is_gpu or not w.running:
        return
    try:
        gpu_class = stackconfig.inventory().gpu_runtime_class or DEFAULT_CLASS
    except stackconfig.StackConfigError:
        gpu_class = DEFAULT_CLASS
    if w.runtime_class != gpu_class:
        return
    for c in w.containers:
        containers.report(args, report_violation, w, rules.runtime_class_without_cards(gpu_class, c.env.get("NVIDIA_VISIBLE_DEVICES")), c)


declare.validate("gpu-runtime-class-without-cards", gpu_runtime_class_without_cards)


# --- gpu-whole-cards: nvidia.com/gpu is asked in whole cards, with a limit equal to the request.


def _shown(raw: Any) -> str:
    return f'"{raw}"' if isinstance(raw, str) else str(raw)


def _whole_cards(raw: Any) -> Decimal | None:
    """The quantity as a Decimal when it is a whole, non-negative number of cards, else None."""
    q = manifests.quantity(raw)
    if q is None or q < 0 or q != q.to_integral_value():
        return None
    return q


def gpu_whole_cards_container_problems(resources: Any) -> list[str]:
    """What is wrong with one container's nvidia.com/gpu request and limit; ``[]`` when fine."""
    res = rh.mapping(resources)
    req_raw = rh.mapping(res.get("requests")).get(facts.GPU_RESOURCE)
    lim_raw = rh.mapping(res.get("limits")).get(facts.GPU_RESOURCE)
    problems = []
    for label, raw in (("request", req_raw), ("limit", lim_raw)):
        if raw is not None and _whole_cards(raw) is None:
            problems.append(f"{label} {_shown(raw)} is not a whole number of cards")
    if req_raw is not None and lim_raw is None:
        problems.append(f"request {_shown(req_raw)} has no limit (extended resources need limit = request)")
    elif req_raw is not None and lim_raw is not None:
        req, lim = manifests.quantity(req_raw), manifests.quantity(lim_raw)
        if req is not None and lim is not None and req != lim:
            problems.append(f"request {_shown(req_raw)} differs from limit {_shown(lim_raw)}")
    return problems


def gpu_whole_cards(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type not in rh.CONTAINER_TYPES:
        return
    label = rh.object_label(args.props, args.resource_type)
    annotations = rh.annotations_of(args.props)
    for where, spec in rh.pod_specs(args.resource_type, args.props):
        for field, c in rh.raw_containers(spec):
            breach = rules.whole_cards(gpu_whole_cards_container_problems(c.get("resources")))
            if breach is not None:
                report_violation(terms.message(annotations, breach.finding(rh.container_label(label, where, field, c))),
                                 args.urn)


declare.validate("gpu-whole-cards", gpu_whole_cards)


# --- moving-tag-pull-always: an image not pinned by digest is pulled on every pod start.


def tags_rebuilt() -> bool:
    """The inventory's ``image_tags_rebuilt`` (False when the inventory is missing or invalid:
    the stack policies report that)."""
    try:
        return stackconfig.inventory().image_tags_rebuilt
    except stackconfig.StackConfigError:
        return False


def moving_tag_pull_always(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type not in rh.CONTAINER_TYPES:
        return
    rebuilt = tags_rebuilt()
    label = rh.object_label(args.props, args.resource_type)
    annotations = rh.annotations_of(args.props)
    for where, spec in rh.pod_specs(args.resource_type, args.props):
        for field, c in rh.raw_containers(spec):
            image = str(c.get("image") or "")
            if not image:
                continue
            ref = rh.parse_image(image)
            moves = not (ref.pinned or (ref.names_a_build and not rebuilt))
            policy, defaulted = rh.effective_pull_policy(ref, c.get("imagePullPolicy"))
            breach = rules.pull_always(image, ref.shown_tag, moves, policy, defaulted)
            if breach is not None:
                report_violation(terms.message(annotations, breach.finding(rh.container_label(label, where, field, c))),
                                 args.urn)


declare.validate("moving-tag-pull-always", moving_tag_pull_always)


# --- multi-gpu-shm: pods with more than one card mount a sized, Memory-backed /dev/shm.

def _shm_mount(c: manifests.Container):
    for m in c.volume_mounts:
        if str(m.get("mountPath", "")).rstrip("/") == facts.SHM_MOUNT_PATH:
            return m
    return None


def multi_gpu_shm_container_problems(w: manifests.Workload, c: manifests.Container, min_mib: float, house: bool = True) -> list[Breach]:
    """Breaches of one card-holding container of a multi-card pod; ``[]`` when its /dev/shm is right.
    ``house``: the cluster's conventions apply (a sizeLimit of at least ``min_mib``); without them
    an unbounded Memory emptyDir (bounded by the memory limit, tmpfs being charged to it) passes."""
    cards = w.cards_per_pod
    mount = _shm_mount(c)
    if mount is None:
        found = [rules.shm_volume(cards, f"mounts nothing at {facts.SHM_MOUNT_PATH}, so it gets the 64Mi container default")]
        return [b for b in found if b]
    name = str(mount.get("name", ""))
    volume = w.volume(name)
    if volume is None or not isinstance(volume.get("emptyDir"), Mapping):
        found = [rules.shm_volume(cards, f"mounts volume {name} at {facts.SHM_MOUNT_PATH}, which is not an emptyDir of the pod")]
        return [b for b in found if b]
    empty_dir = volume["emptyDir"]
    problems = []
    if str(empty_dir.get("medium", "")) != "Memory":
        problems.append(f"volume {name} at {facts.SHM_MOUNT_PATH} is not medium: Memory (it is disk-backed)")
    size_raw = empty_dir.get("sizeLimit")
    size = manifests.mib(size_raw)
    if size is None:
        if size_raw is not None:  # core.k8s.quantity refuses it, as the stack file's check does
            problems.append(f"volume {name} sizeLimit: {QuantityError(size_raw).rule}; write e.g. \"8Gi\"")
        elif house:
            problems.append(f"volume {name} at {facts.SHM_MOUNT_PATH} has no sizeLimit")
    elif size < min_mib and house:
        problems.append(f"volume {name} sizeLimit {size_raw} is below {min_mib:g} MiB")
    found = [rules.shm_volume(cards, p) for p in problems]
    if size is not None:
        found.append(rules.shm_limit_covers(cards, c.memory_limit_mib, size, str(size_raw)))
    return [b for b in found if b]


def multi_gpu_shm(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or w.cards_per_pod <= 1:
        return
    min_mib = float(args.get_config().get("minSizeLimitMiB", rules.DEFAULT_MIN_SIZE_MIB))
    house = stackconfig.house_conventions()
    for c in rh.gpu_containers(w):
        if c.from_runtime:
            continue  # KServe predictor.model: the ServingRuntime gives its mounts (not in the manifests)
        for breach in multi_gpu_shm_container_problems(w, c, min_mib, house):
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


declare.validate("multi-gpu-shm", multi_gpu_shm)


# --- node-offers-resources: pods request only extended resources their node offers.

#: Resource names that are not extended resources of a device plugin.
NATIVE_PREFIXES = ("hugepages-", "kubernetes.io/", "requests.")


def node_offers_resources(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not w.running:
        return
    try:
        inv = stackconfig.inventory()
    except stackconfig.StackConfigError:
        return
    picked, narrowed = inv.placed_on(w.node_name, w.node_selector, w.node_affinity)
    pinned = picked[0] if w.node and picked else None
    nodes = picked if (pinned is not None or narrowed) and picked else [] if w.node else list(inv.nodes)
    if not nodes or any(n.extended_resources is None for n in nodes):
        return
    offered = sorted({r for n in nodes for r in (n.extended_resources or ())})
    where = (f"node {pinned.name}" if pinned is not None else f"the nodes its nodeSelector picks ({', '.join(n.name for n in nodes)})"
             if narrowed else "any node of the inventory")
    for c in (*w.init_containers, *w.containers):
        tp = c.server.tensor_parallel if c.server is not None else 1
        for name, amount in c.resource_amounts.items():
            if "/" in name and name != facts.GPU_RESOURCE and not name.startswith(NATIVE_PREFIXES):
                containers.report(args, report_violation, w, rules.node_offers(name, amount, where, offered, tp), c)


declare.validate("node-offers-resources", node_offers_resources)
