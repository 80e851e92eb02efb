"""What an update does while it runs: cards per node at its peak, and the plans to refuse.

The end state of an update may fit its nodes while the update itself does not: Pulumi runs
creates and updates first and deletes what the program no longer registers at the END of the
update, and the kubernetes provider replaces an object create-first unless it keeps its name and
namespace (then it deletes first: ``provider/pkg/provider/provider.go`` Diff, at f47bc2d6f199) or
the resource sets ``deleteBeforeReplace``. Renaming ``clef-candle`` on a worker-1 at 4 of 4 cards
therefore creates the new Deployment while the old pod holds its card: the new pod waits Pending,
the provider's await fails, and both objects are left (``tests/real/test_real_transitions.py``
shows it on the cluster).

:func:`peak` lists the objects alive at the update's peak (every object of the new rendering,
every removed object, and the old side of each create-first replacement) and places their pods
with :func:`core.capacity.allocation.cards` through the same workload view as the preview's card table
(:func:`tools.offline.summary.card_rows`): no second counter. :func:`refusals` turns a node over its
cards at the peak, and a replacement of a protected Service, into findings in the one message
form (:class:`core.judging.problems.Finding`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.capacity.inventory import ClusterInventory
from core.judging import terms
from core.judging.problems import Finding
from core.k8s import manifests
from core.k8s.manifests import transition_cost
from tools.offline import render, summary, treediff
from tools.offline.manifests import Resource

#: How an old object still alive at the peak is named in the table.
OLD = "{name} (old, deleted at the end of the update)"
SOURCE = "seeds 000 and 001 (on a full node a new pod waits Pending for a card the old pod holds); pulumi-kubernetes Diff's deleteBeforeReplace rule"


@dataclass(frozen=True)
class Peak:
    """The cards per node at the update's peak: ``rows`` (one per inventory node, as the
    preview's card table) and ``old`` (render path -> object of each old object still alive then:
    removed objects and the old side of create-first replacements)."""

    rows: list[summary.NodeCards]
    old: dict[str, dict[str, Any]]

    def over(self) -> list[summary.NodeCards]:
        return [r for r in self.rows if r.used > r.capacity]

    def render(self) -> list[str]:
        lines = ["cards per node during the update (old and new objects alive at once: creates and updates run "
                 "first, removed and create-first-replaced objects are deleted at the end)"]
        return lines + summary.table([r.line() for r in self.rows], header=("node", "peak / capacity", "alive at the peak"))


def delete_first_paths(resources: Iterable[Resource]) -> set[str]:
    """Render paths of the new objects whose resource sets ``deleteBeforeReplace``."""
    return {render.render_path(r.props) for r in summary.k8s_objects(resources) if r.delete_before_replace}


def protected_paths(resources: Iterable[Resource]) -> set[str]:
    """Render paths of the new objects whose resource is ``protect``ed."""
    return {render.render_path(r.props) for r in summary.k8s_objects(resources) if r.protect}


def old_alive(old: Mapping[str, dict], diff: treediff.TreeDiff, delete_first: set[str]) -> dict[str, dict]:
    """The old objects still alive at the peak: every removed object, and the old side of a
    replacement that is not delete-first (the provider deletes first only when the name and
    namespace stay, or when the resource sets ``deleteBeforeReplace``)."""
    out: dict[str, dict] = {}
    for o in diff.objects:
        if o.action == "remove":
            out[o.old_path] = old[o.old_path]
        elif o.action == "replace":
            same_name = o.old_path == o.new_path
            if not same_name and o.new_path not in delete_first:
                out[o.old_path] = old[o.old_path]
    return out


def _renamed(obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {**meta, "name": OLD.format(name=meta.get("name", ""))}}


def peak(old: Mapping[str, dict], new: Mapping[str, dict], diff: treediff.TreeDiff, inventory: ClusterInventory,
         delete_first: set[str]) -> Peak:
    """Cards per node with every new object and the old objects still alive (:func:`old_alive`)."""
    return count(new, old_alive(old, diff, delete_first), inventory)


def count(new: Mapping[str, dict], alive_old: Mapping[str, dict], inventory: ClusterInventory) -> Peak:
    """Cards per node with the objects of ``new`` and ``alive_old`` (render path -> object) alive
    at once: the one count behind both the offline ``--base`` plan (:func:`peak`) and the real
    CLI's plan (:mod:`tools.plan`)."""
    views = [summary.View(manifests.type_token(str(o.get("apiVersion")), str(o.get("kind"))), o, f"new:{p}")
             for p, o in new.items()]
    views += [summary.View(manifests.type_token(str(o.get("apiVersion")), str(o.get("kind"))), _renamed(o), f"old:{p}")
              for p, o in alive_old.items()]
    rows, _ = summary.card_rows((), inventory, manifests.stack_view(views))
    return Peak(rows, dict(alive_old))


def _name(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _annotations(obj: dict) -> dict:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _node_of(obj: dict) -> str | None:
    view = manifests.workload(manifests.type_token(str(obj.get("apiVersion")), str(obj.get("kind"))), obj)
    return view.node if view is not None and view.is_gpu and view.running else None


def retire_of(config: Mapping[str, Any]) -> transition_cost.Retired:
    """The names the stack config's ``llm-serving:retire`` lists (either config form)."""
    return transition_cost.retired(summary.config_value(dict(config), "llm-serving:retire"))


def refusals(old: Mapping[str, dict], new: Mapping[str, dict], diff: treediff.TreeDiff, pk: Peak,
             protected: set[str], retire: transition_cost.Retired | None = None, stack: str = "prod") -> list[str]:
    """The reasons to refuse the plan, one message each: a node over its cards at the peak
    (with the renames that would avoid it), a replacement of a protected Service, and a workload
    or Service deleted without ``retire`` (the stack file's ``llm-serving:retire``) naming it
    (:func:`core.k8s.manifests.transition_cost.unintended_deletions`, as :mod:`tools.plan` on the real plan)."""
    added = {o.new_path: new[o.new_path] for o in diff.objects if o.action == "add"}
    removed = [old[o.old_path] for o in diff.objects if o.action == "remove"]
    return (over_capacity(pk, added) + protected_replacements(old, new, diff, protected, stack)
            + transition_cost.unintended_deletions(removed, retire or transition_cost.Retired()))


def protected_removals(old: Mapping[str, dict], diff: treediff.TreeDiff) -> list[dict]:
    """The old objects the update deletes that a protected component made
    (:func:`core.k8s.manifests.transition_cost.protected_component`): the engine refuses each delete until the
    state command clears its flag."""
    return [old[o.old_path] for o in diff.objects
            if o.action == "remove" and transition_cost.protected_component(old[o.old_path])]


def over_capacity(pk: Peak, added: Mapping[str, dict]) -> list[str]:
    """One message per node over its cards at the peak, naming the old objects that hold them and
    the rename (``former_names``) that pairs a new object of ``added`` with an old one of its kind."""
    out: list[str] = []
    for row in pk.over():
        old_here = [(p, o) for p, o in pk.old.items() if _node_of(o) == row.node]
        new_here = [(p, o) for p, o in added.items() if _node_of(o) == row.node]
        olds = ", ".join(_name(o) for _, o in old_here) or "-"
        wrong = (f"the update needs {row.used} of {row.capacity} cards at its peak "
                 f"(its end state needs {row.used - sum(_cards(o) for _, o in old_here)}): the old objects ({olds}) hold "
                 "their cards until the end of the update while the new pods wait Pending for them, and the "
                 "provider's await fails with both left")
        pairs = [(n, o) for _, n in new_here for _, o in old_here
                 if (n.get("apiVersion"), n.get("kind")) == (o.get("apiVersion"), o.get("kind"))]
        renames = "; ".join(f"if {_name(n)} replaces {_name(o)}, set former_names: [{_name(o)}] under "
                            f"llm-serving:workloads.{_name(n)} (the component then replaces it under an alias, "
                            "deleting the old object first)" for n, o in pairs)
        free = f"free {row.used - row.capacity} card(s) on {row.node} in an update of its own first (park a workload)"
        fix = f"{renames}; otherwise {free}" if renames else free
        out.append(Finding(f"node {row.node}", wrong, fix, SOURCE).render())
    return out


def protected_replacements(old: Mapping[str, dict], new: Mapping[str, dict], diff: treediff.TreeDiff,
                           protected: set[str], stack: str = "prod") -> list[str]:
    """One message per replacement of a protected object (the real CLI refuses it on its own),
    naming the state command that would let it through (``stack``: the URN's)."""
    out: list[str] = []
    for o in diff.replacements:
        if o.new_path in protected or o.old_path in protected:
            obj = new.get(o.new_path) or old[o.old_path]
            unprotect = transition_cost.unprotect_command(transition_cost.object_urn(old[o.old_path], stack))
            finding = Finding(
                o.title,
                f"the update replaces this protected object ({'; '.join(o.replace_reasons)}); pulumi up refuses "
                "to replace a protected resource, and a delete would drop the ClusterIP its clients cached",
                "keep metadata.name, metadata.namespace and spec.clusterIP as they are (point clients elsewhere by "
                f"changing the selector), or unprotect it deliberately first: `{unprotect}`",
                "coder-service.yaml (\"Do not delete and recreate this Service\"); pulumi-kubernetes forceNew table",
                stack_fix="keep the Service's key {key} and change its selects: instead; or unprotect it deliberately "
                          f"first: `{unprotect}`",
            )
            out.append(terms.message(_annotations(obj), finding))
    return out


def _cards(obj: dict) -> int:
    view = manifests.workload(manifests.type_token(str(obj.get("apiVersion")), str(obj.get("kind"))), obj)
    if view is None or not view.running:
        return 0
    return view.cards_per_pod * view.replicas

