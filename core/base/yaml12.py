"""YAML read as the Pulumi CLI reads it: YAML 1.2's core schema, as Go's ``gopkg.in/yaml.v3`` does.

What changes from YAML 1.1 (PyYAML's own reading): ``5:00`` is the text "5:00", not 300 (base
60); ``yes`` / ``no`` / ``on`` / ``off`` / ``y`` / ``n`` are text, not booleans (only
``true`` / ``false`` in three spellings are); ``0o17`` is 15 and ``1e3`` is 1000.0 (both text in
YAML 1.1); ``0777`` is 777 in base 10 (YAML 1.1 and yaml.v3: 511, base 8; the project's strict
loader refuses it as ambiguous, ``tools.offline.yamlload``).

:class:`Yaml12Loader` is PyYAML's safe loader (libyaml's parser where the wheel has it: about
five times ruamel.yaml's pure-Python parser on bench/genstack.py's 870 KB stack) with
ruamel.yaml's YAML 1.2 implicit-resolver table (``ruamel.yaml.resolver.implicit_resolvers``, the
entries for version 1.2) in place of PyYAML's 1.1 one, and the integer constructor of YAML
1.2 (``0b``, ``0o``, ``0x`` prefixes; no base 60). The catalogs (``core.catalog.datafile``) and every
input the tools read (``tools.offline.yamlload``) use it.

Plain Python (PyYAML, ruamel.yaml).
"""

from __future__ import annotations

from typing import Any

import yaml
from ruamel.yaml import resolver as _ruamel_resolver

_BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
INT_TAG = "tag:yaml.org,2002:int"
#: The YAML version whose resolution the loader takes from ruamel.yaml's table.
VERSION = (1, 2)


class Yaml12Loader(_BASE):
    """PyYAML's safe loader resolving plain scalars by YAML 1.2's core schema (see the module
    docstring); maps, lists, anchors and quoted scalars as PyYAML reads them."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, Any]]] = {}


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    """A YAML 1.2 integer: ``[-+]`` then ``0b`` / ``0o`` / ``0x`` digits or decimal digits
    (``_`` separators allowed, as ruamel.yaml's resolver and yaml.v3 allow them)."""
    text = str(loader.construct_scalar(node)).replace("_", "")
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    for prefix, base in (("0b", 2), ("0o", 8), ("0x", 16)):
        if digits[:2].lower() == prefix:
            return sign * int(digits[2:], base)
    return sign * int(digits, 10)


for _versions, _tag, _regexp, _first in _ruamel_resolver.implicit_resolvers:
    if VERSION in _versions:
        Yaml12Loader.add_implicit_resolver(_tag, _regexp, _first)
Yaml12Loader.add_constructor(INT_TAG, _construct_int)
