"""The offline policy runner: the real policy pack, as its own process, over the analyzer gRPC
protocol, in the order the Pulumi CLI uses, so its verdicts match
``pulumi preview --policy-pack policies``.

The pack runs in the Pulumi CLI's order (handshake, configure, ``Analyze`` per resource,
``AnalyzeStack``), with the findings' URNs as the engine reports them: :mod:`tools.offline.packrun`.

Public API: :func:`run_pack`, :func:`start_pack` / :class:`PackProcess` (the preview starts
the pack before running the program, to overlap the pack's start-up), :func:`analyze_manifests`
and :func:`analyze_program` (what the CLI runs; a test can compare their verdicts).

CLI (exit 0: no mandatory violation; 1: a mandatory policy is violated; 2: an error before any
verdict -- bad input, bad policy pack config, the pack failed; the message says what to fix)::

    python -m tools.analyze (--stack prod | --stack-file F | --manifests DIR --inventory STACKFILE)
        [--context-stack STACK | --context-namespace NS [--kubeconfig F]]
        [--policy-pack-config F] [--format table|json|sarif|junit|markdown] [--output F]
        [--also FORMAT=PATH ...] [--force] [--pack-dir DIR] [--workers N]

``--output`` and ``--also`` write under ``out/`` only and never over a file git tracks,
unless ``--force`` is given (:func:`check_output_path`).

Policy pack config is stricter than the CLI in two ways, both to catch typos: a key that
names no policy of the pack, and a property the policy's ``configSchema`` does not declare,
are errors (the CLI ignores both).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from core.base.stackkeys import PROJECT
from tools import cli
from tools import context as running
from tools.analyze_inputs import (
    NAMESPACE_KEY,
    SERVER_KINDS,
    analyze_manifests,
    analyze_program,
    check_inventory,
    load_inventory,
    manifest_resources,
    program_resources,
    stack_name_of,
)
from tools.offline import packproc
from tools.offline.findings import k8s_object, located, root_stack_urn, stack_file_places, strip_description
from tools.offline.manifests import InputError, Resource, config_env
from tools.offline.packrun import (
    INSTALLED_PACK,
    PACK_DIR,
    PackProcess,
    PackStream,
    default_pack_dir,
    not_judged,
    run_pack,
    start_pack,
)
from tools.offline.policyconfig import (
    LEVELS,
    AnalyzeError,
    PolicyConfigError,
    load_policy_pack_config,
    policy_configs,
    policy_schema,
    reconcile_policy_config,
)
from tools.offline.report import FORMATS

#: The runner's public API, kept under this module's name (its parts: ``tools/offline/``
#: policyconfig, packrun, findings, and tools/analyze_inputs.py); this module is the command line.
__all__ = [
    "INSTALLED_PACK", "LEVELS", "NAMESPACE_KEY", "PACK_DIR", "PROJECT", "SERVER_KINDS", "AnalyzeError", "PackProcess",
    "PackStream", "PolicyConfigError", "analyze_manifests", "analyze_program", "check_inventory", "check_output_path",
    "config_env", "default_pack_dir", "k8s_object", "load_inventory", "load_policy_pack_config", "located", "main",
    "manifest_resources", "not_judged", "policy_configs", "policy_schema", "program_resources", "reconcile_policy_config",
    "report_path", "root_stack_urn", "run_pack", "stack_file_places", "stack_name_of", "start_pack", "strip_description",
]

ROOT = Path(__file__).resolve().parent.parent


# --- CLI ------------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    ap = cli.parser("python -m tools.analyze", __doc__)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--stack", type=cli.stack_name, help="the program under the mock runtime with Pulumi.<STACK>.yaml")
    src.add_argument("--stack-file", type=Path, help="the program under the mock runtime with this stack file")
    src.add_argument("--manifests", type=Path, help="a directory of plain manifests (or a kustomize directory)")
    ap.add_argument("--inventory", type=Path, help="with --manifests: a stack-format file holding llm-serving:cluster/models")
    ctx = ap.add_mutually_exclusive_group()
    ctx.add_argument("--context-stack", metavar="STACK",
                     help="with --manifests: judge them beside the stack's offline rendering (default inventory: Pulumi.STACK.yaml)")
    ctx.add_argument("--context-namespace", metavar="NS",
                     help="with --manifests: judge them beside the live objects of namespace NS (kubectl)")
    ap.add_argument("--kubeconfig", type=Path, help="with --context-namespace: kubectl's kubeconfig (default: kubectl's own)")
    ap.add_argument("--policy-pack-config", type=Path, help="JSON, as `pulumi preview --policy-pack-config`")
    ap.add_argument("--format", choices=FORMATS, default="table")
    ap.add_argument("--output", help="write the report here (default: stdout; a directory ending in /: its policy.<ext>)")
    ap.add_argument("--also", action="append", default=[], metavar="FORMAT=PATH",
                    help="also write the report in FORMAT to PATH (repeatable), e.g. sarif=out/policy.sarif")
    ap.add_argument("--force", action="store_true",
                    help="let --output / --also write outside out/ or over a file git tracks")
    ap.add_argument("--pack-dir", type=Path, default=PACK_DIR,
                    help="the policy pack directory (default: the checkout's policies/, or the installed package's pack)")
    cli.add_project(ap)
    ap.add_argument("--workers", type=_workers, default=1,
                    help=f"pack processes, 1 to {MAX_WORKERS} (default 1, as the CLI); with more, the last judges the "
                         "stack while the others take the resources; same report")
    return ap


#: The most pack processes ``--workers`` starts: each is a Python process of about 100 MB, and more
#: than the machine's cores only queue (argparse refuses 0, negatives and more, exit 2).
MAX_WORKERS = 16


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; fix: give 1 to {MAX_WORKERS}") from None
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{n} is outside 1 to {MAX_WORKERS}; fix: give 1 to {MAX_WORKERS} (at most "
                                         f"this machine's {os.cpu_count() or 1} cores helps)")
    return n


def _extra_outputs(specs: Iterable[str]) -> list[tuple[str, Path]]:
    out = []
    for spec in specs:
        fmt, _, path = spec.partition("=")
        if fmt not in FORMATS or not path:
            raise AnalyzeError(f"--also {spec}: not FORMAT=PATH with FORMAT one of {', '.join(FORMATS)}; "
                               "fix: e.g. --also sarif=out/policy.sarif")
        out.append((fmt, report_path(path, fmt)))
    return out


#: The file a report gets in a directory named with a trailing ``/`` (``--also sarif=out/ci/``).
REPORT_NAMES = {"table": "policy.txt", "json": "policy.json", "sarif": "policy.sarif", "junit": "policy.xml",
                "markdown": "policy.md"}


def report_path(text: str, fmt: str) -> Path:
    """The file a report path names: ``text`` itself, or, for a directory (a trailing ``/``, or an
    existing directory), :data:`REPORT_NAMES`'s file in it (``sarif=out/ci/`` -> ``out/ci/policy.sarif``;
    it wrote a file named ``ci``)."""
    path = Path(text)
    return path / REPORT_NAMES[fmt] if text.endswith(("/", os.sep)) or path.is_dir() else path


#: Where report files may be written without --force (the preview's out/ as well).
OUTPUT_DIR = ROOT / "out"


def check_output_path(path: Path, force: bool = False, out_dir: Path | None = None) -> None:
    """Refuse a report path (``--output``, ``--also``) that is not a regular file or a new
    path, and, unless ``force``, one outside ``out_dir`` (default :data:`OUTPUT_DIR`; the
    command passes its project's ``out/``) or tracked by git (a typo such
    as ``--output README.md`` would replace the project's file). Raises :class:`AnalyzeError`
    before anything is run or written."""
    target = Path(path).absolute()
    if target.exists() and not target.is_file():
        raise AnalyzeError(f"cannot write the report to {path}: it is not a regular file; fix: name a file path")
    if force:
        return
    out_dir = (out_dir or OUTPUT_DIR).resolve()
    if not target.resolve().is_relative_to(out_dir):
        raise AnalyzeError(f"cannot write the report to {path}: it is outside the output folder {out_dir}; "
                           f"fix: write under {out_dir} (e.g. out/policy.sarif), or pass --force to write there")
    if target.exists() and _git_tracked(target):
        raise AnalyzeError(f"cannot write the report to {path}: git tracks that file, which would be overwritten; "
                           "fix: name a new file, or pass --force")


def _git_tracked(path: Path) -> bool:
    """Whether git tracks ``path`` (False without git or outside a repository)."""
    import subprocess

    try:
        proc = subprocess.run(["git", "-C", str(path.parent), "ls-files", "--error-unmatch", "--", path.name],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _context(args: argparse.Namespace, project: Path) -> tuple[Callable[[], list[Resource]] | None, str]:
    """The ``--context-stack`` / ``--context-namespace`` source (None: none) and its name."""
    if args.context_stack:
        return (lambda: running.from_stack(args.context_stack, project, program_resources)), f"stack {args.context_stack}"
    if args.context_namespace:
        return (lambda: running.from_namespace(args.context_namespace, args.kubeconfig)), \
            f"namespace {args.context_namespace} (live)"
    return None, ""


def main(argv: list[str] | None = None) -> int:
    """The command line (the module docstring); returns the exit code. The cyclic collector is
    off while it runs, as in the preview (:func:`tools.cli.collector_off`): the schemas, the
    stack-file models and the gRPC stubs load inside it."""
    args = _parser().parse_args(argv)
    if args.output is not None:
        args.output = report_path(args.output, args.format)
    with contextlib.ExitStack() as scope:
        try:
            project = scope.enter_context(cli.project(args.project))
        except ValueError as err:  # not a project directory
            return cli.fail("analyze", err)
        with cli.collector_off():
            return _main(args, project)


def _main(args: argparse.Namespace, project: Path) -> int:
    try:
        extra = _extra_outputs(args.also)
        targets = [path.absolute() for _, path in [(args.format, args.output), *extra] if path is not None]
        twice = sorted({str(p) for p in targets if targets.count(p) > 1})
        if twice:
            raise AnalyzeError(f"two reports would be written to {twice[0]} (--output and --also, or two --also); the "
                               "second would replace the first; fix: give each report its own path")
        for _, path in [(args.format, args.output), *extra]:
            if path is not None:
                check_output_path(path, args.force, project / "out")
        if args.inventory is not None and args.manifests is None:
            raise AnalyzeError("--inventory is read with --manifests only (a stack file holds its own inventory); "
                               "fix: drop --inventory, or pass --manifests DIR")
        ppc = load_policy_pack_config(args.policy_pack_config) if args.policy_pack_config else None
        if args.manifests is not None:
            if args.inventory is None and args.context_stack:
                args.inventory = project / f"Pulumi.{args.context_stack}.yaml"
            if args.inventory is None:
                raise AnalyzeError("--manifests needs --inventory STACKFILE (a stack-format file with "
                                   "llm-serving:cluster and llm-serving:models, e.g. policies/fixtures/Pulumi.fixture.yaml)")
            context, context_name = _context(args, project)
            report = analyze_manifests(args.manifests, args.inventory, ppc, args.pack_dir, args.workers, context, context_name)
        else:
            stack_file = args.stack_file or project / f"Pulumi.{args.stack}.yaml"
            report = analyze_program(stack_file, ppc, args.pack_dir, program=project / "__main__.py", workers=args.workers)
    except (AnalyzeError, InputError, running.ContextError, packproc.PackStartError,
            packproc.PackCallError) as err:
        return cli.fail("analyze", err)
    files: dict[Path, str] = {}
    for fmt, path in [(args.format, args.output), *extra]:
        text = report.render(fmt)
        if path is None:
            sys.stdout.write(text)
        else:
            files[path] = text
    cli.write_files(files)  # every report written aside, then moved in place: a full disk leaves the last good ones
    if args.output is not None or args.format != "table":
        print(report.headline(), file=sys.stderr)
    return report.exit_code()


if __name__ == "__main__":
    cli.run(main, "analyze")
