"""Build the policy pack as ``pulumi policy publish`` ships it: one directory, nothing beside it.

    python -m tools.pack_build DEST

copies ``policies/`` to ``DEST`` (without its venv, caches and build metadata), vendors the
shared ``core`` package into ``DEST/core/`` (the same files, not a second copy in the
repository), and writes ``DEST/requirements.txt`` without the ``-e ../core`` line that only
resolves inside the repository. The pack then runs from ``DEST`` alone with its own
requirements installed (``tests/test_pack_alone.py`` does exactly that). Why vendoring:
``pulumi policy publish`` uploads the pack directory only, and the project publishes no
package to an index, so a path or index dependency on ``core`` cannot reach the published pack.

Exit codes: 0 built; 2 bad arguments (``DEST`` exists and is not empty).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tools import cli

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ROOT / "policies"
CORE = ROOT / "core"
#: What is never shipped: environments, caches, editable-install metadata.
IGNORE = shutil.ignore_patterns("venv", ".venv", "__pycache__", "*.pyc", "*.egg-info", "pyproject.toml")
#: Requirement lines that point into the repository (replaced by the vendored copy).
LOCAL_PREFIXES = ("-e ../", "../", "-e ./", "./")


def requirements(text: str) -> str:
    """``policies/requirements.txt`` without the lines that name a path in the repository."""
    kept = [line for line in text.splitlines() if not line.strip().startswith(LOCAL_PREFIXES)]
    note = "# core/ is vendored beside the policies by tools/pack_build.py (pulumi policy publish ships this directory alone)."
    return "\n".join([note, *kept]) + "\n"


def build(dest: Path) -> Path:
    """Write the self-contained pack to ``dest`` (created; must not exist or be empty) and return it."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} exists and is not empty")
    shutil.copytree(POLICIES, dest, ignore=IGNORE, dirs_exist_ok=True)
    shutil.copytree(CORE, dest / "core", ignore=IGNORE)
    (dest / "requirements.txt").write_text(requirements((POLICIES / "requirements.txt").read_text()))
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = cli.parser("python -m tools.pack_build", __doc__)
    ap.add_argument("dest", type=Path, help="the directory to write the pack to (new or empty)")
    args = ap.parse_args(argv)
    try:
        build(args.dest)
    except FileExistsError as err:
        return cli.fail("pack_build", f"{err}; fix: name a new or empty directory")
    print(f"pack_build: wrote the policy pack with core vendored to {args.dest}", file=sys.stderr)
    return cli.OK


if __name__ == "__main__":
    cli.run(main, "pack_build")
