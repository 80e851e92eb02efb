"""Diff two renderings (:func:`diff_trees`), field by field, with what each change costs.

Objects are matched by file name, then a removed and an added object of the same kind are paired
when they come from the same component (``facts.COMPONENT_ANNOTATION``) or share a name (a rename
or a namespace move). Each pair gets field-level changes as dotted paths; changes that force the
provider to delete and re-create the object are marked, following the provider's ``forceNew`` table
(pulumi/pulumi-kubernetes ``provider/pkg/provider/diff.go``) for the kinds this program renders,
plus a Service's ``spec.type`` to or from ExternalName (Kubernetes releases the ClusterIP then).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from core.base import facts
from core.k8s.manifests import transition_cost

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<none>"})()


@dataclass(frozen=True)
class FieldChange:
    """One changed field: dotted ``path`` (list items by ``[name=x]`` or ``[i]``), ``old`` and
    ``new`` (:data:`MISSING` when absent), and the reason it forces a replacement, if it does."""

    path: str
    old: Any
    new: Any
    replace_reason: str = ""


@dataclass(frozen=True)
class ObjectDiff:
    """How one object changes: ``action`` is ``add``, ``remove``, ``update`` (in place) or
    ``replace`` (the provider deletes and re-creates it)."""

    action: str
    title: str
    old_path: str = ""
    new_path: str = ""
    changes: tuple[FieldChange, ...] = ()
    warning: str = ""
    #: What the change costs while the update runs (:func:`core.k8s.manifests.transition_cost.object_cost`).
    cost: transition_cost.ObjectCost = field(default_factory=transition_cost.ObjectCost)

    @property
    def replace_reasons(self) -> list[str]:
        seen: list[str] = []
        for c in self.changes:
            if c.replace_reason and c.replace_reason not in seen:
                seen.append(c.replace_reason)
        return seen


@dataclass(frozen=True)
class TreeDiff:
    """Every object that differs between two renderings, sorted by title."""

    objects: tuple[ObjectDiff, ...] = field(default_factory=tuple)

    @property
    def costs(self) -> list[transition_cost.ObjectCost]:
        return [o.cost for o in self.objects]

    @property
    def replacements(self) -> list[ObjectDiff]:
        return [o for o in self.objects if o.action == "replace"]

    def render(self) -> str:
        """Plain text: one block per object, ``+`` add, ``-`` remove, ``~`` update, ``+-`` replace."""
        if not self.objects:
            return "diff: no changes\n"
        counts = {a: sum(1 for o in self.objects if o.action == a) for a in ("add", "update", "replace", "remove")}
        head = "diff: " + ", ".join(f"{n} to {a}" for a, n in counts.items() if n)
        lines = [head]
        for o in self.objects:
            lines.extend(_render_object(o))
        lines.extend(transition_cost.summary(self.costs))
        return "\n".join(lines) + "\n"


_MARK = {"add": "+ ", "remove": "- ", "update": "~ ", "replace": "+-"}


def _render_object(o: ObjectDiff) -> list[str]:
    lines = [f"{_MARK[o.action]} {o.title} ({transition_cost.label(o.action, o.cost)})"]
    for c in o.changes:
        tag = "   [forces replacement]" if c.replace_reason else ""
        if _scalars(c.old) and _scalars(c.new):
            lines.append(f"      {c.path}: list changed{tag}")
            lines.extend(list_diff(c.old, c.new))
        else:
            lines.append(f"      {c.path}: {_show(c.old)} -> {_show(c.new)}{tag}")
    for reason in o.replace_reasons:
        lines.append(f"      replace: {reason}")
    if o.warning:
        lines.append(f"      warning: {o.warning}")
    lines.extend(f"      {line}" for line in o.cost.lines())
    return lines


def _scalars(value: Any) -> bool:
    return isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)


def list_diff(old: list, new: list, context: int = 1) -> list[str]:
    """A changed list of scalars (a container's argv, command, ...) as a diff, one item a line:
    ``- item`` removed, ``+ item`` added, unchanged items shown ``context`` around each change
    and ``... N unchanged`` for the rest (difflib's matching, in order)."""
    out: list[str] = []
    for group in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_grouped_opcodes(context):
        if out:
            out.append("          ...")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(f"            {_show(v)}" for v in old[i1:i2])
                continue
            out.extend(f"          - {_show(v)}" for v in old[i1:i2])
            out.extend(f"          + {_show(v)}" for v in new[j1:j2])
    unchanged = sum(i2 - i1 for tag, i1, i2, _, _ in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
                    if tag == "equal")
    shown = sum(1 for line in out if line.startswith("            "))
    if unchanged > shown:
        out.append(f"          ({unchanged - shown} unchanged items not shown)")
    return out


#: Why removing a Service is never routine (coder-service.yaml: "Do not delete and recreate
#: this Service"); StablePredictorService is protected, so the CLI refuses the delete.
SERVICE_REMOVAL_WARNING = (
    "deletes the Service: its ClusterIP is released and clients that cached the name fail until "
    "they re-resolve (coder-service.yaml); a StablePredictorService is protected, so pulumi up "
    "refuses this delete. If you meant to rename it, keep the old name."
)


def _removal(obj: dict[str, Any], path: str) -> ObjectDiff:
    warning = SERVICE_REMOVAL_WARNING if obj.get("kind") == "Service" else ""
    return ObjectDiff("remove", title(obj), old_path=path, warning=warning, cost=transition_cost.object_cost("remove", obj, None))


def _show(value: Any) -> str:
    if value is MISSING:
        return "<none>"
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def title(obj: dict[str, Any]) -> str:
    """``apps/v1 Deployment llm-serving/candle-vllm`` (``<apiVersion> <Kind> [<ns>/]<name>``)."""
    meta = obj.get("metadata") or {}
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('apiVersion')} {obj.get('kind')} {ns}{meta.get('name', '')}"


def diff_trees(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> TreeDiff:
    """The field-level diff from rendering ``old`` to ``new`` (both relative path -> object)."""
    pairs = [(p, p) for p in sorted(old.keys() & new.keys())]
    removed = sorted(old.keys() - new.keys())
    added = sorted(new.keys() - old.keys())
    for o, n in _pair_moves(old, new, removed, added):
        pairs.append((o, n))
        removed.remove(o)
        added.remove(n)
    out: list[ObjectDiff] = []
    for o, n in pairs:
        changes = tuple(_mark(old[o], new[n], c) for c in field_changes(old[o], new[n]))
        if not changes:
            continue
        action = "replace" if any(c.replace_reason for c in changes) else "update"
        cost = transition_cost.object_cost(action, old[o], new[n], [c.path for c in changes])
        out.append(ObjectDiff(action, title(new[n]), o, n, changes, cost=cost))
    out.extend(_removal(old[p], p) for p in removed)
    out.extend(ObjectDiff("add", title(new[p]), new_path=p) for p in added)
    return TreeDiff(tuple(sorted(out, key=lambda d: (d.title, d.action))))


def _pair_moves(old, new, removed, added) -> list[tuple[str, str]]:
    """(old path, new path) for objects renamed or moved: same apiVersion and kind, and the same
    component annotation, the same name, or the old name among the new object's former names
    (:func:`former_names`: a workload renamed with ``former_names``); only unique matches are paired."""
    def key_sets(obj, former=False):
        meta = obj.get("metadata") or {}
        comp = (meta.get("annotations") or {}).get(facts.COMPONENT_ANNOTATION)
        base = (obj.get("apiVersion"), obj.get("kind"))
        keys = [k for k in ((base, "component", comp), (base, "name", meta.get("name"))) if k[2]]
        return keys + [(base, "name", f) for f in former_names(obj)] if former else keys

    out = []
    used_new: set[str] = set()
    for o in removed:
        for key in key_sets(old[o]):
            matches = [n for n in added if n not in used_new and key in key_sets(new[n], former=True)]
            if len(matches) == 1:
                out.append((o, matches[0]))
                used_new.add(matches[0])
                break
    return out


def former_names(obj: dict[str, Any]) -> list[str]:
    """The former names an object declares (``facts.FORMER_NAMES_ANNOTATION``, a JSON list), []
    when none or when the annotation is not a JSON list."""
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(facts.FORMER_NAMES_ANNOTATION)
    try:
        names = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [str(n) for n in names] if isinstance(names, list) else []


def field_changes(old: Any, new: Any, path: str = "") -> list[FieldChange]:
    """Changed leaves between two values, as dotted paths. Dicts by key; lists of objects that
    all carry a unique ``name`` by name (``containers[name=server]``); other lists of objects by
    index; lists of scalars as one value."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[FieldChange] = []
        for k in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{k}" if path else str(k)
            out.extend(field_changes(old.get(k, MISSING), new.get(k, MISSING), sub))
        return out
    if isinstance(old, list) and isinstance(new, list) and _objects(old) and _objects(new):
        return _list_changes(old, new, path)
    if old == new and type(old) is type(new):
        return []
    return [FieldChange(path, old, new)]


def _objects(items: list) -> bool:
    return bool(items) and all(isinstance(i, dict) for i in items)


def _list_changes(old: list, new: list, path: str) -> list[FieldChange]:
    by_name = _named(old) and _named(new)
    if by_name:
        o = {i["name"]: i for i in old}
        n = {i["name"]: i for i in new}
        keys = list(o) + [k for k in n if k not in o]
        out: list[FieldChange] = []
        for k in keys:
            out.extend(field_changes(o.get(k, MISSING), n.get(k, MISSING), f"{path}[name={k}]"))
        return out
    out = []
    for i in range(max(len(old), len(new))):
        out.extend(field_changes(old[i] if i < len(old) else MISSING, new[i] if i < len(new) else MISSING, f"{path}[{i}]"))
    return out


def _named(items: list) -> bool:
    names = [i.get("name") for i in items]
    return all(isinstance(n, str) and n for n in names) and len(set(names)) == len(names)


# --- what forces a replacement ----------------------------------------------------------------

#: Field paths (prefixes) whose change makes the provider delete and re-create the object, by
#: (API group, kind): the provider's ``forceNew`` table (provider/pkg/provider/diff.go) for the
#: kinds this program renders and their neighbours. ``metadata.name`` / ``metadata.namespace``
#: apply to every kind.
FORCE_NEW: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): ("spec.selector",),
    ("apps", "DaemonSet"): ("spec.selector",),
    ("apps", "StatefulSet"): (
        "spec.podManagementPolicy", "spec.revisionHistoryLimit", "spec.selector", "spec.serviceName",
        "spec.volumeClaimTemplates",
    ),
    ("", "Service"): ("spec.clusterIP",),
    ("", "PersistentVolumeClaim"): ("spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"),
    ("", "Secret"): ("type",),
    ("batch", "Job"): ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("roleRef",),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("roleRef",),
}


def _group(api_version: Any) -> str:
    text = str(api_version or "")
    return text.split("/", 1)[0] if "/" in text else ""


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + ".") or path.startswith(prefix + "[")


def _mark(old_obj: dict, new_obj: dict, change: FieldChange) -> FieldChange:
    reason = replace_reason(old_obj, new_obj, change)
    return FieldChange(change.path, change.old, change.new, reason) if reason else change


def replace_reason(old_obj: dict, new_obj: dict, change: FieldChange) -> str:
    """Why ``change`` forces a delete and re-create of the object, or "" when it applies in place."""
    kind = str(new_obj.get("kind"))
    what = f"{kind} {title(old_obj).split(' ', 2)[-1]}"
    is_service = kind == "Service" and _group(new_obj.get("apiVersion")) == ""
    cached = "; the ClusterIP its clients cached is dropped" if is_service else ""
    if change.path in ("metadata.name", "metadata.namespace"):
        return f"{change.path} changes: the provider deletes {what} and creates {title(new_obj).split(' ', 2)[-1]}{cached}"
    if is_service and change.path == "spec.type" and "ExternalName" in (change.old, change.new):
        return f"spec.type {change.old} -> {change.new}: Kubernetes releases {what}'s ClusterIP; the ClusterIP its clients cached is dropped"
    for prefix in FORCE_NEW.get((_group(new_obj.get("apiVersion")), kind), ()):
        if _under(change.path, prefix):
            if is_service:
                return f"{prefix} is immutable: the provider deletes and re-creates {what}{cached}"
            tail = "; its pods restart and release their cards until the new ones are scheduled" if kind in ("Deployment", "StatefulSet", "DaemonSet") else ""
            return f"{prefix} is immutable: the provider deletes and re-creates {what}{tail}"
    return ""
