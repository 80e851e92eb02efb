"""The workflows under a real Actions engine: nektos/act in host mode (testbed/act.py), against the
loopback cluster and a local file backend (docs/runbooks/ci.md).

A clone with ``main`` (this project) and a pull request that lowers ``reasoning``'s
``max_model_len`` 65536 -> 40960 is pushed to a bare ``origin``. act runs each job as shipped
(``act EVENT -W FILE -j JOB -P ubuntu-latest=-self-hosted``), its ``uses:`` actions replaced by
the stand-ins of testbed/actions/ (``--local-repository``: no github.com), its secrets the
cluster's kubeconfig, a ``file://`` backend and its passphrase. The forge's comments API is a local
HTTP server (tests/tools/test_review_comment_and_deploy_guard.py ``Forge``), reached through
``github.api_url``; a real Gitea receives the comment in the forge suite (tests/real/test_forge_gitea.py).

- pull-request ``review``, both copies: .gitea's against Gitea's API paths, .github's against
  GitHub's on two pushes: one comment with the offline diff against main, the cards per node, the
  verdicts, the real ``pulumi preview --refresh`` and its plan, each PASS, nothing of the venv's
  install; after the second push still one comment, updated in place with that push's diff. The
  SARIF goes to code scanning (the .github copy) and into the artifact (both).
- deploy ``up`` on the merge: refused by the guard (a first adoption nobody reviewed), nothing
  applied; started again from ``workflow_dispatch`` with ``adopt_commit`` = the merged commit: the
  plan re-checked, ``pulumi up`` applied, every Deployment rolled out. act runs a job's ``needs``
  first, and ``up`` needs ``test`` (the test suite itself): the deploy runs from a copy of
  deploy.yaml whose ``test`` job is one ``echo``, every other job as shipped (asserted).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed import act, toolchain
from tests.paths import PROD_STACK_FILE
from tests.real.realpath import PASSPHRASE, ROOT, kubectl_json
from tests.tools.test_review_comment_and_deploy_guard import Forge

pytestmark = pytest.mark.real

IGNORE = shutil.ignore_patterns(".git", ".venv", "venv", "out", "rendered", "__pycache__", ".pytest_cache", "bench", "*.pyc",
                                "*.egg-info")
REPO = "riotpiao/llm-serving"
HEADINGS = ("Offline preview against main: diff, restarts, update peak, capacity: PASS", "Policy verdicts: PASS",
            "Real `pulumi preview --refresh` against the cluster: PASS",
            "The real plan read back (`python3 dev.py plan`): PASS")


def git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="ci", GIT_AUTHOR_EMAIL="ci@example.invalid",
               GIT_COMMITTER_NAME="ci", GIT_COMMITTER_EMAIL="ci@example.invalid")
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def make_clone(top: Path, before_commit: Callable[[Path], None] = lambda work: None) -> Path:
    """A copy of the project as a git clone with ``main`` and the pull request's branch ``pr`` (checked out):
    ``reasoning``'s max_model_len 65536 -> 40960 in the frozen prod (tests/paths.py);
    ``before_commit(work)`` runs on the copy before main's commit."""
    work = top / "checkout"
    shutil.copytree(ROOT, work, ignore=IGNORE)
    shutil.copy2(PROD_STACK_FILE, work / "Pulumi.prod.yaml")
    before_commit(work)
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "main")
    git(work, "checkout", "-q", "-b", "pr")
    edit(work, 65536, 40960)
    return work


def edit(work: Path, old: int, new: int) -> str:
    """Commit ``reasoning``'s max_model_len old -> new; the new commit."""
    stack = work / "Pulumi.prod.yaml"
    text = stack.read_text()
    assert f"      max_model_len: {old}\n" in text
    stack.write_text(text.replace(f"      max_model_len: {old}\n", f"      max_model_len: {new}\n", 1))
    git(work, "commit", "-qam", f"reasoning: max_model_len {new}")
    return git(work, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def repo(toolchain_ready, tmp_path_factory) -> dict[str, Any]:
    """Origin (bare) holding main, the clone on ``pr``, its local backend with the stack."""
    top = tmp_path_factory.mktemp("ci")
    backend = top / "backend"
    backend.mkdir()

    def stack_init(work: Path) -> None:  # the runbook's one-time set-up (its encryptionsalt is committed)
        env = dict(os.environ, **toolchain.environment(), PULUMI_BACKEND_URL=f"file://{backend}",
                   PULUMI_CONFIG_PASSPHRASE=PASSPHRASE)
        init = subprocess.run(["pulumi", "stack", "init", "prod", "--secrets-provider", "passphrase", "--non-interactive"],
                              cwd=work, env=env, capture_output=True, text=True)
        assert init.returncode == 0, init.stderr

    work = make_clone(top, stack_init)
    origin = top / "origin.git"
    git(top, "init", "-q", "--bare", str(origin))
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "-q", "origin", "main")
    return {"top": top, "work": work, "backend": backend}


def secrets(cluster: Path, backend: Path, token: str) -> dict[str, str]:
    return {"KUBECONFIG_DATA": cluster.read_text(), "PULUMI_BACKEND_URL": f"file://{backend}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE, "GITHUB_TOKEN": token}


def review(repo: dict[str, Any], copy: str, forge: Forge, cluster: Path, name: str) -> act.ActRun:
    run = act.run_job(repo["work"], f"{copy}/workflows/pull-request.yaml", "review", "pull_request",
                      {"pull_request": {"number": 7, "base": {"ref": "main"}, "head": {"ref": "pr"}}},
                      home=repo["top"] / name, secrets=secrets(cluster, repo["backend"], "job-token"),
                      env={"GITHUB_API_URL": forge.api, "GITHUB_REPOSITORY": REPO}, artifacts=repo["top"] / name / "artifacts")
    return run


def assert_all_passed(run: act.ActRun, workflow: Path, job: str) -> None:
    assert run.code == 0 and not run.failed(), (run.steps, run.log[-6000:])
    names = [s.get("name") or s["uses"] for s in yaml.safe_load(workflow.read_text())["jobs"][job]["steps"]
             if "if" not in s or "KUBECONFIG" in s["if"] or "always()" in s["if"]]
    assert [n for n, _ in run.steps] == names, run.steps  # every step ran, in order


def test_the_review_job_of_both_copies_under_act(cluster, repo):
    work = repo["work"]

    # The .gitea copy, Gitea's API paths: one comment, every section PASS.
    gitea = Forge(gitea=True, comments=["a reviewer's comment"], repo=REPO, number=7, token="job-token")
    try:
        run = review(repo, ".gitea", gitea, cluster, "gitea-1")
    finally:
        gitea.server.shutdown()
    assert_all_passed(run, work / ".gitea/workflows/pull-request.yaml", "review")
    [ours] = gitea.ours()
    assert ("POST", f"/api/v1/repos/{REPO}/issues/7/comments") in gitea.calls
    for heading in HEADINGS:
        assert f"### {heading}" in ours["body"], ours["body"][:3000]
    assert "65536" in ours["body"] and "40960" in ours["body"] and "cards per node" in ours["body"]
    # Nothing but the review: the venv's install stays in its own step's log.
    assert not any(w in ours["body"] for w in ("dev.py: installing", "Installed ", "Downloading", "Resolved "))
    assert "dev.py: installing" in run.log  # ... where it is
    kept = repo["top"] / "gitea-1" / "artifacts" / "review-prod"
    assert json.loads((kept / "out/policy/prod.sarif").read_text())["version"] == "2.1.0"
    assert (kept / "out/review/comment.md").read_text().strip() == ours["body"].strip()
    assert not (repo["top"] / "gitea-1" / "artifacts" / "code-scanning").exists()

    # The .github copy, GitHub's API paths, on two pushes: one comment, updated in place.
    github = Forge(gitea=False, comments=["a reviewer's comment"], repo=REPO, number=7, token="job-token")
    try:
        run = review(repo, ".github", github, cluster, "github-1")
        assert_all_passed(run, work / ".github/workflows/pull-request.yaml", "review")
        [first] = github.ours()
        first_body = first["body"]
        assert (repo["top"] / "github-1" / "artifacts" / "code-scanning" / "llm-serving-policies.sarif").is_file()
        edit(work, 40960, 32768)
        run = review(repo, ".github", github, cluster, "github-2")
        assert_all_passed(run, work / ".github/workflows/pull-request.yaml", "review")
    finally:
        github.server.shutdown()
    [again] = github.ours()
    pushed = '+ "--max-model-len=32768"'  # the second push's field diff line
    assert again is first and pushed in again["body"] and pushed not in first_body
    assert [m for m, _ in github.calls].count("POST") == 1 and [m for m, _ in github.calls].count("PATCH") == 1
    assert "a reviewer's comment" in [c["body"] for c in github.comments]
    # The warm run: the venv's installer reused its cache (docs/benchmarks.md "Push to comment").
    assert run.seconds < 600, run.seconds


def deploy_copy(work: Path) -> str:
    """deploy.yaml with its ``test`` job one ``echo`` (act runs a job's needs first), written
    beside the workflows; every other key as shipped. Its path relative to ``work``."""
    # PyYAML reads the bare key `on` as True: written back as `on`.
    shipped = {"on" if k is True else k: v for k, v in yaml.safe_load((work / ".gitea/workflows/deploy.yaml").read_text()).items()}
    wf = json.loads(json.dumps(shipped))
    wf["jobs"]["test"]["steps"] = [{"name": "the test suite (not run here)", "run": "echo the test job is the test suite itself"}]
    assert {k: v for k, v in wf.items() if k != "jobs"} == {k: v for k, v in shipped.items() if k != "jobs"}
    assert wf["jobs"]["up"] == shipped["jobs"]["up"]
    out = work / ".act" / "deploy.yaml"
    out.parent.mkdir(exist_ok=True)
    out.write_text(yaml.safe_dump(wf, sort_keys=False))
    return ".act/deploy.yaml"


def test_the_deploy_job_under_act(cluster, repo):
    work = repo["work"]
    git(work, "checkout", "-q", "main")
    git(work, "merge", "-q", "--ff-only", "pr")
    merged = git(work, "rev-parse", "HEAD")
    workflow = deploy_copy(work)
    auth = secrets(cluster, repo["backend"], "job-token")

    # The merge: the first deploy is an adoption nobody reviewed: refused, nothing applied.
    run = act.run_job(work, workflow, "up", "push", {"ref": "refs/heads/main", "after": merged}, home=repo["top"] / "deploy-1",
                      secrets=auth, env={"GITHUB_REPOSITORY": REPO}, artifacts=repo["top"] / "deploy-1" / "artifacts")
    assert run.code != 0 and run.failed() == ["No unreviewed first adoption"], (run.steps, run.log[-4000:])
    assert "deploy-guard: refused: the stack's state holds no Kubernetes object yet" in run.log, run.log[-3000:]
    assert kubectl_json(cluster, "-n", "llm-serving", "get", "deployments")["items"] == []

    # Started by hand with the reviewed commit: plan re-checked, up, rolled out.
    run = act.run_job(work, workflow, "up", "workflow_dispatch", {"inputs": {"adopt_commit": merged}},
                      home=repo["top"] / "deploy-2", secrets=auth, env={"GITHUB_REPOSITORY": REPO},
                      artifacts=repo["top"] / "deploy-2" / "artifacts")
    assert run.code == 0 and not run.failed(), (run.steps, run.log[-6000:])
    assert [n for n, _ in run.steps][-1].startswith("Every Deployment rolled out"), run.steps
    assert "worker-1" in run.log  # dev.py plan's cards per node
    names = {d["metadata"]["name"] for d in kubectl_json(cluster, "-n", "llm-serving", "get", "deployments")["items"]}
    assert {"candle-vllm", "clef-candle", "clef-serve"} <= names
