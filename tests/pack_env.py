"""The policy pack's own virtualenv, as the Pulumi CLI installs a Python pack (PulumiPolicy.yaml's
``runtime.options``, ``toolchain: pip``: ``python -m venv`` then ``pip install -r
requirements.txt`` from the pack's folder), built once per ``policies/requirements.txt`` (exported
from uv.lock) and Python, in the toolchain's cache (``~/.cache/llm-serving``,
``$LLM_SERVING_CACHE``), and linked into each copy of the pack at its ``virtualenv`` name.

One build serves the fast suite's published-pack test (``tests/policies/test_pack_alone.py``) and
the real suite's project copies (``tests/real/realpath.py``): the first run on a machine after
the lock changed pays it (about 80 s on this 2-core machine), the others link it. Concurrent
runs (two worktrees, two xdist workers) wait on a file lock; a build that failed is redone.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from testbed import toolchain
from tests.paths import ROOT

REQUIREMENTS = ROOT / "policies" / "requirements.txt"


class PackEnvError(Exception):
    """pip could not install the pack's requirements; the message holds pip's last lines."""


def pack_venv(requirements: Path = REQUIREMENTS) -> Path:
    """The virtualenv for ``requirements`` (built at the first call, then reused): its folder."""
    key = hashlib.sha256(requirements.read_bytes() + f"{sys.version}\0{sys.base_prefix}".encode()).hexdigest()[:16]
    cache = toolchain.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"pack-venv-{key}"
    with (cache / f"pack-venv-{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / ".complete").exists():
            shutil.rmtree(target, ignore_errors=True)
            venv.EnvBuilder(with_pip=True).create(target)
            proc = subprocess.run([str(python(target)), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                   "-r", str(requirements)], cwd=requirements.parent, capture_output=True, text=True)
            if proc.returncode != 0:
                raise PackEnvError(f"pip install -r {requirements} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
            (target / ".complete").write_text(key)
    return target


def python(env: Path) -> Path:
    """The interpreter of the virtualenv ``env``."""
    return env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def link_into(pack: Path, name: str, requirements: Path = REQUIREMENTS) -> Path:
    """Link :func:`pack_venv` into the pack folder ``pack`` as ``name`` (replacing what is there);
    returns the linked interpreter, as the pack's folder names it."""
    link = pack / name
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.exists():
        shutil.rmtree(link)
    link.symlink_to(pack_venv(requirements), target_is_directory=True)
    return python(link)
