"""No development-tracker issue numbers in the code, tests, fixtures or docs, nor in file names.

A number of this project's own tracker means nothing to the next maintainer; a statement cites
what it rests on instead: a seed (000..004), coder.yaml, reasoning.yaml, the spec, a public
document, or a public issue with its repository (``vllm-project/vllm #34199``,
``kserve/kserve issue 2743``). The scan covers every text file of the tree but the dated
benchmark logs (``bench/results/``), virtualenvs, caches and outputs, and this file, whose
examples are the pattern itself.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.paths import ROOT

#: "issue 10", "Issues 7", "issue #3", "issue-12", "test_issue10": the word, then a number.
TRACKER_NUMBER = re.compile(r"(?<![A-Za-z])[Ii]ssues?[ _-]?#?\d+")
#: What a public reference has just before the word: its repository, ``owner/name``, and a space.
REPOSITORY_BEFORE = re.compile(r"[\w.-]+/[\w.-]+[\s,:]+$")

#: Directories not scanned, by name anywhere in the tree.
SKIPPED_NAMES = {".git", ".venv", ".venv-pack", "venv", "__pycache__", ".pytest_cache", ".mypy_cache",
                 ".ruff_cache", ".hypothesis", "node_modules"}
#: Directories not scanned, by path from the root: the dated benchmark logs, the rendered outputs.
SKIPPED_PATHS = {"bench/results", "out", "rendered"}
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()


def tracker_numbers(text: str) -> list[str]:
    """Each tracker issue reference in ``text`` (the matched words), public ones left out."""
    return [m.group(0) for m in TRACKER_NUMBER.finditer(text)
            if not REPOSITORY_BEFORE.search(text[max(0, m.start() - 100):m.start()])]


def _tree() -> list[str]:
    """Every file of the tree, as a path from the root, but the skipped directories and this file."""
    out = []
    for folder, dirs, files in os.walk(ROOT):
        rel = Path(folder).relative_to(ROOT).as_posix()
        dirs[:] = [d for d in dirs if d not in SKIPPED_NAMES and not d.endswith(".egg-info")
                   and (d if rel == "." else f"{rel}/{d}") not in SKIPPED_PATHS]
        out += [name if rel == "." else f"{rel}/{name}" for name in files]
    return sorted(p for p in out if p != SELF)


def _text(path: str) -> str:
    """The file's text, or "" for a binary or non-UTF-8 file."""
    data = (ROOT / path).read_bytes()
    if b"\0" in data:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""


@pytest.mark.parametrize("text, found", [
    ("Source: seed 002; issue 10 (memory requests).", ["issue 10"]),
    ("(Issue 12 kind 7)", ["Issue 12"]),
    ("after the issues 7, 9 and 12 work", ["issues 7"]),
    ("tests/test_issue10_stack_file.py", ["issue10"]),
    ("see issue #3", ["issue #3"]),
    ("vllm-project/vllm #34199; kserve/kserve issue 2743", []),
    ("pulumi/pulumi-kubernetes, issue 1693", []),
    ("the tissue 5 and the issue's worst case", []),
])
def test_the_pattern_finds_tracker_numbers_and_leaves_public_issues(text, found):
    assert tracker_numbers(text) == found


def test_no_file_name_carries_a_tracker_number():
    assert [p for p in _tree() if tracker_numbers(p)] == []


def test_no_file_cites_a_tracker_number():
    found = {p: hits for p in _tree() if (hits := tracker_numbers(_text(p)))}
    assert found == {}, "cite the seed, spec or public source instead: " + repr(found)
