#!/usr/bin/env python3
"""Set-up and entry points for a fresh clone. Needs nothing but Python 3.11+.

    python3 dev.py preview [ARGS...]   offline preview of the prod stack (tools.preview)
    python3 dev.py test [PYTEST ARGS]  the fast suite, then the real suite (builds the toolchain when missing)
    python3 dev.py test --fast [...]   the fast suite only (mock runtime, pack over gRPC; no Go needed)
    python3 dev.py test --real [...]   the real suite only (real CLI, real pack, loopback cluster)
    python3 dev.py analyze [ARGS...]   the policy pack on a stack or a manifest directory (tools.analyze)
    python3 dev.py plan PLAN.json      cards per node at the peak of a real `pulumi preview --json` (tools.plan)
    python3 dev.py adopt-diff [--stack prod]   what adopting the live objects changes, field by field (tools.adopt_diff)
    python3 dev.py rollout [--namespace NS]    after pulumi up: every Deployment rolled out within its await (tools.rollout)
    python3 dev.py review-comment DIR [--check]   CI: the PR comment from the review job's outputs (tools.review_comment)
    python3 dev.py deploy-guard STATE.json ...    CI: refuse an unreviewed first adoption before pulumi up (tools.deploy_guard)
    python3 dev.py toolchain [ARGS]    build the real toolchain from the Go module proxy (testbed.toolchain)
    python3 dev.py cluster up|down|status|env   the loopback test cluster (testbed.cluster)
    python3 dev.py bench [NAME]        the benchmarks (bench/)

The first call creates ``.venv`` and installs ``requirements.txt`` into it (pinned); later
calls reuse it, reinstalling only when requirements.txt changed. The real suite needs Go (1.26
or later) and the Go module proxy the first time, to build the toolchain into
``~/.cache/llm-serving`` (``$LLM_SERVING_CACHE``); later runs reuse it.
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
    "plan": ["-m", "tools.plan"],
    "adopt-diff": ["-m", "tools.adopt_diff"],
    "rollout": ["-m", "tools.rollout"],
    "review-comment": ["-m", "tools.review_comment"],
    "deploy-guard": ["-m", "tools.deploy_guard"],
    "toolchain": ["-m", "testbed.toolchain"],
    "cluster": ["-m", "testbed.cluster"],
    "bench": ["-m", "bench"],
}
#: pytest's exit code when it collected no test: a failure for CI (it must run tests).
PYTEST_NO_TESTS = 5


def _pytest(marker: str, args: list[str]) -> int:
    code = subprocess.call([str(PY), "-m", "pytest", "-m", marker, *args], cwd=ROOT)
    if code == PYTEST_NO_TESTS:
        print(f"dev.py: pytest -m '{marker}' collected no test", file=sys.stderr)
        return 1
    return code


def test(args: list[str]) -> int:
    """The fast suite (``-m "not real"``), then the toolchain (built when missing), then the
    real suite (``-m real``). ``--fast`` / ``--real`` run one of them; other arguments go to
    pytest. Stops at the first part that fails, with its exit code."""
    fast_only, real_only = "--fast" in args, "--real" in args
    args = [a for a in args if a not in ("--fast", "--real")]
    if not real_only:
        code = _pytest("not real", args)
        if code != 0 or fast_only:
            return code
    print("dev.py: the real suite: building the toolchain if missing (python3 dev.py toolchain)", file=sys.stderr, flush=True)
    code = subprocess.call([str(PY), "-m", "testbed.toolchain"], cwd=ROOT, stdout=subprocess.DEVNULL)
    if code != 0:
        return code
    return _pytest("real", args)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in (*COMMANDS, "test"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ensure_venv()
    if argv[0] == "test":
        return test(argv[1:])
    cmd = [str(PY), *COMMANDS[argv[0]], *argv[1:]]
    return subprocess.call(cmd, cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
