"""bench/peers_bench.py's ``--base REV``: the two commands of another revision run from a
``git archive`` of it, their own code loaded (not this checkout's), in the same rounds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import peers_bench
from tests.paths import ROOT


def test_base_rows_run_the_archived_revisions_own_code(tmp_path):
    base = peers_bench.archive("HEAD", tmp_path)
    assert base.label == "@HEAD" and (base.root / "tools" / "analyze.py").is_file()
    assert (base.root / "policies" / "core").is_symlink()  # the pack's core, as in the checkout
    assert list((base.root / "core" / "base" / "__pycache__").glob("stackkeys.*.pyc"))  # compiled as dev.py does
    cmds = peers_bench.commands(Path("/m"), Path("/inv.yaml"), tmp_path / "preview", base)
    assert list(cmds) == ["analyze", "preview", "analyze@HEAD", "preview@HEAD", *[n for n in cmds if "@" not in n
                                                                                 and n not in ("analyze", "preview")]]
    cmd, tree = cmds["analyze@HEAD"]
    assert cmd[1:3] == ["-m", "tools.analyze"] and tree == base
    assert cmds["preview@HEAD"][0][-1] == str(tmp_path / "preview-HEAD")  # its own --out
    where = subprocess.run([sys.executable, "-c", "import tools.analyze, core, policylib; "
                            "print(tools.analyze.__file__, core.__file__, policylib.__file__)"],
                           cwd=tree.root, env={**os.environ, **(tree.env or {})},
                           capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(p).is_relative_to(base.root) for p in where), where
    assert cmds["analyze"][1].root == ROOT and cmds["analyze"][1].env is None


def test_an_unknown_base_is_bad_input_with_the_fix(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"--base no-such-rev: git archive failed: .*fix: give a commit"):
        peers_bench.archive("no-such-rev", tmp_path)
    assert peers_bench.main(["--base", "no-such-rev", "--runs", "1"]) == 2
    assert "--base no-such-rev: git archive failed" in capsys.readouterr().err
