#!/usr/bin/env python3
"""Set-up and entry points for a fresh clone. Needs nothing but Python 3.11+.

    python3 dev.py preview [ARGS...]   offline preview of the prod stack (tools.preview)
    python3 dev.py test [PYTEST ARGS]  the fast suite, then the real suite (builds the toolchain when missing)
    python3 dev.py test --fast [...]   the fast suite only (mock runtime, pack over gRPC; no Go needed)
    python3 dev.py test --real [...]   the real suite only (real CLI, real pack, loopback cluster)
    python3 dev.py test --forge [...]  the forge suite only (a loopback Gitea, the review job under act)
    python3 dev.py test --each [...]   as test, each real-suite module in a pytest of its own (CI)
    python3 dev.py lint [--fix-all]    ruff and mypy, as CI runs them (--fix-all: ruff's fixes, noqa for the rest)
    python3 dev.py analyze [ARGS...]   the policy pack on a stack or a manifest directory (tools.analyze)
    python3 dev.py plan PLAN.json      cards per node at the peak of a real `pulumi preview --json` (tools.plan)
    python3 dev.py adopt-diff [--stack prod]   what adopting the live objects changes, field by field (tools.adopt_diff)
    python3 dev.py rollout [--namespace NS]    after pulumi up: every Deployment rolled out within its await (tools.rollout)
    python3 dev.py policies | catalog  the registry's rules; the model and card catalogs (tools.main)
    python3 dev.py review-comment DIR [--check | --post URL]   CI: the PR's one comment from the review job's outputs (tools.review_comment)
    python3 dev.py deploy-guard STATE.json ...    CI: refuse an unreviewed first adoption before pulumi up (tools.deploy_guard)
    python3 dev.py toolchain [ARGS]    build the real toolchain from the Go module proxy (testbed.toolchain)
    python3 dev.py cluster up|down|status|env   the loopback test cluster (testbed.cluster)
    python3 dev.py bench [NAME]        the benchmarks (bench/)
    python3 dev.py docs [--check]      write the generated reference pages of docs/ (docs/gen.py)
    python3 dev.py contract [--check]  the engine's contract per release, from each release's sdist on PyPI (tools.contract)
    python3 dev.py lock [--check]      re-lock (uv.lock) and export the requirements files from it
    python3 dev.py venv                create or update .venv, nothing else (CI: its own step, its progress in its own log)
    python3 dev.py pin NAME            the pinned version of NAME (pyproject.toml), without .venv

The first call creates ``.venv`` and installs ``requirements-dev.txt`` into it (the package itself
editable, with every pin of ``uv.lock``; by uv when it is on PATH, else pip), showing one line of
progress; later calls reuse it, reinstalling only when requirements-dev.txt or pyproject.toml changed. Each call then compiles
what changed of the project's packages to bytecode (``__pycache__``, as pip does for an installed
package; git ignores it; a few ms when nothing changed): where PYTHONDONTWRITEBYTECODE is set,
Python otherwise compiles them from source at every start (docs/benchmarks.md). The real suite needs Go
(1.26 or later) and the Go module proxy the first time, to build the toolchain into
``~/.cache/llm-serving`` (``$LLM_SERVING_CACHE``); later runs reuse it.

Exit codes: tools/cli.py's contract (docs/cli.md): the command's own; pytest's, ruff's and mypy's
mapped to it (a failed test or a finding 1, pytest's usage error 2, a tool's own failure 3); 2 for
a missing or unknown command, with one line naming them.
"""

from __future__ import annotations

import compileall
import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
import time
import tomllib
import venv
from pathlib import Path

from tools import cli  # the exit-code contract every command shares (standard library only)

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
STAMP = VENV / ".requirements.sha256"
#: What .venv gets: the package editable and every pin of the lock, runtime and development.
DEV_REQUIREMENTS = ROOT / "requirements-dev.txt"
#: The files exported from uv.lock (``python3 dev.py lock``): file -> ``uv export`` arguments.
#: requirements.txt is the program's environment (Pulumi.yaml: the CLI installs it into .venv),
#: policies/requirements.txt the pack's (PulumiPolicy.yaml: into policies/venv), both runtime only.
EXPORTS = {
    "requirements.txt": ["--no-emit-project", "--only-group", "program"],
    "policies/requirements.txt": ["--no-emit-project", "--only-group", "pack"],
    "requirements-dev.txt": ["--group", "dev"],
}
#: The project's own packages, compiled to bytecode (``__pycache__/*.pyc``) at each command, as pip
#: compiles an installed package: a machine that sets PYTHONDONTWRITEBYTECODE (this one does)
#: otherwise compiles every project module from source at every start of a command and of the
#: policy pack (docs/benchmarks.md). Only changed files are compiled again (a few ms otherwise).
PACKAGES = ("core", "stackfile", "components", "policies", "tools")
#: Folders under :data:`PACKAGES` never compiled: virtual environments (the pack's ``policies/venv``,
#: made by the Pulumi CLI) and caches.
NOT_COMPILED = frozenset({"venv", ".venv", "__pycache__", "node_modules"})
EXPORT_HEADER = ("# Exported from uv.lock by `python3 dev.py lock` (uv export {args}); do not edit: change\n"
                 "# pyproject.toml, then run `python3 dev.py lock` (tests/project/test_packaging.py checks this file is current).\n")


def _venv_digest() -> str:
    return hashlib.sha256(DEV_REQUIREMENTS.read_bytes() + (ROOT / "pyproject.toml").read_bytes()).hexdigest()


def ensure_venv() -> None:
    """Create .venv and install requirements-dev.txt when missing or out of date, in one line of
    progress (pip's log is shown only when the install fails)."""
    want = _venv_digest()
    if PY.exists() and STAMP.exists() and STAMP.read_text().strip() == want:
        return
    started = time.monotonic()
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    count = sum(1 for line in DEV_REQUIREMENTS.read_text().splitlines() if re.match(r"^[A-Za-z0-9]", line))
    print(f"dev.py: installing {count} pinned packages and this project into .venv (a few minutes the first time) ...",
          end="", file=sys.stderr, flush=True)
    # From the project directory: requirements-dev.txt installs the package itself as `-e .`.
    # uv on PATH (the workflows put the lock's uv there) installs the same pins from its cache in
    # seconds when warm (docs/benchmarks.md "Push to comment"); pip otherwise.
    uv = shutil.which("uv")
    installer = [uv, "pip", "install", "--python", str(PY), "-q"] if uv else \
        [str(PY), "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar", "off", "-q"]
    proc = subprocess.run([*installer, "-r", str(DEV_REQUIREMENTS)], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        print(" failed", file=sys.stderr)
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        tool = "uv" if uv else "pip"
        raise VenvError(f"{tool} could not install requirements-dev.txt into .venv (exit {proc.returncode}; its message is "
                        "above); fix: check the network or the package index (pip config list), then run again")
    print(f" done in {time.monotonic() - started:.0f} s", file=sys.stderr)
    STAMP.write_text(want)


def compile_bytecode(root: Path) -> None:
    """Write ``__pycache__`` for :data:`PACKAGES` under ``root`` with :mod:`compileall` (as
    ``pip install`` does for a package; written whatever PYTHONDONTWRITEBYTECODE says, which
    governs only the interpreter's own writes; an up-to-date file is left as it is). Folders named
    in :data:`NOT_COMPILED` are not entered. Best effort: a file that does not compile, or a tree
    that cannot be written (read-only), is left to be compiled in memory where it is imported."""
    for name in PACKAGES:
        for folder, dirs, files in os.walk(root / name):
            dirs[:] = sorted(d for d in dirs if d not in NOT_COMPILED)
            for file in sorted(files):
                if file.endswith(".py"):
                    compileall.compile_file(Path(folder) / file, quiet=2)


def pin(name: str) -> str:
    """The version ``name`` is pinned to (``name==VERSION``) in pyproject.toml's dependencies: the
    one place of Pulumi's version (the toolchain, the workflows and the requirements read it)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for spec in project["dependencies"]:
        found, _, version = spec.partition("==")
        if found.strip().lower() == name.lower() and version:
            return version.strip()
    raise KeyError(f"{name} is not pinned with == in pyproject.toml's dependencies")


def export(path: str, uv: list[str]) -> str:
    """The text of the exported file ``path`` as uv.lock gives it (``uv export --frozen``)."""
    args = ["export", "--frozen", "--no-hashes", "--no-header", *EXPORTS[path]]
    proc = subprocess.run([*uv, *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return EXPORT_HEADER.format(args=" ".join(EXPORTS[path])) + proc.stdout


def lock(args: list[str]) -> int:
    """``uv lock`` (``--check``: no re-lock, only compare), then write or check every exported file."""
    uv = [str(PY), "-m", "uv"]
    check = "--check" in args
    if not check and cli.call([*uv, "lock"], cwd=str(ROOT)) != 0:
        return 1
    stale = []
    for path in EXPORTS:
        text = export(path, uv)
        if (ROOT / path).read_text() != text:
            if check:
                stale.append(path)
            else:
                (ROOT / path).write_text(text)
                print(f"dev.py: wrote {path}", file=sys.stderr)
    if stale:
        print(f"dev.py: {', '.join(stale)} differ from uv.lock; run `python3 dev.py lock`", file=sys.stderr)
        return 1
    return 0


def lint(args: list[str]) -> int:
    """Ruff (the rule families of pyproject.toml's [tool.ruff.lint]) and mypy ([tool.mypy]) on the
    project; the first failing exit code. ``--fix-all`` first applies ruff's fixes and marks what
    has none with ``# noqa: <code>`` (``ruff check --fix``, then ``--add-noqa``): the one command
    that brings new code under the rules (docs/development.md)."""
    ruff = [str(PY), "-m", "ruff", "check"]
    if "--fix-all" in args:
        args = [a for a in args if a != "--fix-all"]
        cli.call([*ruff, "--fix", "--exit-zero", "--quiet", "."], cwd=str(ROOT))
        cli.call([*ruff, "--add-noqa", "."], cwd=str(ROOT))
    code = _tool_code(cli.call([*ruff, *args, "."], cwd=str(ROOT)))
    return code or _tool_code(cli.call([str(PY), "-m", "mypy"], cwd=str(ROOT)))


def _tool_code(code: int) -> int:
    """Ruff's and mypy's exit code in tools/cli.py's contract: 0 clean, 1 findings (a verdict),
    anything else the tool's own failure (3)."""
    return code if code in (cli.OK, cli.VERDICT) else cli.CRASH


class VenvError(Exception):
    """.venv cannot be set up; the message says why and the fix."""


COMMANDS = {
    "preview": ["-m", "tools.preview"],
    "analyze": ["-m", "tools.analyze"],
    "plan": ["-m", "tools.plan"],
    "adopt-diff": ["-m", "tools.adopt_diff"],
    "rollout": ["-m", "tools.rollout"],
    "policies": ["-m", "tools.main", "policies"],
    "catalog": ["-m", "tools.main", "catalog"],
    "review-comment": ["-m", "tools.review_comment"],
    "deploy-guard": ["-m", "tools.deploy_guard"],
    "toolchain": ["-m", "testbed.toolchain"],
    "cluster": ["-m", "testbed.cluster"],
    "bench": ["-m", "bench"],
    "docs": ["-m", "docs.gen"],
    "contract": ["-m", "tools.contract"],
}
#: pytest's exit code when it collected no test: a failure for CI (it must run tests).
PYTEST_NO_TESTS = 5


#: Seconds an interrupted real suite is given to stop its loopback clusters (``kwokctl delete``,
#: then the processes left: tests/real/conftest.py) before it is killed.
REAL_SUITE_GRACE_S = 60.0


#: Options that choose the fast suite's workers or order themselves: given one, dev.py adds none of its own.
WORKER_OPTIONS = ("-n", "--numprocesses", "-p no:xdist", "--dist")
ORDER_OPTIONS = ("--random-order", "-p no:random_order")
#: Where the real suite's modules are (``--each`` runs every ``test_real_*.py`` of it alone).
REAL_SUITE = ROOT / "tests" / "real"


def _given(args: list[str], options: tuple[str, ...]) -> bool:
    """Whether ``args`` hold one of ``options`` (``-n 2``, ``-n2``, ``--random-order-seed=7``, ``-p no:xdist``)."""
    joined = [f"{a} {b}" for a, b in zip(args, args[1:], strict=False)]
    return any(a == o or a.startswith(o) or (" " in o and o in joined) for a in args for o in options)


def fast_options(args: list[str]) -> list[str]:
    """What dev.py adds to the fast suite's pytest: both cores (pytest-xdist, ``-n 2``, each test
    module on one worker: ``--dist loadfile``, so a module's fixtures are made once) and a random
    order (pytest-random-order: modules shuffled, tests shuffled within each) under a fresh seed,
    printed so a failure can be run again in the same order (``--random-order-seed=N``). Options
    of the caller's that choose either are kept instead."""
    out = []
    if not _given(args, WORKER_OPTIONS):
        out += ["-n", "2", "--dist", "loadfile"]
    if not _given(args, ORDER_OPTIONS):
        seed = random.randrange(1_000_000)
        print(f"dev.py: the fast suite in a random order, seed {seed} (the same order again: "
              f"python3 dev.py test --fast --random-order-seed={seed})", file=sys.stderr, flush=True)
        out += ["--random-order-bucket=module", f"--random-order-seed={seed}"]
    return out


def suite_env() -> dict[str, str]:
    """The suites' environment: this one without PYTHONDONTWRITEBYTECODE, so Python caches what the
    tests import (``__pycache__``, git ignores it) and pytest keeps its assertion-rewritten test
    modules; with it set, every worker rewrote every test module at each run (about 4 s of CPU a
    worker, docs/testing.md)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _pytest(marker: str, args: list[str]) -> int:
    grace = REAL_SUITE_GRACE_S if marker in ("real", FORGE_MARKER) else cli.CHILD_GRACE_S
    code = cli.call([str(PY), "-m", "pytest", "-m", marker, *args], cwd=str(ROOT), grace=grace, env=suite_env())
    if code == PYTEST_NO_TESTS:
        print(f"dev.py: pytest -m '{marker}' collected no test", file=sys.stderr)
        return 1
    # pytest's own codes in tools/cli.py's contract: 1 tests failed (a verdict), 2 interrupted,
    # 3 pytest's internal error, 4 a usage error (bad input); a signal's code passes as it is.
    return {2: cli.INTERRUPTED, 3: cli.CRASH, 4: cli.BAD_INPUT}.get(code, code)


def real_each(args: list[str]) -> int:
    """Every module of the real suite in a pytest of its own (``-m real tests/real/<module>``), so
    none leans on another's leftovers; all run, then the worst exit code (an interruption stops at
    once), with one line naming the modules that failed."""
    failed: list[str] = []
    worst = 0
    for module in sorted(REAL_SUITE.glob("test_real_*.py")):
        name = module.relative_to(ROOT).as_posix()
        print(f"dev.py: the real suite, {name} alone", file=sys.stderr, flush=True)
        code = _pytest("real", [*args, name])
        if code < 0 or code >= cli.INTERRUPTED:  # interrupted or signalled: stop here
            return code
        if code:
            failed.append(name)
            worst = max(worst, code)
    if failed:
        print(f"dev.py: real-suite modules that failed alone: {', '.join(failed)}", file=sys.stderr)
    return worst


#: The forge suite's marker (tests/real/test_forge_*.py): a real Gitea and act; run only by ``test --forge``.
FORGE_MARKER = "forge"


def forge(args: list[str]) -> int:
    """The forge suite alone (``-m forge``: a loopback Gitea receives the review job's comment under
    act), after the toolchain with its forge parts (``python3 dev.py toolchain --forge``)."""
    print("dev.py: the forge suite: building the toolchain with Gitea if missing (python3 dev.py toolchain --forge)",
          file=sys.stderr, flush=True)
    code = cli.call([str(PY), "-m", "testbed.toolchain", "--forge"], cwd=str(ROOT), stdout=subprocess.DEVNULL)
    return code if code != 0 else _pytest(FORGE_MARKER, args)


def test(args: list[str]) -> int:
    """The fast suite (``-m "not real and not forge"``, on both cores in a random order:
    :func:`fast_options`), then the toolchain (built when missing), then the real suite (``-m
    real``). ``--fast`` / ``--real`` run one of them; ``--each`` runs every real-suite module in a
    pytest of its own (:func:`real_each`); ``--forge`` runs the forge suite alone (:func:`forge`);
    other arguments go to pytest. Stops at the first part that fails, with its exit code."""
    if "--forge" in args:
        return forge([a for a in args if a != "--forge"])
    fast_only, real_only, each = "--fast" in args, "--real" in args, "--each" in args
    args = [a for a in args if a not in ("--fast", "--real", "--each")]
    if not real_only:
        code = _pytest(f"not real and not {FORGE_MARKER}", [*fast_options(args), *args])
        if code != 0 or fast_only:
            return code
    print("dev.py: the real suite: building the toolchain if missing (python3 dev.py toolchain)", file=sys.stderr, flush=True)
    code = cli.call([str(PY), "-m", "testbed.toolchain"], cwd=str(ROOT), stdout=subprocess.DEVNULL)
    if code != 0:
        return code
    return real_each(args) if each else _pytest("real", args)


#: The commands dev.py runs itself (after .venv is ready), beside :data:`COMMANDS`.
OWN = {"test": test, "lint": lint, "lock": lock, "venv": lambda args: cli.OK}


def main(argv: list[str]) -> int:
    """Run the command ``argv[0]`` with the rest of ``argv``; its exit code is the command's
    (``tools/cli.py``'s contract). ``--help`` is 0; a missing or unknown command is 2, with one line."""
    if argv and argv[0] in ("-h", "--help"):
        print((__doc__ or "").strip())
        return 0
    if not argv:
        print((__doc__ or "").strip(), file=sys.stderr)
        return cli.BAD_INPUT
    if argv[0] == "pin":
        if len(argv) != 2:
            print("dev.py: pin takes one package name, e.g. `python3 dev.py pin pulumi`", file=sys.stderr)
            return cli.BAD_INPUT
        try:
            print(pin(argv[1]))
        except KeyError as err:
            return cli.fail("dev.py", f"{err.args[0]}; fix: name a package pinned there (pulumi, pulumi-kubernetes)")
        return 0
    if argv[0] not in (*COMMANDS, *OWN):
        print(f"dev.py: unknown command {argv[0]!r}; the commands are: {', '.join([*COMMANDS, *OWN, 'pin'])} "
              "(python3 dev.py --help)", file=sys.stderr)
        return cli.BAD_INPUT
    if argv[0] == "lock" and PY.exists():
        return lock(argv[1:])  # re-locking after a pin changed: .venv is out of date until then
    try:
        ensure_venv()
        compile_bytecode(ROOT)
    except (VenvError, OSError) as err:
        return cli.fail("dev.py", err)
    if argv[0] in OWN:
        return OWN[argv[0]](argv[1:])
    # Run in the caller's directory, so paths on the command line mean what they mean to the
    # caller's shell; the project is found through PYTHONPATH.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return cli.call([str(PY), *COMMANDS[argv[0]], *argv[1:]], env=env)


if __name__ == "__main__":
    cli.run(lambda: main(sys.argv[1:]), "dev.py")
