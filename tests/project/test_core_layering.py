"""core/ cut by job: one package a layer, each importing only the layers below it.

    base            the facts, stack config keys, input files, YAML 1.2   imports nothing of core
    judging         message form, rule registry, the fix's wording       base
    k8s             Kubernetes' value rules and types, YAML 1.1          base
    catalog         cards, images, models (core/data/)                    base, judging, k8s
    engines         flags, settings models, contract, served names        ... catalog
    capacity        inventory, measured, allocation, estimator            ... engines
    k8s/manifests   the manifest read model                               ... capacity
    rulebook        the rule families                                     everything above

Imports anywhere in a module count (function-level ones too). core/ itself holds no module but
its ``__init__``; the rulebook imports its families at import (no lazy ``__getattr__``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import ROOT

CORE = ROOT / "core"

#: Each layer of core (a folder under core/) and the layers it may import, lowest first.
MAY_IMPORT: dict[str, set[str]] = {
    "base": set(),
    "judging": {"base"},
    "k8s": {"base"},
    "catalog": {"base", "judging", "k8s"},
    "engines": {"base", "judging", "k8s", "catalog"},
    "capacity": {"base", "judging", "k8s", "catalog", "engines"},
    "k8s/manifests": {"base", "judging", "k8s", "catalog", "engines", "capacity"},
    "rulebook": {"base", "judging", "k8s", "catalog", "engines", "capacity", "k8s/manifests"},
}


def layer_of(parts: list[str]) -> str:
    """The layer of a module, by its dotted name's parts after ``core`` (``["k8s", "manifests",
    "pods"]`` -> ``k8s/manifests``); ``""`` for core's own ``__init__``."""
    if parts[:2] == ["k8s", "manifests"]:
        return "k8s/manifests"
    return parts[0] if parts else ""


def core_imports(source: str) -> set[str]:
    """The layers of core a module's source imports (absolute imports, anywhere in the file;
    ``from core import x`` counts as layer x)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        out |= {layer_of(n.split(".")[1:]) for n in names if n.split(".")[0] == "core"}
    return out


def forbidden(layer: str, source: str) -> list[str]:
    """The layers a module of ``layer`` with ``source`` imports that the table does not let it."""
    return sorted(core_imports(source) - MAY_IMPORT[layer] - {layer})


def wrong_imports(layer: str, files: list[Path]) -> dict[str, list[str]]:
    """Each file of ``layer`` that imports a layer it may not, with those layers."""
    found = {path.relative_to(ROOT).as_posix(): forbidden(layer, path.read_text()) for path in files}
    return {k: v for k, v in found.items() if v}


def files_of(layer: str) -> list[Path]:
    """The modules of ``layer``: its folder's, without a nested layer's (k8s without k8s/manifests)."""
    folder = CORE / layer
    nested = [CORE / other for other in MAY_IMPORT if other != layer and (CORE / other).is_relative_to(folder)]
    return sorted(p for p in folder.rglob("*.py") if not any(p.is_relative_to(n) for n in nested))


def test_core_holds_only_the_layers():
    """No flat module under core/ but its ``__init__``; every package is a layer of the table."""
    assert sorted(p.name for p in CORE.glob("*.py")) == ["__init__.py"]
    packages = {p.parent.relative_to(CORE).as_posix() for p in CORE.rglob("__init__.py") if p.parent != CORE}
    assert packages == set(MAY_IMPORT)


@pytest.mark.parametrize("layer", list(MAY_IMPORT))
def test_each_layer_imports_only_the_layers_below(layer):
    assert files_of(layer), layer
    assert wrong_imports(layer, files_of(layer)) == {}


def test_the_table_is_layered():
    """Each layer may import only layers listed before it: the table admits no cycle."""
    order = list(MAY_IMPORT)
    for i, layer in enumerate(order):
        assert MAY_IMPORT[layer] <= set(order[:i]), layer


@pytest.mark.parametrize("layer, source, bad", [
    ("engines", "from core.rulebook import servers\n", ["rulebook"]),
    ("k8s", "def f():\n    from core.k8s.manifests import pods\n", ["k8s/manifests"]),
    ("catalog", "from core import capacity\n", ["capacity"]),
    ("capacity", "import core.catalog.cards\nfrom core.k8s import quantity\n", []),
])
def test_the_check_finds_an_import_upward(layer, source, bad):
    assert forbidden(layer, source) == bad


def test_the_rulebook_imports_every_family_at_import():
    """Each module of core/rulebook/ but the capacity view is a family the package imports by name;
    no ``__getattr__`` or importlib defers one (the import cycle that once needed it is gone)."""
    from core import rulebook

    source = (CORE / "rulebook" / "__init__.py").read_text()
    assert "importlib" not in source and "__getattr__" not in source
    families = {p.stem for p in (CORE / "rulebook").glob("*.py")} - {"__init__", "capacity_view"}
    listed = {m.__name__.rsplit(".", 1)[1] for m in rulebook.FAMILIES if m.__name__.split(".")[1] == "rulebook"}
    assert listed == families
