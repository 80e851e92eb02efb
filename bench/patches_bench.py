"""Each speed patch of a dependency's internals with and without it, paired, in one run (a benchmark).

    python -m bench.patches_bench [--sizes prod,1000,10000] [--rounds 5] [--rounds-large 3]
        [--variant NAME=PACKDIR[@WORKERS] ...]
    python3 dev.py bench patches

A variant is a policy pack directory (``@2``: run as 2 pack processes, ``start_pack(workers=2)``).
Without ``--variant`` the variants are made from this checkout's ``policies/`` in a temporary
directory, by the lines of its ``__main__.py`` they leave out (:data:`PATCH_LINES`): ``as-is``,
``no-decode-once`` (``policylib.decode_once.install()``), ``no-gc`` (the collector off during the
imports, ``gc.freeze`` and the thresholds), ``none`` (both), and ``as-is@2``. A variant that
would leave out a line the pack no longer has is skipped (the patch is gone).

Each case is the whole analyzer run over gRPC (``tools.analyze.run_pack``: the pack started,
judging, stopped), on ``prod`` (the offline rendering's manifests with Pulumi.prod.yaml's config)
or ``N`` resources (:func:`bench.pack_bench.generate`). Within a round every variant runs once,
in an order rotated each round, so the machine's drift falls on all alike. Printed per size and
variant: the median wall seconds, the median CPU (client + pack), and the median of the paired
ratios against the first variant (this round's variant / this round's first: below 1 is faster).
The findings of every variant must be the same (compared whole); a difference stops the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.pack_bench import ROOT, cpu_seconds, generate
from tools.analyze import PACK_DIR, run_pack

#: Variant name -> the lines of the pack's ``__main__.py`` it leaves out (stripped text).
PATCH_LINES: dict[str, tuple[str, ...]] = {
    "as-is": (),
    "no-decode-once": ("decode_once.install()",),
    "no-gc": ("gc.disable()", "gc.freeze()", "gc.set_threshold(200_000, 50, 1000)", "gc.enable()"),
}
PATCH_LINES["none"] = PATCH_LINES["no-decode-once"] + PATCH_LINES["no-gc"]


def pack_variant(pack_dir: Path, leave_out: tuple[str, ...], into: Path) -> Path | None:
    """A pack directory under ``into``: every entry of ``pack_dir`` linked, ``__main__.py`` copied
    without the lines ``leave_out``; None when ``__main__.py`` lacks one of them."""
    lines = (pack_dir / "__main__.py").read_text(encoding="utf-8").splitlines(keepends=True)
    stripped = [line.strip() for line in lines]
    if any(line not in stripped for line in leave_out):
        return None
    into.mkdir(parents=True)
    for entry in pack_dir.iterdir():
        if entry.name not in ("__main__.py", "__pycache__"):
            (into / entry.name).symlink_to(entry.resolve())
    (into / "__main__.py").write_text("".join(x for x, s in zip(lines, stripped, strict=True) if s not in leave_out),
                                      encoding="utf-8")
    return into


def prod_case() -> tuple[list[Any], dict[str, Any]]:
    """Prod's rendered manifests (the offline preview's, in a temporary directory) and its config."""
    from tools.offline.manifests import load_stack_file, read_manifests

    out = Path(tempfile.mkdtemp(prefix="bench-prod-"))
    code = os.system(f"{sys.executable} -m tools.preview --no-policy --out {out / 'prod'} > /dev/null")
    if code:
        raise SystemExit(f"cannot render prod (exit {code})")
    resources = read_manifests(out / "prod" / "1-manifest", "prod").resources
    return resources, load_stack_file(ROOT / "Pulumi.prod.yaml")


def _variant(spec: str) -> tuple[str, Path, int]:
    name, _, rest = spec.partition("=")
    path, _, workers = rest.partition("@")
    if not name or not path:
        raise argparse.ArgumentTypeError(f"{spec!r} is not NAME=PACKDIR[@WORKERS]; fix: e.g. base=/tmp/base/policies@1")
    return name, Path(path), int(workers or 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.patches_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="prod,1000,10000")
    ap.add_argument("--rounds", type=int, default=5, help="rounds at prod and 1,000 (default 5)")
    ap.add_argument("--rounds-large", type=int, default=3, help="rounds above 1,000 resources (default 3)")
    ap.add_argument("--variant", action="append", type=_variant, default=[], metavar="NAME=PACKDIR[@WORKERS]")
    ap.add_argument("--only", help="of the default variants, these (comma-separated names, e.g. as-is,no-gc)")
    args = ap.parse_args(argv)
    variants: list[tuple[str, Path, int]] = list(args.variant)
    if not variants:
        tmp = Path(tempfile.mkdtemp(prefix="bench-patches-"))
        for name, leave_out in PATCH_LINES.items():
            if args.only and name not in args.only.split(","):
                continue
            made = PACK_DIR if not leave_out else pack_variant(PACK_DIR, leave_out, tmp / name)
            if made is None:
                print(f"variant {name}: the pack has no such lines any more (skipped)")
                continue
            variants.append((name, made, 1))
        if not args.only or "as-is@2" in args.only.split(","):
            variants.append(("as-is@2", PACK_DIR, 2))
    print(f"variants: {', '.join(f'{n}={p}@{w}' for n, p, w in variants)}")
    print(f"{'size':>6}  {'variant':<16} {'wall':>7} {'cpu':>7} {'paired':>7}  rounds (wall)")
    for size in args.sizes.split(","):
        resources, config = prod_case() if size == "prod" else generate(int(size))
        rounds = args.rounds if size == "prod" or int(size) <= 1000 else args.rounds_large
        wall: dict[str, list[float]] = {n: [] for n, _, _ in variants}
        cpu: dict[str, list[float]] = {n: [] for n, _, _ in variants}
        findings: dict[str, Any] = {}
        for r in range(rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for name, pack_dir, workers in order:
                t, c = time.perf_counter(), cpu_seconds()
                report = run_pack(resources, config, stack="bench", pack_dir=pack_dir, workers=workers)
                wall[name].append(time.perf_counter() - t)
                cpu[name].append(cpu_seconds() - c)
                print(f"{size:>6}  round {r + 1} {name:<16} wall {wall[name][-1]:.2f} cpu {cpu[name][-1]:.2f} "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
                got = sorted(repr(f) for f in report.findings)
                if findings.setdefault(size, got) != got:
                    raise SystemExit(f"size {size}: variant {name} reports other findings than {variants[0][0]}")
        first = variants[0][0]
        for name, _, _ in variants:
            paired = statistics.median(a / b for a, b in zip(wall[name], wall[first], strict=True))
            print(f"{size:>6}  {name:<16} {statistics.median(wall[name]):>7.3f} {statistics.median(cpu[name]):>7.2f} "
                  f"{paired:>7.3f}  {' '.join(f'{x:.2f}' for x in wall[name])}", flush=True)
        print(f"{size:>6}  load average {os.getloadavg()[0]:.2f}; {len(findings[size])} findings, the same for every variant")
    return 0


if __name__ == "__main__":
    sys.exit(main())
