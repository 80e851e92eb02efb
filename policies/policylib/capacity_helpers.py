"""The policy pack's glue to :mod:`core.rulebook.capacity_view` (a model server's capacity read from its
manifest): the stack config it reads (:mod:`policylib.stackconfig`), each server's assessment once
per analyzer request (:func:`servers`), and the capacity policies' messages in the user's terms.
Used by the kv-cache-fits-max-model-len, weights-fit-card, vllm-context-window and
tensor-parallel-divisibility policies and the stack's capacity rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from core.capacity.inventory import ClusterInventory
from core.catalog.modelfacts import Models
from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from core.rulebook import capacity_view
from core.rulebook.capacity_view import ServerCapacity, server_label
from policylib import decode_once, stackconfig, views
from policylib import resource_helpers as rh

#: Where a capacity finding's facts come from.
INVENTORY_SOURCE = "the pack's inventory (the stack config llm-serving:cluster and llm-serving:models)"


def report(sc: ServerCapacity, breach: Breach | None) -> str | None:
    """A capacity policy's message for one server (``breach`` None: no message), in the user's terms."""
    return None if breach is None else terms.message(sc.workload.annotations, breach.finding(server_label(sc)))


def unknown_model(sc: ServerCapacity, checking: str) -> Breach:
    """``cannot check <checking>``: the server's model is not in the stack's models, and how to add it."""
    wrong, _, fix = (sc.problem or "").partition("; ")
    return Breach(f"cannot check {checking}: {wrong}", fix or "add the model to llm-serving:models", INVENTORY_SOURCE)


def servers(w: manifests.Workload, inv: ClusterInventory, models: Models) -> list[ServerCapacity]:
    """:func:`core.rulebook.capacity_view.assess` for every vLLM / candle-vllm container of ``w`` (``[]`` for none), once per
    analyzer request for the same workload view, inventory and models (three resource policies
    and the stack's capacity rows read it; :func:`policylib.decode_once.request_memo`)."""
    memo = decode_once.request_memo()
    if memo is None:
        return capacity_view.all_servers(w, inv, models)
    key = ("servers", id(w), id(inv), id(models))
    hit = memo.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], (w, inv, models), strict=True)):
        return list(hit[1])
    result = capacity_view.all_servers(w, inv, models)
    memo[key] = ((w, inv, models), tuple(result))
    return result


# --- the per-server policies ---------------------------------------------------------------

def validate_servers(
    args,
    report_violation: Callable[..., None],
    policy_name: str,
    checking: str,
    message_fn: Callable[[ServerCapacity, int], str | None],
) -> None:
    """The ``validate`` of a per-server capacity policy (kv-cache-fits-max-model-len,
    weights-fit-card): for each vLLM / candle-vllm container of a workload resource, report
    ``message_fn(server capacity, cards on its node)`` when it is not None. A stack whose
    ``llm-serving:models`` lists no model is not judged (the analyze summary says so); a server
    whose model it does not list gets the "not in the stack's models" violation where the
    inventory holds the house conventions (the user's cluster: every model is listed), and is not
    judged elsewhere. A missing or
    invalid stack config is one violation, ``<Kind> <name>: <policy> cannot check <checking>:
    <error>`` with how to fix it."""
    w = views.of(args)
    if w is None or not w.servers or (not w.is_gpu and w.other_accelerator):
        return  # another vendor's accelerator: no card of the inventory to judge it on
    try:
        inv, models = stackconfig.inventory(), stackconfig.models()
    except stackconfig.StackConfigError as err:
        report_violation(terms.message(w.annotations, rh.config_unreadable(
            f"{w.kind} {w.name}", err, f"check {checking}", who=policy_name)), args.urn)
        return
    if not models.entries:
        return  # the stack describes no model: not judged (policylib.coverage says so)
    for sc in servers(w, inv, models):
        if sc.facts is None and not inv.house_conventions:
            continue  # a model the stack does not list, on someone else's cluster: not judged (coverage)
        node = inv.node(sc.node) if sc.node else None
        text = message_fn(sc, node.cards if node else 0)
        if text:
            report_violation(text, args.urn)


# --- the preview summary ------------------------------------------------------------------

def capacity_rows(stack_view: manifests.Stack, inventory: ClusterInventory, models: Models) -> list[capacity_view.Row]:
    """:func:`core.rulebook.capacity_view.capacity_rows` with this request's memoised :func:`servers`."""
    return capacity_view.capacity_rows(stack_view, inventory, models, servers)


def rows_from_resources(resources: Iterable[object], inventory: ClusterInventory, models: Models) -> list[capacity_view.Row]:
    """:func:`capacity_rows` of resources with ``resource_type``, ``props`` and ``urn``."""
    return capacity_rows(views.stack_view(resources), inventory, models)
