"""The CI workflows (.gitea/workflows/, GitHub Actions syntax as Gitea Actions runs it).

Lint: every workflow validates against the GitHub workflow schema that check-jsonschema
ships (``--builtin-schema vendor.github-workflows``, offline). Without check-jsonschema the
lint test skips with the reason. The structural tests check that the workflows run the
commands the README's daily workflow names for CI, and that the offline commands they call parse with this repo's CLIs.
"""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import dev
from tools.analyze import _parser as analyze_parser

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".gitea" / "workflows").glob("*.yaml"))
HAS_LINTER = importlib.util.find_spec("check_jsonschema") is not None
needs_linter = pytest.mark.skipif(
    not HAS_LINTER, reason="check-jsonschema is not installed (pip install check-jsonschema==0.39.0)"
)


def lint(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *map(str, files)],
        capture_output=True, text=True,
    )


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / ".gitea" / "workflows" / name).read_text())


def triggers(wf: dict) -> dict:
    return wf.get("on") or wf.get(True)  # PyYAML reads the bare key `on` as True


def run_lines(wf: dict) -> list[str]:
    """Every shell line of every step (backslash continuations joined, spaces squeezed)."""
    out = []
    for job in wf["jobs"].values():
        for step in job["steps"]:
            for line in step.get("run", "").replace("\\\n", " ").splitlines():
                if line.strip():
                    out.append(" ".join(line.split()))
    return out


def test_there_are_two_workflows():
    assert [p.name for p in WORKFLOWS] == ["deploy.yaml", "pull-request.yaml"]


@needs_linter
def test_workflows_validate_against_the_github_workflow_schema():
    proc = lint(*WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_linter
def test_the_linter_refuses_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("on: pull_request\njobs:\n  x:\n    steps:\n      - run: true\n")  # no runs-on
    assert lint(bad).returncode != 0


def test_pull_request_runs_tests_offline_checks_and_the_real_preview():
    wf = load("pull-request.yaml")
    assert "pull_request" in triggers(wf)
    lines = run_lines(wf)
    assert any(line.startswith("python3 dev.py test") for line in lines)
    assert any("pulumi preview --stack prod --policy-pack policies --diff" in line for line in lines)
    analyze = [line for line in lines if "python3 dev.py analyze" in line]
    assert len(analyze) == 1
    assert "sarif=" in analyze[0] and "markdown=" in analyze[0]


def test_merge_to_main_runs_pulumi_up_with_the_policy_pack():
    wf = load("deploy.yaml")
    assert triggers(wf)["push"]["branches"] == ["main"]
    assert any("pulumi up --yes --stack prod --policy-pack policies" in line for line in run_lines(wf))
    assert wf["concurrency"]["cancel-in-progress"] is False


def test_the_offline_commands_in_the_workflows_exist_and_parse():
    for wf in (load("pull-request.yaml"), load("deploy.yaml")):
        for line in run_lines(wf):
            for cmd in line.split("python3 dev.py ")[1:]:
                words = shlex.split(cmd.split(";")[0].split("&&")[0])
                assert words[0] in (*dev.COMMANDS, "test"), words[0]
                if words[0] == "toolchain":
                    from testbed import toolchain

                    assert toolchain.main(["--check", *words[1:]]) in (0, 1)
                if words[0] == "analyze":
                    args = analyze_parser().parse_args(words[1:])
                    assert args.stack == "prod"
                    assert {spec.split("=")[0] for spec in args.also} == {"sarif", "junit", "markdown"}
                if words[0] == "preview":
                    from tools import preview

                    assert preview._parser().parse_args(words[1:]).stack == "prod"
