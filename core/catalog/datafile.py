"""The catalogs as data: read a YAML file under ``core/data/`` and validate it with its pydantic
type; write the JSON Schema of that type beside it.

``core/data/models.yaml`` (the model catalog, :data:`core.catalog.modelfacts.CATALOG`) and
``core/data/cards.yaml`` (the card catalog, :data:`core.catalog.cards.CARDS`) are read once, when their
module is imported. Each file's schema, ``core/data/<name>.schema.json``, is generated from
the same pydantic type that validates the file at load (an editor or ``check-jsonschema`` can
use it); ``tests/core/test_catalog_data.py`` checks the committed schemas are what the types
generate. Regenerate them after changing a type:

    python -m core.catalog.schemas

A file that does not validate raises :class:`DataFileError` (a :class:`core.judging.problems.ConfigError`) listing every problem
as file, entry and key (``core/data/models.yaml, entry Qwen/Qwen3-14B, key
num_hidden_layers``), the value found there, and pydantic's rule. The files are plain data
read as the Pulumi CLI reads YAML (YAML 1.2, :class:`core.base.yaml12.Yaml12Loader`); the tests read
them again with the project's strict loader (``tools.offline.yamlload``: each key once, plain
tags only).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError

from core.base.yaml12 import Yaml12Loader
from core.judging.problems import ConfigError, Problem

#: The directory of the data files (shipped with the package: pyproject.toml's package-data).
DATA_DIR = Path(__file__).resolve().parent.parent / "data"


class DataFileError(ConfigError):
    """A catalog file under ``core/data/`` that cannot be read or does not validate: the install is
    damaged (not the user's input, not a bug), so the commands end with exit 2 and the fix."""

    def __init__(self, problems: list[Problem], source: str):
        restore = (f"restore it: git checkout -- {source} (in a checkout), or reinstall the package")
        super().__init__([Problem(p.path, p.value, p.rule, f"{p.fix}, or {restore}") for p in problems], source)


def _where(name: str, suffix: str = "yaml") -> str:
    return f"core/data/{name}.{suffix}"


def _entry(raw: Any, head: Any, name_key: str) -> str:
    """The entry a pydantic error is in: a mapping's key, or a list item's ``name_key`` value."""
    if isinstance(head, int) and isinstance(raw, list) and 0 <= head < len(raw) and isinstance(raw[head], dict):
        return f"{raw[head].get(name_key, '?')} (item {head})"
    return str(head)


def problems(name: str, err: ValidationError, raw: Any = None, name_key: str = "", suffix: str = "yaml") -> list[Problem]:
    """One :class:`Problem` per pydantic error of ``core/data/<name>.yaml`` (``raw``, its parsed
    data): the path names the file, the entry (a mapping's key, or a list item's ``name_key``
    value) and the key within it, ``core/data/models.yaml, entry Qwen/Qwen3-14B, key
    num_hidden_layers``; the value is what the file has there (missing: None)."""
    out = []
    for e in err.errors(include_url=False):
        loc = list(e["loc"])
        path = _where(name, suffix)
        if loc:
            path += f", entry {_entry(raw, loc[0], name_key)}"
        if loc[1:]:
            path += ", key " + ".".join(str(part) for part in loc[1:])
        out.append(Problem(
            path=path,
            value=None if e["type"] == "missing" else e.get("input"),
            rule=str(e["msg"]),
            fix=f"correct the entry in {_where(name, suffix)} (its schema: core/data/{name}.schema.json)",
        ))
    return out


@dataclass(frozen=True)
class Catalog:
    """One data file: ``core/data/<name>.yaml``, the pydantic type that validates it, and its
    schema's title and description. ``name_key`` names a list's entries in errors (``product``)."""

    name: str
    adapter: TypeAdapter[Any]
    title: str
    description: str
    name_key: str = ""
    #: ``yaml`` (hand-kept catalogs) or ``json`` (generated data, :mod:`core.engines.contracts`: read fast).
    suffix: str = "yaml"

    @property
    def path(self) -> Path:
        """``core/data/<name>.yaml`` (or ``.json``)."""
        return DATA_DIR / f"{self.name}.{self.suffix}"

    @property
    def schema_path(self) -> Path:
        """``core/data/<name>.schema.json``."""
        return DATA_DIR / f"{self.name}.schema.json"

    def load(self) -> Any:
        """The file's data, validated. Raises :class:`core.judging.problems.ConfigError` naming the file,
        entry, key and value of every problem (for a file that is not YAML: PyYAML's line)."""
        where = _where(self.name, self.suffix)
        try:
            text = self.path.read_text(encoding="utf-8")
            raw = json.loads(text) if self.suffix == "json" else yaml.load(text, Loader=Yaml12Loader)
        except (yaml.YAMLError, OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
            raise DataFileError([Problem(where, None, f"not readable {self.suffix.upper()}: {' '.join(str(err).split())[:300]}",
                                         "correct the file")], where) from None
        try:
            return self.adapter.validate_python(raw)
        except ValidationError as err:
            raise DataFileError(problems(self.name, err, raw, self.name_key, self.suffix), where) from None

    def schema(self) -> dict[str, Any]:
        """The file's JSON Schema (draft 2020-12, as pydantic generates it for ``adapter``)."""
        generated = self.adapter.json_schema(mode="validation")
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": self.title,
                "description": self.description, **generated}

    def schema_text(self) -> str:
        """:meth:`schema` as the committed file's text (two-space indent, a final newline)."""
        return json.dumps(self.schema(), indent=2, ensure_ascii=False) + "\n"
