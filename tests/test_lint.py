"""Conventional tooling: ruff and mypy (pydantic plugin) are clean, and the pins agree
across pyproject.toml, requirements.txt, requirements.lock and policies/requirements.txt."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+)")


def _name(name: str) -> str:
    """A distribution name normalised as PEP 503 does (``pulumi_policy`` = ``pulumi-policy``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = PIN.match(line.strip())
        if m:
            out[_name(m.group(1))] = m.group(2)
    return out


def test_ruff_is_clean():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean():
    result = subprocess.run([sys.executable, "-m", "mypy", "core", "components", "stackfile", "policies", "tools", "testbed"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pins_agree():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    pyproject = {_name(m.group(1)): m.group(2) for m in map(PIN.match, declared) if m}
    assert len(pyproject) == len(declared)
    requirements = _pins(ROOT / "requirements.txt")
    assert requirements == pyproject
    lock = _pins(ROOT / "requirements.lock")
    assert {k: lock.get(k) for k in requirements} == requirements
    pack = _pins(ROOT / "policies" / "requirements.txt")
    assert {k: lock.get(k) for k in pack} == pack
    assert pack["pulumi"] == "3.260.0" and pack["pulumi-policy"] == "1.21.0"
