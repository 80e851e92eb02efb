"""Every command the README and docs/ show runs, or is marked here with what it needs.

The commands are the lines of the ``sh`` blocks and the inline code spans that start with
``python3 dev.py``, ``python -m tools.<command>`` or ``llm-serving``. Each is either

- run as shown, in this process (its module's ``main``), against a scratch copy of the project
  (``--project``; ``out/`` and ``rendered`` there; ``Pulumi.try.yaml`` a copy of prod, as the docs
  say to make it) and must end in a verdict (exit 0 or 1), never bad input or a crash; a
  placeholder (``DIR``, ``NEW.yaml``, ``plan.json``) is given a real file of the kind it names; a
  command named in prose without the argument it requires (`python3 dev.py plan`) runs its
  ``--help``; or
- marked by :func:`needs` with what it needs that a test run has not (a cluster, a backend, the
  toolchain build, the suite itself, an installed package), and its verb still checked to exist.
"""

from __future__ import annotations

import io
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.paths import PROD_STACK_FILE, ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"```(?:sh|bash|shell|console)\n(.*?)```", re.S)
INLINE = re.compile(r"`((?:python3 dev\.py|python -m tools\.\w+|llm-serving) [^`]*)`")
#: Placeholder -> the file (relative to the project) that stands for it.
#: ``DIR`` is a new folder after ``--out`` and a folder of manifests elsewhere; ``<prod rendering>``
#: prod's rendering in the scratch project.
PLACEHOLDERS = {"NEW.yaml": "tests/stacks/after-001.yaml", "plan.json": "tests/fixtures/plans/rename-former.jsonl",
                "PLAN.json": "tests/fixtures/plans/rename-former.jsonl", "DIR": "tests/manifests/hand-written"}
#: dev.py verbs -> what a run needs that a test has not (their own tests or the CI run them).
NEEDS_VERB = {
    "rollout": "a cluster after pulumi up (tests/real/test_real_awaits.py runs it)",
    "adopt-diff": "a cluster with ArgoCD's objects (tests/real/test_real_adopt_diff.py runs it)",
    "cluster": "the toolchain's loopback cluster (tests/testbed/test_cluster_cli.py)",
    "deploy-guard": "a stack's exported state (tests/tools/test_review_comment_and_deploy_guard.py)",
    "review-comment": "the review job's outputs (tests/tools/test_review_comment_and_deploy_guard.py)",
    "toolchain": "the Go build of the toolchain, tens of minutes (python3 dev.py toolchain --check says whether it is built)",
    "test": "the test suite itself",
    "bench": "a benchmark run, minutes (tests/bench/ runs its code on small inputs)",
    "lint": "the lint step CI runs before the tests (.ci/run)",
    "lock": "the network (uv resolves against PyPI; tests/project/test_packaging.py checks the lock)",
    "contract": "PyPI's vLLM sdists, minutes (tests/real/test_real_engine_contract.py runs `dev.py contract --check`)",
    "docs": "it rewrites docs/ (tests/project/test_docs_generated.py runs the generator and compares)",
}


def commands() -> list[tuple[str, str]]:
    """(page, command) of every command shown, in page order, each once."""
    seen: dict[str, str] = {}
    for page in DOCS:
        text = page.read_text()
        lines = [ln for block in FENCE.findall(text) for ln in block.splitlines()] + INLINE.findall(text)
        for line in lines:
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                seen.setdefault(line, page.relative_to(ROOT).as_posix())
    return [(page, cmd) for cmd, page in seen.items()]


def needs(command: str) -> str | None:
    """What ``command`` needs that a test run has not, or None when it is run here."""
    words = command.split()
    if words[0] in ("pulumi", "kubectl"):
        return "a Pulumi backend and the cluster (the real suite runs these: tests/real/)"
    if words[0] == "llm-serving":
        return "the installed package (tests/real/test_real_installed_package.py installs it and runs each verb)"
    if command.startswith(("python3 -m venv", "(cd policies", "cp ")):
        return "a set-up step of the by-hand path (it installs packages or copies a file the run below makes itself)"
    if words[1:3] == ["-m", "tests.policies.corpus"]:
        return "the whole public corpus judged, a minute (tests/policies/test_corpus.py checks the counts it prints)"
    if "|" in words:
        return "a list of alternatives, not one command"
    if "--context-namespace" in words:
        return "a cluster to read the live namespace from (tests/tools/test_analyze_context.py stands one in)"
    if "<large>" in command:
        return "the generated large stack, a benchmark's input (python3 dev.py bench preview makes it)"
    verb = words[2] if words[:2] == ["python3", "dev.py"] and len(words) > 2 else None
    return NEEDS_VERB.get(verb) if verb else None


def _module_and_args(command: str) -> tuple[str, list[str]]:
    words = shlex.split(command)
    if words[:2] == ["python3", "dev.py"]:
        import importlib.util

        spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
        assert spec is not None and spec.loader is not None
        dev = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(dev)
        if len(words) == 2 or words[2] in ("--help", "pin") or words[2] in dev.OWN:
            return "dev", words[2:]
        assert words[2] in dev.COMMANDS or words[2] in dev.OWN, f"{command}: dev.py has no command {words[2]}"
        target = dev.COMMANDS.get(words[2], [])
        if target[:2] == ["-m", "tools.main"]:
            return "tools.main", [*target[2:], *words[3:]]
        return target[1] if target else "dev", words[3:]
    assert words[:2] == ["python", "-m"], command
    return words[2], words[3:]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A project directory: Pulumi.yaml, __main__.py, prod (frozen) and try (its copy), prod's rendering in out/prod."""
    from tools import preview

    where = tmp_path_factory.mktemp("docs-commands") / "project"
    where.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(ROOT / name, where / name)
    for stack in ("prod", "try"):
        shutil.copy2(PROD_STACK_FILE, where / f"Pulumi.{stack}.yaml")
    out = io.StringIO()
    assert preview.main(["--project", str(where), "--no-policy"], stdout=out, stderr=out) == 0, out.getvalue()
    return where


def _localise(args: list[str], project: Path) -> list[str]:
    out: list[str] = []
    for a in args:
        if a == "DIR" and out and out[-1] == "--out":
            a = f"out/docs-dir-{len(list((project / 'out').glob('docs-dir-*')))}"
        a = PLACEHOLDERS.get(a, a)
        if a == "out" or a.startswith("out/") or a == "rendered":
            a = str(project / a)
        elif "=out/" in a:  # --also FORMAT=out/...
            fmt, path = a.split("=", 1)
            a = f"{fmt}={project / path}"
        out.append(a)
    return out


@pytest.mark.parametrize("page, command", commands(), ids=[c for _, c in commands()])
def test_each_command_shown_runs_or_says_what_it_needs(page, command, scratch, monkeypatch, capsys):
    reason = needs(command)
    if command.startswith("python3 dev.py"):
        _module_and_args(command.split(" | ")[0])  # its verb exists, whatever it needs
    if reason is not None:
        assert reason  # marked: what it needs is said
        return
    module, shown = _module_and_args(command.replace("<prod rendering>", "out/prod"))
    args = list(shown)
    monkeypatch.chdir(ROOT)  # relative paths of the docs are the repository's
    if module in ("tools.preview", "tools.analyze"):
        args = _localise(args, scratch) + ["--project", str(scratch)]
        if module == "tools.preview" and "--out" not in args:
            args += ["--out", str(scratch / "out" / f"docs-{abs(hash(command))}")]
    else:
        args = _localise(args, scratch)
    if module == "dev":
        import subprocess
        import sys

        run = subprocess.run([sys.executable, "dev.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
        code, text = run.returncode, run.stdout + run.stderr
    else:
        import importlib
        import inspect

        main = importlib.import_module(module).main
        buf = io.StringIO()  # a command whose streams are parameters gets its own (their defaults bind at import)
        streams = {k: buf for k in ("stdout", "stderr") if k in inspect.signature(main).parameters}
        try:
            code = main(args, **streams)
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        captured = capsys.readouterr()
        text = buf.getvalue() + captured.out + captured.err
        if code == 2 and not shown and "required" in text:
            # The prose names the command (`python3 dev.py plan` reads a plan): its --help runs.
            with pytest.raises(SystemExit) as exit_:
                main(["--help"])
            code, text = int(exit_.value.code or 0), capsys.readouterr().out
    assert code in (0, 1), f"{page}: `{command}` exited {code}:\n{text[-3000:]}"
    assert "Traceback" not in text, f"{page}: `{command}`:\n{text[-3000:]}"


def test_the_commands_are_found():
    """The extraction finds the README's set-up commands and the by-hand deploy (it cannot pass by finding none)."""
    shown = {c for _, c in commands()}
    assert {"python3 dev.py preview", "python3 dev.py test", "pulumi up --stack prod --policy-pack policies"} <= shown
    assert any(c.startswith("python3 -m venv .venv") for c in shown)
