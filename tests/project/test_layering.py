"""The layering, enforced on the imports of every module.

    core/        plain Python (pydantic, PyYAML, the kubernetes client's quantity parser):
                 imports nothing of the project but core, and no Pulumi
    components/  the program's ComponentResources: may import core (and Pulumi)
    stackfile/   the stack file: may import components and core
    policies/    the pack: may import core (and pulumi_policy), never components or tools
    tools/       the commands a user runs (preview, analyze, plan, adopt-diff, rollout): may import
                 everything but the test bed
    tools/offline/  the offline twin of the Pulumi CLI the commands share: never the commands
    testbed/     the real suite's toolchain, loopback cluster and stand-ins: may import everything

and no import cycle among the project's modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.paths import ROOT

POLICY_MODULES = {p.stem for p in (ROOT / "policies").glob("*.py")} | {"policylib"}


def _imports(path: Path) -> set[str]:
    """The top-level package of every module ``path`` imports (absolute imports)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def _files(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if "fixtures" not in p.parts)


#: What each layer may not import.
FORBIDDEN = {
    "core": {"components", "stackfile", "policies", "policylib", "tools", "testbed", "tests", "pulumi",
             "pulumi_kubernetes", "pulumi_policy"} | POLICY_MODULES,
    "components": {"stackfile", "policies", "policylib", "tools", "testbed", "tests"} | POLICY_MODULES,
    "stackfile": {"policies", "policylib", "tools", "testbed", "tests"} | POLICY_MODULES,
    "policies": {"components", "stackfile", "tools", "testbed", "tests", "pulumi_kubernetes"},
}


def _module_imports(path: Path) -> set[str]:
    """The full dotted name of every module ``path`` imports, ``from tools import x`` as ``tools.x``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return out


def test_tools_never_import_the_test_bed():
    """Nothing a user runs (tools/, tools/offline/ included) imports testbed/."""
    wrong = {str(p.relative_to(ROOT)): sorted(_imports(p) & {"testbed"}) for p in _files("tools")}
    assert {k: v for k, v in wrong.items() if v} == {}


def test_offline_never_imports_the_commands():
    """tools/offline/ is what the commands share: it imports none of tools/'s commands (the shared
    command line, tools/cli.py, is not a command)."""
    commands = {f"tools.{p.stem}" for p in (ROOT / "tools").glob("*.py") if p.stem not in ("__init__", "cli")}
    assert {"tools.preview", "tools.analyze", "tools.plan", "tools.adopt_diff", "tools.rollout"} <= commands
    wrong = {}
    for path in _files("tools/offline"):
        bad = _module_imports(path) & commands
        if bad:
            wrong[str(path.relative_to(ROOT))] = sorted(bad)
    assert wrong == {}


#: The tools that import the policy pack's own modules, and what of it they read: the analyzer's pack run
#: (``policylib.coverage``). The stack config keys the pack reads are ``core.base.stackkeys``' (the
#: preview passes them to the pack it starts). The policy reference pages are docs/gen.py's, outside tools/.
PACK_DRIVERS = {"tools/offline/packrun.py"}


def test_tools_never_import_the_packs_internals():
    """tools/ and tools/offline/ (the summary, the plan's transitions) read manifests, capacity and
    the stack-file terms from core/, as the pack does; only the tools that run or list the pack
    import policylib, and only what :data:`PACK_DRIVERS` says."""
    importing = {str(p.relative_to(ROOT)) for p in _files("tools") if _imports(p) & {"policylib", "policies"}}
    assert importing == PACK_DRIVERS
    for rel in PACK_DRIVERS:
        used = {m for m in _module_imports(ROOT / rel) if m.startswith("policylib.")}
        assert used <= {"policylib.coverage"}, (rel, used)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_point_down(layer):
    wrong = {}
    for path in _files(layer):
        bad = _imports(path) & FORBIDDEN[layer]
        if layer == "policies":
            bad -= POLICY_MODULES  # the pack's own modules
        if bad:
            wrong[str(path.relative_to(ROOT))] = sorted(bad)
    assert wrong == {}


def _depth(package: str) -> tuple[str, ...]:
    """The longest chain of imports among ``package``'s own modules (absolute imports anywhere in
    a module, counting modules): how deep one must read to understand its deepest module."""
    modules = {p.stem: p for p in (ROOT / package).glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for stem, path in modules.items():
        graph[stem] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            graph[stem] |= {n.split(".")[1] for n in names if n.startswith(package + ".") and n.split(".")[1] in modules}

    def chain(stem: str) -> tuple[str, ...]:
        return (stem,) + max((chain(d) for d in graph[stem]), key=len, default=())

    return max((chain(stem) for stem in modules), key=len)


def test_components_import_at_most_three_levels_deep():
    """A component reads its args and the shared pod parts, then core: e.g. vllm -> workload ->
    pod (the stack-file loader once stood between them: nine levels, stack -> ... -> objects)."""
    assert len(_depth("components")) <= 3, _depth("components")


def test_the_shared_modules_live_in_core():
    """The shared models live in core's packages (tests/project/test_core_layering.py), never in
    the program's components."""
    for path in ("base/facts", "capacity/inventory", "catalog/modelfacts", "capacity/estimator", "k8s/quantity",
                 "capacity/allocation", "engines/config", "judging/problems", "rulebook/servers"):
        assert (ROOT / "core" / f"{path}.py").exists(), path
        assert not (ROOT / "components" / f"{path.rsplit('/', 1)[1]}.py").exists(), path


def test_the_stack_file_is_split_by_job():
    """Schema (models), loader (loading and error translation), checks (cross-checks), objects
    (rendered and left alone), build (config -> component args -> components); the rules the
    component args share are core's rulebook; the package's ``__init__`` only names the public API."""
    import stackfile
    from core import rulebook
    from stackfile import build, checks, loader, objects, schema

    assert hasattr(schema, "StackConfig") and not hasattr(schema, "load_stack_config")
    assert hasattr(loader, "load_stack_config") and not hasattr(loader, "rule_tp_divides")
    assert hasattr(checks, "cross_checks") and hasattr(rulebook, "tp_divides")
    assert hasattr(objects, "left_alone_text") and hasattr(build, "build_stack")
    assert not hasattr(rulebook, "cross_checks")
    assert not hasattr(checks, "load_stack_config")
    for module in (schema, loader, checks, objects, build, rulebook):
        assert len(Path(module.__file__).read_text().splitlines()) < 400, module.__name__
    source = Path(stackfile.__file__).read_text()
    assert "def " not in source and "class " not in source
    assert not (ROOT / "components" / "config.py").exists()


def test_no_sys_path_edits():
    """Imports resolve through the installed packages (requirements.txt: -e ./core, -e ./policies),
    the pack's own directory and pytest's ``pythonpath``; no module edits ``sys.path``."""
    edits = []
    for path in sorted(ROOT.rglob("*.py")):
        if any(p.startswith((".venv", "venv", ".git")) for p in path.parts) or "fixtures" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
                    and node.value.id == "sys"):
                edits.append(str(path.relative_to(ROOT)))
    assert edits == []


def _module_graph() -> dict[str, set[str]]:
    """Every project module (core, components, stackfile, policies, tools, testbed) and the project
    modules it imports anywhere in its file (function-level imports too), by dotted name."""
    import ast

    files: dict[str, Path] = {}
    for top in ("core", "components", "stackfile", "tools", "testbed"):
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for path in (ROOT / "policies").rglob("*.py"):
        if "fixtures" in path.parts or "venv" in path.parts:
            continue
        parts = path.relative_to(ROOT / "policies").with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                # ``from pkg import module`` depends on the module; ``from pkg import name`` on pkg
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            for target in targets:
                while target and target not in files:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def test_no_import_cycle_among_the_projects_modules():
    """A module never imports, directly or through others, a module that imports it (a package's
    ``__init__`` counts as the package): each layer and each module can be read bottom-up."""
    graph = _module_graph()
    assert len(graph) > 100
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for nxt in sorted(graph[name]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt] if nxt in path else [name, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == [], cycles
