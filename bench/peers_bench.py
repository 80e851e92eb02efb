"""The plain-manifest check beside checkov and kube-score on the same manifests (a benchmark, not a test).

    python -m bench.peers_bench [--runs 7] [--manifests DIR --inventory STACKFILE] [--no-preview] [--base REV]
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
* ``kube-score``: ``kube-score score DIR/*.yaml`` (exit 1: a critical grade);
* with ``--base REV``, ``analyze@REV`` and ``preview@REV``: the same two commands run from a
  ``git archive`` of revision REV (its bytecode compiled as ``dev.py`` compiles this tree's,
  same ``.venv``), in the same rotated rounds: before against after in one run.

The peers are not project dependencies. They are looked up in ``$LLM_SERVING_CACHE/peers``
(default ``~/.cache/llm-serving/peers``), then on PATH; a missing one is skipped with one line
saying how to install it (:data:`INSTALL`): checkov from PyPI in its own virtualenv, kube-score
built from the Go module proxy. Versions measured: :data:`CHECKOV_VERSION`, :data:`KUBE_SCORE_VERSION`.

The machine is shared: the load average is printed before and after; compare the ratios
within one run rather than the seconds across runs.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Tree:
    """A tree the project's two commands run from: this checkout, or a ``git archive`` of a
    revision (:func:`archive`). ``env`` puts its packages first on ``PYTHONPATH``."""

    label: str
    root: Path

    @property
    def env(self) -> dict[str, str] | None:
        return None if self.root == ROOT else {"PYTHONPATH": f"{self.root}{os.pathsep}{self.root / 'policies'}"}


def archive(rev: str, into: Path) -> Tree:
    """Revision ``rev`` of this repository extracted under ``into`` (``git archive``), its bytecode
    compiled as ``dev.py`` compiles the checkout's. Raises ValueError naming the revision when git
    does not know it."""
    done = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, capture_output=True)
    if done.returncode != 0:
        raise ValueError(f"--base {rev}: git archive failed: {done.stderr.decode(errors='replace').strip()}; "
                         "fix: give a commit, branch or tag of this repository")
    root = into / "base"
    root.mkdir()
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(root, filter="tar")
    # dev.py's own bytecode step (the same function, run as dev.py), so both trees start alike.
    subprocess.run([sys.executable, "-c", "import sys, dev; from pathlib import Path; dev.compile_bytecode(Path(sys.argv[1]))",
                    str(root)], cwd=ROOT, check=True)
    return Tree(f"@{rev}", root)


def commands(manifests: Path, inventory: Path, out: Path | None,
             base: Tree | None = None) -> dict[str, tuple[list[str], Tree]]:
    """Each row's command and the tree it runs from; a peer that is not installed is left out
    with a note on stderr. With ``base``, the rows ``analyze@REV`` and ``preview@REV``."""
    here = Tree("", ROOT)
    cmds: dict[str, tuple[list[str], Tree]] = {}
    for tree in (here, base) if base else (here,):
        cmds[f"analyze{tree.label}"] = ([sys.executable, "-m", "tools.analyze", "--manifests", str(manifests),
                                         "--inventory", str(inventory)], tree)
        if out is not None:
            cmds[f"preview{tree.label}"] = ([sys.executable, "-m", "tools.preview", "--out",
                                             str(out.with_name(out.name + tree.label.replace("@", "-")))], tree)
    checkov, kube_score = find_peer("checkov"), find_peer("kube-score")
    if checkov:
        cmds["checkov"] = ([checkov, "-d", str(manifests), "--framework", "kubernetes", "--quiet", "--compact"], here)
    if kube_score:
        cmds["kube-score"] = ([kube_score, "score", *sorted(str(p) for p in manifests.glob("*.yaml"))], here)
    for name in ("checkov", "kube-score"):
        if name not in cmds:
            print(f"{name}: not installed, skipped; install: {INSTALL[name]}", file=sys.stderr)
    return cmds


def measure(cmds: dict[str, tuple[list[str], Tree]], runs: int) -> dict[str, list[Run]]:
    """One unmeasured run of each, then ``runs`` rounds, the order rotated by one each round."""
    names = list(cmds)

    def run(name: str) -> Run:
        cmd, tree = cmds[name]
        return timed(cmd, cwd=tree.root, env=tree.env)

    for name in names:
        warm = run(name)
        if warm.exit_code not in (0, 1):
            raise RuntimeError(f"{name} failed (exit {warm.exit_code}): {' '.join(cmds[name][0])}\n{warm.stderr[-2000:]}")
    results: dict[str, list[Run]] = {name: [] for name in names}
    for i in range(runs):
        for name in names[i % len(names):] + names[:i % len(names)]:
            results[name].append(run(name))
    return results


def report(results: dict[str, list[Run]]) -> list[str]:
    """One line per tool: medians, spread, CPU, RSS, exit codes, ratio to analyze."""
    base = statistics.median(r.wall_s for r in results["analyze"])
    width = max(11, *(len(name) for name in results))
    lines = [f"{'tool':<{width}} {'median':>7} {'min':>7} {'max':>7} {'cpu':>7} {'RSS MiB':>8}  {'x analyze':>9}  exit"]
    for name, runs in results.items():
        walls = [r.wall_s for r in runs]
        med = statistics.median(walls)
        lines.append(f"{name:<{width}} {med:7.3f} {min(walls):7.3f} {max(walls):7.3f} "
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
    ap.add_argument("--base", metavar="REV", help="also run analyze and preview from git revision REV, "
                    "in the same rounds (rows analyze@REV, preview@REV)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="peers-bench-") as tmp:
        try:
            base = archive(args.base, Path(tmp)) if args.base else None
        except ValueError as err:
            print(str(err), file=sys.stderr)
            return 2
        manifests = args.manifests
        if manifests is None:
            rendered = timed([sys.executable, "-m", "tools.preview", "--no-policy", "--out", f"{tmp}/prod"])
            if rendered.exit_code != 0:
                print(f"rendering prod failed:\n{rendered.stderr}", file=sys.stderr)
                return 1
            manifests = Path(tmp) / "prod" / "1-manifest"
        preview_out = None if args.no_preview or args.manifests else Path(tmp) / "preview"
        cmds = commands(manifests.resolve(), args.inventory.resolve(), preview_out, base)
        load1 = os.getloadavg()[0]
        print(f"peers on {manifests if args.manifests else 'prod rendering'} "
              f"({len(list(manifests.glob('*.yaml')))} manifests); whole processes; {args.runs} rounds after a warm-up, "
              f"order rotated; {os.cpu_count()} CPUs, load average {load1:.2f}{' (busy)' if load1 > 1 else ''}")
        for name, (cmd, _) in cmds.items():
            if name in ("checkov", "kube-score"):
                print(f"{name} {version(name, cmd[0])} ({cmd[0]})")
        if base:
            print(f"{base.label[1:]}: git archive, bytecode compiled, same .venv ({base.root})")
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
