"""The one YAML loader of the project: stack files, manifests, the ``--inventory`` file and the
``--base`` rendering are all read with :func:`load_documents`.

It accepts plain data only, what the Pulumi CLI and the Kubernetes API accept:

- **each key once per map**: a repeated key is an error naming both lines. YAML's own rule
  ("the content of a mapping node is an unordered set of key/value node pairs, with the
  restriction that each of the keys is unique", YAML 1.2 section 3.2.1.1) is not enforced by
  PyYAML, which keeps the last value silently: a workload block copied with the same name
  replaced prod's workload and the preview said PASS. The Pulumi CLI's parser (yaml.v3)
  refuses the file too ("mapping key ... already defined at line N");
- **plain tags only**: strings, numbers, booleans, null, maps, lists and the ``<<`` merge key.
  A date (``2024-01-01`` resolves to a YAML 1.1 timestamp), ``!!binary``, ``!!set``,
  ``!!omap``, ``!!pairs`` and any local tag (``!foo``) are refused with the key path: JSON, and
  so ``PULUMI_CONFIG`` and the Kubernetes API, have no such values; nor ``.inf`` / ``.nan``;
- **bounded aliases**: a document may grow through aliases by at most as many nodes as it has
  (and at least :data:`MIN_ALIAS_BUDGET`), computed over the node graph without expanding
  it, so a "billion laughs" file is refused in milliseconds; a recursive alias is refused;
- **bounded depth**: at most :data:`MAX_DEPTH` levels of nesting.

The loader (:class:`StrictLoader`) is PyYAML's safe loader (libyaml's parser where the wheel
has it) with only the plain-data constructors registered; :func:`load_documents` checks each
composed node graph (:func:`node_problems`) before constructing it, so every problem of a
document is listed at once, as :class:`core.problems.Problem` (key path, value, rule, fix),
in a :class:`core.problems.ConfigError`.
"""

from __future__ import annotations

import math

from typing import Any, Optional, Union

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from core.problems import ConfigError, Problem

_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Y = "tag:yaml.org,2002:"
PLAIN_TAGS = frozenset(_Y + t for t in ("str", "int", "float", "bool", "null"))
MAP_TAG, SEQ_TAG, MERGE_TAG = _Y + "map", _Y + "seq", _Y + "merge"
#: Deepest nesting accepted (a Kubernetes manifest nests about 12 levels, a stack file 6).
MAX_DEPTH = 100
#: Nodes aliases may add to any document, whatever its size (a document of N nodes may add N).
MIN_ALIAS_BUDGET = 10_000
#: What the common tags mean to a reader, for the rule text.
_TAG_WORDS = {_Y + "timestamp": "a date/time (YAML 1.1 timestamp)", _Y + "binary": "binary data (!!binary)",
              _Y + "set": "a set (!!set)", _Y + "omap": "an ordered map (!!omap)", _Y + "pairs": "pairs (!!pairs)"}


class StrictLoader(_BASE):
    """PyYAML's safe loader with the plain-data constructors only: a timestamp, binary, set,
    omap, pairs or local tag reaches ``construct_undefined`` and raises
    ``yaml.constructor.ConstructorError`` (:func:`load_documents` reports them earlier, with
    the key path)."""

    yaml_constructors = {
        tag: fn for tag, fn in _BASE.yaml_constructors.items() if tag in PLAIN_TAGS | {MAP_TAG, SEQ_TAG}
    }
    yaml_constructors[None] = _BASE.yaml_constructors[None]  # construct_undefined


PathPart = Union[str, int]


def key_path(path: tuple[PathPart, ...]) -> str:
    """``("spec", "containers", 0, "image")`` -> ``spec.containers[0].image``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document root)"


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def node_problems(root: Node, strip: tuple[PathPart, ...] = ()) -> list[Problem]:
    """Every problem of one composed document (repeated keys, tags other than plain data,
    nesting deeper than :data:`MAX_DEPTH`, aliases expanding beyond the budget). Key paths
    lose the leading ``strip`` (``("config",)`` for a stack file: its config key paths)."""
    problems: list[Problem] = []

    def at(path: tuple[PathPart, ...]) -> str:
        return key_path(path[len(strip):] if path[:len(strip)] == strip else path)

    seen: set[int] = set()
    todo: list[tuple[Node, tuple[PathPart, ...]]] = [(root, ())]
    while todo:
        node, path = todo.pop()
        if id(node) in seen:
            continue  # an alias: its node is checked where it is anchored
        seen.add(id(node))
        if len(path) > MAX_DEPTH:
            problems.append(Problem(at(path[:MAX_DEPTH]), None, f"nested more than {MAX_DEPTH} levels deep",
                                    "flatten the data; no stack file or manifest nests this deep"))
            continue
        expected = MAP_TAG if isinstance(node, MappingNode) else SEQ_TAG if isinstance(node, SequenceNode) else None
        if (node.tag != expected) if expected else (node.tag not in PLAIN_TAGS):
            words = _TAG_WORDS.get(node.tag, f"the tag {node.tag}")
            problems.append(Problem(at(path), node.value if isinstance(node, ScalarNode) else None,
                                    f"line {_line(node)}: {words} is not plain data (JSON, Pulumi config and the "
                                    "Kubernetes API have no such value)",
                                    (f"quote it to keep it as text ({_quoted(node)}), or " if isinstance(node, ScalarNode)
                                     else "") + "write a plain string, number, list or map"))
        if isinstance(node, ScalarNode) and node.tag == _Y + "float" and _not_finite(node.value):
            problems.append(Problem(at(path), node.value, f"line {_line(node)}: {node.value} is not a finite number "
                                    "(JSON, Pulumi config and the Kubernetes API have no infinity or NaN)",
                                    "give a finite number"))
        if isinstance(node, SequenceNode):
            todo.extend((child, path + (i,)) for i, child in reversed(list(enumerate(node.value))))
        elif isinstance(node, MappingNode):
            todo.extend(reversed(_mapping_children(node, path, at, problems)))
    problems.extend(_alias_problems(root, at))
    return problems


def _not_finite(text: str) -> bool:
    """``.inf`` / ``.nan``, or a literal too large for a float (``1e400`` reads as infinity)."""
    if text.lower().lstrip("+-") in (".inf", ".nan"):
        return True
    try:
        return not math.isfinite(float(text.replace("_", "")))
    except ValueError:
        return False


def _quoted(node: ScalarNode) -> str:
    return '"' + str(node.value).replace('"', '\\"')[:60] + '"'


def _mapping_children(node: MappingNode, path: tuple[PathPart, ...], at: Any,
                      problems: list[Problem]) -> list[tuple[Node, tuple[PathPart, ...]]]:
    """The values of a map with their paths; a repeated key or a key that is not text is a problem."""
    first: dict[tuple[str, str], int] = {}
    out: list[tuple[Node, tuple[PathPart, ...]]] = []
    for key, value in node.value:
        if key.tag == MERGE_TAG:
            out.append((value, path))  # "<<: *defaults": merged keys may be overridden
            continue
        if not isinstance(key, ScalarNode):
            problems.append(Problem(at(path), None, f"line {_line(key)}: a key is a list or a map, not text",
                                    "write the key as plain text"))
            continue
        ident = (key.tag, key.value)
        if ident in first:
            problems.append(Problem(at(path + (key.value,)), key.value,
                                    f"key {key.value!r} is given twice in one map, on lines {first[ident]} and "
                                    f"{_line(key)}; YAML keeps only the last, so the first block is silently "
                                    "replaced (the Pulumi CLI refuses the file)",
                                    "give each entry its own name, or delete the copy"))
            continue
        first[ident] = _line(key)
        out.append((key, path + (key.value,)))  # the key's own tag is checked too
        out.append((value, path + (key.value,)))
    return out


def _alias_problems(root: Node, at: Any) -> list[Problem]:
    """Aliases expand the document beyond its budget, or refer to themselves: one problem at the
    deepest key whose expansion is over budget. O(nodes), nothing is expanded."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    todo: list[tuple[Node, bool]] = [(root, False)]
    while todo:
        node, done = todo.pop()
        if done:
            size[id(node)] = 1 + sum(size[id(c)] for c in _children(node))
            open_.discard(id(node))
            continue
        if id(node) in size:
            continue
        if id(node) in open_:
            return [Problem(at(()), None, f"line {_line(node)}: an alias refers to a node that contains it "
                                          "(a recursive alias), which expands forever",
                            "write the data out without the recursive alias")]
        open_.add(id(node))
        todo.append((node, True))
        todo.extend((c, False) for c in _children(node) if id(c) not in size)
    unique = len(size)
    budget = unique + max(MIN_ALIAS_BUDGET, unique)
    if size[id(root)] <= budget:
        return []
    at_node: Node = root
    path: tuple[PathPart, ...] = ()
    while True:  # down to the deepest node still over budget
        over = [(c, p) for c, p in _labelled_children(at_node, path) if size[id(c)] > budget]
        if not over:
            break
        at_node, path = over[0]
    return [Problem(at(path), None,
                    f"aliases expand this document to {size[id(root)]:,} nodes from {unique:,} written "
                    f"(a \"billion laughs\" file); at most {budget:,} are accepted",
                    "write the data out, or use fewer nested aliases")]


def _labelled_children(node: Node, path: tuple[PathPart, ...]) -> list[tuple[Node, tuple[PathPart, ...]]]:
    if isinstance(node, SequenceNode):
        return [(c, path + (i,)) for i, c in enumerate(node.value)]
    if isinstance(node, MappingNode):
        return [(v, path + (str(k.value),)) for k, v in node.value]
    return []


def load_documents(text: str, where: str, strip: tuple[PathPart, ...] = (), numbered: bool = True) -> list[Any]:
    """The documents of ``text`` as plain data (``where`` names the file in messages; key paths
    lose the leading ``strip``). Raises :class:`core.problems.ConfigError` listing every
    problem of the first bad document (source ``<where>, document N``, or ``<where>`` alone
    when not ``numbered``: a stack file), and ``yaml.YAMLError`` for text that is not YAML."""
    loader = StrictLoader(text)
    docs: list[Any] = []
    try:
        while loader.check_node():
            node: Optional[Node] = loader.get_node()
            if node is None:
                continue
            problems = node_problems(node, strip)
            if problems:
                raise ConfigError(problems, f"{where}, document {len(docs) + 1}" if numbered else where)
            docs.append(loader.construct_document(node))
    finally:
        loader.dispose()
    return docs
