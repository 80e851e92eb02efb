"""The pack's virtualenv cache (``tests/pack_env.py``): built once per requirements and Python,
linked into each copy of the pack, and a build whose pip failed never taken as done. Real
virtualenvs with pip, as the Pulumi CLI builds a published pack's (``toolchain: pip``): about 10 s,
so in the real suite; the fast suite's pack-alone tests use the cache it checks."""

from __future__ import annotations

import subprocess

import pytest

from tests import pack_env

pytestmark = pytest.mark.real


def test_the_virtualenv_is_built_once_per_requirements_and_linked(tmp_path, monkeypatch):
    """tests/pack_env.py: a second copy links the first build (not rebuilt); other requirements
    get their own; a build whose pip failed is not taken as done."""
    monkeypatch.setenv("LLM_SERVING_CACHE", str(tmp_path / "cache"))
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# nothing to install\n")
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    (second / "venv").mkdir()  # what a copy had there is replaced by the link
    python = pack_env.link_into(first, "venv", requirements)
    built = pack_env.pack_venv(requirements)
    stamp = (built / ".complete").stat().st_mtime_ns
    assert pack_env.link_into(second, "venv", requirements) == second / "venv" / "bin" / "python"
    assert (first / "venv").resolve() == (second / "venv").resolve() == built.resolve()
    assert (built / ".complete").stat().st_mtime_ns == stamp
    probe = subprocess.run([str(python), "-c", "import sys; print(sys.prefix != sys.base_prefix)"], capture_output=True,
                           text=True, check=True)
    assert probe.stdout.strip() == "True"
    requirements.write_text("no-such-package-llm-serving-test==0.0.0\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(pack_env.PackEnvError, match="no-such-package-llm-serving-test"):
        pack_env.pack_venv(requirements)
    failed = [p for p in (tmp_path / "cache").iterdir() if p.is_dir() and p != built]
    assert len(failed) == 1 and not (failed[0] / ".complete").exists()
