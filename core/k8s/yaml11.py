"""YAML read as ``kubectl`` reads a manifest: sigs.k8s.io/yaml's ``YAMLToJSON``, which decodes with
Go's ``go.yaml.in/yaml/v2`` (v2.4, YAML 1.1 rules) into untyped values, then writes JSON.

What differs from the Pulumi CLI's reading (:mod:`core.base.yaml12`, yaml.v3, YAML 1.2):

- ``0700`` is octal, 448 (Go's ``strconv.ParseInt(text, 0, 64)``), as are ``0o700``; ``0x1F`` is 31,
  ``0b11`` 3; ``_`` separators are dropped first;
- ``y`` / ``Y`` / ``yes`` / ``on`` / ``n`` / ``no`` / ``off`` (and their capitalised forms) are
  booleans, beside ``true`` / ``false``;
- a number that is no Go integer but matches yaml.v2's float pattern is a float: ``08`` is 8.0,
  ``1e3`` 1000.0;
- a date (``2024-01-01``) stays text: yaml.v2 keeps timestamp-like values as strings when it
  decodes into an untyped value ("for backward compatibility reasons", its ``decode.go``);
- no base 60: ``5:00`` is text (yaml.v2's ``resolve.go``: "purposefully unsupported").

Source: go.yaml.in/yaml/v2 v2.4 ``resolve.go`` ``resolve()`` and ``resolveMapList`` (the module
sigs.k8s.io/yaml's ``go.mod`` pins). :class:`Yaml11Loader` is PyYAML's safe loader with that
resolution in place of PyYAML's own YAML 1.1 table (which has base 60, no ``y`` / ``n``, and
floats only with a dot).

Plain Python (PyYAML).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Y = "tag:yaml.org,2002:"

#: yaml.v2's ``resolveMapList``: the plain scalars looked up by their whole text.
TRUE = ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
FALSE = ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")


class Yaml11Loader(_BASE):
    """PyYAML's safe loader resolving plain scalars as yaml.v2 does (see the module docstring);
    maps, lists, anchors, merge keys and quoted scalars as PyYAML reads them."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, Any]]] = {}


def _text(value: str) -> str:
    return value.replace("_", "")


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    """A Go integer literal (``strconv.ParseInt(text, 0, 64)``, ``_`` dropped): ``0700`` is 448."""
    text = _text(str(loader.construct_scalar(node)))
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    for prefix, base in (("0x", 16), ("0o", 8), ("0b", 2)):
        if digits[:2].lower() == prefix:
            return sign * int(digits[2:], base)
    if len(digits) > 1 and digits.startswith("0"):
        return sign * int(digits[1:], 8)
    return sign * int(digits, 10)


def _construct_float(loader: Any, node: yaml.ScalarNode) -> float:
    """A float as Go's ``strconv.ParseFloat`` reads yaml.v2's float forms (``08`` is 8.0, ``.5`` 0.5)."""
    text = _text(str(loader.construct_scalar(node)))
    low = text.lower().lstrip("+-")
    if low in (".inf", ".nan"):
        return float("nan") if low == ".nan" else (-1.0 if text.startswith("-") else 1.0) * float("inf")
    return float(text)


def _construct_bool(loader: Any, node: yaml.ScalarNode) -> bool:
    return str(loader.construct_scalar(node)) in TRUE


# PyYAML resolves a plain scalar by the first regex (of those registered for its first character)
# that matches the whole text; these regexes are exact for yaml.v2's forms.
_BOOL_RE = re.compile("^(?:" + "|".join(TRUE + FALSE) + ")$")
_NULL_RE = re.compile(r"^(?:~|null|Null|NULL|)$")  # and the empty scalar
_INT_RE = re.compile(r"^[-+]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)$")
_FLOAT_RE = re.compile(r"^(?:[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


def plain_is_text(text: str) -> bool:
    """True when ``text`` written as a plain (unquoted) scalar reads back as that text under
    yaml.v2's resolution: ``"y"``, ``"0700"`` and ``"1e3"`` do not (a writer must quote them)."""
    first = text[:1]
    for tag, regexp in Yaml11Loader.yaml_implicit_resolvers.get(first, []):
        if tag != _Y + "merge" and regexp.match(text):
            return False
    return True


def resolve(text: str) -> Any:
    """The value yaml.v2 gives the plain scalar ``text`` (for tests and messages): bool, None, int,
    float or the text itself."""
    return yaml.load(f"a: {text}\n", Loader=Yaml11Loader)["a"]


Yaml11Loader.add_implicit_resolver(_Y + "bool", _BOOL_RE, list("yYnNtTfFoO"))
Yaml11Loader.add_implicit_resolver(_Y + "null", _NULL_RE, ["~", "n", "N", ""])
Yaml11Loader.add_implicit_resolver(_Y + "int", _INT_RE, list("-+0123456789"))
Yaml11Loader.add_implicit_resolver(_Y + "float", _FLOAT_RE, list("-+0123456789."))
Yaml11Loader.add_implicit_resolver(_Y + "merge", re.compile(r"^<<$"), ["<"])
Yaml11Loader.add_constructor(_Y + "int", _construct_int)
Yaml11Loader.add_constructor(_Y + "float", _construct_float)
Yaml11Loader.add_constructor(_Y + "bool", _construct_bool)
