"""A model server's capacity read from its manifest: the card it runs on, its estimate, and the
preview's capacity table.

:mod:`core.capacity.estimator` computes from model and card facts; this module finds those facts for one
container of one workload: the model its ``--model`` / ``--w`` names in the stack's models
(``llm-serving:models``, :class:`core.catalog.modelfacts.Models`), the card of the node it runs on
(``llm-serving:cluster``), and the engine settings its argv gives
(:meth:`core.k8s.manifests.servers.ServerArgs.settings`, read by the engine models of
``core/engines/config.py``). Used by the policy pack (``policies/policylib/capacity_helpers.py``, which
adds the per-request memo and the policies' messages) and by the offline summary
(:func:`capacity_rows`).

Which card: a pod pinned to a node (``nodeName`` or the ``kubernetes.io/hostname``
nodeSelector) uses that node's card; an unpinned pod uses the smallest card (by memory)
among the nodes with at least the pod's cards, so the verdict holds wherever the scheduler
puts it.

Pure functions, no Pulumi program code, no pulumi_kubernetes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from core.capacity import comparison as capacity_measured
from core.capacity import estimator as capacity
from core.capacity.comparison import Figure
from core.capacity.estimator import Estimate
from core.capacity.inventory import CardSpec, ClusterInventory
from core.capacity.measured import Measured
from core.catalog.modelfacts import ModelFacts, Models
from core.engines.config import CandleConfig, ServerSettings, VllmConfig
from core.judging.registry import MANIFEST
from core.k8s import manifests
from core.rulebook import stack_config
from core.rulebook.volta import SAMPLER_ENV as FLASHINFER_SAMPLER_ENV

# --- the card a server runs on ------------------------------------------------------------

def card_for(w: manifests.Workload, inv: ClusterInventory) -> tuple[str | None, CardSpec | None, str | None]:
    """``(node, card, problem)`` for the pods of ``w``.

    Pinned: the pinned node and its card. Unpinned: the node with the smallest card
    (memory_mib, then name) among those with at least the pod's cards, and among the nodes
    (or pools) its nodeSelector's labels pick (:meth:`ClusterInventory.placed_on`); ``node`` is that
    node's name. ``problem`` (and no card) when the pinned node is not in the inventory, has
    no card spec, or no node has enough cards.
    """
    cards = max(w.cards_per_pod, 1)
    if w.node:
        node = inv.node(w.node)
        if node is None:
            return w.node, None, f"node {w.node} is not in the stack's inventory (llm-serving:cluster)"
        if node.card is None:
            return node.name, None, f"node {node.name} has no card spec in the inventory"
        return node.name, node.card, None
    picked, narrowed = inv.placed_on(None, w.node_selector, w.node_affinity)
    fitting = [n for n in (picked if narrowed and picked else inv.nodes) if n.card is not None and n.cards >= cards]
    if not fitting:
        return None, None, f"no node in the inventory has {cards} card(s)"
    best = min(fitting, key=lambda n: (n.card.memory_mib, n.name))  # type: ignore[union-attr]
    return best.name, best.card, None


# --- one server ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ServerCapacity:
    """What is known of one model server's capacity.

    ``estimate`` is None when it cannot be computed; ``problem`` then says why (model not in
    the stack's models, no card). ``explicit_max_model_len`` is False for a vLLM server
    without ``--max-model-len`` (its estimate then uses the model's max_position_embeddings).
    """

    workload: manifests.Workload
    container: manifests.Container
    server: manifests.ServerArgs
    model_arg: str | None
    model_key: str | None
    facts: ModelFacts | None
    node: str | None
    card: CardSpec | None
    explicit_max_model_len: bool
    estimate: Estimate | None
    problem: str | None
    #: The typed settings its argv gives (:meth:`core.k8s.manifests.servers.ServerArgs.settings`), what was estimated.
    settings: ServerSettings
    #: What was measured on the cluster for this server (the inventory's ``measured``), if anything.
    measured: Measured | None = None
    #: The estimate before the measurement replaced its KV pool (:func:`core.capacity.comparison.judged`);
    #: ``estimate`` is what the rules judge.
    estimated: Estimate | None = None

    @property
    def tp(self) -> int:
        """Tensor parallel size from the argv (vLLM ``--tensor-parallel-size``, candle-vllm ``--d``)."""
        return self.server.tensor_parallel


def server_label(sc: ServerCapacity) -> str:
    """``"InferenceService coder"`` / ``"Deployment candle-vllm"`` as the capacity policies name a
    server (with the container when a pod runs several servers)."""
    w = sc.workload
    extra = f", container {sc.container.name}" if len(w.servers) > 1 else ""
    return f"{w.kind} {w.name}{extra}"


def unknown_model_message(model_arg: str | None, engine: str) -> str:
    """Why a server's model has no facts, and how to add it (``<wrong>; <fix>``, in manifest
    terms): :func:`core.rulebook.stack_config.model_listed`'s wording."""
    flag = VllmConfig.FLAGS["model"] if engine == "vllm" else CandleConfig.FLAGS["weights_path"]
    key = "hf_id" if engine == "vllm" and model_arg and not model_arg.startswith("/") else "weights_path"
    breach = stack_config.model_listed(model_arg, (), flag, key)
    assert breach is not None
    wrong, fix = breach.render(MANIFEST)
    return f"{wrong}; {fix}" if model_arg else wrong  # no model named: its readers add the fix


def vllm_estimate(
    s: manifests.ServerArgs, facts: ModelFacts, card: CardSpec, *, tp: int | None = None,
    image: str | None = None,
) -> tuple[Estimate, bool]:
    """``(estimate, explicit)`` for a vLLM argv on ``card``; ``tp`` overrides
    ``--tensor-parallel-size`` (to ask "would TP=2 fit?"); ``image`` (the container's) names the
    vLLM release whose profile applies (None: the release the estimator assumes). ``explicit``
    is False when the argv has no ``--max-model-len`` (the model's max_position_embeddings is
    used). Raises ValueError for arguments the estimator refuses."""
    settings = s.settings(image)
    if tp:
        settings = replace(settings, tp=tp)
    est, problem = estimate_once(settings, facts, card)
    if est is None:
        raise ValueError(problem)
    return est, settings.max_model_len is not None


def estimate_once(settings: ServerSettings, facts: ModelFacts, card: CardSpec) -> tuple[Estimate | None, str | None]:
    """``(estimate, problem)`` of :func:`core.capacity.estimator.estimate`, ``problem`` the estimator's
    refusal (a utilization above 1, a fraction of 0). The estimator caches on the typed settings,
    so each server is estimated once however many policies ask (the pack is benchmarked at 10,000
    resources)."""
    try:
        return capacity.estimate(facts, card, settings), None
    except ValueError as err:
        return None, str(err)


def assess(
    w: manifests.Workload,
    c: manifests.Container,
    s: manifests.ServerArgs,
    inv: ClusterInventory,
    models: Models,
) -> ServerCapacity:
    """The capacity of the server ``s`` that container ``c`` of workload ``w`` runs.

    Never raises for bad input: an argument the estimator refuses (a utilization above 1,
    a fraction of 0) becomes the ``problem``.
    """
    found = models.find(s.model_arg)
    node, card, problem = card_for(w, inv)
    key, facts = found if found else (None, None)
    settings = replace(s.settings(c.image or None), flashinfer_sampler=c.env.get(FLASHINFER_SAMPLER_ENV))
    explicit = s.engine != "vllm" or s.get(VllmConfig.FLAGS["max_model_len"]) is not None
    est = None
    if found is None:
        problem = unknown_model_message(s.model_arg, s.engine)
    elif card is not None:
        est, problem = estimate_once(settings, facts, card)  # type: ignore[arg-type]
        if est is not None and s.engine == "vllm":
            explicit = settings.max_model_len is not None
    seen = inv.measured.get(w.name)
    return ServerCapacity(w, c, s, s.model_arg, key, facts, node, card, explicit,
                          capacity_measured.judged(est, seen) if est is not None else None, problem, settings, seen, est)


def server_estimate(
    workload: manifests.Workload,
    container: manifests.Container,
    server_args: manifests.ServerArgs,
    inventory: ClusterInventory,
    models: Models,
) -> Estimate | None:
    """The :class:`~core.capacity.estimator.Estimate` of one server, or None when its model is not
    in the stack's models or no card is known (:func:`assess` says why)."""
    return assess(workload, container, server_args, inventory, models).estimate


def all_servers(w: manifests.Workload, inv: ClusterInventory, models: Models) -> list[ServerCapacity]:
    """:func:`assess` for every vLLM / candle-vllm container of ``w`` (``[]`` for none)."""
    return [assess(w, c, s, inv, models) for c, s in w.servers]


# --- the preview summary ------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One line of the preview's capacity table (numbers None when ``problem`` is set).

    ``cards`` is TP x PP (the cards one replica uses); GiB and tokens are per card, except
    ``kv_tokens``, the pool in tokens, and ``concurrency``, requests of ``max_model_len``
    tokens that fit at once. ``provisional``: the model's entry says its facts are not yet
    confirmed (``ModelEntry.provisional``), so every figure is indicative. ``kv_upper_bound``:
    the KV pool, its tokens and the concurrency are upper bounds (candle-vllm: the memory the
    process holds beside the weights after load is not modelled; see the estimate's ``notes``).
    ``unknowns``: what the estimate cannot know for this server (:attr:`core.capacity.estimator.Estimate.unknowns`:
    a release it does not model, a runtime no log gives...), so its KV figures are indicative.
    """

    server: str
    container: str
    engine: str
    model: str
    node: str
    card: str
    replicas: int
    cards: int
    weights_gib_per_card: float | None
    kv_pool_gib: float | None
    kv_tokens: int | None
    max_model_len: int | None
    concurrency: float | None
    fits: bool | None
    problem: str | None = None
    provisional: bool = False
    kv_upper_bound: bool = False
    notes: tuple[str, ...] = ()
    #: What was measured (:class:`core.capacity.measured.Measured`) and each figure beside the estimate's.
    measured: Measured | None = None
    comparison: tuple[Figure, ...] = ()
    #: What the estimate assumed (:func:`core.capacity.comparison.assumptions`), for a disagreement's report.
    assumed: str = ""
    unknowns: tuple[str, ...] = ()


def _row(sc: ServerCapacity, models: Models) -> Row:
    e = sc.estimated or sc.estimate
    return Row(
        server=sc.workload.name,
        container=sc.container.name,
        engine=sc.server.engine,
        model=sc.model_key or (sc.model_arg or "?"),
        node=sc.node or "",
        card=sc.card.product if sc.card else "",
        replicas=sc.workload.replicas,
        cards=sc.server.tensor_parallel * sc.server.pipeline_parallel,
        weights_gib_per_card=e.weights_gib_per_card if e else None,
        kv_pool_gib=e.kv_pool_gib if e else None,
        kv_tokens=e.kv_tokens if e else None,
        max_model_len=e.max_model_len if e else None,
        concurrency=e.concurrency if e else None,
        fits=(sc.estimate.fits_weights and sc.estimate.fits_kv) if sc.estimate else None,
        problem=sc.problem,
        provisional=bool(sc.model_key and models.entries[sc.model_key].provisional),
        kv_upper_bound=e is not None and e.engine == "candle-vllm",
        notes=e.notes if e else (),
        measured=sc.measured,
        comparison=tuple(capacity_measured.compare(sc.measured, e)) if sc.measured and e else (),
        assumed=capacity_measured.assumptions(e) if e else "",
        unknowns=e.unknowns if e else (),
    )


def capacity_rows(
    stack_view: manifests.Stack,
    inventory: ClusterInventory,
    models: Models,
    servers: Callable[[manifests.Workload, ClusterInventory, Models], list[ServerCapacity]] | None = None,
) -> list[Row]:
    """One :class:`Row` per model server of the stack, in workload then container order.

    Includes parked servers (``replicas`` 0) so a reviewer sees what unparking would give;
    filter on ``replicas`` to show only running ones. ``servers`` lists a workload's servers
    (default :func:`all_servers`; the policy pack passes its per-request memo).
    """
    each = servers or all_servers
    rows: list[Row] = []
    for w in stack_view.workloads:
        rows.extend(_row(sc, models) for sc in each(w, inventory, models))
    return rows
