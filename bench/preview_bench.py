"""The offline preview timed as a WHOLE PROCESS (a benchmark, not a test).

    python -m bench.preview_bench [--runs 5] [--only prod|large] [--no-policy] [--keep DIR]
    python3 dev.py bench preview        (bench/__main__.py dispatches by name)

Each case runs ``python -m tools.preview --stack-file F --out DIR`` as a subprocess (one
unmeasured warm-up run first, then ``--runs`` measured runs) and reports the wall-clock median,
min and max, the median CPU time (the preview and the policy pack process it starts and waits
for), the peak RSS (the largest single process: ``ru_maxrss`` of ``os.wait4``) and the median
of each step the preview reports with ``--timings``.

Cases and targets (on the project's 2-core machine):

* ``prod``: Pulumi.prod.yaml (8 objects, 17 resources), at most 1.2 s;
* ``large``: bench/genstack.py's stack, 100 nodes x 8 cards, 1,000 workloads and 1,000
  Services (2,001 objects, 4,003 resources), at most 8 s.

The machine is shared: the load average is printed first; figures taken above a load of 1
are not comparable with the targets (CPU time is less sensitive to it than wall time).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from bench import genstack  # noqa: E402

#: Wall-clock targets in seconds (docs/benchmarks.md): prod <= 0.8, the large stack with the pack <= 12.
TARGETS_S = {"prod": 0.8, "large": 12.0}
_TIMING = re.compile(r"^timing:\s+([\d.]+) s  (.+?)(?: \(.*\))?$")


@dataclass
class Run:
    """One measured process."""

    wall_s: float
    cpu_s: float
    max_rss_kib: int
    exit_code: int
    steps: dict[str, float] = field(default_factory=dict)
    stderr: str = ""


def timed(cmd: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` once as a subprocess in ``cwd`` (stdout discarded; ``env`` added to this
    environment); wall clock from spawn to reap, the CPU time and peak RSS of the process and the
    children it waited for (``os.wait4``)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env} if env else None)
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status), stderr=err)


def run_once(stack_file: Path, out: Path, policy: bool) -> Run:
    """Run the preview once as a subprocess (:func:`timed`), with the steps it reports."""
    cmd = [sys.executable, "-m", "tools.preview", "--stack-file", str(stack_file), "--out", str(out), "--timings"]
    if not policy:
        cmd.append("--no-policy")
    run = timed(cmd)
    for line in run.stderr.splitlines():
        m = _TIMING.match(line)
        if m:
            run.steps[m.group(2)] = float(m.group(1))
    return run


def bench_case(name: str, stack_file: Path, runs: int, policy: bool, workdir: Path) -> list[Run]:
    out = workdir / f"out-{name}"
    warm = run_once(stack_file, out, policy)
    if warm.exit_code not in (0, 1):
        sys.stderr.write(f"{name}: the preview failed (exit {warm.exit_code}):\n{warm.stderr}\n")
        return [warm]
    return [run_once(stack_file, out, policy) for _ in range(runs)]


def report(name: str, results: list[Run], target: float) -> list[str]:
    walls = [r.wall_s for r in results]
    med = statistics.median(walls)
    verdict = "meets" if med <= target else "MISSES"
    lines = [
        f"{name:<6} {med:7.2f} {min(walls):7.2f} {max(walls):7.2f} {statistics.median(r.cpu_s for r in results):7.2f} "
        f"{max(r.max_rss_kib for r in results) / 1024:8.0f}  {target:5.1f}  {verdict}  exit {sorted({r.exit_code for r in results})}"
    ]
    steps = {k for r in results for k in r.steps}
    order = list(results[-1].steps) + sorted(steps - set(results[-1].steps))
    for step in order:
        values = [r.steps[step] for r in results if step in r.steps]
        lines.append(f"         {statistics.median(values):7.3f} s  {step}")
    accounted = statistics.median(sum(r.steps.values()) for r in results)
    lines.append(f"         {med - accounted:7.3f} s  interpreter start-up, imports and exit (wall median - steps)")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.preview_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="measured runs per case (default 5)")
    ap.add_argument("--only", choices=sorted(TARGETS_S), help="run one case")
    ap.add_argument("--no-policy", action="store_true", help="time the preview without the policy pack")
    ap.add_argument("--keep", type=Path, help="write the generated stack and outputs here instead of a temp dir")
    args = ap.parse_args(argv)
    load1, _, _ = os.getloadavg()
    print(f"offline preview, whole process; {args.runs} runs after a warm-up; {os.cpu_count()} CPUs, load average {load1:.2f}"
          f"{' (busy: wall times run high)' if load1 > 1 else ''}; policy pack {'off' if args.no_policy else 'on'}")
    print(f"{'case':<6} {'median':>7} {'min':>7} {'max':>7} {'cpu':>7} {'RSS MiB':>8}  {'target':>5}")
    with tempfile.TemporaryDirectory(prefix="preview-bench-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        cases = {"prod": ROOT / "Pulumi.prod.yaml"}
        if args.only in (None, "large"):
            cases["large"] = genstack.write(workdir / "Pulumi.large.yaml")
        failed = False
        for name, stack_file in cases.items():
            if args.only and name != args.only:
                continue
            results = bench_case(name, stack_file, args.runs, not args.no_policy, workdir)
            if results[0].exit_code not in (0, 1):
                failed = True
                continue
            print("\n".join(report(name, results, TARGETS_S[name])))
            sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
