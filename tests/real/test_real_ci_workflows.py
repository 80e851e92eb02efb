"""The workflows' jobs run step by step, as a runner would, against the loopback cluster and a local
backend (docs/runbooks/ci.md).

A clone with ``main`` (this project) and a pull request that lowers ``reasoning``'s
``max_model_len`` 65536 -> 40960 is pushed to a bare ``origin``. Each job's steps run in order,
each ``run:`` in its own ``bash --noprofile --norc -eo pipefail`` in the clone, with the job's and
the step's ``env:`` (the secrets: the cluster's kubeconfig, a ``file://`` backend and its
passphrase); the ``uses:`` actions are replaced by what they install: the checkout is the clone,
``setup-python`` the machine's python3, ``pulumi/actions`` the toolchain's CLI (its PULUMI_HOME
holds the plugin, so ``pulumi plugin install`` finds it installed), ``upload-artifact`` a check
that its paths exist. A step's ``if:`` is ``always()`` or ``env.X != ''``; a failed step stops its
job as on a runner (later ``always()`` steps still run). The forge's API is a local HTTP server
that keeps the comments (tests/tools/test_review_comment_and_deploy_guard.py ``Forge``). The ``test`` jobs are the test suite itself and are not run here.

- pull-request ``review``: one comment, with the offline diff against main (40960), the update's
  cards per node, the capacity table, the verdicts, and the real ``pulumi preview --refresh`` and
  its plan, each PASS; the job passes. A second push runs it again: the PR still holds one review
  comment, updated in place with the second push's diff.
- deploy ``up`` on the merge: refused by the guard (a first adoption nobody reviewed), nothing
  applied; started again with ``adopt_commit`` = the merged commit: the plan re-checked, ``pulumi
  up`` applied, every Deployment rolled out.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import toolchain
from tests.paths import PROD_STACK_FILE
from tests.real.realpath import PASSPHRASE, ROOT, kubectl_json
from tests.tools.test_review_comment_and_deploy_guard import Forge

pytestmark = pytest.mark.real

IGNORE = shutil.ignore_patterns(".git", ".venv", "venv", "out", "rendered", "__pycache__", ".pytest_cache", "bench", "*.pyc")


def _git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="ci", GIT_AUTHOR_EMAIL="ci@example.invalid",
               GIT_COMMITTER_NAME="ci", GIT_COMMITTER_EMAIL="ci@example.invalid")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def forge() -> Iterator[Forge]:
    """The forge's comments API (Gitea's paths), on loopback: tests/tools/test_review_comment_and_deploy_guard.py."""
    server = Forge(gitea=True, comments=["a reviewer's comment"], repo="riotpiao/llm-serving", number=7, token="job-token")
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> dict[str, Any]:
    """Origin (bare), the clone with main and the pull request's branch ``pr``, the two commits."""
    top = tmp_path_factory.mktemp("ci")
    work = top / "checkout"
    shutil.copytree(ROOT, work, ignore=IGNORE)
    shutil.copy2(PROD_STACK_FILE, work / "Pulumi.prod.yaml")  # the PR edits the frozen prod (tests/paths.py)
    (work / ".venv").symlink_to(ROOT / ".venv")  # the program's environment, as the first preview step makes it
    backend = top / "backend"
    backend.mkdir()
    env = dict(os.environ, **toolchain.environment(), PULUMI_BACKEND_URL=f"file://{backend}",
               PULUMI_CONFIG_PASSPHRASE=PASSPHRASE)
    init = subprocess.run(["pulumi", "stack", "init", "prod", "--secrets-provider", "passphrase", "--non-interactive"],
                          cwd=work, env=env, capture_output=True, text=True)
    assert init.returncode == 0, init.stderr  # the runbook's one-time set-up (its encryptionsalt is committed)
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-qm", "main")
    origin = top / "origin.git"
    _git(top, "init", "-q", "--bare", str(origin))
    _git(work, "remote", "add", "origin", str(origin))
    _git(work, "push", "-q", "origin", "main")
    _git(work, "checkout", "-q", "-b", "pr")
    stack = work / "Pulumi.prod.yaml"
    stack.write_text(stack.read_text().replace("      max_model_len: 65536\n", "      max_model_len: 40960\n", 1))
    _git(work, "commit", "-qam", "reasoning: max_model_len 40960")
    return {"top": top, "work": work, "backend": backend, "main": _git(work, "rev-parse", "main"),
            "pr": _git(work, "rev-parse", "HEAD")}


def _expand(text: str, context: dict[str, str]) -> str:
    """``${{ a.b }}`` and ``${{ a || b }}`` from ``context`` (what the runner evaluates)."""
    def one(m: re.Match) -> str:
        for alt in m.group(1).split("||"):
            value = context.get(alt.strip(), "")
            if value:
                return value
        return ""
    return re.sub(r"\$\{\{\s*(.*?)\s*\}\}", one, str(text))


def run_job(workflow: str, job: str, work: Path, context: dict[str, str], logs: Path) -> list[tuple[str, int]]:
    """Run ``job`` of ``workflow`` step by step in ``work`` (see the module docstring); returns
    (step name, exit code) of each step run."""
    wf = yaml.safe_load((work / ".gitea" / "workflows" / workflow).read_text())
    spec = wf["jobs"][job]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "GITHUB_", "KUBECONFIG"))}
    env.update(toolchain.environment())  # pulumi/actions' CLI (PATH), kubectl; the plugin under PULUMI_HOME
    home = logs / "home"
    home.mkdir(exist_ok=True)
    # The job's own PULUMI_HOME (its `pulumi login` writes credentials there), with the toolchain's plugins.
    (logs / "pulumi-home").mkdir(exist_ok=True)
    (logs / "pulumi-home" / "plugins").symlink_to(Path(env["PULUMI_HOME"]) / "plugins")
    env["PULUMI_HOME"] = str(logs / "pulumi-home")
    env.update({"HOME": str(home), "CI": "true", "GITHUB_SHA": context["github.sha"], "NO_COLOR": "1",
                "PULUMI_SKIP_UPDATE_CHECK": "true", "PIP_CACHE_DIR": str(Path.home() / ".cache" / "pip")})
    ctx = dict(context)
    for key, value in {**wf.get("env", {}), **spec.get("env", {})}.items():
        env[key] = _expand(value, {**ctx, **{f"env.{k}": v for k, v in env.items()}})
    ran: list[tuple[str, int]] = []
    failed = False
    for i, step in enumerate(spec["steps"]):
        name = step.get("name") or step.get("uses") or step["run"].splitlines()[0]
        cond = str(step.get("if", "success()"))
        if cond == "always()":
            go = True
        elif m := re.fullmatch(r"always\(\) && hashFiles\('([^']+)'\) != ''", cond):
            go = (work / m.group(1)).is_file()  # hashFiles is '' when no file matches
        elif m := re.fullmatch(r"env\.(\w+) != ''", cond):
            go = not failed and bool(env.get(m.group(1)))
        else:
            assert cond == "success()", f"{job}: an if: this runner does not evaluate: {cond}"
            go = not failed
        if not go:
            continue
        if "uses" in step:
            action = step["uses"].split("@")[0]
            assert action in ("actions/checkout", "actions/setup-python", "pulumi/actions", "actions/upload-artifact",
                              "github/codeql-action/upload-sarif"), action
            if action == "github/codeql-action/upload-sarif":  # code scanning takes one SARIF 2.1.0 log
                assert json.loads((work / step["with"]["sarif_file"]).read_text())["version"] == "2.1.0"
            if action == "actions/upload-artifact":
                for path in step["with"]["path"].split():
                    assert (work / path).exists(), path
            if action == "pulumi/actions":
                assert subprocess.run(["pulumi", "version"], env=env, capture_output=True, text=True).stdout.strip() == \
                    "v" + _expand(step["with"]["pulumi-version"], {f"env.{k}": v for k, v in env.items()})
            ran.append((name, 0))
            continue
        step_env = dict(env)
        for key, value in (step.get("env") or {}).items():
            step_env[key] = _expand(value, {**ctx, **{f"env.{k}": v for k, v in env.items()}})
        # $GITHUB_ENV: KEY=VALUE lines a step appends become the environment of the steps after it.
        github_env = logs / f"{job}-{i:02d}.env"
        github_env.write_text("")
        step_env["GITHUB_ENV"] = str(github_env)
        script = logs / f"{job}-{i:02d}.sh"
        script.write_text(step["run"])
        with open(logs / f"{job}-{i:02d}.log", "w") as log:  # noqa: PTH123
            code = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=work,
                                  env=step_env, stdout=log, stderr=subprocess.STDOUT, timeout=1800).returncode
        ran.append((name, code))
        failed = failed or code != 0
        env.update(line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line)
    return ran


def _context(repo: dict[str, Any], forge: Forge, cluster: Path, backend: Path, sha: str) -> dict[str, str]:
    return {
        "secrets.KUBECONFIG_DATA": cluster.read_text(),
        "secrets.PULUMI_BACKEND_URL": f"file://{backend}",
        "secrets.PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "secrets.PULUMI_ACCESS_TOKEN": "",
        "secrets.PR_COMMENT_TOKEN": "",
        "github.token": "job-token",
        "github.api_url": forge.api,
        "github.repository": "riotpiao/llm-serving",
        "github.event.pull_request.number": "7",
        "github.base_ref": "main",
        "github.sha": sha,
    }


def test_the_workflows_jobs_run_step_by_step(cluster, repo, forge, tmp_path):
    work, backend = repo["work"], repo["backend"]

    # The pull request: one comment, every section PASS.
    logs = tmp_path / "review"
    logs.mkdir()
    ran = run_job("pull-request.yaml", "review", work, _context(repo, forge, cluster, backend, repo["pr"]), logs)
    log_text = "".join(p.read_text() for p in sorted(logs.glob("*.log")))
    assert [code for _, code in ran] == [0] * len(ran), (ran, log_text[-6000:])
    assert len(ran) == len(yaml.safe_load((work / ".gitea/workflows/pull-request.yaml").read_text())["jobs"]["review"]["steps"])
    [ours] = forge.ours()
    assert ("POST", "/api/v1/repos/riotpiao/llm-serving/issues/7/comments") in forge.calls
    text = ours["body"]
    for heading in ("Offline preview against main: diff, restarts, update peak, capacity: PASS", "Policy verdicts: PASS",
                    "Real `pulumi preview --refresh` against the cluster: PASS",
                    "The real plan read back (`python3 dev.py plan`): PASS"):
        assert f"### {heading}" in text, text[:3000]
    assert "65536" in text and "40960" in text  # the field diff against main's rendering
    assert "cards per node" in text and "model servers (per card" in text
    assert text.rstrip().endswith("**Verdict: PASS**: every section above passed; the check passes.")
    assert "dev.py: installing" not in text  # .venv is made in its own step, never in a captured output

    # A second push to the pull request: the same comment, updated in place with the second push's diff.
    stack = work / "Pulumi.prod.yaml"
    stack.write_text(stack.read_text().replace("      max_model_len: 40960\n", "      max_model_len: 32768\n", 1))
    _git(work, "commit", "-qam", "reasoning: max_model_len 32768")
    _git(work, "worktree", "remove", "--force", "../base")  # a runner starts each job in a fresh workspace
    logs = tmp_path / "review-2"
    logs.mkdir()
    ran = run_job("pull-request.yaml", "review", work, _context(repo, forge, cluster, backend, _git(work, "rev-parse", "HEAD")), logs)
    assert [code for _, code in ran] == [0] * len(ran), ran
    [again] = forge.ours()
    # The second push's field diff (32768 alone also stands in the rope override's context line).
    pushed = '+ "--max-model-len=32768"'
    assert again is ours and pushed in again["body"] and pushed not in text  # text: the first push's body
    assert [m for m, _ in forge.calls].count("POST") == 1 and [m for m, _ in forge.calls].count("PATCH") == 1
    assert "a reviewer's comment" in [c["body"] for c in forge.comments]

    # The merge: the first deploy is an adoption nobody reviewed: refused, nothing applied.
    _git(work, "checkout", "-q", "main")
    _git(work, "merge", "-q", "--ff-only", "pr")
    logs = tmp_path / "deploy-1"
    logs.mkdir()
    ran = run_job("deploy.yaml", "up", work, _context(repo, forge, cluster, backend, repo["pr"]), logs)
    assert ran[-1] == ("No unreviewed first adoption", 1), ran
    log_text = "".join(p.read_text() for p in sorted(logs.glob("*.log")))
    assert "deploy-guard: refused: the stack's state holds no Kubernetes object yet" in log_text, log_text[-3000:]
    assert kubectl_json(cluster, "-n", "llm-serving", "get", "deployments")["items"] == []

    # Started by hand with the reviewed commit: plan re-checked, up, rolled out.
    logs = tmp_path / "deploy-2"
    logs.mkdir()
    ctx = dict(_context(repo, forge, cluster, backend, repo["pr"]), **{"github.event.inputs.adopt_commit": repo["pr"]})
    ran = run_job("deploy.yaml", "up", work, ctx, logs)
    log_text = "".join(p.read_text() for p in sorted(logs.glob("*.log")))
    assert [code for _, code in ran] == [0] * len(ran), (ran, log_text[-6000:])
    assert "worker-1" in log_text  # dev.py plan's cards per node
    names = {d["metadata"]["name"] for d in kubectl_json(cluster, "-n", "llm-serving", "get", "deployments")["items"]}
    assert {"candle-vllm", "clef-candle", "clef-serve"} <= names
