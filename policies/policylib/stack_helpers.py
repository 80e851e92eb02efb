"""Shared machinery of the stack (cross-resource) policies.

Used by gpu-card-allocation, node-memory-allocation, service-selector-uniqueness,
service-target-port, network-ingress-for-clients and served-model-name-unique. Reads
resources only through :mod:`policylib.workloads` and the inventory through
:mod:`policylib.stackconfig`; reports nothing itself (except :func:`read_inventory`, which
turns a config error into the one violation the conventions ask for).

Everything here is O(n) or O(n log n) in the number of resources:

- :class:`PodIndex` indexes pod labels by ``(namespace, key, value)`` and answers a Service
  selector by filtering the shortest posting list, memoised by selector.
- :func:`allocate` places pods on nodes: pinned pods on their node, unpinned pods by
  worst-fit decreasing over a max-heap of free capacity (``heapq``), batched per workload.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

from core.inventory import ClusterInventory
from policylib import stackconfig, workloads
from policylib.workloads import Workload

# --- stack config and policy config -------------------------------------------------------


def read_inventory(report_violation: Callable[..., None], policy_name: str) -> Optional[ClusterInventory]:
    """The stack's validated inventory, or None after reporting ONE violation that says which
    key is missing or invalid and how to fix it (``stackconfig.StackConfigError``)."""
    try:
        return stackconfig.inventory()
    except stackconfig.StackConfigError as err:
        report_violation(
            f"{policy_name} cannot judge the stack: {err}; add llm-serving:cluster (nodes, cards, "
            "allocatable_memory_mib) to the stack file, in the format of Pulumi.prod.yaml"
        )
        return None


def config_value(args: Any, schema_properties: Mapping[str, Mapping[str, Any]], key: str) -> Any:
    """The policy parameter ``key`` from ``args.get_config()``, else the schema's default."""
    config = args.get_config() or {}
    if key in config:
        return config[key]
    return schema_properties[key].get("default")


# --- formatting ---------------------------------------------------------------------------


def amount(value: float) -> str:
    """A card count or MiB figure as messages show it: ``6``, ``63,495``, ``476.8``."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


# --- pod label index ----------------------------------------------------------------------


class PodIndex:
    """Workloads by pod label, to answer Service selectors without comparing all pairs.

    ``select(namespace, selector)`` returns the workloads (running and parked) in
    ``namespace`` whose pod labels match the equality selector, in input order. Cost: the
    shortest posting list of the selector's pairs times the selector's size; identical
    selectors are answered once (memoised).
    """

    def __init__(self, all_workloads: Iterable[Workload]) -> None:
        self.workloads: tuple[Workload, ...] = tuple(all_workloads)
        self._postings: dict[tuple[str, str, str], list[int]] = defaultdict(list)
        for i, w in enumerate(self.workloads):
            for key, value in w.pod_labels.items():
                self._postings[(w.namespace, key, value)].append(i)
        self._memo: dict[tuple[str, frozenset], tuple[Workload, ...]] = {}

    def select(self, namespace: str, selector: Mapping[str, str]) -> tuple[Workload, ...]:
        """Workloads in ``namespace`` whose pod labels carry every ``selector`` pair; ``()`` for an empty selector."""
        if not selector:
            return ()
        memo_key = (namespace, frozenset(selector.items()))
        hit = self._memo.get(memo_key)
        if hit is not None:
            return hit
        postings = []
        for key, value in selector.items():
            posting = self._postings.get((namespace, key, value))
            if not posting:
                self._memo[memo_key] = ()
                return ()
            postings.append(posting)
        shortest = min(postings, key=len)
        found = tuple(
            self.workloads[i]
            for i in shortest
            if workloads.selector_matches(selector, self.workloads[i].pod_labels)
        )
        self._memo[memo_key] = found
        return found


def running(selected: Iterable[Workload]) -> tuple[Workload, ...]:
    """The running ones (replicas > 0)."""
    return tuple(w for w in selected if w.running)


# --- ports --------------------------------------------------------------------------------


def target_port_number(target: Any, w: Workload) -> Optional[int]:
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


def declared_ports(w: Workload) -> tuple[int, ...]:
    """Every ``containerPort`` the pod's containers declare, sorted, without duplicates."""
    return tuple(sorted({p for c in w.containers for p in c.ports}))


def port_names_of(w: Workload, port: int) -> frozenset[str]:
    """The container port names that stand for ``port`` on ``w``'s pods."""
    return frozenset(name for c in w.containers for name, number in c.port_names.items() if number == port)


# --- allocation of pods to nodes ----------------------------------------------------------


@dataclass
class Share:
    """What one workload (or a reservation) takes of one node.

    ``per_pod`` is in the allocation's unit (cards, or MiB); ``pods`` are running pods,
    ``surge_pods`` the extra pods a RollingUpdate starts. ``unpinned``: placed by packing,
    not by a nodeSelector / nodeName. ``overflow``: an unpinned pod that fit on no node,
    counted on the node with the most free capacity.
    """

    name: str
    per_pod: float
    pods: int = 0
    surge_pods: int = 0
    unpinned: bool = False
    overflow: bool = False
    reserved_reason: Optional[str] = None
    workload: Optional[Workload] = None

    @property
    def base(self) -> float:
        return self.pods * self.per_pod

    @property
    def surge(self) -> float:
        return self.surge_pods * self.per_pod

    @property
    def total(self) -> float:
        return self.base + self.surge

    def text(self) -> str:
        """``coder 2``, ``coder 4 (2 pods)``, ``coder 2 + 2 surge (RollingUpdate)``,
        ``gpu-burn 1 (reserved outside the stack: <reason>)``."""
        out = f"{self.name} {amount(self.base)}"
        if self.pods > 1:
            out += f" ({self.pods} pods)"
        if self.surge_pods:
            out += f" + {amount(self.surge)} surge (RollingUpdate)"
        if self.reserved_reason is not None:
            out += " (reserved outside the stack" + (f": {self.reserved_reason})" if self.reserved_reason else ")")
        return out


@dataclass
class NodeUse:
    """One node's capacity and the shares counted on it."""

    node: str
    capacity: float
    shares: list[Share] = field(default_factory=list)

    @property
    def used(self) -> float:
        return sum(s.total for s in self.shares)

    @property
    def surge(self) -> float:
        return sum(s.surge for s in self.shares)

    def ordered(self) -> list[Share]:
        """Shares largest first, then by name (the order every message uses)."""
        return sorted(self.shares, key=lambda s: (-s.total, s.name))

    def unpinned_names(self) -> list[str]:
        return sorted({s.name for s in self.shares if s.unpinned})

    def overflow_clause(self, unit: str) -> str:
        """``; unpinned candle-vllm fits on no node (counted on the node with the most free cards)``,
        or ``""`` when every unpinned pod counted here fit."""
        names = sorted({s.name for s in self.shares if s.overflow})
        if not names:
            return ""
        verb = "fits" if len(names) == 1 else "fit"
        return f"; unpinned {', '.join(names)} {verb} on no node (counted on the node with the most free {unit})"


@dataclass
class Allocation:
    """The result of :func:`allocate`.

    ``nodes``: every inventory node's use. ``oversized``: (workload, node name or None,
    capacity) for pods larger than their pinned node (node given) or than every node (None:
    the capacity is the largest node's); such pods never schedule, so they take nothing.
    ``unknown_node``: workloads pinned to a node the inventory does not list (not counted).
    """

    nodes: dict[str, NodeUse]
    oversized: list[tuple[Workload, Optional[str], float]]
    unknown_node: list[Workload]


def allocate(
    all_workloads: Iterable[Workload],
    capacity: Mapping[str, float],
    per_pod: Callable[[Workload], float],
    count_surge: bool = True,
    reserved: Optional[Mapping[str, Iterable[tuple[str, float, str]]]] = None,
) -> Allocation:
    """Place the running pods of ``all_workloads`` on the nodes of ``capacity``.

    ``capacity``: node name -> what it offers (cards, or MiB). ``per_pod``: what one pod of
    a workload takes (0: not counted). A running workload places ``replicas`` pods plus,
    when ``count_surge``, ``max_surge`` RollingUpdate pods. ``reserved``: node name ->
    (holder, amount, reason) held outside the stack (inventory ``Node.reserved``), counted first.

    Pinned pods (``Workload.node``) count on their node. Unpinned pods are packed worst-fit
    decreasing: largest pods first (regular pods before surge pods, then by name), each onto
    the node with the most free capacity (ties: node name), which is how the scheduler's
    default least-allocated scoring spreads pods. A pod that fits on no node is counted on
    the node with the most free capacity as ``overflow``, so that node's total shows the
    shortfall. Parked workloads (replicas 0) take nothing. O(w log w + n log n).
    """
    nodes = {name: NodeUse(name, float(cap)) for name, cap in capacity.items()}
    largest = max(capacity.values(), default=0.0)
    oversized: list[tuple[Workload, Optional[str], float]] = []
    unknown: list[Workload] = []
    for node, held in (reserved or {}).items():
        if node in nodes:
            for holder, value, reason in held:
                nodes[node].shares.append(Share(name=holder, per_pod=value, pods=1, reserved_reason=reason))
    unpinned: list[tuple[float, bool, str, str, int, Workload]] = []
    for w in all_workloads:
        size = per_pod(w)
        if not w.running or size <= 0:
            continue
        surge = w.max_surge if count_surge else 0
        pinned = w.node
        if pinned is not None:
            if pinned not in nodes:
                unknown.append(w)
            elif size > nodes[pinned].capacity:
                oversized.append((w, pinned, nodes[pinned].capacity))
            else:
                nodes[pinned].shares.append(Share(w.name, size, w.replicas, surge, workload=w))
            continue
        if size > largest:
            oversized.append((w, None, largest))
            continue
        unpinned.append((-size, False, w.name, w.urn, w.replicas, w))
        if surge:
            unpinned.append((-size, True, w.name, w.urn, surge, w))
    if unpinned:
        _pack(sorted(unpinned, key=lambda t: t[:4]), nodes)
    return Allocation(nodes, oversized, unknown)


def report_allocation(
    args: Any,
    report_violation: Callable[..., None],
    *,
    policy_name: str,
    config_properties: Mapping[str, Mapping[str, Any]],
    asking: Iterable[Workload],
    capacity_of: Callable[[Any], float],
    per_pod: Callable[[Workload], float],
    reserved_of: Callable[[ClusterInventory], Optional[Mapping[str, Iterable[tuple[str, float, str]]]]],
    unknown_node_message: Callable[[Workload, str], Optional[str]],
    oversized_message: Callable[[Workload, Optional[str], float], str],
    node_message: Callable[[NodeUse], str],
) -> None:
    """The shared tail of the allocation policies (gpu-card-allocation, node-memory-allocation).

    Reads the inventory (one violation and stop when it is missing or invalid) and the
    ``countSurge`` parameter, places ``asking`` with :func:`allocate` (``capacity_of(node)``: what an
    inventory node offers; ``reserved_of(inventory)``: what is held outside the stack), then
    reports, in this order: each workload pinned to a node the inventory does not list
    (``unknown_node_message(w, known node names)``; None: not reported by this policy), each
    pod larger than its node or every node (``oversized_message(w, node, capacity)``), and each
    over-allocated node in name order (``node_message(use)``, without a URN).
    """
    inventory = read_inventory(report_violation, policy_name)
    if inventory is None:
        return
    count_surge = bool(config_value(args, config_properties, "countSurge"))
    alloc = allocate(
        asking,
        {n.name: capacity_of(n) for n in inventory.nodes},
        per_pod,
        count_surge=count_surge,
        reserved=reserved_of(inventory),
    )
    known = ", ".join(n.name for n in inventory.nodes)
    for w in alloc.unknown_node:
        text = unknown_node_message(w, known)
        if text:
            report_violation(text, w.urn)
    for w, node, cap in alloc.oversized:
        report_violation(oversized_message(w, node, cap), w.urn)
    for name in sorted(alloc.nodes):
        use = alloc.nodes[name]
        if use.used > use.capacity:
            report_violation(node_message(use))


def _pack(items: list[tuple[float, bool, str, str, int, Workload]], nodes: dict[str, NodeUse]) -> None:
    """Worst-fit placement of sorted unpinned pod groups (see :func:`allocate`)."""
    heap = [(-(n.capacity - n.used), name) for name, n in nodes.items()]
    heapq.heapify(heap)
    placed: dict[tuple[str, str], Share] = {}

    def share(node: str, w: Workload, size: float, overflow: bool) -> Share:
        key = (node, w.urn or str(id(w)))
        s = placed.get(key)
        if s is None:
            s = Share(w.name, size, unpinned=True, workload=w)
            placed[key] = s
            nodes[node].shares.append(s)
        s.overflow = s.overflow or overflow
        return s

    for neg_size, is_surge, _, _, count, w in items:
        size = -neg_size
        while count > 0:
            neg_free, node = heapq.heappop(heap)
            free = -neg_free
            if free < size:
                n, overflow = count, True
            else:
                next_free = -heap[0][0] if heap else float("-inf")
                fits = int(free // size)
                # Place pods here until its free capacity drops below the next node's.
                keep_top = int((free - next_free) // size) + 1 if heap else fits
                n, overflow = max(1, min(count, fits, keep_top)), False
            s = share(node, w, size, overflow)
            if is_surge:
                s.surge_pods += n
            else:
                s.pods += n
            count -= n
            heapq.heappush(heap, (-(free - n * size), node))
