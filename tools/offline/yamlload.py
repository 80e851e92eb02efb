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
  A date in a stack file (``2024-01-01`` resolves to a YAML timestamp; a manifest keeps it as
  text, as yaml.v2 does), ``!!binary``, ``!!set``,
  ``!!omap``, ``!!pairs`` and any local tag (``!foo``) are refused with the key path: JSON, and
  so ``PULUMI_CONFIG`` and the Kubernetes API, have no such values; nor ``.inf`` / ``.nan``;
- **bounded aliases**: a document may grow through aliases by at most as many nodes as it has
  (and at least :data:`MIN_ALIAS_BUDGET`), computed over the node graph without expanding
  it, so a "billion laughs" file is refused in milliseconds; a recursive alias is refused;
- **bounded depth**: at most :data:`MAX_DEPTH` levels of nesting.

A stack file, the ``--inventory`` file and the catalogs are read as the Pulumi CLI reads them;
a manifest (``kubectl=True``) as ``kubectl`` reads it (sigs.k8s.io/yaml over yaml.v2, YAML 1.1:
``defaultMode: 0700`` is 448, ``yes`` / ``on`` are booleans, a date is text:
:mod:`core.k8s.yaml11`), with the same guards.

A stack file is read as the Pulumi CLI does (Go's ``gopkg.in/yaml.v3``, YAML 1.2's core schema): ``5:00``
is the text "5:00" (YAML 1.1 read it as 300, base 60), ``yes`` / ``no`` / ``on`` / ``off`` are
text, ``0o17`` is 15 and ``0x1F`` 31. A plain ``0777`` is refused as ambiguous: YAML 1.2 reads
777, yaml.v3 keeps YAML 1.1's octal 511 ("Octals from the 1.1 spec, spelled as 0777, are still
decoded by default in v3", its ``resolve.go``).

The base is :class:`core.base.yaml12.Yaml12Loader` (PyYAML's libyaml parser with ruamel.yaml's YAML 1.2
resolution); :class:`StrictLoader` keeps only its plain-data constructors. :func:`load_documents`
composes each document, checks its node graph (:func:`node_problems`) before constructing it,
so every problem of a document is listed at once, as :class:`core.judging.problems.Problem` (key path,
value, rule, fix), in a :class:`core.judging.problems.ConfigError`; text that is not YAML is one such
problem too, with its line, column and a fix (:func:`syntax_problem`).
"""

from __future__ import annotations

import math
import re
from typing import Any, Union

from yaml import YAMLError, compose, compose_all
from yaml.error import MarkedYAMLError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from core.base.yaml12 import Yaml12Loader
from core.judging.problems import HIDDEN, ConfigError, Problem, redacted
from core.k8s.yaml11 import Yaml11Loader

__all__ = ["NotYaml", "YAMLError", "container_lines", "key_lines", "load_documents", "node_problems", "key_path", "MAX_DEPTH"]

_Y = "tag:yaml.org,2002:"
PLAIN_TAGS = frozenset(_Y + t for t in ("str", "int", "float", "bool", "null"))
MAP_TAG, SEQ_TAG, MERGE_TAG = _Y + "map", _Y + "seq", _Y + "merge"
#: Deepest nesting accepted (a Kubernetes manifest nests about 12 levels, a stack file 6).
MAX_DEPTH = 100
#: Nodes aliases may add to any document, whatever its size (a document of N nodes may add N).
MIN_ALIAS_BUDGET = 10_000
#: What the common tags mean to a reader, for the rule text.
_TAG_WORDS = {_Y + "timestamp": "a date/time (YAML timestamp)", _Y + "binary": "binary data (!!binary)",
              _Y + "set": "a set (!!set)", _Y + "omap": "an ordered map (!!omap)", _Y + "pairs": "pairs (!!pairs)"}
#: A plain integer with a leading zero: YAML 1.2 reads it in base 10, yaml.v3 in base 8.
_LEGACY_OCTAL = re.compile(r"[-+]?0[0-9_]+")


class StrictLoader(Yaml12Loader):
    """The YAML 1.2 loader with the plain-data constructors only: a timestamp, binary, set,
    omap, pairs or local tag reaches ``construct_undefined`` and raises
    ``yaml.constructor.ConstructorError`` (:func:`load_documents` reports them earlier, with
    the key path)."""

    yaml_constructors = {
        tag: fn for tag, fn in Yaml12Loader.yaml_constructors.items() if tag in PLAIN_TAGS | {MAP_TAG, SEQ_TAG}
    }
    yaml_constructors[None] = Yaml12Loader.yaml_constructors[None]  # construct_undefined


class KubectlLoader(Yaml11Loader):
    """:class:`StrictLoader`'s plain-data constructors on :class:`core.k8s.yaml11.Yaml11Loader`'s
    resolution: a manifest read as ``kubectl`` reads it (``defaultMode: 0700`` is 448)."""

    yaml_constructors = {
        tag: fn for tag, fn in Yaml11Loader.yaml_constructors.items() if tag in PLAIN_TAGS | {MAP_TAG, SEQ_TAG}
    }
    yaml_constructors[None] = Yaml11Loader.yaml_constructors[None]


PathPart = Union[str, int]  # noqa: UP007


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


def node_problems(root: Node, strip: tuple[PathPart, ...] = (), kubectl: bool = False) -> list[Problem]:
    """Every problem of one composed document (repeated keys, tags other than plain data,
    nesting deeper than :data:`MAX_DEPTH`, aliases expanding beyond the budget, and, read as
    the Pulumi CLI reads it, a leading-zero integer). Key paths lose the leading ``strip``
    (``("config",)`` for a stack file: its config key paths). ``kubectl``: composed by
    :class:`KubectlLoader`, where ``0700`` is octal without doubt (yaml.v2)."""
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
            problems.append(_too_deep(at(path[:MAX_DEPTH])))
            continue
        expected = MAP_TAG if isinstance(node, MappingNode) else SEQ_TAG if isinstance(node, SequenceNode) else None
        secret = redacted(node.value if isinstance(node, ScalarNode) else None, at(path)) == HIDDEN
        if (node.tag != expected) if expected else (node.tag not in PLAIN_TAGS):
            words = _TAG_WORDS.get(node.tag, f"the tag {node.tag}")
            quoted = "" if secret or not isinstance(node, ScalarNode) else f" ({_quoted(node)})"
            problems.append(Problem(at(path), node.value if isinstance(node, ScalarNode) else None,
                                    f"line {_line(node)}: {words} is not plain data (JSON, Pulumi config and the "
                                    "Kubernetes API have no such value)",
                                    (f"quote it to keep it as text{quoted}, or " if isinstance(node, ScalarNode)
                                     else "") + "write a plain string, number, list or map"))
        if not kubectl and isinstance(node, ScalarNode) and node.tag == _Y + "int" \
                and _LEGACY_OCTAL.fullmatch(node.value) and not node.style and not secret:
            problems.append(Problem(at(path), node.value, f"line {_line(node)}: {node.value} has a leading zero: YAML 1.2 "
                                    f"reads it in base 10, the Pulumi CLI (yaml.v3) in base 8",
                                    f"write 0o{node.value.lstrip('+-0') or '0'} for the octal number, "
                                    f"{node.value.lstrip('+-0') or '0'} for the decimal one, or quote it for text"))
        if isinstance(node, ScalarNode) and node.tag == _Y + "int" and _beyond_64_bits(node.value):
            problems.append(Problem(at(path), None if secret else node.value[:40] + "...",
                                    f"line {_line(node)}: a whole number of {len(node.value):,} characters, beyond 64 "
                                    "bits (the Pulumi CLI's YAML reader, yaml.v3, keeps no such integer)",
                                    "give the intended number, or quote it for text"))
            continue
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


def _beyond_64_bits(text: str) -> bool:
    """An integer literal outside -2^63 .. 2^64-1 (read without converting a runaway literal: Python
    refuses to convert more than 4,300 digits)."""
    digits = text.replace("_", "").lstrip("+-")
    if len(digits) > 66:  # 0b and 64 binary digits is the longest in range
        return True
    try:
        value = int(digits[2:], {"0b": 2, "0o": 8, "0x": 16}[digits[:2].lower()]) if digits[:2].lower() in (
            "0b", "0o", "0x") else int(digits)
    except ValueError:
        return False
    return value >= 2**64


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
                                    "write the key as plain text (a {{ ... }} there is a Helm or Jinja template: "
                                    "render it first, e.g. helm template NAME CHART, and pass the rendered file)"))
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


def load_documents(text: str, where: str, strip: tuple[PathPart, ...] = (), numbered: bool = True,
                   kubectl: bool = False, lines: list[int] | None = None) -> list[Any]:
    """The documents of ``text`` as plain data (``where`` names the file in messages; key paths
    lose the leading ``strip``; ``lines``, when given, gets each document's first line, 1-based). Raises :class:`core.judging.problems.ConfigError` listing every
    problem of the first bad document (source ``<where>, document N``, or ``<where>`` alone
    when not ``numbered``: a stack file), text that is not YAML included (its line, column,
    rule and fix: :func:`syntax_problem`). ``kubectl``: scalars resolved as ``kubectl`` reads a
    manifest (:class:`KubectlLoader`, YAML 1.1 as yaml.v2); else as the Pulumi CLI reads a
    stack file (:class:`StrictLoader`, YAML 1.2 as yaml.v3)."""
    loader = KubectlLoader(text) if kubectl else StrictLoader(text)
    docs: list[Any] = []
    try:
        while True:
            source = f"{where}, document {len(docs) + 1}" if numbered else where
            try:
                if not loader.check_node():
                    break
                node: Node | None = loader.get_node()
            except YAMLError as err:
                raise NotYaml([syntax_problem(err, text)], where) from None
            except RecursionError:  # PyYAML's pure-Python composer, where the wheel has no libyaml
                raise ConfigError([_too_deep("(document root)")], source) from None
            if node is None:
                continue
            problems = node_problems(node, strip, kubectl)
            if problems:
                raise ConfigError(problems, source)
            docs.append(loader.construct_document(node))
            if lines is not None:
                lines.append(_line(node))
    finally:
        loader.dispose()
    return docs


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The 1-based line of every mapping key of the first document of ``text``, by key path
    (``("config", "llm-serving:workloads", "coder")``); ``{}`` when it is not YAML (its reader
    reports that)."""
    try:
        root = compose(text, Loader=StrictLoader)
    except YAMLError:
        return {}
    out: dict[tuple[str, ...], int] = {}
    todo: list[tuple[Node | None, tuple[str, ...]]] = [(root, ())]
    while todo:
        node, path = todo.pop()
        if isinstance(node, MappingNode):
            for k, v in node.value:
                out.setdefault(path + (str(k.value),), _line(k))
                todo.append((v, path + (str(k.value),)))
    return out


#: The container lists of a pod spec, as the API names them.
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")


def container_lines(text: str) -> dict[tuple[int, str], int]:
    """``(document's first line, container name) -> the line of that container's entry`` for every
    container of every document of ``text`` (any pod spec: a template's, a predictor's, a
    LeaderWorkerSet's); ``{}`` when it is not YAML."""
    out: dict[tuple[int, str], int] = {}
    try:
        roots = list(compose_all(text, Loader=StrictLoader))
    except YAMLError:
        return {}
    for root in roots:
        if root is None:
            continue
        first = _line(root)
        todo: list[Node] = [root]
        while todo:
            node = todo.pop()
            if not isinstance(node, MappingNode):
                todo.extend(_children(node))
                continue
            for k, v in node.value:
                if str(k.value) in CONTAINER_LISTS and isinstance(v, SequenceNode):
                    for item in v.value:
                        name = next((c.value for kk, c in item.value if kk.value == "name" and isinstance(c, ScalarNode)),
                                    None) if isinstance(item, MappingNode) else None
                        if name is not None:
                            out.setdefault((first, str(name)), _line(item))
                todo.append(v)
    return out


class NotYaml(ConfigError):  # noqa: N818
    """The text is not YAML: one problem (:func:`syntax_problem`), rendered as one line
    ``<file>: not valid YAML at line L, column C (<parser's words>): <cause>; fix: <fix>``."""

    def render(self) -> str:
        p = self.problems[0]
        return f"{self.source}: {p.rule.replace('not valid YAML', f'not valid YAML at {p.path}', 1)}; fix: {p.fix}"


def _too_deep(at: str) -> Problem:
    return Problem(at, None, f"nested more than {MAX_DEPTH} levels deep",
                   "flatten the data; no stack file or manifest nests this deep")


#: The common causes of text that is not YAML: (pattern on the parser's message, pattern on the
#: line it stopped at, the cause, the fix). The first that matches either explains the error.
_SYNTAX_CAUSES: tuple[tuple[str, str, str, str], ...] = (
    (r"^$", r"\{\{|\{%", "a template ({{ ... }}: Helm or Jinja), not YAML yet",
     "render it first (helm template NAME CHART > out.yaml, or kustomize build DIR) and pass the rendered file"),
    (r"'\\t'|\btab", r"^ *\t", "a tab character indents this line; YAML indents with spaces only",
     "replace the tabs with spaces (two per level)"),
    (r"mapping values are not allowed", r"^$", "a colon and a space inside a plain value",
     "quote the value (\"a: b\"), or put the key on its own line"),
    (r"could not find expected ':'|expected <block end>|did not find expected key", r"^$",
     "the indentation does not line up: a key is indented unlike its siblings",
     "indent each key of a map by the same number of spaces"),
    (r"exceeded maximum nesting depth", r"^$", f"nested deeper than the parser goes (more than {MAX_DEPTH} levels are "
     "refused anyway)", "flatten the data; no stack file or manifest nests this deep"),
    (r"found undefined alias|found unknown anchor", r"^$", "an alias (*name) refers to no anchor (&name) above it",
     "define the anchor first, or write the value out"),
)


def syntax_problem(err: YAMLError, text: str) -> Problem:
    """The :class:`core.judging.problems.Problem` for text that is not YAML: the line and column where
    the parser stopped (its path), the line's text (its value), what the parser found and why
    (its rule: a template, tabs, an unquoted colon, uneven indentation, an undefined alias),
    and the fix."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    said = " ".join(str(x) for x in (err.context, err.problem) if x) if isinstance(err, MarkedYAMLError) else str(err)
    lines = text.splitlines()
    source_line = lines[line - 1] if 0 < line <= len(lines) else ""
    rule, fix = f"not valid YAML: {said}", "correct the YAML at that line (a YAML linter, e.g. yamllint, shows where)"
    for on_message, on_line, why, how in _SYNTAX_CAUSES:
        if re.search(on_line, source_line) and on_line != r"^$" or on_message != r"^$" and re.search(on_message, said):
            rule, fix = f"not valid YAML ({said}): {why}", how
            break
    return Problem(f"line {line}, column {column}" if line else "(document)", source_line.strip()[:80] or None, rule, fix)
