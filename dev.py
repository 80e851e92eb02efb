#!/usr/bin/env python3
"""Set-up and entry points for a fresh clone. Needs nothing but Python 3.11+.

    python3 dev.py preview [ARGS...]   offline preview of the prod stack (tools.preview)
    python3 dev.py test [PYTEST ARGS]  the test suite
    python3 dev.py analyze [ARGS...]   the policy pack on a stack or a manifest directory (tools.analyze)
    python3 dev.py bench [NAME]        the benchmarks (bench/)

The first call creates ``.venv`` and installs ``requirements.txt`` into it (pinned); later
calls reuse it, reinstalling only when requirements.txt changed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
STAMP = VENV / ".requirements.sha256"


def ensure_venv() -> None:
    """Create .venv and install the pinned requirements when missing or out of date."""
    want = hashlib.sha256((ROOT / "requirements.txt").read_bytes()).hexdigest()
    if PY.exists() and STAMP.exists() and STAMP.read_text().strip() == want:
        return
    if not PY.exists():
        print("dev.py: creating .venv", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(VENV)
    print("dev.py: installing requirements.txt into .venv (about a minute the first time; pip's progress follows)",
          file=sys.stderr)
    # pip prints one line a package (Collecting / Downloading / Installing); run from the project
    # directory, where the requirements' local paths (-e ./core, -e ./policies) are.
    subprocess.run(
        [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off",
         "-r", str(ROOT / "requirements.txt")],
        check=True, cwd=ROOT, stdout=sys.stderr,
    )
    STAMP.write_text(want)


COMMANDS = {
    "preview": ["-m", "tools.preview"],
    "analyze": ["-m", "tools.analyze"],
    "test": ["-m", "pytest"],
    "bench": ["-m", "bench"],
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ensure_venv()
    cmd = [str(PY), *COMMANDS[argv[0]], *argv[1:]]
    return subprocess.call(cmd, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
