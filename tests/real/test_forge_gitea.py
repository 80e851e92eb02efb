"""The review job under act, posting to a real Gitea 1.26 (testbed/gitea.py: loopback, SQLite,
admin and token made by its CLI): a pull request holds ONE review comment after two pushes, with
the second push's content, beside a reviewer's comment left alone. Without cluster secrets (the
real preview is skipped and the comment says so; the real suite runs it against the cluster).
Also: Gitea 1.26 answers both artifact protocols, upload-artifact v3's and v4's (the reason
.gitea/workflows/pull-request.yaml gives for keeping v3)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testbed import act
from testbed.gitea import ADMIN, Gitea
from tests.real.test_real_ci_workflows import edit, git, make_clone
from tools.review_comment import MARKER

pytestmark = pytest.mark.forge

REPO = "llm-serving"


@pytest.fixture(scope="module")
def gitea(forge_toolchain, tmp_path_factory) -> Iterator[Gitea]:
    forge = Gitea.start(tmp_path_factory.mktemp("gitea"))
    yield forge
    forge.stop()


def test_gitea_serves_both_artifact_protocols(gitea):
    """Unauthenticated calls are refused by the handlers (not 404: the routes exist): v3's
    pipelines API (/api/actions_pipeline) and v4's twirp ArtifactService."""
    v3, _ = gitea.call("GET", f"{gitea.url}/api/actions_pipeline/_apis/pipelines/workflows/1/artifacts", auth=False)
    v4, _ = gitea.call("POST", f"{gitea.url}/twirp/github.actions.results.api.v1.ArtifactService/CreateArtifact", {}, auth=False)
    missing, _ = gitea.call("POST", f"{gitea.url}/twirp/github.actions.results.api.v1.NoSuchService/CreateArtifact", {}, auth=False)
    assert missing == 404
    assert v3 != 404 and v4 != 404 and v3 >= 400 and v4 >= 400, (v3, v4)


def test_one_review_comment_after_two_pushes(gitea, tmp_path):
    work = make_clone(tmp_path)
    gitea.create_repo(REPO)
    git(work, "remote", "add", "origin", gitea.clone_url(REPO))
    git(work, "push", "-q", "origin", "main", "pr")
    number = gitea.open_pull(REPO, "pr", "main", "reasoning: max_model_len 40960")
    gitea.comment(REPO, number, "a reviewer's comment")

    def review(name: str) -> act.ActRun:
        run = act.run_job(work, ".gitea/workflows/pull-request.yaml", "review", "pull_request",
                          {"pull_request": {"number": number, "base": {"ref": "main"}, "head": {"ref": "pr"}}},
                          home=tmp_path / name, secrets={"GITHUB_TOKEN": gitea.token},
                          env={"GITHUB_API_URL": gitea.api, "GITHUB_REPOSITORY": f"{ADMIN}/{REPO}"},
                          artifacts=tmp_path / name / "artifacts")
        assert run.code == 0 and not run.failed(), (run.steps, run.log[-6000:])
        print(f"review job under act ({name}): {run.seconds:.0f} s")
        return run

    review("push-1")
    [first] = [c for c in gitea.comments(REPO, number) if c["body"].startswith(MARKER)]
    assert "40960" in first["body"] and "Real `pulumi preview --refresh` against the cluster: skipped" in first["body"]
    assert "dev.py: installing" not in first["body"]

    edit(work, 40960, 32768)
    git(work, "push", "-q", "origin", "pr")
    review("push-2")
    comments = gitea.comments(REPO, number)
    ours = [c for c in comments if c["body"].startswith(MARKER)]
    assert len(ours) == 1 and ours[0]["id"] == first["id"], [c["id"] for c in comments]
    pushed = '+ "--max-model-len=32768"'  # the second push's field diff line
    assert pushed in ours[0]["body"] and pushed not in first["body"]
    assert [c["body"] for c in comments if c["id"] != first["id"]] == ["a reviewer's comment"]
    assert "KUBECONFIG_DATA is not set for this repository" in ours[0]["body"]  # no cluster secrets
