"""Write the objects the kubernetes provider would apply, and diff two renderings.

Layout: the provider's ``renderYamlToDirectory`` mode (pulumi/pulumi-kubernetes,
``provider/pkg/provider/provider.go``, functions ``renderYaml`` and ``renderPathForResource``):

* ``<dir>/0-crd/`` holds CustomResourceDefinitions (kind ``CustomResourceDefinition`` of a
  built-in ``apiextensions.k8s.io`` version), ``<dir>/1-manifest/`` everything else; the
  provider creates both directories, so does :func:`write_tree`;
* the file name is ``<apiVersion>-<kind>-<namespace>-<name>.yaml`` where ``/`` and ``:`` in the
  apiVersion become ``_``, the kind is LOWER-CASED (``strings.ToLower(resource.GetKind())``),
  and the namespace is ``default`` when the object has none: ``apps/v1`` Deployment
  ``llm-serving/candle-vllm`` -> ``1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml``;
* the YAML is the object's JSON through ``sigs.k8s.io/yaml.JSONToYAML``: map keys sorted (Go's
  JSON and go-yaml both sort them). :func:`dump` sorts keys the same way (PyYAML
  ``safe_dump(sort_keys=True)``), block style, no line wrapping; scalar quoting may differ from
  go-yaml, the parsed objects are equal, read by PyYAML or by kubectl (a string yaml.v2 would read as
  another value, ``y`` or ``08``, is quoted).

The output directory is replaced atomically (:func:`write_tree`): every file is written to a
temporary sibling directory, which is then swapped in with one ``renameat2(RENAME_EXCHANGE)``
(Linux) or two renames elsewhere, so a failed run leaves the previous rendering untouched.

Diff (:func:`diff_trees`): objects are matched by file name, then a removed and an added object
of the same kind are paired when they come from the same component (``facts.COMPONENT_ANNOTATION``)
or share a name (a rename or a namespace move). Each pair gets field-level changes as dotted
paths; changes that force the provider to delete and re-create the object are marked, following
the provider's ``forceNew`` table (``provider/pkg/provider/diff.go``) for the kinds this program
renders, plus a Service's ``spec.type`` to or from ExternalName (Kubernetes releases the
ClusterIP then).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import difflib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from core import facts, transition_cost, yaml11
from core.problems import ConfigError
from tools.offline import apischema
from tools.offline.manifests import InputError, Resource, object_problem, read_input
from tools.offline.yamlload import YAMLError, load_documents

CRD_DIR = "0-crd"
MANIFEST_DIR = "1-manifest"
#: apiextensions versions the provider treats as built-in (``kinds.KnownGroupVersions``).
CRD_API_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
_BASE_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BASE_DUMPER):
    """The safe dumper, quoting a string kubectl would read as something else (``y`` is a boolean
    and ``08`` a number to yaml.v2, :func:`core.yaml11.plain_is_text`), so ``kubectl apply -f`` of
    a rendering reads what the program made; other strings are quoted as PyYAML quotes them."""


def _represent_str(dumper: Any, data: str) -> Any:
    style = None if yaml11.plain_is_text(data) else "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)
_DUMPER = _Dumper


class RenderError(Exception):
    """An object cannot be rendered, or the output directory cannot be replaced; the message
    names the object or directory, the reason and the fix."""


# --- objects and file names --------------------------------------------------------------------

#: Objects never rendered: a workload's Secret stays with Pulumi (applied by ``pulumi up``,
#: encrypted in the state), and the rendered objects reference it by name (docs/secrets.md).
KEPT_BY_PULUMI = frozenset({"kubernetes:core/v1:Secret"})


def manifests(resources: Iterable[Resource]) -> list[dict[str, Any]]:
    """The Kubernetes objects among ``resources`` that a rendering holds: custom resources of the
    kubernetes provider whose inputs carry ``apiVersion`` and ``kind`` (providers and components
    are skipped, and so are Secrets: :data:`KEPT_BY_PULUMI`)."""
    out = []
    for r in resources:
        if r.custom and r.type.startswith("kubernetes:") and "apiVersion" in r.props and "kind" in r.props \
                and r.type not in KEPT_BY_PULUMI:
            out.append(r.props)
    return out


def kept_by_pulumi(resources: Iterable[Resource]) -> list[str]:
    """``Secret <namespace>/<name>`` of each object :func:`manifests` leaves out of a rendering."""
    return [f"{r.props.get('kind')} {(r.props.get('metadata') or {}).get('namespace')}/"
            f"{(r.props.get('metadata') or {}).get('name')}" for r in resources if r.custom and r.type in KEPT_BY_PULUMI]


def printable_of(obj: dict[str, Any]) -> str:
    """``apiVersion kind name`` of ``obj`` for a message, control characters escaped."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return repr(f"{obj.get('apiVersion')} {obj.get('kind')} {meta.get('name')}")[1:-1][:120]


def render_path(obj: dict[str, Any]) -> str:
    """The file ``renderPathForResource`` gives ``obj``, relative to the render directory.

    ``{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "clef-serve", "namespace":
    "llm-serving"}}`` -> ``"1-manifest/v1-service-llm-serving-clef-serve.yaml"``. Raises
    :class:`RenderError` when ``metadata.name`` is empty (the provider asserts a name; it would
    auto-name the object with a random suffix the preview cannot know).
    """
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise RenderError(
            f"cannot render {obj.get('apiVersion')} {obj.get('kind')}: it has no metadata.name, so the provider "
            "would auto-name it with a random suffix; fix: give the object an explicit metadata.name"
        )
    api_version = str(obj["apiVersion"]).replace("/", "_").replace(":", "_")
    namespace = str(meta.get("namespace") or "default")
    for what, part in (("apiVersion", api_version), ("kind", str(obj["kind"])), ("namespace", namespace), ("name", name)):
        if "/" in part or "\\" in part or not part.isprintable():
            raise RenderError(f"cannot render {printable_of(obj)}: its {what} holds path characters ('/', '\\', or a "
                              f"control character), so its file would land outside the rendering; fix: correct {what}")
    file_name = f"{api_version}-{str(obj['kind']).lower()}-{namespace}-{name}.yaml"
    is_crd = obj["kind"] == "CustomResourceDefinition" and obj["apiVersion"] in CRD_API_VERSIONS
    return f"{CRD_DIR if is_crd else MANIFEST_DIR}/{file_name}"


def dump(obj: dict[str, Any]) -> str:
    """``obj`` as YAML: keys sorted (as the provider writes them), block style, no wrapping."""
    return yaml.dump(obj, Dumper=_DUMPER, sort_keys=True, default_flow_style=False, allow_unicode=True, width=1 << 30)


def render(objects: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Relative path -> YAML text for every object. Raises :class:`RenderError` for an object
    without a name, or two objects that would write the same file."""
    out: dict[str, str] = {}
    for obj in objects:
        path = render_path(obj)
        if path in out:
            raise RenderError(
                f"cannot render {path}: two objects have the same apiVersion, kind, namespace and name; "
                "fix: give each object its own metadata.name"
            )
        out[path] = dump(obj)
    return out


# --- atomic write ----------------------------------------------------------------------------------

def write_tree(files: dict[str, str], out_dir: Path) -> None:
    """Replace ``out_dir`` with exactly ``files`` (relative path -> text), atomically:
    :func:`stage_tree`, then :func:`commit_tree`.

    ``out_dir`` may be missing, or an earlier rendering (only ``0-crd/`` and ``1-manifest/``
    in it); any other existing directory is refused, so a wrong ``--out`` cannot delete a
    user's files. Raises :class:`RenderError`; on any error the old ``out_dir`` is unchanged and
    no temporary directory is left behind.
    """
    commit_tree(stage_tree(files, out_dir), out_dir)


def stage_tree(files: dict[str, str], out_dir: Path) -> Path:
    """Write ``files`` aside, into a new temporary directory beside ``out_dir``, and return it:
    :func:`commit_tree` moves it in place (the preview does once the verdict is in), or
    :func:`discard_tree` removes it. Raises :class:`RenderError` (nothing left behind)."""
    out_dir = Path(out_dir).absolute()
    check_out_dir(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    except OSError as err:
        raise RenderError(f"cannot write {out_dir}: {err.strerror}; fix: check the directory's permissions and free "
                          "space") from None
    try:
        for sub in (CRD_DIR, MANIFEST_DIR):
            (tmp / sub).mkdir()
        for rel, text in files.items():
            (tmp / rel).write_text(text, encoding="utf-8")
    except BaseException as err:
        discard_tree(tmp)
        if isinstance(err, OSError):
            raise RenderError(f"cannot write {out_dir}: {err.strerror}; fix: check the directory's permissions and "
                              "free space") from None
        raise
    return tmp


def commit_tree(staged: Path, out_dir: Path) -> None:
    """Move the :func:`stage_tree` directory ``staged`` in place of ``out_dir`` (one atomic
    exchange where the C library has it); the old rendering is removed. Raises
    :class:`RenderError` when ``out_dir`` changed meanwhile into something not replaceable."""
    out_dir = Path(out_dir).absolute()
    try:
        _check_replaceable(out_dir)
        _swap_in(staged, out_dir)
    except OSError as err:
        raise RenderError(f"cannot write {out_dir}: {err.strerror or err}; fix: check the directory's permissions and "
                          "free space (a read-only clone: pass --out a writable directory)") from None
    finally:
        discard_tree(staged)


def discard_tree(staged: Path) -> None:
    """Remove a staged directory (after the swap it holds the old rendering)."""
    if staged.exists():
        shutil.rmtree(staged, ignore_errors=True)


def lock_out_dir(out_dir: Path) -> Callable[[], None]:
    """Hold ``out_dir`` for one preview: an exclusive lock on ``.<name>.lock`` beside it, so a second
    preview into the same ``--out`` is refused (:class:`RenderError`) instead of one rendering
    silently replacing the other's. Returns the release (which removes the lock file). Without
    the parent directory it is created first (and removed again on release while empty), so two
    previews into a new ``--out`` whose parent does not exist take the same lock too."""
    out_dir = Path(os.path.abspath(out_dir))  # noqa: PTH100
    created: list[Path] = []
    for _ in range(3):  # a parent another preview removes meanwhile is made again
        missing = [p for p in [out_dir.parent, *out_dir.parent.parents] if not p.exists()]
        try:
            for d in reversed(missing):
                d.mkdir(exist_ok=True)
                created.append(d)
        except OSError:
            _remove_empty(created)
            return lambda: None  # a parent that cannot be made is refused when the rendering is staged
        lock = out_dir.parent / f".{out_dir.name}.lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            break
        except FileNotFoundError:
            continue
        except OSError:
            _remove_empty(created)
            return lambda: None  # an unwritable parent is refused when the rendering is staged
    else:
        _remove_empty(created)
        return lambda: None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        _remove_empty(created)
        raise RenderError(f"another preview is writing {out_dir} now (it holds {lock}); fix: wait for it to end, or "
                          "pass another --out") from None

    def release() -> None:
        lock.unlink(missing_ok=True)
        os.close(fd)
        _remove_empty(created)
    return release


def _remove_empty(created: list[Path]) -> None:
    """Remove the directories :func:`lock_out_dir` made, deepest first, each only while empty."""
    for d in reversed(created):
        try:
            d.rmdir()
        except OSError:
            break


#: Where no rendering may go: kernel file systems.
_SYSTEM_ROOTS = (Path("/dev"), Path("/proc"), Path("/sys"))
#: The longest file name Linux file systems take (NAME_MAX), in bytes.
NAME_MAX = 255


def check_out_dir(out_dir: Path) -> None:
    """Refuse an ``--out`` the rendering cannot go to, before any work: under ``/dev``, ``/proc``
    or ``/sys``; a symbolic link (replacing it would replace the link, not write where it
    points); a path through a file; a name over :data:`NAME_MAX` bytes; a directory that
    cannot be written; an existing directory that is not an earlier rendering. Raises
    :class:`RenderError` with the fix."""
    out_dir = Path(os.path.abspath(out_dir))  # noqa: PTH100
    fix = "fix: pass --out a new or earlier-rendered directory in a writable place (default: out/<stack>/)"
    if any(out_dir == r or r in out_dir.parents for r in _SYSTEM_ROOTS):
        raise RenderError(f"cannot write {out_dir}: it is under a kernel file system (/dev, /proc, /sys); {fix}")
    long = [part for part in out_dir.parts if len(os.fsencode(part)) > NAME_MAX]
    if long:
        raise RenderError(f"cannot write {out_dir}: the name {long[0][:40]}... is {len(os.fsencode(long[0]))} bytes, over "
                          f"the {NAME_MAX}-byte limit of a file name; {fix}")
    if out_dir.is_symlink():
        raise RenderError(f"cannot write {out_dir}: it is a symbolic link (to {os.readlink(out_dir)}), which would be "  # noqa: PTH115
                          f"replaced, not written through; {fix}")
    existing = out_dir
    while not existing.exists():
        if existing.is_symlink():  # a dangling link on the way
            raise RenderError(f"cannot write {out_dir}: {existing} is a dangling symbolic link; {fix}")
        existing = existing.parent
    if existing != out_dir and not existing.is_dir():
        raise RenderError(f"cannot write {out_dir}: {existing} is a file, not a directory; {fix}")
    writable = existing.parent if existing == out_dir else existing
    if not os.access(writable, os.W_OK | os.X_OK):
        raise RenderError(f"cannot write {out_dir}: {writable} is not writable (read-only, or another owner); {fix}")
    _check_replaceable(out_dir)


def _check_replaceable(out_dir: Path) -> None:
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise RenderError(f"cannot write {out_dir}: it is a file; fix: pass a directory path to --out")
    strangers = sorted(p.name for p in out_dir.iterdir() if p.name not in (CRD_DIR, MANIFEST_DIR))
    if strangers:
        raise RenderError(
            f"cannot replace {out_dir}: it is not an earlier rendering (it holds {', '.join(strangers[:3])}); "
            "fix: pass an empty or new directory to --out, or remove it"
        )


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _swap_in(new: Path, target: Path) -> None:
    """Make ``new`` appear at ``target``; the old ``target`` ends up at ``new`` (then removed by
    the caller). One atomic ``renameat2(RENAME_EXCHANGE)`` where the C library has it."""
    if not target.exists():
        os.rename(new, target)  # noqa: PTH104
        return
    if _exchange(new, target):
        return
    old = new.with_name(new.name.replace(".new-", ".old-"))
    os.rename(target, old)  # noqa: PTH104
    os.rename(new, target)  # noqa: PTH104
    os.rename(old, new)  # noqa: PTH104


def _exchange(a: Path, b: Path) -> bool:
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


# --- reading a rendering ---------------------------------------------------------------------------

def load_tree(directory: Path) -> dict[str, dict[str, Any]]:
    """Relative path -> object of an earlier rendering (``0-crd/*.yaml`` and ``1-manifest/*.yaml``).

    Raises :class:`tools.offline.manifests.InputError` when the directory is missing, holds neither
    sub-directory, or a file is not one YAML object.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"--base {directory}: no such directory; fix: pass an earlier --out directory")
    subs = [directory / s for s in (CRD_DIR, MANIFEST_DIR) if (directory / s).is_dir()]
    if not subs:
        raise InputError(
            f"--base {directory}: not a rendering (no {CRD_DIR}/ or {MANIFEST_DIR}/ in it); "
            "fix: pass a directory an earlier preview wrote with --out"
        )
    out: dict[str, dict[str, Any]] = {}
    inside = directory.resolve()
    for sub in subs:
        for f in sorted(sub.glob("*.yaml")):
            if f.is_symlink() or not f.resolve().is_relative_to(inside):
                raise InputError(f"--base {f}: a symbolic link (to {os.path.realpath(f)}), not a file a preview wrote; "
                                 "fix: pass the directory an earlier preview wrote with --out, without links")
            try:
                docs = load_documents(read_input(f, "rendered manifest"), f"--base {f}", numbered=False)
            except ConfigError as err:
                raise InputError(err.render()) from None
            except YAMLError as err:
                raise InputError(f"--base {f}: not valid YAML: {err}") from None
            obj = docs[0] if len(docs) == 1 else None
            if not isinstance(obj, dict):
                raise InputError(f"--base {f}: not one Kubernetes object; fix: pass a directory an earlier preview "
                                 "wrote with --out, unedited")
            problem = object_problem(obj)
            if problem is not None:
                raise InputError(f"--base {f}: not a Kubernetes object: {problem}")
            refused = apischema.refusals([(f"--base {f}", obj)])
            if refused:
                raise InputError("\n".join(refused))
            out[f"{sub.name}/{f.name}"] = obj
    return out


# --- diff ----------------------------------------------------------------------------------------

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
    #: What the change costs while the update runs (:func:`core.transition_cost.object_cost`).
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
