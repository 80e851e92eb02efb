"""The real ``pulumi preview`` beside the offline preview, in one run (a benchmark, not a test).

    python3 dev.py bench real [--runs 3] [--only prod|large] [--modes offline,render,cluster]

Needs the toolchain (``python3 dev.py toolchain``). For each case it times, as whole processes,
medians of ``--runs`` runs after one unmeasured warm-up:

* ``offline``: ``python -m tools.preview --stack-file F --out DIR`` (program under the mock
  runtime, manifests, summary, the policy pack over gRPC);
* ``render``: ``pulumi preview --policy-pack policies`` of a fresh stack whose config sets
  ``llm-serving:render_yaml_to_directory`` (the kubernetes provider in render mode: no cluster);
* ``cluster``: ``pulumi preview --policy-pack policies`` of a fresh stack against a loopback
  cluster (``testbed.cluster``), the provider diffing against the API server.

Cases: ``prod`` (Pulumi.prod.yaml), ``large`` (bench/genstack.py: 100 nodes x 8 cards, 1,000
workloads, 1,000 Services) and ``fits`` (the same generator at the most nodes whose config fits
in 128 KiB: 15 nodes, 150 workloads, 150 Services). The language host hands the Python program,
and the policy proxy hands the pack, the whole stack config in one environment variable
(``PULUMI_CONFIG``), which Linux caps at 128 KiB (MAX_ARG_STRLEN): the large stack's 811 KiB
cannot run through the real CLI at all ("Argument list too long"), so its real rows say so
and ``fits`` is the largest real case. Prints a table: medians, min-max, the ratio to offline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from bench import genstack  # noqa: E402
from testbed import toolchain  # noqa: E402
from tests.real.realpath import RealProject, loopback_cluster  # noqa: E402

ENV_VALUE_LIMIT = 131072


def _timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, int, str]:
    t = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return time.monotonic() - t, proc.returncode, proc.stdout[-2000:] + proc.stderr[-2000:]


def _config_size(stack_file: Path) -> int:
    import yaml

    config = (yaml.safe_load(stack_file.read_text()) or {}).get("config") or {}
    return len(json.dumps({k: (v if isinstance(v, str) else json.dumps(v)) for k, v in config.items()}))


def fitting_nodes(limit: int = ENV_VALUE_LIMIT) -> int:
    """The most generated nodes (10 workloads each) whose stack config fits in ``limit`` bytes."""
    nodes = 100
    with tempfile.TemporaryDirectory() as tmp:
        while nodes > 1 and _config_size(genstack.write(Path(tmp) / "s.yaml", nodes=nodes)) > limit:
            nodes -= 1
    return nodes


def bench_case(name: str, stack_file: Path, modes: list[str], runs: int, work: Path) -> list[tuple[str, list[float], str]]:
    results: list[tuple[str, list[float], str]] = []
    size = _config_size(stack_file)
    big = size > ENV_VALUE_LIMIT
    pack = ["--policy-pack", "policies"]
    note = f"with the pack, config {size / 1024:.0f} KiB"
    if "offline" in modes:
        times = []
        for i in range(runs + 1):
            out = work / f"offline-{name}-{i}"
            dt, code, tail = _timed([sys.executable, "-m", "tools.preview", "--stack-file", str(stack_file), "--out", str(out)], ROOT, dict(os.environ))
            if code not in (0, 1):
                raise SystemExit(f"offline preview of {name} failed (exit {code}): {tail}")
            if i:
                times.append(dt)
        results.append(("offline", times, "with the pack"))
    for mode in (m for m in modes if m in ("render", "cluster")):
        if big:
            results.append((mode, [], f"cannot run: config {size / 1024:.0f} KiB > 128 KiB in one environment variable"))
            continue

        def run_mode(kubeconfig, mode=mode):
            project = RealProject(work / f"{mode}-{name}", kubeconfig)
            times = []
            for i in range(runs + 1):
                stack = f"bench-{i}"
                shutil.copy2(stack_file, project.dir / f"Pulumi.{stack}.yaml")
                project.stack_init(stack)
                if mode == "render":
                    project.config_set(stack, "llm-serving:render_yaml_to_directory", str(work / f"rendered-{name}-{i}"))
                t = time.monotonic()
                res = project.run("preview", "--stack", stack, *pack)
                dt = time.monotonic() - t
                if res.code != 0:
                    raise SystemExit(f"real preview ({mode}) of {name} failed: {res}")
                if i:
                    times.append(dt)
            return times
        if mode == "cluster":
            with loopback_cluster(work / f"cluster-{name}") as kubeconfig:
                results.append((mode, run_mode(kubeconfig), note))
        else:
            results.append((mode, run_mode(None), note))
    return results


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 dev.py bench real", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", choices=("prod", "large", "fits"))
    ap.add_argument("--modes", default="offline,render,cluster")
    args = ap.parse_args(argv)
    if not all(toolchain.status(toolchain.load_versions(), toolchain.cache_dir()).values()):
        print("bench real: the toolchain is not built; run `python3 dev.py toolchain`", file=sys.stderr)
        return 2
    modes = args.modes.split(",")
    print(f"load average: {os.getloadavg()[0]:.2f} (figures above 1 run high)")
    with tempfile.TemporaryDirectory(prefix="bench-real-") as tmp:
        work = Path(tmp)
        cases = {"prod": ROOT / "Pulumi.prod.yaml"}
        if args.only in (None, "large"):
            cases["large"] = genstack.write(work / "large.yaml")
        if args.only in (None, "fits"):
            cases["fits"] = genstack.write(work / "fits.yaml", nodes=fitting_nodes())
        if args.only:
            cases = {args.only: cases[args.only]}
        print(f"{'case':6} {'mode':8} {'median s':>9} {'min-max s':>13} {'x offline':>9}  note")
        for name, stack_file in cases.items():
            rows = bench_case(name, stack_file, modes, args.runs, work)
            base = next((statistics.median(t) for m, t, _ in rows if m == "offline"), None)
            for mode, times, note in rows:
                if not times:
                    print(f"{name:6} {mode:8} {'-':>9} {'-':>13} {'-':>9}  {note}", flush=True)
                    continue
                med = statistics.median(times)
                ratio = f"{med / base:.1f}" if base else "-"
                print(f"{name:6} {mode:8} {med:9.2f} {min(times):6.2f}-{max(times):<6.2f} {ratio:>9}  {note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
