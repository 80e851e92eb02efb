"""The CI workflows (.gitea/workflows/, GitHub Actions syntax as Gitea Actions runs it; the same
files in .github/workflows/ for GitHub) and their runbook, docs/runbooks/ci.md.

Lint: every workflow validates against the GitHub workflow schema that check-jsonschema
ships (``--builtin-schema vendor.github-workflows``, offline). Without check-jsonschema the
lint test skips with the reason. The structural tests check that the workflows run the
commands the README's daily workflow names for CI, and that the offline commands they call parse with this repo's CLIs.
"""

from __future__ import annotations

import importlib.util
import io
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

import dev
from testbed import toolchain
from tests.paths import ROOT
from tools.analyze import _parser as analyze_parser

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
    assert "python3 dev.py lint" in lines
    assert any("pulumi preview --refresh --stack prod --policy-pack policies --diff" in line for line in lines)
    analyze = [line for line in lines if "python3 dev.py analyze" in line]
    assert len(analyze) == 1
    assert "sarif=" in analyze[0] and "markdown=" in analyze[0]


def test_merge_to_main_runs_pulumi_up_with_the_policy_pack():
    wf = load("deploy.yaml")
    assert triggers(wf)["push"]["branches"] == ["main"]
    assert any("pulumi up --yes --stack prod --policy-pack policies" in line for line in run_lines(wf))
    assert wf["concurrency"]["cancel-in-progress"] is False


def test_the_github_workflows_are_the_gitea_ones():
    """Gitea runs GitHub Actions syntax: one text for both forges (the comment step posts through
    ``github.api_url``, which is each forge's own API)."""
    github = sorted((ROOT / ".github" / "workflows").glob("*.yaml"))
    assert [p.name for p in github] == [p.name for p in WORKFLOWS]
    for ours, theirs in zip(WORKFLOWS, github, strict=True):
        assert theirs.read_text() == github_copy(ours.read_text()), ours.name


#: The GitHub copy's one addition: the policy findings uploaded to code scanning (Gitea has no
#: code scanning; there the SARIF is kept in the job's artifact).
SARIF_STEP = (
    "      - name: Upload the policy findings (SARIF) to code scanning\n"
    "        if: always() && hashFiles('out/policy/prod.sarif') != ''\n"
    "        timeout-minutes: 5\n"
    "        uses: github/codeql-action/upload-sarif@v3\n"
    "        with:\n"
    "          sarif_file: out/policy/prod.sarif\n"
    "          category: llm-serving-policies\n")
FAIL_STEP = "      - name: Fail on a mandatory violation, a refused plan or bad input\n"


#: The artifact action: v3 on Gitea (the official v4 refuses a server_url that is not github.com's),
#: v4 on GitHub (which retired v3 in January 2025).
GITEA_ARTIFACT = (
    "        # Gitea 1.26 serves both artifact protocols (routers/init.go mounts v3's /api/actions_pipeline\n"
    "        # and v4's twirp ArtifactService; the forge suite checks both answer), so the server is not\n"
    "        # the limit: the official v4 action refuses, before any call, a server_url whose host is not\n"
    "        # github.com, *.ghe.com or *.localhost (GHESNotSupportedError), and Gitea's server_url is its\n"
    "        # ROOT_URL (services/actions/context.go). v3 uploads to the same Gitea.\n"
    "        uses: actions/upload-artifact@v3\n")
GITHUB_ARTIFACT = (
    "        # GitHub retired upload-artifact v3 (January 2025).\n"
    "        uses: actions/upload-artifact@v4\n")


def github_copy(gitea: str) -> str:
    """The GitHub text of a Gitea workflow: the same but for the artifact action's version, plus
    the SARIF upload to code scanning before the review job's last step."""
    return gitea.replace(GITEA_ARTIFACT, GITHUB_ARTIFACT).replace(FAIL_STEP, SARIF_STEP + FAIL_STEP)


def test_the_sarif_goes_to_code_scanning_on_github_and_into_the_artifact_on_gitea():
    gitea, github = load("pull-request.yaml"), yaml.safe_load((ROOT / ".github" / "workflows" / "pull-request.yaml").read_text())
    [artifact] = [s for s in gitea["jobs"]["review"]["steps"] if _uses(s) == "actions/upload-artifact"]
    assert "out/policy" in artifact["with"]["path"].split() and artifact["if"] == "always()"
    [sarif] = [s for s in github["jobs"]["review"]["steps"] if _uses(s) == "github/codeql-action/upload-sarif"]
    assert sarif["with"]["sarif_file"] == "out/policy/prod.sarif"
    assert github["jobs"]["review"]["permissions"]["security-events"] == "write"
    assert not [s for s in gitea["jobs"]["review"]["steps"] if _uses(s) == "github/codeql-action/upload-sarif"]
    # The analyze step writes that SARIF file.
    assert any("--also sarif=out/policy/prod.sarif" in s.get("run", "") for s in gitea["jobs"]["review"]["steps"])


def test_the_review_posts_one_comment_and_its_outputs_hold_only_the_review():
    """The comment is updated in place (review-comment --post, not a bare POST), and .venv is made in
    a step of its own before any step that captures a command's output into out/review/."""
    steps = load("pull-request.yaml")["jobs"]["review"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert not any("curl" in r for r in runs)
    [post] = [s for s in steps if s.get("name") == "Post the comment on the pull request"]
    assert post["run"] == 'python3 dev.py review-comment out/review --post "$API"' and "TOKEN" in post["env"]
    [venv_at] = [i for i, r in enumerate(runs) if r.rstrip().endswith("python3 dev.py venv")]
    assert venv_at < min(i for i, r in enumerate(runs) if "out/review/" in r)
    # The lock's uv installs the pins (dev.py uses uv on PATH), from a cache restored before it.
    assert "grep -m1 '^uv==' requirements-dev.txt" in runs[venv_at] and 'PATH="$RUNNER_TEMP/bin:$PATH"' in runs[venv_at]
    [cache] = [s for s in steps[:venv_at] if _uses(s) == "actions/cache"]
    assert cache["with"]["path"].split() == ["~/.cache/uv", "~/.cache/pip"]
    assert cache["with"]["key"] == "venv-${{ hashFiles('requirements-dev.txt') }}"
    # Every step of the review job has its own bound (act ignores the job's).
    assert all("timeout-minutes" in s for s in steps if "run" in s or _uses(s) == "actions/upload-artifact")


@pytest.mark.parametrize("name", ["pull-request.yaml", "deploy.yaml"])
def test_every_run_step_has_its_own_timeout(name):
    """nektos/act ignores a job's timeout-minutes (the review-and-deploy trial under act v0.2.89):
    each ``run:`` step carries its own, within its job's."""
    for job, spec in load(name)["jobs"].items():
        for step in spec["steps"]:
            if "run" in step:
                assert 0 < step.get("timeout-minutes", 0) <= spec["timeout-minutes"], (job, step.get("name"))


def _uses(step: dict) -> str:
    return str(step.get("uses", "")).split("@")[0]


@pytest.mark.parametrize("name", ["pull-request.yaml", "deploy.yaml"])
def test_no_job_but_the_tests_builds_go(name):
    """Only the test job sets up Go (the real suite builds its toolchain); the review and deploy
    jobs install the official CLI (pulumi/actions) and the plugin (`pulumi plugin install`)."""
    wf = load(name)
    go_jobs = {job for job, spec in wf["jobs"].items()
               if any(_uses(s) == "actions/setup-go" or "dev.py toolchain" in s.get("run", "") or
                      re.search(r"(^|\s)go (build|install|run)\b", s.get("run", "")) for s in spec["steps"])}
    assert go_jobs == {"test"}
    assert [s["run"] for s in wf["jobs"]["test"]["steps"] if "run" in s][-1] == "python3 dev.py test -q"
    for job, spec in wf["jobs"].items():
        if job == "test":
            continue
        uses = [_uses(s) for s in spec["steps"] if "uses" in s]
        assert "pulumi/actions" in uses, job
        assert [s["with"]["pulumi-version"] for s in spec["steps"] if _uses(s) == "pulumi/actions"] == ["${{ env.PULUMI_VERSION }}"]
        assert any('pulumi plugin install resource kubernetes "v$KUBERNETES_PLUGIN_VERSION"' in s.get("run", "")
                   for s in spec["steps"]), job
        # The versions come from their pins in pyproject.toml (one place), through $GITHUB_ENV.
        pins = [s["run"] for s in spec["steps"] if "GITHUB_ENV" in s.get("run", "")]
        # An assignment's own line, so a failing `pin` fails the step (bash -e) instead of setting "".
        assert pins == ['pulumi_version=$(python3 dev.py pin pulumi)\n'
                        'plugin_version=$(python3 dev.py pin pulumi-kubernetes)\n'
                        'echo "PULUMI_VERSION=$pulumi_version" >> "$GITHUB_ENV"\n'
                        'echo "KUBERNETES_PLUGIN_VERSION=$plugin_version" >> "$GITHUB_ENV"\n'], job
    assert "PULUMI_VERSION" not in wf["env"] and "KUBERNETES_PLUGIN_VERSION" not in wf["env"]
    assert dev.pin("pulumi-kubernetes") == toolchain.load_versions()["kubernetes_provider"]["plugin_version"]


def test_the_review_comment_does_not_wait_for_the_tests_and_previews_with_refresh():
    wf = load("pull-request.yaml")
    review = wf["jobs"]["review"]
    assert "needs" not in review and review["timeout-minutes"] <= 30
    previews = [line for line in run_lines({"jobs": {"review": review}}) if line.startswith("pulumi preview")]
    assert len(previews) == 2 and all("--refresh" in line for line in previews)
    names = [s.get("name", s.get("uses")) for s in review["steps"]]
    assert names.index("Compose the comment") < names.index("Post the comment on the pull request") < len(names) - 1
    assert review["steps"][-1]["run"] == "python3 dev.py review-comment out/review --check"


def test_the_deploy_job_guards_adoption_and_rechecks_the_plan_before_up():
    wf = load("deploy.yaml")
    lines = run_lines({"jobs": {"up": wf["jobs"]["up"]}})
    order = [next(i for i, line in enumerate(lines) if needle in line) for needle in (
        "python3 dev.py deploy-guard", "pulumi preview --refresh --stack prod --json", "python3 dev.py plan out/plan.json",
        "pulumi up --yes --stack prod --policy-pack policies")]
    assert order == sorted(order)
    assert "adopt_commit" in triggers(wf)["workflow_dispatch"]["inputs"]


RUNBOOK = ROOT / "docs" / "runbooks" / "ci.md"


def test_the_runbook_matches_the_workflows():
    """docs/runbooks/ci.md names every secret the workflows read and no other, every job, the
    versions the jobs install, and each workflow file."""
    text = RUNBOOK.read_text()
    used = set()
    for wf in WORKFLOWS:
        used |= set(re.findall(r"secrets\.([A-Z_]+)", wf.read_text()))
        assert f".gitea/workflows/{wf.name}" in text and f".github/workflows/{wf.name}" in text
        for job in load(wf.name)["jobs"]:
            assert f"`{job}`" in text, job
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", text, re.M))
    assert documented == used
    for key, value in load("pull-request.yaml")["env"].items():
        assert f"{key}={value}" in text, key


def test_the_offline_commands_in_the_workflows_exist_and_parse():
    for wf in (load("pull-request.yaml"), load("deploy.yaml")):
        for line in run_lines(wf):
            for cmd in line.split("python3 dev.py ")[1:]:
                words = shlex.split(cmd.split(";")[0].split("&&")[0].split(")")[0])  # up to a $(...)'s end
                words = words[:next((i for i, w in enumerate(words) if re.match(r"\d?>", w)), len(words))]  # redirections
                assert words[0] in (*dev.COMMANDS, *dev.OWN, "pin"), words[0]
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
                if words[0] in ("review-comment", "deploy-guard", "plan"):
                    from tools import deploy_guard, plan, review_comment

                    module = {"review-comment": review_comment, "deploy-guard": deploy_guard, "plan": plan}[words[0]]
                    # argparse refuses unknown flags with SystemExit; the missing files are a returned 2.
                    assert module.main(words[1:], stdout=io.StringIO(), stderr=io.StringIO()) in (0, 1, 2)


def test_lint_and_types_are_their_own_step():
    """Ruff and mypy run before the tests in CI (.ci/run), from `make lint` and from pre-commit,
    with pyproject.toml's configuration (no test runs them)."""
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln and not ln.startswith("#")]
    assert ci.index("python3 dev.py lint") < ci.index("exec python3 dev.py test --each -q")
    hooks = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"][0]["hooks"]
    assert [h["id"] for h in hooks] == ["ruff", "mypy", "lock"]
    assert "lint:  ## ruff and mypy, as CI runs them\n\tpython3 dev.py lint\n" in (ROOT / "Makefile").read_text()
    tools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    assert {"B", "UP", "SIM", "I", "N", "PTH", "PT", "D"} <= set(tools["ruff"]["lint"]["select"])
    assert tools["mypy"]["check_untyped_defs"] is True and tools["mypy"]["plugins"] == ["pydantic.mypy"]


@pytest.mark.parametrize("uv", ["/runner/tmp/bin/uv", None])
def test_dev_installs_the_lock_with_uv_when_the_workflow_put_it_on_path(uv, tmp_path, monkeypatch):
    """The review and deploy jobs put the lock's uv on PATH; dev.py's .venv then comes from
    ``uv pip install`` (its cache makes the warm case fast), else from pip as before."""
    py = tmp_path / "venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text("")
    monkeypatch.setattr(dev, "PY", py)
    monkeypatch.setattr(dev, "STAMP", tmp_path / "venv" / ".requirements.sha256")
    monkeypatch.setattr(dev.shutil, "which", lambda name: uv if name == "uv" else None)
    ran = []
    monkeypatch.setattr(dev.subprocess, "run", lambda cmd, **kw: ran.append(cmd) or subprocess.CompletedProcess(cmd, 0, "", ""))
    dev.ensure_venv()
    [cmd] = ran
    expected = [uv, "pip", "install", "--python", str(py)] if uv else [str(py), "-m", "pip", "install"]
    assert cmd[:len(expected)] == expected and cmd[-2:] == ["-r", str(dev.DEV_REQUIREMENTS)]
    assert dev.STAMP.read_text() == dev._venv_digest()
