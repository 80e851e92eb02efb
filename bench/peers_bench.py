"""The plain-manifest check beside checkov and kube-score on the same manifests (a benchmark, not a test).

    python -m bench.peers_bench [--runs 7] [--manifests DIR --inventory STACKFILE] [--no-preview]
    python3 dev.py bench peers        (bench/__main__.py dispatches by name)

Without ``--manifests``, prod's rendering is written first (``python -m tools.preview
--no-policy --out``, not timed) and its ``1-manifest/`` directory (prod's 8 objects) is the
input, judged against ``Pulumi.prod.yaml``. Each tool runs as a whole process, every one once
unmeasured, then ``--runs`` rounds, the tools' order rotated each round so a burst of load on
the shared machine does not fall on one tool; the report gives each tool's wall-clock median,
min and max, CPU median, peak RSS, its exit codes and its median against ``analyze``'s. The
rows:

* ``analyze``: ``python -m tools.analyze --manifests DIR --inventory STACKFILE`` (the policy pack
  over gRPC, as the CLI runs it);
* ``preview``: ``python -m tools.preview --out TMP`` on prod (program, rendering, summary, pack);
  ``--no-preview`` drops it, and it is dropped with ``--manifests``;
* ``checkov``: ``checkov -d DIR --framework kubernetes --quiet --compact`` (exit 1: failed checks);
* ``kube-score``: ``kube-score score DIR/*.yaml`` (exit 1: a critical grade).

The peers are not project dependencies. They are looked up in ``$LLM_SERVING_CACHE/peers``
(default ``~/.cache/llm-serving/peers``), then on PATH; a missing one is skipped with one line
saying how to install it (:data:`INSTALL`): checkov from PyPI in its own virtualenv, kube-score
built from the Go module proxy. Versions measured: :data:`CHECKOV_VERSION`, :data:`KUBE_SCORE_VERSION`.

The machine is shared: the load average is printed before and after; compare the ratios
within one run rather than the seconds across runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.preview_bench import ROOT, Run, timed

CHECKOV_VERSION = "3.3.30"
KUBE_SCORE_VERSION = "v1.20.0"
PEERS = Path(os.environ.get("LLM_SERVING_CACHE") or Path.home() / ".cache" / "llm-serving") / "peers"
#: How to install each peer where this benchmark looks first.
INSTALL = {
    "checkov": (f"python3 -m venv {PEERS}/checkov && {PEERS}/checkov/bin/pip install checkov=={CHECKOV_VERSION}"),
    "kube-score": (f"GOBIN={PEERS}/bin go install github.com/zegl/kube-score/cmd/kube-score@{KUBE_SCORE_VERSION}"),
}


def find_peer(name: str) -> str | None:
    """The peer's executable: under :data:`PEERS` (``checkov/bin/checkov``, ``bin/kube-score``),
    else on PATH; None when neither has it."""
    local = PEERS / ("checkov/bin/checkov" if name == "checkov" else f"bin/{name}")
    return str(local) if local.is_file() and os.access(local, os.X_OK) else shutil.which(name)


def version(name: str, exe: str) -> str:
    """The peer's version: ``checkov --version``; for kube-score built with ``go install`` (which
    reports "development"), the module version ``go version -m`` reads from the binary."""
    cmd = [exe, "--version"] if name == "checkov" else ["go", "version", "-m", exe]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except OSError:
        return "?"
    for line in done.stdout.splitlines():
        parts = line.split()
        if name == "checkov" or parts[:2] == ["mod", "github.com/zegl/kube-score"]:
            return parts[-1] if name == "checkov" else parts[2]
    return "?"


def commands(manifests: Path, inventory: Path, out: Path | None) -> dict[str, list[str]]:
    """Each row's command; a peer that is not installed is left out with a note on stderr."""
    cmds = {"analyze": [sys.executable, "-m", "tools.analyze", "--manifests", str(manifests),
                        "--inventory", str(inventory)]}
    if out is not None:
        cmds["preview"] = [sys.executable, "-m", "tools.preview", "--out", str(out)]
    checkov, kube_score = find_peer("checkov"), find_peer("kube-score")
    if checkov:
        cmds["checkov"] = [checkov, "-d", str(manifests), "--framework", "kubernetes", "--quiet", "--compact"]
    if kube_score:
        cmds["kube-score"] = [kube_score, "score", *sorted(str(p) for p in manifests.glob("*.yaml"))]
    for name in ("checkov", "kube-score"):
        if name not in cmds:
            print(f"{name}: not installed, skipped; install: {INSTALL[name]}", file=sys.stderr)
    return cmds


def measure(cmds: dict[str, list[str]], runs: int) -> dict[str, list[Run]]:
    """One unmeasured run of each, then ``runs`` rounds, the order rotated by one each round."""
    names = list(cmds)
    for name in names:
        warm = timed(cmds[name])
        if warm.exit_code not in (0, 1):
            raise RuntimeError(f"{name} failed (exit {warm.exit_code}): {' '.join(cmds[name])}\n{warm.stderr[-2000:]}")
    results: dict[str, list[Run]] = {name: [] for name in names}
    for i in range(runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            results[name].append(timed(cmds[name]))
    return results


def report(results: dict[str, list[Run]]) -> list[str]:
    """One line per tool: medians, spread, CPU, RSS, exit codes, ratio to analyze."""
    base = statistics.median(r.wall_s for r in results["analyze"])
    lines = [f"{'tool':<11} {'median':>7} {'min':>7} {'max':>7} {'cpu':>7} {'RSS MiB':>8}  {'x analyze':>9}  exit"]
    for name, runs in results.items():
        walls = [r.wall_s for r in runs]
        med = statistics.median(walls)
        lines.append(f"{name:<11} {med:7.3f} {min(walls):7.3f} {max(walls):7.3f} "
                     f"{statistics.median(r.cpu_s for r in runs):7.3f} {max(r.max_rss_kib for r in runs) / 1024:8.0f}  "
                     f"{med / base:9.2f}  {sorted({r.exit_code for r in runs})}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peers_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="measured rounds (default 7)")
    ap.add_argument("--manifests", type=Path, help="a directory of manifests (default: prod's rendering)")
    ap.add_argument("--inventory", type=Path, default=ROOT / "Pulumi.prod.yaml",
                    help="the stack file whose inventory analyze judges against (default Pulumi.prod.yaml)")
    ap.add_argument("--no-preview", action="store_true", help="leave out the offline preview of prod")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="peers-bench-") as tmp:
        manifests = args.manifests
        if manifests is None:
            rendered = timed([sys.executable, "-m", "tools.preview", "--no-policy", "--out", f"{tmp}/prod"])
            if rendered.exit_code != 0:
                print(f"rendering prod failed:\n{rendered.stderr}", file=sys.stderr)
                return 1
            manifests = Path(tmp) / "prod" / "1-manifest"
        preview_out = None if args.no_preview or args.manifests else Path(tmp) / "preview"
        cmds = commands(manifests.resolve(), args.inventory.resolve(), preview_out)
        load1 = os.getloadavg()[0]
        print(f"peers on {manifests if args.manifests else 'prod rendering'} "
              f"({len(list(manifests.glob('*.yaml')))} manifests); whole processes; {args.runs} rounds after a warm-up, "
              f"order rotated; {os.cpu_count()} CPUs, load average {load1:.2f}{' (busy)' if load1 > 1 else ''}")
        for name, cmd in cmds.items():
            if name in ("checkov", "kube-score"):
                print(f"{name} {version(name, cmd[0])} ({cmd[0]})")
        sys.stdout.flush()
        try:
            results = measure(cmds, args.runs)
        except RuntimeError as err:
            print(str(err), file=sys.stderr)
            return 1
        print("\n".join(report(results)))
        print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
