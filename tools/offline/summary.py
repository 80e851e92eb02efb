"""The preview summary: what a reviewer reads in seconds. Plain text, aligned columns.

Five parts:

* **objects**: each Kubernetes object with the ComponentResource that made it (its
  ``facts.COMPONENT_ANNOTATION``, else the parent component's ``<Class>/<name>`` from its URN,
  else ``-`` for an object the program creates outside any component), and ``protect`` when
  the resource is protected (the Services: never deleted and re-created);
* **cards per node** (``nvidia.com/gpu``): ``used / capacity`` and each workload's share, read
  from the rendered objects with the policy pack's own view (``core/k8s/manifests/``)
  and the allocation gpu-card-allocation judges (:func:`core.capacity.allocation.cards`): replicas x
  cards a pod (an InferenceService by its replica bound), plus the surge pod a RollingUpdate
  starts, plus cards the inventory reserves for workloads outside the stack; unpinned pods
  are packed where the policy packs them (``(unpinned)``). A
  parked workload shows ``0 (parked)``. Prod: ``worker-1  4 / 4  candle-vllm 2, clef-candle 1,
  reasoning 1, clef-serve 0 (parked)``;
* **model servers**: per running vLLM / candle-vllm server, TP, weights a card (GiB), KV pool
  (GiB and tokens), max-model-len (tokens) and concurrency at max-model-len, from
  ``core/capacity/estimator.py`` through ``core/rulebook/capacity_view.py`` (the same
  figures the kv-cache and weights policies judge);
* **service URLs**: the stack output ``services`` (each Service's in-cluster URLs);
* **left alone**: the stack output ``left_alone`` (``llm-serving:left_alone``: live objects the
  stack does not manage), one line each in the wording the program logs to ``pulumi preview``
  (:func:`stackfile.objects.left_alone_text`). Prod: ``left alone: InferenceService
  llm-serving/coder, not managed by this stack (Pulumi neither changes nor deletes it): ...``.

The inventory comes from the stack config (``llm-serving:cluster``), validated with
``core.capacity.inventory.ClusterInventory``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.base import facts
from core.base.stackkeys import PREFIX, PROJECT, WORKLOADS_KEY
from core.capacity import allocation, measured
from core.capacity import estimator as capacity
from core.capacity.inventory import CLUSTER_CONFIG_KEY, ClusterInventory
from core.k8s import manifests
from core.rulebook import capacity_view
from stackfile.objects import left_alone_text
from tools.offline import treediff
from tools.offline.manifests import Resource


def table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None, indent: str = "  ") -> list[str]:
    """Rows as lines with left-aligned columns (the last column is not padded)."""
    all_rows = [list(header)] + [list(r) for r in rows] if header else [list(r) for r in rows]
    if not all_rows:
        return []
    widths = [max(len(r[i]) for r in all_rows if i < len(r)) for i in range(max(len(r) for r in all_rows))]
    lines = []
    for r in all_rows:
        cells = [c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


# --- objects and their components ------------------------------------------------------------

def component_of(resource: Resource) -> str:
    """``<Class>/<name>`` of the ComponentResource that made ``resource``: its component
    annotation, else its parent's URN (``...$llm-serving:index:CandleDeployment::candle-vllm`` ->
    ``CandleDeployment/candle-vllm``), else ``-`` (a child of the root Stack)."""
    meta = resource.props.get("metadata") if isinstance(resource.props, dict) else None
    annotations = (meta or {}).get("annotations") or {}
    if annotations.get(facts.COMPONENT_ANNOTATION):
        return str(annotations[facts.COMPONENT_ANNOTATION])
    parts = resource.parent.split("::", 3)
    if len(parts) < 4:
        return "-"
    parent_type, name = parts[2].split("$")[-1], parts[3]
    if parent_type == "pulumi:pulumi:Stack":
        return "-"
    return f"{parent_type.rsplit(':', 1)[-1]}/{name}"


def k8s_objects(resources: Iterable[Resource]) -> list[Resource]:
    """The resources that are Kubernetes objects (custom, kubernetes provider, apiVersion/kind)."""
    return [
        r for r in resources
        if r.custom and r.type.startswith("kubernetes:") and "apiVersion" in r.props and "kind" in r.props
    ]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def counts_line(resources: Sequence[Resource]) -> str:
    """What the counts mean: the objects written as manifests, and every resource the program
    registers (and the policy pack judges): those objects, the components that made them, the
    stack itself and any provider. Prod: ``8 objects are written as manifests; the policy pack
    judges all 17 resources the program registers: 8 objects, 8 components, 1 stack``."""
    objs = len(k8s_objects(resources))
    stacks = sum(1 for r in resources if r.type == "pulumi:pulumi:Stack")
    providers = sum(1 for r in resources if r.type.startswith("pulumi:providers:"))
    components = sum(1 for r in resources if not r.custom and r.type != "pulumi:pulumi:Stack")
    other = len(resources) - objs - stacks - providers - components
    parts = [_plural(objs, "object"), _plural(components, "component"), _plural(stacks, "stack")]
    parts += [_plural(providers, "provider")] if providers else []
    parts += [_plural(other, "other resource")] if other else []
    return (f"  {_plural(objs, 'object')} {'is' if objs == 1 else 'are'} written as manifests; the policy pack judges "
            f"all {len(resources)} resources the program registers: {', '.join(parts)}")


def objects_section(resources: Sequence[Resource]) -> list[str]:  # noqa: D103
    objs = k8s_objects(resources)
    rows = sorted((component_of(r), treediff.title(r.props), "protect" if r.protect else "") for r in objs)
    components = {c for c, _, _ in rows if c != "-"}
    head = f"objects: {len(objs)} from {len(components)} component{'s' if len(components) != 1 else ''}"
    return [head, *table(rows, header=("component", "object", "options")), counts_line(resources)]


# --- cards per node ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Held:
    """How the summary shows one share of a node (:class:`core.capacity.allocation.Share`, or an idle
    :class:`core.capacity.allocation.Demand`): ``cards`` held by running pods, ``surge`` more during a
    RollingUpdate, and a note (``parked``, ``unpinned``, ``reserved: <reason>`` ...)."""

    name: str
    cards: int
    note: str = ""
    surge: int = 0

    @property
    def total(self) -> int:
        return self.cards + self.surge

    def text(self) -> str:
        surge = f" + {self.surge} surge" if self.surge else ""
        return f"{self.name} {self.cards}{surge}{f' ({self.note})' if self.note else ''}"


@dataclass(frozen=True)
class NodeCards:
    """Cards on one node: ``used`` of ``capacity`` and who holds them."""

    node: str
    capacity: int
    shares: tuple[Held, ...]

    @property
    def used(self) -> int:
        return sum(s.total for s in self.shares)

    def line(self) -> list[str]:
        over = f"  OVER by {self.used - self.capacity}" if self.used > self.capacity else ""
        holders = ", ".join(s.text() for s in self.shares) or "-"
        return [self.node, f"{self.used} / {self.capacity}{over}", holders]


def _held(share: allocation.Share) -> Held:
    if share.reserved_reason is not None:
        return Held(share.name, int(share.base), f"reserved{': ' + share.reserved_reason if share.reserved_reason else ''}")
    return Held(share.name, int(share.base), "unpinned" if share.unpinned else "", int(share.surge))


def _idle(d: allocation.Demand) -> Held:
    return Held(d.name, 0, "parked" if d.parked is not None else "0 replicas")


def view_of(resources: Iterable[Resource]) -> manifests.Stack:
    """The policy pack's view (workloads, Services, NetworkPolicies) of the Kubernetes objects."""
    return manifests.stack_view(View(r.type, r.props, r.urn) for r in k8s_objects(resources))


def card_allocation(view: manifests.Stack, inventory: ClusterInventory) -> allocation.Allocation:
    """The cards of the GPU workloads of ``view`` per node, by :func:`core.capacity.allocation.cards`
    (the allocation gpu-card-allocation judges and the stack output reports), surge counted."""
    gpu = [w for w in view.workloads if w.is_gpu]
    return allocation.cards(allocation.demands(gpu, lambda w: float(w.cards_per_pod), inventory), inventory)


def card_rows(resources: Iterable[Resource], inventory: ClusterInventory,
              view: manifests.Stack | None = None) -> tuple[list[NodeCards], list[Held]]:
    """(cards per inventory node, shares placed on no inventory node: pinned to a node the
    inventory lacks, or one pod larger than its node or every node). ``view``: :func:`view_of`
    ``resources``, when the caller has it already. Each node lists its shares largest first,
    then its parked / zero-replica workloads, then the cards it reserves outside the stack."""
    alloc = card_allocation(view or view_of(resources), inventory)
    rows = []
    for n in inventory.nodes:
        use = alloc.nodes[n.name]
        shares = [_held(s) for s in use.ordered() if s.reserved_reason is None]
        idle = [_idle(d) for d in sorted(use.idle, key=lambda d: d.name)]
        reserved = [_held(s) for s in use.shares if s.reserved_reason is not None]
        rows.append(NodeCards(n.name, int(use.capacity), tuple(shares + idle + reserved)))
    loose = [Held(d.name, int(d.pods * d.per_pod), f"node {d.node}, not in the inventory", int(d.surge_pods * d.per_pod))
             for d in alloc.unknown_node]
    loose += [Held(d.name, int(d.pods * d.per_pod), f"one pod asks more than {'node ' + node if node else 'any node'} has ({int(cap)})",
                   int(d.surge_pods * d.per_pod))
              for d, node, cap in alloc.oversized]
    return rows, sorted(loose, key=lambda s: (-s.total, s.name))


def cards_section(resources: Sequence[Resource], inventory: ClusterInventory, view: manifests.Stack | None = None) -> list[str]:  # noqa: D103
    rows, loose = card_rows(resources, inventory, view)
    used = sum(r.used for r in rows) + sum(s.total for s in loose)
    capacity = sum(r.capacity for r in rows)
    lines = [f"cards per node (nvidia.com/gpu; replicas x cards a pod, + RollingUpdate surge): {used} / {capacity} in the cluster"]
    lines += table([r.line() for r in rows], header=("node", "used / capacity", "workloads"))
    if loose:
        lines.append("  not placed on an inventory node: " + ", ".join(s.text() for s in loose))
    return lines


def config_value(config: dict[str, Any], key: str) -> Any:
    """The value of ``key`` in a stack config map. The CLI's map (``PULUMI_CONFIG``, a preview's
    ``--json`` prelude) gives an object or list as its JSON text, the stack file as the object:
    JSON text is decoded; a plain string (``llm-serving`` as a namespace) stays as it is."""
    raw = config.get(key)
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def inventory_of(config: dict[str, Any]) -> ClusterInventory | None:
    """The stack's validated inventory, or None when the config has none (or an invalid one)."""
    raw = config_value(config, PREFIX + CLUSTER_CONFIG_KEY)
    try:
        inv = ClusterInventory.model_validate(raw) if raw is not None else None
        workloads = config_value(config, WORKLOADS_KEY)
        return inv.with_workloads_measured(workloads) if inv is not None and isinstance(workloads, dict) else inv
    except ValueError:
        return None


# --- model servers (core/capacity/estimator.py) ---------------------------------------------------

@dataclass(frozen=True)
class View:
    """What the policy helpers read of a resource (pulumi-policy's ``PolicyResource`` shape)."""

    resource_type: str
    props: dict[str, Any]
    urn: str


def _models(config: dict[str, Any], base_dir: Path | None):
    """The stack's models as the policy pack resolves them (:class:`core.catalog.modelfacts.Models`)."""
    from core.catalog.modelfacts import MODELS_CONFIG_KEY, ModelEntry, Models  # noqa: PLC0415

    raw = config_value(config, PREFIX + MODELS_CONFIG_KEY) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{PREFIX}{MODELS_CONFIG_KEY} is not a map of model name -> entry")
    entries = {k: ModelEntry.model_validate(v) for k, v in raw.items()}
    return Models(entries=entries, facts={k: e.resolve(base_dir) for k, e in entries.items()})


def _num(value: float | None, fmt: str, bound: bool = False, approx: bool = False) -> str:
    """``value`` formatted, ``<= `` before it when it is an upper bound, ``~`` when the estimate
    cannot know it to this precision (:data:`UNKNOWN_MARK`), ``-`` when None."""
    if value is None:
        return "-"
    return ("<= " if bound else UNKNOWN_MARK if approx else "") + format(value, fmt)


#: The footnote under the capacity table when a row shows upper bounds (candle-vllm).
UPPER_BOUND_NOTE = (
    "<= upper bound: candle-vllm's memory beside the weights after load is taken from public figures (CUDA "
    f"context {capacity.CANDLE_RUNTIME_GIB} GiB, NCCL over PCIe {capacity.COMM_PCIE_GIB}); more in use is not "
    "modelled: against the user's measured coder-14b pool the estimate is 15.9% high (README \"Capacity\")"
)
#: The mark before a row's KV tokens when the estimate cannot know them to that precision
#: (``Row.unknowns``: a release it does not model, a runtime no public log gives, ...); the row's
#: reasons follow the table, one line a server.
UNKNOWN_MARK = "~"
#: The footnote under the capacity table when a row's model has provisional facts.
PROVISIONAL_NOTE = (
    "(provisional facts): the model's facts are not yet confirmed from the checkpoint's config.json "
    "(llm-serving:models provisional: true); its figures are indicative"
)


def capacity_section(resources: Sequence[Resource], config: dict[str, Any], inventory: ClusterInventory,
                     base_dir: Path | None = None, view: manifests.Stack | None = None) -> list[str]:
    """Per running model server: TP, weights a card (GiB), KV pool (GiB and tokens),
    max-model-len (tokens) and concurrency at max-model-len, from the estimator
    (``core/capacity/estimator.py``) through ``core/rulebook/capacity_view.py``, as the policy pack does,
    so the preview and the kv-cache / weights policies compute the same figures. [] when the
    stack runs no vLLM or candle-vllm server.

    A row whose KV figures are upper bounds (``Row.kv_upper_bound``: candle-vllm) shows its KV
    pool, tokens and concurrency as ``<= N`` (and its max-model-len, when candle-vllm caps it at
    the pool); a row whose model has provisional facts
    (``Row.provisional``) names the model ``<key> (provisional facts)``; a row whose estimate
    cannot know its figures to the token (``Row.unknowns``) shows its KV tokens as ``~N`` and a
    line under the table says why; a footnote under the table explains each mark that appears."""
    rows = capacity_view.capacity_rows(view or view_of(resources), inventory, _models(config, base_dir))
    rows = [r for r in rows if r.replicas > 0]
    if not rows:
        return []
    lines = []
    for r in rows:
        fits = "yes" if r.fits else ("NO" if r.fits is not None else r.problem or "?")
        bound = r.kv_upper_bound
        lines.append([
            r.server, r.engine, f"{r.model} (provisional facts)" if r.provisional else r.model, str(r.cards),
            _num(r.weights_gib_per_card, ".2f"), _num(r.kv_pool_gib, ".2f", bound),
            _num(r.kv_tokens, ",", bound, approx=bool(r.unknowns)),
            _num(r.max_model_len, ",", bound and r.max_model_len == r.kv_tokens), "-" if r.concurrency is None else f"{'<= ' if bound else ''}{r.concurrency:.2f}x",
            fits,
        ])
    header = ("server", "engine", "model", "TP", "weights/card GiB", "KV pool GiB", "KV tokens", "max-model-len",
              "concurrency", "fits")
    notes = [note for flag, note in ((any(r.kv_upper_bound for r in rows), UPPER_BOUND_NOTE),
                                     (any(r.provisional for r in rows), PROVISIONAL_NOTE)) if flag]
    unknown = [f"  {UNKNOWN_MARK} {r.server}: the estimate cannot know: {'; '.join(r.unknowns)}" for r in rows if r.unknowns]
    return ["model servers (per card; estimated by core/capacity/estimator.py)", *table(lines, header=header),
            *(f"  {n}" for n in notes), *unknown, *measured_lines(rows)]


def measured_lines(rows: Sequence[capacity_view.Row]) -> list[str]:
    """One line per running server with a measurement (:mod:`core.capacity.measured`): each measured figure
    beside the estimate's, and, for a disagreement beyond :data:`core.capacity.measured.DISAGREEMENT`, what
    the estimate assumed and the measurement's own note. [] when nothing was measured."""
    out = []
    for r in rows:
        m = r.measured
        if m is None:
            continue
        when = ", ".join(x for x in (m.engine_version, m.date) if x)
        figures = "; ".join(f.text(",.0f" if f.name == "KV tokens" else ".2f") for f in r.comparison)
        out.append(f"  measured {r.server}{f' ({when})' if when else ''}: {figures or 'no figure the estimate gives'}"
                   f" [{m.source}]")
        off = [f.name for f in r.comparison if f.disagrees]
        if off:
            facts = "" if m.facts_confirmed else "; the model's facts are unconfirmed, so the gap may be theirs"
            out.append(f"    {', '.join(off)} differ by more than {measured.DISAGREEMENT:.0%}: the estimate assumed "
                       f"{r.assumed}{facts}; the policies judge the measured KV pool")
        tokens = next((f.measured for f in r.comparison if f.name == "KV tokens"), None)
        if r.engine == "candle-vllm" and tokens is not None and r.max_model_len and tokens < r.max_model_len:
            out.append(f"    candle-vllm clamps the context to the measured pool: {tokens:,.0f} tokens, not "
                       f"{r.max_model_len:,}; a longer request is refused")
        if m.note:
            out.append(f"    {m.note}")
    return out


def parked_services(resources: Iterable[Resource]) -> dict[str, str]:
    """Service name -> the declared parked reason (``facts.PARKED_ANNOTATION``) of each parked Service."""
    out = {}
    for r in k8s_objects(resources):
        meta = r.props.get("metadata") or {}
        reason = (meta.get("annotations") or {}).get(facts.PARKED_ANNOTATION)
        if r.props.get("kind") == "Service" and reason is not None:
            out[str(meta.get("name", ""))] = str(reason)
    return out


def services_section(outputs: dict[str, Any] | None, resources: Sequence[Resource] = ()) -> list[str]:
    """Each Service's in-cluster URLs from the stack output ``services`` ({name: {port: url}});
    a parked Service (no endpoints, on purpose) is marked ``(parked: <reason>)``, since its URLs
    answer nothing."""
    services = (outputs or {}).get("services")
    if not isinstance(services, dict) or not services:
        return []
    parked = parked_services(resources)
    rows = []
    for name in sorted(services):
        urls = services[name]
        if isinstance(urls, dict):
            shown = f"{name} (parked: {parked[name]})" if name in parked else name
            rows.append([shown, "  ".join(str(urls[k]) for k in sorted(urls))])
    return ["service URLs (stack output services)", *table(rows)] if rows else []


def left_alone_section(outputs: dict[str, Any] | None) -> list[str]:
    """One line per item of the stack output ``left_alone`` (``[{kind, namespace, name, why}]``),
    in the program's own wording (:func:`stackfile.objects.left_alone_text`); [] when none."""
    items = (outputs or {}).get("left_alone")
    if not isinstance(items, list):
        return []
    return [left_alone_text(**item) for item in items if isinstance(item, dict)]


# --- the whole summary ------------------------------------------------------------------------

def summary(resources: Sequence[Resource], config: dict[str, Any], stack: str,
            outputs: dict[str, Any] | None = None, base_dir: Path | None = None) -> str:
    """The summary text of one preview (ends with a newline). ``base_dir`` resolves a model's
    ``config_json`` path (the stack file's directory)."""
    sections = [objects_section(resources)]
    inventory = inventory_of(config)
    if inventory is not None:
        view = view_of(resources)
        sections.append(cards_section(resources, inventory, view))
        sections.append(capacity_section(resources, config, inventory, base_dir, view))
    sections.append(services_section(outputs, resources))
    sections.append(left_alone_section(outputs))
    lines = [f"{PROJECT} / {stack}"]
    for section in sections:
        if section:
            lines += section if len(lines) == 1 else ["", *section]
    return "\n".join(lines) + "\n"
