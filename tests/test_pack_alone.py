"""The pack runs from a copy of policies/ alone (what ``pulumi policy publish`` ships),
with only its own requirements installed: tools/pack_build.py writes the copy (core vendored),
a virtualenv gets the copy's requirements.txt from the package index, and the pack process
started there judges prod exactly as the pack in the repository does.

The virtualenv is kept under ``.venv-pack/<hash of the requirements>`` so later runs reuse it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from policylib.pack import policies as pack_policies
from tools import analyze, pack_build
from tools.offline.manifests import load_stack_file

ROOT = Path(__file__).resolve().parent.parent


def _pack_python(requirements: Path) -> str:
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]
    home = ROOT / ".venv-pack" / digest
    python = home / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    done = home / ".installed"
    if not done.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        result = subprocess.run([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
                                 "-r", str(requirements)], capture_output=True, text=True)
        if result.returncode != 0:
            pytest.fail(f"pip install of the pack's requirements failed:\n{result.stderr[-3000:]}")
        done.write_text("ok")
    return str(python)


def test_the_copy_has_no_path_into_the_repository(tmp_path):
    dest = pack_build.build(tmp_path / "pack")
    text = (dest / "requirements.txt").read_text()
    assert "../" not in text and "-e " not in text
    assert (dest / "core" / "rules.py").exists() and (dest / "PulumiPolicy.yaml").exists()
    assert {p.name for p in (dest / "core" / "data").iterdir()} == {
        "models.yaml", "models.schema.json", "cards.yaml", "cards.schema.json", "images.yaml", "images.schema.json"}
    assert not list(dest.rglob("*.egg-info")) and not (dest / "pyproject.toml").exists()


def test_the_pack_runs_alone_with_its_own_requirements(tmp_path):
    dest = pack_build.build(tmp_path / "pack")
    python = _pack_python(dest / "requirements.txt")
    # Its environment has no project package: core comes from the copy.
    probe = subprocess.run([python, "-c", "import core, sys; print(core.__file__)"], cwd=dest,
                           capture_output=True, text=True, check=True)
    assert Path(probe.stdout.strip()).resolve().is_relative_to(dest.resolve())
    config = load_stack_file(ROOT / "Pulumi.prod.yaml")
    resources = analyze.program_resources(config, "prod")
    alone = analyze.run_pack(resources, config, pack_dir=dest, python=python)
    here = analyze.run_pack(resources, config)
    assert len(alone.policies) == len(here.policies) == len(pack_policies())
    assert alone.findings == here.findings == ()
    bad = load_stack_file(ROOT / "tests" / "stacks" / "after-001.yaml")
    bad_resources = analyze.program_resources(bad, "after-001")
    verdicts = [(f.policy, f.message) for f in analyze.run_pack(bad_resources, bad, stack="after-001", pack_dir=dest,
                                                                  python=python).findings]
    assert verdicts == [(f.policy, f.message) for f in analyze.run_pack(bad_resources, bad, stack="after-001").findings]
    assert any("worker-1: 6 of 4 cards" in m for _, m in verdicts)
    assert sys.executable != python
