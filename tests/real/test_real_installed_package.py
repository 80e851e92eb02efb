"""``llm-serving`` as installed: the wheel ``pip install .`` builds, installed into a fresh virtual
environment (the lock's versions as constraints), run on a project directory outside the checkout.

In the real suite (marker ``real``) for its cost, not for a cluster: the fresh environment installs
every dependency (about 100 s with pip's cache warm). The project directory holds what a user's
does: ``Pulumi.yaml``, ``__main__.py`` and the frozen ``Pulumi.prod.yaml``; nothing of the checkout
is on the path (no ``PYTHONPATH``), so the program's packages, the commands and the policy pack
(under the environment's ``share/llm-serving/policies``) are the installed ones.

Each verb: ``preview`` (with the pack, and ``--no-policy``), ``analyze``, ``plan`` (the real CLI's
plans of tests/fixtures/plans), in the project directory and from elsewhere with ``--project DIR``;
``policies`` and ``catalog``; ``adopt-diff`` and ``rollout`` (they need a cluster) their ``--help``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import PROD_STACK_FILE, ROOT

pytestmark = pytest.mark.real

PLANS = ROOT / "tests" / "fixtures" / "plans"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel of the working tree installed: its ``bin/``."""
    top = tmp_path_factory.mktemp("installed")
    clone = top / "clone"
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
    for name in filter(None, tracked.split("\0")):
        if (ROOT / name).is_file() and not (ROOT / name).is_symlink():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(top / "dist"), str(clone)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    [wheel] = (top / "dist").glob("llm_serving-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(top / "venv")], check=True)
    constraints = top / "constraints.txt"  # the lock's every version (requirements-dev.txt, less its editable line)
    constraints.write_text("".join(ln + "\n" for ln in (ROOT / "requirements-dev.txt").read_text().splitlines()
                                   if not ln.startswith("-e")))
    pip = subprocess.run([str(top / "venv" / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                          "-c", str(constraints), str(wheel)], capture_output=True, text=True, timeout=1200)
    assert pip.returncode == 0, pip.stderr[-3000:]
    return top / "venv" / "bin"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("user") / "my-llm-serving"
    where.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(ROOT / name, where / name)
    shutil.copy2(PROD_STACK_FILE, where / "Pulumi.prod.yaml")
    return where


def _run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LLM_SERVING_PROJECT")}
    return subprocess.run([str(bin_dir / "llm-serving"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def _last(text: str) -> str:
    return text.rstrip("\n").rsplit("\n", 1)[-1]


def test_the_installed_code_and_pack_are_the_environments_own(installed, project):
    out = subprocess.run([str(installed / "python"), "-c", "import core, tools, policylib; from tools import analyze; "
                          "print(core.__file__); print(tools.__file__); print(analyze.PACK_DIR)"],
                         cwd=project, capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert out.returncode == 0, out.stderr
    venv = installed.parent.resolve()
    core_file, tools_file, pack = (Path(line).resolve() for line in out.stdout.splitlines())
    assert core_file.is_relative_to(venv) and tools_file.is_relative_to(venv)
    assert pack == venv / "share" / "llm-serving" / "policies"
    assert sorted(p.name for p in pack.glob("*.py")) == sorted(p.name for p in (ROOT / "policies").glob("*.py"))


def test_preview_in_the_project_directory_with_the_installed_pack(installed, project):
    run = _run(installed, "preview", cwd=project)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _last(run.stdout).startswith("PASS: no mandatory violation, 0 advisory (llm-serving-policies on stack prod")
    assert len(list((project / "out" / "prod" / "1-manifest").glob("*.yaml"))) == 8
    run = _run(installed, "preview", "--no-policy", "--out", "out/no-policy", cwd=project)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "wrote 8 manifests to out/no-policy" in run.stdout


def test_preview_and_analyze_from_elsewhere_with_project(installed, project, tmp_path):
    run = _run(installed, "preview", "--project", str(project), "--base", str(project / "out" / "prod"),
               "--out", str(tmp_path / "again"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "diff: no changes" in run.stdout
    run = _run(installed, "analyze", "--project", str(project), "--stack", "prod", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _last(run.stdout).startswith("PASS: no mandatory violation")
    # Outside any project, the command says so (exit 2), never a traceback.
    run = _run(installed, "preview", cwd=tmp_path)
    assert run.returncode == 2 and "is not a Pulumi project directory" in run.stderr and "Traceback" not in run.stderr


def test_analyze_in_the_project_directory(installed, project):
    run = _run(installed, "analyze", "--stack", "prod", cwd=project)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _last(run.stdout).startswith("PASS: no mandatory violation")


@pytest.mark.parametrize("fixture, code, verdict", [("rename-plain.jsonl", 1, "REFUSED: "), ("rename-former.jsonl", 0, "PASS: ")])
def test_plan_reads_a_real_plan(installed, project, fixture, code, verdict):
    run = _run(installed, "plan", str(PLANS / fixture), cwd=project)
    assert run.returncode == code, run.stderr[-3000:]
    assert _last(run.stdout).startswith(verdict)


def test_the_other_verbs(installed, project):
    for verb in ("policies", "catalog"):
        run = _run(installed, verb, cwd=project)
        assert run.returncode == 0 and run.stdout, (verb, run.stderr[-2000:])
    for verb in ("adopt-diff", "rollout"):  # they need a cluster: their help here
        run = _run(installed, verb, "--help", cwd=project)
        assert run.returncode == 0 and run.stdout.startswith(f"usage: llm-serving {verb} "), verb
