"""docs/adding-a-policy.md's worked example, built from the page and run through the pack's runner.

The page's blocks must edit the rule family's file and the policy's fixtures, nothing else. Its
Python block (the rule, the check and the record for ``core/rulebook/<family>.py``) becomes one
module in a temporary folder, its YAML blocks the fixtures under a temporary ``fixtures/<policy>/``;
the pack joins the record like any other, the one fixture runner
(:func:`tests.policy_harness.check_case`) judges it, and its page is generated. Everything the
example filed is taken out of the registries afterwards.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

from core.judging import registry
from policylib import declare, waivers
from policylib.pack import records
from tests.paths import ROOT
from tests.policy_harness import check_case, fixture_cases

PAGE = ROOT / "docs" / "adding-a-policy.md"
NAME = "gpu-replicas-declared"
#: A fenced block of the page: its language and its text (the first line names its file).
_BLOCK = re.compile(r"^```(python|yaml)\n(.*?)^```", re.M | re.S)
#: The block's first line: its file, the names it says the family imports, and the import it adds.
_FIRST = re.compile(r"# (?P<file>\S+) \(the family imports (?P<names>[^;]+); add: (?P<add>[^)]+)\)")


def _header(first_line: str) -> str:
    """The family module's own imports (each top-level import statement of the file the block names),
    then the import the block says to add: what the block is appended to. The names the line says
    the family imports must be among them."""
    m = _FIRST.fullmatch(first_line.strip())
    assert m, f"{PAGE.name}: the Python block starts '# <file> (the family imports A, B and C; add: <import>)'"
    source = (ROOT / m["file"]).read_text(encoding="utf-8")
    imports = [n for n in ast.parse(source).body if isinstance(n, ast.Import | ast.ImportFrom)]
    have = {a.asname or a.name for n in imports for a in n.names}
    said = set(re.split(r", | and ", m["names"]))
    assert said <= have, f"the page says {m['file']} imports {sorted(said - have)}; it does not"
    return "\n".join([*(ast.get_source_segment(source, n) or "" for n in imports), m["add"]]) + "\n"


def _blocks() -> list[tuple[str, str, str]]:
    """``(language, destination, text)`` of each fenced Python or YAML block of the page."""
    out = []
    for language, text in _BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        first = text.splitlines()[0]
        assert first.startswith("# "), f"{PAGE.name}: a block starts with '# <its file>': {first}"
        out.append((language, first[2:].split(" ")[0], text))
    return out


def test_the_example_edits_its_family_and_its_fixtures_only():
    """Adding a policy touches its rule family's file and its fixtures, nothing else."""
    dests = [dest for _, dest, _ in _blocks()]
    assert [d for d in dests if not d.startswith(f"policies/fixtures/{NAME}/")] == ["core/rulebook/pods.py"], dests
    assert (ROOT / "core" / "rulebook" / "pods.py").is_file()


@pytest.fixture
def example(tmp_path, monkeypatch):
    """The page's example declared from a temporary module, its fixtures under ``tmp_path``."""
    blocks = _blocks()
    (code,) = (text for language, _, text in blocks if language == "python")
    module_path = tmp_path / "pods_example.py"
    module_path.write_text(_header(code.splitlines()[0]) + "\n\n" + code, encoding="utf-8")
    fixtures = tmp_path / "fixtures"
    for language, dest, text in blocks:
        if language == "yaml":
            rel = Path(dest).relative_to("policies/fixtures")
            (fixtures / rel).parent.mkdir(parents=True, exist_ok=True)
            (fixtures / rel).write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("pods_example", module_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "pods_example", module)
    try:
        spec.loader.exec_module(module)
        records()
        yield declare.POLICIES[NAME], fixtures
    finally:
        for table in (declare.POLICIES, declare._BUILT, declare.VALIDATES, registry.RULES, registry.POLICIES,
                      waivers.VALIDATES):
            table.pop(NAME, None)


def test_the_page_example_is_a_policy_the_runner_judges(example):
    record, fixtures = example
    assert (record.kind, record.level.value, record.family) == ("resource", "advisory", "pods_example")
    assert [r.id for r in record.rules] == [NAME]
    assert record.does_not_check.startswith("StatefulSets and InferenceServices")
    policy = record.policy()
    assert policy.description.startswith("A Deployment that holds cards writes spec.replicas")
    cases = fixture_cases(NAME, "allowed", fixtures) + fixture_cases(NAME, "disallowed", fixtures)
    assert [c.parent.name for c in cases] == ["allowed", "disallowed"]
    for case in cases:
        check_case(policy, case)


def test_the_page_example_gets_its_generated_page(example, monkeypatch):
    from docs import gen  # noqa: PLC0415 - the docs generator, for the one page

    record, fixtures = example
    monkeypatch.setattr(gen, "FIXTURES", fixtures)
    monkeypatch.setattr(gen, "ROOT", fixtures.parent)
    page = gen.policy_page(record.policy())
    assert page.startswith("<!-- generated by python3 dev.py docs from pods_example.py and policies/fixtures/gpu-replicas-declared/")
    assert "| `gpu-replicas-declared` | A Deployment that holds cards writes spec.replicas. |" in page
    assert "- [`replicas-left-out.yaml`](../../fixtures/gpu-replicas-declared/disallowed/replicas-left-out.yaml)" in page


def test_the_example_is_gone_after_the_test():
    """The registries hold the pack's own policies only (the example's fixture cleaned them up)."""
    assert NAME not in declare.POLICIES and NAME not in registry.RULES and NAME not in registry.POLICIES
