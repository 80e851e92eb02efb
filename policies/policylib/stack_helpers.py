"""Shared machinery of the stack (cross-resource) policies.

Used by gpu-card-allocation, node-memory-allocation, service-selector-uniqueness,
service-target-port, network-ingress-for-clients and served-model-name-unique. Reads
resources only through :mod:`core.k8s.manifests` and the inventory through
:mod:`policylib.stackconfig`; reports nothing itself (except :func:`read_inventory`, which
turns a config error into the one violation the conventions ask for).

Everything here is O(n) or O(n log n) in the number of resources:

- :class:`PodIndex` indexes pod labels by ``(namespace, key, value)`` and answers a Service
  selector by filtering the shortest posting list, memoised by selector.
- :func:`report_allocation` places pods on nodes with :func:`core.capacity.allocation.allocate` (the
  function the preview summary and the stack output call too) and reports what does not fit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, overload

from core.capacity import allocation
from core.capacity.allocation import NodeUse
from core.capacity.inventory import ClusterInventory
from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from policylib import resource_helpers as rh
from policylib import stackconfig, views

# --- stack config and policy config -------------------------------------------------------


def read_inventory(report_violation: Callable[..., None], policy_name: str) -> ClusterInventory | None:
    """The stack's validated inventory, or None after reporting ONE violation that says which
    key is missing or invalid and how to fix it (``stackconfig.StackConfigError``)."""
    try:
        return stackconfig.inventory()
    except stackconfig.StackConfigError as err:
        report_violation(rh.config_unreadable(f"policy {policy_name}", err, "judge the stack").render())
        return None


def config_value(args: Any, schema_properties: Mapping[str, Mapping[str, Any]], key: str) -> Any:
    """The policy parameter ``key`` from ``args.get_config()``, else the schema's default."""
    config = args.get_config() or {}
    if key in config:
        return config[key]
    return schema_properties[key].get("default")


@overload
def report(w: manifests.Workload, breach: Breach) -> str:
    ...


@overload
def report(w: manifests.Workload, breach: None) -> None:
    ...


@overload
def report(w: manifests.Workload, breach: Breach | None) -> str | None:
    ...


def report(w: manifests.Workload, breach: Breach | None) -> str | None:
    """A rule's ``breach`` about workload ``w`` (None: nothing) as the pack's message, in the user's terms."""
    return None if breach is None else terms.message(w.annotations, breach.finding(f"{w.kind} {w.name}"))


def report_node(use: NodeUse, breach: Breach | None) -> str:
    """A rule's ``breach`` about a node's total: in stack-file terms (naming the keys of every
    workload counted there) when they were made from a stack file; a node is no resource, so the
    message carries no URN."""
    assert breach is not None, use.node
    keys = terms.stack_file_keys(s.ref.ref.annotations for s in use.ordered() if s.ref is not None and s.ref.ref is not None)
    return breach.finding(use.node).render(stack_key=keys)


# --- pod label index ----------------------------------------------------------------------


class PodIndex:
    """Workloads by pod label, to answer Service selectors without comparing all pairs.

    ``select(namespace, selector)`` returns the workloads (running and parked) in
    ``namespace`` whose pod labels match the equality selector, in input order. Cost: the
    shortest posting list of the selector's pairs times the selector's size; identical
    selectors are answered once (memoised).
    """

    def __init__(self, all_workloads: Iterable[manifests.Workload]) -> None:
        self.workloads: tuple[manifests.Workload, ...] = tuple(all_workloads)
        self._postings: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for i, w in enumerate(self.workloads):
            for key, value in w.pod_labels.items():
                self._postings[(w.namespace, key, value)].append(i)
        self._memo: dict[tuple[str, frozenset], tuple[manifests.Workload, ...]] = {}
        #: Pods of objects the pack does not model (bare Pods, Jobs, custom resources).
        self.others: tuple[manifests.OtherPods, ...] = ()

    def select(self, namespace: str, selector: Mapping[str, str]) -> tuple[manifests.Workload, ...]:
        """Workloads in ``namespace`` whose pods ``selector`` matches (:meth:`core.k8s.manifests.Workload.selected_by`:
        template labels, and the labels controllers add, such as a StatefulSet's
        ``apps.kubernetes.io/pod-index``); ``()`` for an empty selector."""
        if not selector:
            return ()
        memo_key = (namespace, frozenset(selector.items()))
        hit = self._memo.get(memo_key)
        if hit is not None:
            return hit
        postings = []
        for key, value in selector.items():
            if key in manifests.CONTROLLER_LABELS:
                continue  # added by the controller, not indexed: checked on the candidates below
            posting = self._postings.get((namespace, key, value))
            if not posting:
                self._memo[memo_key] = ()
                return ()
            postings.append(posting)
        candidates = min(postings, key=len) if postings else [
            i for i, w in enumerate(self.workloads) if w.namespace == namespace]
        found = tuple(self.workloads[i] for i in candidates if self.workloads[i].selected_by(selector))
        self._memo[memo_key] = found
        return found


def services_and_index(args: Any) -> tuple[tuple[manifests.Service, ...], PodIndex]:
    """The Services of a stack policy's resources and a :class:`PodIndex` of its workloads (the
    Service policies' shared start; the index is built only when there are Services). The index
    also knows the pods of objects the pack does not model (:attr:`PodIndex.others`)."""
    stack = views.stack_view(args.resources)
    index = PodIndex(stack.workloads if stack.services else ())
    index.others = stack.others
    return tuple(stack.services), index


def selects_other_pods(index: PodIndex, namespace: str, selector: Mapping[str, str]) -> manifests.OtherPods | None:
    """The first object the pack does not model whose pods ``selector`` matches in ``namespace``, or None."""
    for o in index.others:
        if o.namespace == namespace and o.selected_by(selector):
            return o
    return None


def running(selected: Iterable[manifests.Workload]) -> tuple[manifests.Workload, ...]:
    """The running ones (replicas > 0)."""
    return tuple(w for w in selected if w.running)


# --- ports --------------------------------------------------------------------------------


def target_port_number(target: Any, w: manifests.Workload) -> int | None:
    """The pod port a Service ``targetPort`` reaches on ``w``'s pods.

    A number (or digit string) is itself; a name resolves through the containers' named
    ``containerPort`` entries (first container that declares it). None when a name resolves
    nowhere.
    """
    if isinstance(target, bool):
        return None
    if isinstance(target, (int, float)):
        return int(target)
    text = str(target).strip()
    if text.isdigit():
        return int(text)
    for c in w.containers:
        if text in c.port_names:
            return c.port_names[text]
    return None


def declared_ports(w: manifests.Workload) -> tuple[int, ...]:
    """Every ``containerPort`` the pod's containers declare, sorted, without duplicates."""
    return tuple(sorted({p for c in w.containers for p in c.ports}))


def port_names_of(w: manifests.Workload, port: int) -> frozenset[str]:
    """The container port names that stand for ``port`` on ``w``'s pods."""
    return frozenset(name for c in w.containers for name, number in c.port_names.items() if number == port)


# --- allocation of pods to nodes ----------------------------------------------------------


def report_allocation(
    args: Any,
    report_violation: Callable[..., None],
    *,
    policy_name: str,
    config_properties: Mapping[str, Mapping[str, Any]],
    asking: Iterable[manifests.Workload],
    capacity_of: Callable[[Any], float],
    per_pod: Callable[[manifests.Workload], float],
    reserved_of: Callable[[ClusterInventory], Mapping[str, Iterable[tuple[str, float, str]]] | None],
    unknown_node_message: Callable[[manifests.Workload, list[str]], str | None],
    oversized_message: Callable[[manifests.Workload, str | None, float], str | None],
    node_message: Callable[[NodeUse], str],
) -> None:
    """The shared tail of the allocation policies (gpu-card-allocation, node-memory-allocation).

    Reads the inventory (one violation and stop when it is missing or invalid) and the
    ``countSurge`` parameter, places ``asking`` with :func:`core.capacity.allocation.allocate` (``capacity_of(node)``: what an
    inventory node offers; ``reserved_of(inventory)``: what is held outside the stack), then
    reports, in this order: each workload pinned to a node the inventory does not list
    (``unknown_node_message(w, the inventory's node names)``; None: not reported by this policy), each
    pod larger than its node or every node (``oversized_message(w, node, capacity)``), and each
    over-allocated node in name order (``node_message(use)``, without a URN).
    """
    inventory = read_inventory(report_violation, policy_name)
    if inventory is None:
        return
    count_surge = bool(config_value(args, config_properties, "countSurge"))
    alloc = allocation.allocate(
        allocation.demands(asking, per_pod, inventory),
        {n.name: capacity_of(n) for n in inventory.nodes},
        count_surge=count_surge,
        reserved=reserved_of(inventory),
        pool_nodes=allocation.pool_nodes(inventory),
    )
    known = [n.name for n in inventory.nodes]
    for d in alloc.unknown_node:
        text = unknown_node_message(d.ref, known)
        if text:
            report_violation(text, d.ref.urn)
    for d, node, cap in alloc.oversized:
        text = oversized_message(d.ref, node, cap)
        if text:
            report_violation(text, d.ref.urn)
    for name in sorted(alloc.nodes):
        use = alloc.nodes[name]
        if use.used > use.capacity:
            report_violation(node_message(use))
