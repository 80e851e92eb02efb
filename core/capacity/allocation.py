"""Per-node allocation of cards (or memory): the one function the policies, the preview summary
and the stack output call.

:func:`allocate` places what each workload asks (:class:`Demand`, plain values) on the nodes:
pinned pods on their node, unpinned pods packed worst-fit decreasing, RollingUpdate surge
pods on top, and what the inventory reserves outside the stack counted first. Its result
(:class:`Allocation`: one :class:`NodeUse` of :class:`Share` per node) is what
``gpu-card-allocation`` and ``node-memory-allocation`` judge, what the preview prints as
``cards per node`` and what the stack output ``cards`` reports, so the three count alike by
construction (``tests/core/rulebook/test_dtype_quantity_capacity_both_sides.py``).

Plain Python; nothing here reads manifests or the stack file: each caller turns its own view
into :class:`Demand` values (the pack from manifests, the program from the stack file).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.capacity.inventory import ClusterInventory


@dataclass(frozen=True)
class Demand:
    """What one workload asks of the nodes.

    ``per_pod``: cards (or MiB) one pod takes; ``pods``: running pods (0 when parked or scaled
    to zero: it then takes nothing, and is listed in :attr:`NodeUse.idle` of its node);
    ``surge_pods``: the extra pods a RollingUpdate starts; ``node``: the node it is pinned to
    (None: unpinned, packed); ``key``: unique id (the URN; default the name); ``parked``: the
    declared parked reason, if any; ``ref``: the caller's object, handed back in
    :attr:`Share.ref` and the lists of :class:`Allocation`; ``candidates``: for an unpinned
    demand, the nodes its nodeSelector's labels allow (None: every node).
    """

    name: str
    per_pod: float
    pods: int = 1
    surge_pods: int = 0
    node: str | None = None
    key: str = ""
    parked: str | None = None
    ref: Any = None
    candidates: tuple[str, ...] | None = None

    @property
    def id(self) -> str:
        return self.key or self.name


#: Kubernetes' defaults for an omitted ``rollingUpdate`` (apps/v1 Deployment defaulting; KServe
#: applies the same to a RawDeployment predictor without ``deploymentStrategy``).
DEFAULT_MAX_SURGE = "25%"
DEFAULT_MAX_UNAVAILABLE = "25%"


@dataclass(frozen=True)
class Rollout:
    """How a Deployment (or a KServe RawDeployment predictor) replaces its pods.

    ``strategy``: ``Recreate`` or ``RollingUpdate`` (a StatefulSet's ``RollingUpdate`` /
    ``OnDelete`` replace pods in place). ``surge_pods`` / ``unavailable_pods``: ``maxSurge`` /
    ``maxUnavailable`` resolved against the replicas as the deployment controller resolves them
    (:func:`rollout`). ``valid``: False when a value is neither a whole number nor a
    percentage (the API server refuses it; then both are 0).
    """

    strategy: str
    surge_pods: int = 0
    unavailable_pods: int = 0
    valid: bool = True

    @property
    def extra_pods(self) -> int:
        """Surge pods that need room beside every running pod: the surge when no old pod may go
        first (``unavailable_pods`` 0), else 0. With ``maxUnavailable`` of one pod or more the
        controller removes an old pod, its cards free up, and the rollout completes on a full
        node; with 0 the surge pod needs spare cards or waits Pending forever (seeds 001, 003)."""
        return self.surge_pods if self.unavailable_pods == 0 else 0


def _scaled(value: Any, replicas: int, round_up: bool) -> int | None:
    """An IntOrString of a rollout as pods: a whole number is itself; ``"25%"`` is 25% of
    ``replicas``, rounded up (surge) or down (unavailability), as Kubernetes'
    ``intstr.GetScaledValueFromIntOrPercent``. None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().endswith("%"):
        text = value.strip()[:-1]
        if not text.isdigit():
            return None
        scaled = int(text) * replicas
        return -(-scaled // 100) if round_up else scaled // 100
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() and number >= 0 else None


def rollout(strategy: str, max_surge: Any, max_unavailable: Any, replicas: int) -> Rollout:
    """The :class:`Rollout` of a strategy as written (``None`` values: the 25% defaults).

    ``surge_pods`` = ceil(pct x replicas) for a percentage, ``unavailable_pods`` =
    floor(pct x replicas); when both resolve to 0 the controller lets one pod be unavailable
    (``ResolveFenceposts`` in kubernetes pkg/controller/deployment/util; an explicit 0 / 0 is
    refused by the API server before that, which :func:`both_zero` tells). ``Recreate`` and
    anything but ``RollingUpdate`` surge nothing. Examples: 25% / 25% of 1 replica -> 1 / 0
    (a surge pod beside the old one); of 4 -> 1 / 1 (an old pod goes first); ``maxSurge 1,
    maxUnavailable 1`` -> 1 / 1.
    """
    if strategy != "RollingUpdate":
        return Rollout(strategy)
    surge = _scaled(DEFAULT_MAX_SURGE if max_surge is None else max_surge, replicas, True)
    unavailable = _scaled(DEFAULT_MAX_UNAVAILABLE if max_unavailable is None else max_unavailable, replicas, False)
    if surge is None or unavailable is None:
        return Rollout(strategy, valid=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return Rollout(strategy, surge, unavailable)


def both_zero(max_surge: Any, max_unavailable: Any) -> bool:
    """True when ``maxSurge`` and ``maxUnavailable`` are both written as zero (``0`` or ``0%``):
    the API server refuses such a Deployment ("may not be 0 when maxSurge is 0")."""
    return _scaled(max_surge, 100, True) == 0 and _scaled(max_unavailable, 100, True) == 0


def amount(value: float) -> str:
    """A card count or MiB figure as messages show it: ``6``, ``63,495``, ``476.8``."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


@dataclass
class Share:
    """What one workload (or a reservation) takes of one node.

    ``per_pod`` is in the allocation's unit (cards, or MiB); ``pods`` are running pods,
    ``surge_pods`` the extra pods a RollingUpdate starts. ``unpinned``: placed by packing,
    not by a nodeSelector / nodeName. ``overflow``: an unpinned pod that fit on no node,
    counted on the node with the most free capacity. ``reserved_reason``: a reservation of
    the inventory (not a workload of the stack), with its reason (may be ``""``).
    """

    name: str
    per_pod: float
    pods: int = 0
    surge_pods: int = 0
    unpinned: bool = False
    overflow: bool = False
    reserved_reason: str | None = None
    ref: Any = None

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
    """One node's capacity, the shares counted on it, and the idle (parked or zero-replica)
    workloads pinned to it, which take nothing. For a node pool that autoscales, ``nodes`` is
    its most nodes and ``capacity`` their total (``per_node`` x ``nodes``)."""

    node: str
    capacity: float
    shares: list[Share] = field(default_factory=list)
    idle: list[Demand] = field(default_factory=list)
    nodes: int = 1

    @property
    def per_node(self) -> float:
        """What one node of the entry offers (the whole capacity for a fixed node)."""
        return self.capacity / self.nodes

    def capacity_text(self, unit: str) -> str:
        """``4 cards``, or for a pool ``4 cards (at most 4 nodes of 1)``."""
        text = f"{amount(self.capacity)} {unit}"
        return text + (f" (at most {self.nodes} nodes of {amount(self.per_node)})" if self.nodes > 1 else "")

    @property
    def used(self) -> float:
        return sum(s.total for s in self.shares)

    @property
    def surge(self) -> float:
        return sum(s.surge for s in self.shares)

    @property
    def surge_is_the_cause(self) -> bool:
        """The node is over only because of RollingUpdate surge: without it the rest fits."""
        return bool(self.surge and self.used - self.surge <= self.capacity)

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

    def share_of(self, key: str) -> Share | None:
        """The share of the workload whose :attr:`Demand.id` is ``key`` here, or None."""
        for s in self.shares:
            if s.ref is not None and getattr(s.ref, "id", None) == key:
                return s
        return None


@dataclass
class Allocation:
    """The result of :func:`allocate`.

    ``nodes``: every inventory node's use, in inventory order. ``oversized``: (demand, node
    name or None, capacity) for pods larger than their pinned node (node given) or than every
    node (None: the capacity is the largest node's); such pods never schedule, so they take
    nothing. ``unknown_node``: demands pinned to a node the inventory does not list (not counted).
    """

    nodes: dict[str, NodeUse]
    oversized: list[tuple[Demand, str | None, float]]
    unknown_node: list[Demand]


def allocate(
    demands: Iterable[Demand],
    capacity: Mapping[str, float],
    count_surge: bool = True,
    reserved: Mapping[str, Iterable[tuple[str, float, str]]] | None = None,
    pool_nodes: Mapping[str, int] | None = None,
) -> Allocation:
    """Place ``demands`` on the nodes of ``capacity``.

    ``capacity``: node name -> what one node offers (cards, or MiB); ``pool_nodes``: node name ->
    the most nodes of an autoscaled pool (default 1), whose capacity is then that many nodes' (a
    pod still fits one node; pods of several sizes are counted on the pool's total, not packed
    node by node). A demand with pods places
    ``pods`` pods plus, when ``count_surge``, ``surge_pods`` RollingUpdate pods; one with no
    pods, or a ``per_pod`` of 0, takes nothing (listed in its pinned node's ``idle``).
    ``reserved``: node name -> (holder, amount, reason) held outside the stack (inventory
    ``Node.reserved``), counted first.

    Pinned pods count on their node. Unpinned pods are packed worst-fit decreasing: largest
    pods first (regular pods before surge pods, then by name), each onto the node with the
    most free capacity (ties: node name), which is how the scheduler's default
    least-allocated scoring spreads pods; pods whose labels allow only some nodes
    (``Demand.candidates``) are placed first, among those. A pod that fits on no node is counted on the node
    with the most free capacity as ``overflow``, so that node's total shows the shortfall.
    O(d log d + n log n). Source of the rule: gpu-card-allocation (spec "The history as test
    cases", seeds 001 / 003, coder.yaml).
    """
    counts = pool_nodes or {}
    nodes = {name: NodeUse(name, float(cap) * counts.get(name, 1), nodes=counts.get(name, 1))
             for name, cap in capacity.items()}
    largest = max(capacity.values(), default=0.0)
    oversized: list[tuple[Demand, str | None, float]] = []
    unknown: list[Demand] = []
    for node, held in (reserved or {}).items():
        if node in nodes:
            for holder, value, reason in held:
                nodes[node].shares.append(Share(name=holder, per_pod=value, pods=1, reserved_reason=reason))
    unpinned: list[tuple[float, bool, str, str, int, Demand]] = []
    restricted: list[tuple[float, bool, str, str, int, Demand]] = []
    for d in demands:
        size = d.per_pod
        if d.pods <= 0 or size <= 0:
            if d.node in nodes:
                nodes[d.node].idle.append(d)
            continue
        surge = d.surge_pods if count_surge else 0
        if d.node is not None:
            if d.node not in nodes:
                unknown.append(d)
            elif size > nodes[d.node].per_node:
                oversized.append((d, d.node, nodes[d.node].per_node))
            else:
                nodes[d.node].shares.append(Share(d.name, size, d.pods, surge, ref=d))
            continue
        allowed = [n for n in d.candidates if n in nodes] if d.candidates is not None else None
        if allowed is not None and len(allowed) == 1:
            only = nodes[allowed[0]]
            if size > only.per_node:
                oversized.append((d, only.node, only.per_node))
            else:
                only.shares.append(Share(d.name, size, d.pods, surge, unpinned=True, ref=d))
            continue
        fit = largest if allowed is None else max((nodes[n].per_node for n in allowed), default=0.0)
        if size > fit:
            oversized.append((d, None, fit))
            continue
        group = restricted if allowed is not None else unpinned
        group.append((-size, False, d.name, d.id, d.pods, d))
        if surge:
            group.append((-size, True, d.name, d.id, surge, d))
    if restricted:
        _pack_among(sorted(restricted, key=lambda t: t[:4]), nodes)
    if unpinned:
        _pack(sorted(unpinned, key=lambda t: t[:4]), nodes)
    return Allocation(nodes, oversized, unknown)


def reservations(inventory: ClusterInventory) -> dict[str, list[tuple[str, float, str]]]:
    """The cards each inventory node reserves outside the stack: node -> (holder, cards, reason)."""
    return {n.name: [(r.workload, float(r.cards), r.reason) for r in n.reserved] for n in inventory.nodes}


def pool_nodes(inventory: ClusterInventory) -> dict[str, int]:
    """The most nodes of each inventory entry: an autoscaled pool's ``max_nodes``, else 1."""
    return {n.name: n.max_nodes for n in inventory.nodes}


def cards(demands: Iterable[Demand], inventory: ClusterInventory, count_surge: bool = True) -> Allocation:
    """:func:`allocate` of ``demands`` in cards (``nvidia.com/gpu``) on the inventory's nodes
    (a pool counted at its most nodes), with the cards it reserves outside the stack: what
    gpu-card-allocation judges, the preview prints and the stack output reports."""
    return allocate(demands, {n.name: float(n.cards) for n in inventory.nodes}, count_surge, reservations(inventory),
                    pool_nodes(inventory))


def _pack_among(items: Sequence[tuple[float, bool, str, str, int, Demand]], nodes: dict[str, NodeUse]) -> None:
    """Worst-fit placement of sorted pod groups each restricted to its ``Demand.candidates``,
    one pod at a time onto the allowed node with the most free capacity (ties: node name); a pod
    that fits none is counted, as ``overflow``, on the allowed node with the most free capacity."""
    placed: dict[tuple[str, str], Share] = {}
    for neg_size, is_surge, _, _, count, d in items:
        size = -neg_size
        allowed = sorted(n for n in (d.candidates or ()) if n in nodes)
        for _ in range(count):
            node = min(allowed, key=lambda n: (nodes[n].used - nodes[n].capacity, n))
            use = nodes[node]
            s = placed.get((node, d.id))
            if s is None:
                s = placed[(node, d.id)] = Share(d.name, size, unpinned=True, ref=d)
                use.shares.append(s)
            s.overflow = s.overflow or use.capacity - use.used < size
            if is_surge:
                s.surge_pods += 1
            else:
                s.pods += 1


def _pack(items: Sequence[tuple[float, bool, str, str, int, Demand]], nodes: dict[str, NodeUse]) -> None:
    """Worst-fit placement of sorted unpinned pod groups (see :func:`allocate`)."""
    heap = [(-(n.capacity - n.used), name) for name, n in nodes.items()]
    heapq.heapify(heap)
    placed: dict[tuple[str, str], Share] = {}

    def share(node: str, d: Demand, size: float, overflow: bool) -> Share:
        key = (node, d.id)
        s = placed.get(key)
        if s is None:
            s = Share(d.name, size, unpinned=True, ref=d)
            placed[key] = s
            nodes[node].shares.append(s)
        s.overflow = s.overflow or overflow
        return s

    for neg_size, is_surge, _, _, count, d in items:
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
            s = share(node, d, size, overflow)
            if is_surge:
                s.surge_pods += n
            else:
                s.pods += n
            count -= n
            heapq.heappush(heap, (-(free - n * size), node))


def demands(asking: Iterable[Any], per_pod: Callable[[Any], float],
            inventory: ClusterInventory | None = None) -> list[Demand]:
    """Each workload's :class:`Demand` (``asking``: :class:`core.k8s.manifests.Workload` views, typed
    ``Any`` because core.k8s.manifests imports this module; ``per_pod(w)`` of one pod; its replicas,
    RollingUpdate surge pods that need room beside the running ones, pinned node, URN and parked reason), with the workload as ``ref``.
    With ``inventory``, an unpinned workload whose nodeSelector names node labels the inventory records is
    restricted to the nodes (or pools) that carry them (:meth:`core.capacity.inventory.ClusterInventory.placed_on`)."""
    out = []
    for w in asking:
        candidates = None
        if inventory is not None and not w.node and (w.node_selector or w.node_affinity):
            matched, narrowed = inventory.placed_on(None, w.node_selector, w.node_affinity)
            # A selector that matches no node is judged as unpinned (the labels may be recorded incompletely).
            candidates = tuple(n.name for n in matched) if narrowed and matched else None
        out.append(Demand(w.name, per_pod(w), w.replicas, w.surge_needing_room, w.node, w.id, w.parked_reason,
                          ref=w, candidates=candidates))
    return out
