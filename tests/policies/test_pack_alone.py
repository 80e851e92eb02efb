"""The pack publishes: ``policies/`` copied alone (what ``pulumi policy publish`` uploads: the
folder's files, symbolic links followed, what .gitignore names left out) installs as the Pulumi CLI
installs a published Python pack and judges prod and the history stacks exactly as the pack in the
repository does.

The install follows PulumiPolicy.yaml's ``runtime`` options as the CLI reads them: ``toolchain:
pip`` creates the virtualenv named by ``virtualenv`` inside the pack's folder and runs ``pip
install -r requirements.txt`` there (the CLI's InstallDependencies for a policy pack). Nothing of
the repository is on that environment's path: ``core`` comes from the copy (policies/core links
to ../core, so the upload holds the files). The copy is made afresh for the module; its
virtualenv is built that way once per requirements (the lock) and Python, in the toolchain's
cache, and linked in at the ``virtualenv`` name (``tests/pack_env.py``), so the fast suite builds
it only on a machine's first run after the lock changed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from policylib.pack import policies as pack_policies
from tests import pack_env
from tests.paths import ROOT
from tools import analyze
from tools.offline.manifests import load_stack_file

POLICIES = ROOT / "policies"
#: What `pulumi policy publish` leaves out here: the names the repository's .gitignore lists
#: for this folder (the CLI honours .gitignore files, its own and its parents').
PUBLISH_IGNORES = shutil.ignore_patterns("venv", ".venv", "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache",
                                         ".mypy_cache", ".ruff_cache")
STACKS = ["tests/fixtures/prod/Pulumi.prod.yaml", *sorted(f"tests/stacks/{p.name}" for p in (ROOT / "tests" / "stacks").glob("*.yaml"))]


def runtime_options() -> dict:
    """PulumiPolicy.yaml's ``runtime``: name and options."""
    runtime = yaml.safe_load((POLICIES / "PulumiPolicy.yaml").read_text())["runtime"]
    assert runtime["name"] == "python"
    return runtime.get("options") or {}


def publish_copy(dest: Path) -> Path:
    """``policies/`` as the upload holds it, written to ``dest`` (a new folder)."""
    shutil.copytree(POLICIES, dest, symlinks=False, ignore=PUBLISH_IGNORES)
    return dest


def install_as_the_cli_does(pack: Path) -> str:
    """The pack's virtualenv per PulumiPolicy.yaml (``toolchain: pip``, at ``virtualenv``): the
    cached build of the copy's requirements.txt linked in; returns its python."""
    options = runtime_options()
    assert options.get("toolchain", "pip") == "pip"
    try:
        return str(pack_env.link_into(pack, options.get("virtualenv", "venv"), pack / "requirements.txt"))
    except pack_env.PackEnvError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> tuple[Path, str]:
    """A fresh copy of the upload and its installed python."""
    pack = publish_copy(tmp_path_factory.mktemp("published") / "pack")
    return pack, install_as_the_cli_does(pack)


def test_the_upload_reaches_nothing_outside_the_folder(tmp_path):
    pack = publish_copy(tmp_path / "pack")
    text = (pack / "requirements.txt").read_text()
    assert "../" not in text and "-e " not in text and "file:" not in text
    assert (pack / "core" / "rulebook" / "__init__.py").is_file() and not (pack / "core").is_symlink()
    assert {p.name for p in (pack / "core" / "data").iterdir()} == {
        "models.yaml", "models.schema.json", "cards.yaml", "cards.schema.json", "images.yaml", "images.schema.json",
        "vllm_releases.json", "vllm_releases.schema.json", "candle_vllm_commits.json", "candle_vllm_commits.schema.json"}
    assert (pack / "PulumiPolicy.yaml").exists() and (pack / "policylib" / "pack.py").exists()
    assert not list(pack.rglob("__pycache__")) and not (pack / "venv").exists()
    assert runtime_options() == {"toolchain": "pip", "virtualenv": "venv"}


def test_the_copy_imports_core_from_itself(published):
    pack, python = published
    probe = subprocess.run([python, "-c", "import core, policylib, pulumi_policy; print(core.__file__)"], cwd=pack,
                           capture_output=True, text=True, check=True)
    assert Path(probe.stdout.strip()).resolve().is_relative_to(pack.resolve())
    # The environment has the pack's requirements only: not the project, nor its development tools.
    listed = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True,
                            check=True).stdout.lower().replace("_", "-")
    assert "pulumi-policy==" in listed and "llm-serving" not in listed and "pytest" not in listed


@pytest.mark.parametrize("stack_file", STACKS)
def test_the_copy_gives_the_repository_packs_verdicts(published, stack_file):
    pack, python = published
    stack = "prod" if stack_file == "tests/fixtures/prod/Pulumi.prod.yaml" else Path(stack_file).stem
    config = load_stack_file(ROOT / stack_file)
    resources = analyze.program_resources(config, stack)
    alone = analyze.run_pack(resources, config, stack=stack, pack_dir=pack, python=python)
    here = analyze.run_pack(resources, config, stack=stack)
    assert len(alone.policies) == len(here.policies) == len(pack_policies())
    assert [(f.policy, f.level, f.message) for f in alone.findings] == [(f.policy, f.level, f.message) for f in here.findings]
    if stack == "prod":
        assert alone.findings == ()
    if stack == "after-001":
        assert any("worker-1: 6 of 4 cards" in f.message for f in alone.findings)
