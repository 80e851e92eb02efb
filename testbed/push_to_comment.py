"""Push-to-comment time: the .gitea review job under act, once per name given, in one clone.

    .venv/bin/python -m testbed.push_to_comment --cache DIR cold warm

The installers' caches (uv's and pip's) are DIR/uv and DIR/pip: an empty DIR makes the first run
cold, the runs after it warm (the workspace is fresh each time: act copies the clone). No cluster
secrets (the real preview is skipped); the comment goes to a loopback stand-in of the forge's API.
Prints, per run, act's exit code, the wall seconds and each step's seconds as act reports them.
Needs act on PATH (``python3 dev.py toolchain``). Figures: docs/benchmarks.md "Push to comment".
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import tempfile
from pathlib import Path

#: Go's duration units as act prints a step's time ("[1m53.3s]", "[81.5ms]").
UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}


def seconds(duration: str) -> float:
    """Seconds of a Go duration string (``1m53.3s`` -> 113.3)."""
    return sum(float(v) * UNITS[u] for v, u in re.findall(r"([\d.]+)(ms|µs|us|ns|h|m|s)", duration))


def step_times(log: str) -> list[tuple[str, float]]:
    """(step, seconds) of each ``Main`` step of act's log, the stand-ins' own steps left out."""
    out = []
    for line in log.splitlines():
        m = re.search(r"(?:Success|Failure) - Main (.*?) \[([^\]]+)\]$", line)
        if m and not m.group(1).startswith("stand-in "):
            out.append((m.group(1), seconds(m.group(2))))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="testbed.push_to_comment", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", type=Path, required=True, help="the installers' caches (DIR/uv, DIR/pip)")
    ap.add_argument("runs", nargs="+", help="a name per run (cold warm ...)")
    args = ap.parse_args(argv)
    os.environ["UV_CACHE_DIR"] = str(args.cache / "uv")
    os.environ["PIP_CACHE_DIR"] = str(args.cache / "pip")
    from testbed import act

    # The test suite's clone and forge stand-in, loaded at run time: mypy checks testbed/, not tests/.
    ci = importlib.import_module("tests.real.test_real_ci_workflows")
    git, make_clone = ci.git, ci.make_clone
    Forge = importlib.import_module("tests.tools.test_review_comment_and_deploy_guard").Forge  # noqa: N806

    top = Path(tempfile.mkdtemp(prefix="push-to-comment-"))
    work = make_clone(top)
    git(top, "init", "-q", "--bare", str(top / "origin.git"))
    git(work, "remote", "add", "origin", str(top / "origin.git"))
    git(work, "push", "-q", "origin", "main")
    forge = Forge(gitea=True, comments=[], repo="o/r", number=7, token="tok")
    worst = 0
    try:
        for name in args.runs:
            run = act.run_job(work, ".gitea/workflows/pull-request.yaml", "review", "pull_request",
                              {"pull_request": {"number": 7, "base": {"ref": "main"}, "head": {"ref": "pr"}}},
                              home=top / name, secrets={"GITHUB_TOKEN": "tok"},
                              env={"GITHUB_API_URL": forge.api, "GITHUB_REPOSITORY": "o/r"}, artifacts=top / name / "art")
            print(f"{name}: act exit {run.code}, wall {run.seconds:.1f} s, failed steps {run.failed()}, "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            for step, secs in step_times(run.log):
                print(f"  {secs:7.1f} s  {step}", flush=True)
            print(f"  review comments held: {len(forge.ours())}", flush=True)
            worst = max(worst, 1 if run.code else 0)
    finally:
        forge.server.shutdown()
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
