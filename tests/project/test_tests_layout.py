"""The tests' layout mirrors the code (docs/testing.md): every test module sits in a folder of tests/
named as the code folder it tests (tests/core/k8s/manifests/ for core/k8s/manifests/, tests/policies/ for
policies/, ...), or in tests/project/ for checks of the whole project. tests/real/ (the real
suite, selected by its marker) and tests/heldout/ (data) keep their own places. A flat
tests/test_x.py, or a folder no code folder matches, fails here with where it should go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.paths import ROOT

TESTS = ROOT / "tests"
#: Folders of tests/ that mirror no code folder: whole-project checks, the real suite, held-back data.
OWN_FOLDERS = {"project", "real", "heldout"}


def misplaced(test_files: list[Path]) -> list[str]:
    """Each test module (a path under tests/) that is not under a folder mirroring a code folder
    (one holding .py files at the same path from the project root) nor under an own folder, with
    the fix."""
    problems = []
    for path in test_files:
        parts = path.relative_to(TESTS).parts[:-1]
        if parts and parts[0] in OWN_FOLDERS:
            continue
        code = ROOT.joinpath(*parts)
        if not parts or not code.is_dir() or not any(code.glob("*.py")):
            problems.append(f"{path.relative_to(ROOT).as_posix()}: move it to tests/<code folder it tests>/ "
                            "(e.g. tests/core/, tests/tools/offline/) or tests/project/ (docs/testing.md)")
    return problems


def _test_files() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_module_mirrors_the_code_it_tests():
    assert misplaced(_test_files()) == []


def test_every_test_folder_is_a_package():
    """Two modules of one name in two folders (tests/core/test_x.py, tests/tools/test_x.py) import
    apart only as packages."""
    folders = {p.parent for p in _test_files()}
    assert sorted(f.relative_to(ROOT).as_posix() for f in folders if not (f / "__init__.py").is_file()) == []


@pytest.mark.parametrize("path, ok", [
    ("test_flat.py", False),
    ("nowhere/test_x.py", False),
    ("fixtures/test_x.py", False),
    ("core/test_x.py", True),
    ("core/k8s/manifests/test_x.py", True),
    ("policies/policylib/test_x.py", True),
    ("tools/offline/test_x.py", True),
    ("project/test_x.py", True),
    ("real/test_real_x.py", True),
])
def test_the_check_refuses_a_flat_or_unmatched_test_module(path, ok):
    assert (misplaced([TESTS / path]) == []) is ok
