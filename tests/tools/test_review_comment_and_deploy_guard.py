"""The workflows' own commands: ``python3 dev.py review-comment`` (:mod:`tools.review_comment`) and
``python3 dev.py deploy-guard`` (:mod:`tools.deploy_guard`). The real suite runs them inside the
workflows' jobs (tests/real/test_real_ci_workflows.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.paths import PROD_STACK_FILE, ROOT
from tools import deploy_guard, review_comment


def _review(tmp_path: Path, **codes: int) -> Path:
    d = tmp_path / "review"
    d.mkdir()
    for stem, code in codes.items():
        (d / f"{stem}.code").write_text(f"{code}\n")
        (d / f"{stem}{'.md' if stem == 'verdicts' else '.txt'}").write_text(f"{stem} output\n")
    return d


def _comment(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return review_comment.main(args, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_the_comment_has_one_section_per_output_headed_by_its_verdict(tmp_path):
    d = _review(tmp_path, preview=1, verdicts=0)
    code, text, _ = _comment([str(d)])
    assert code == 0
    assert text.splitlines()[:2] == [review_comment.MARKER, "## llm-serving: what this pull request changes on prod"]
    # The last line is the check's verdict: the preview refused, so the check fails.
    assert text.splitlines()[-1] == ("**Verdict: REFUSED**: the check fails (exit 1) on: Offline preview against main.")
    assert "### Offline preview against main: diff, restarts, update peak, capacity: REFUSED\n\n```\npreview output\n```" in text
    assert "### Policy verdicts: PASS\n\nverdicts output\n" in text
    assert "### Real `pulumi preview --refresh` against the cluster: skipped\n\nKUBECONFIG_DATA is not set" in text
    assert "dev.py plan" not in text


@pytest.mark.parametrize("codes, want", [
    ({"preview": 0, "verdicts": 0, "real": 0, "plan": 0}, 0),
    ({"preview": 0, "verdicts": 1}, 1),
    ({"preview": 0, "verdicts": 0, "real": 255, "plan": 1}, 1),
    ({"preview": 2, "verdicts": 1}, 2),
    ({"preview": 0, "verdicts": 3}, 3),  # a crash of our own command stays a crash, not a verdict
    ({"preview": 3, "verdicts": 2}, 3),
])
def test_check_exits_with_the_worst_verdict(tmp_path, codes, want):
    assert _comment([str(_review(tmp_path, **codes)), "--check"])[:2] == (want, "")


def test_a_review_without_the_offline_preview_is_bad_input(tmp_path):
    code, out, err = _comment([str(_review(tmp_path, verdicts=0))])
    assert (code, out) == (2, "")
    assert err.startswith("review-comment: ") and "has no preview.code or verdicts.code" in err


def _guard(tmp_path: Path, state: dict, *extra: str, stack: str = "tests/fixtures/prod/Pulumi.prod.yaml") -> tuple[int, str]:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    out = io.StringIO()
    return deploy_guard.main([str(path), "--stack-file", str(ROOT / stack), *extra], stdout=out, stderr=out), out.getvalue()


APPLIED = {"deployment": {"resources": [{"type": "pulumi:pulumi:Stack"}, {"type": "pulumi:providers:kubernetes"},
                                        {"type": "kubernetes:apps/v1:Deployment"}]}}


def test_a_first_up_nobody_reviewed_is_refused(tmp_path):
    code, text = _guard(tmp_path, {}, "--commit", "abc123")
    assert code == 1
    assert text.startswith("deploy-guard: refused: the stack's state holds no Kubernetes object yet, so this first pulumi "
                           "up takes over every live object ArgoCD applied, and no one reviewed it for commit abc123.")
    assert "python3 dev.py adopt-diff --stack prod" in text and "adopt_commit = abc123" in text
    assert _guard(tmp_path, {"deployment": {"resources": [{"type": "pulumi:pulumi:Stack"}]}}, "--commit", "abc123")[0] == 1
    assert _guard(tmp_path, {}, "--commit", "abc123", "--adopt-commit", "other")[0] == 1


def test_a_reviewed_first_up_and_a_later_merge_go_on(tmp_path):
    code, text = _guard(tmp_path, {}, "--commit", "abc123", "--adopt-commit", "abc123")
    assert (code, text) == (0, "deploy-guard: the state holds 0 Kubernetes object(s), adoption reviewed for abc123: go on\n")
    assert deploy_guard.managed_objects(APPLIED) == 1
    assert _guard(tmp_path, APPLIED, "--commit", "abc123") == (0, "deploy-guard: the state holds 1 Kubernetes object(s): go on\n")


@pytest.mark.parametrize("value", ['"yes"', "True", '"on"', "1"])
def test_adopt_written_any_way_the_loader_reads_as_true_needs_a_review(tmp_path, value):
    """The guard reads llm-serving:adopt as the program does (pydantic's bool), so "yes" cannot slip by."""
    text = PROD_STACK_FILE.read_text().replace("config:\n", f"config:\n  llm-serving:adopt: {value}\n", 1)
    (tmp_path / "Pulumi.adopt.yaml").write_text(text)
    code, out = _guard(tmp_path, APPLIED, "--commit", "abc", stack=str(tmp_path / "Pulumi.adopt.yaml"))
    assert code == 1 and "llm-serving:adopt" in out


def test_adopt_in_the_stack_file_needs_a_review_on_every_up(tmp_path):
    text = PROD_STACK_FILE.read_text().replace("config:\n", "config:\n  llm-serving:adopt: true\n", 1)
    (tmp_path / "Pulumi.adopt.yaml").write_text(text)
    code, out = _guard(tmp_path, APPLIED, "--commit", "abc", stack=str(tmp_path / "Pulumi.adopt.yaml"))
    assert code == 1 and "the stack file sets llm-serving:adopt: true" in out


# --- one comment per pull request: --post against a forge's comments API on loopback ------------

class Forge:
    """The issue-comments API of GitHub (``/repos/...``, pages by ``per_page``) or Gitea
    (``/api/v1/repos/...``, pages by ``limit``) for pull request ``number`` of ``repo``, in memory,
    over real HTTP on 127.0.0.1, answering only ``token``; each request is recorded as (method,
    path). ``api`` is what a runner's ``github.api_url`` would be. The real suite's workflow test
    uses it as the forge too."""

    def __init__(self, gitea: bool, comments: list[str], repo: str = "o/r", number: int = 7, token: str = "t0ken"):
        import http.server
        import threading
        from urllib.parse import parse_qs, urlsplit

        self.prefix = "/api/v1" if gitea else ""
        self.comments = [{"id": i + 1, "body": b} for i, b in enumerate(comments)]
        self.calls: list[tuple[str, str]] = []
        forge = self
        size_key = "limit" if gitea else "per_page"

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self, code: int, value=None):
                raw = b"" if value is None else json.dumps(value).encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def _route(self, method: str):
                parts = urlsplit(self.path)
                forge.calls.append((method, parts.path))
                if self.headers.get("Authorization") != f"token {token}":
                    return self._answer(401, {"message": "bad credentials"})
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                base = f"{forge.prefix}/repos/{repo}/issues"
                if parts.path == f"{base}/{number}/comments" and method == "GET":
                    q = parse_qs(parts.query)
                    size, page = int(q.get(size_key, ["30"])[0]), int(q.get("page", ["1"])[0])
                    return self._answer(200, forge.comments[(page - 1) * size: page * size])
                if parts.path == f"{base}/{number}/comments" and method == "POST":
                    forge.comments.append({"id": max([c["id"] for c in forge.comments], default=0) + 1, "body": body["body"]})
                    return self._answer(201, forge.comments[-1])
                if parts.path.startswith(f"{base}/comments/"):
                    cid = int(parts.path.rsplit("/", 1)[1])
                    [c] = [c for c in forge.comments if c["id"] == cid]
                    if method == "PATCH":
                        c["body"] = body["body"]
                        return self._answer(200, c)
                    forge.comments.remove(c)
                    return self._answer(204)
                return self._answer(404, {"message": "not found"})

            def do_GET(self):  # noqa: N802
                self._route("GET")

            def do_POST(self):  # noqa: N802
                self._route("POST")

            def do_PATCH(self):  # noqa: N802
                self._route("PATCH")

            def do_DELETE(self):  # noqa: N802
                self._route("DELETE")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.api = f"http://127.0.0.1:{self.server.server_address[1]}{self.prefix}"
        self.url = f"{self.api}/repos/{repo}/issues/{number}/comments"

    def ours(self) -> list[dict]:
        return [c for c in self.comments if c["body"].startswith(review_comment.MARKER)]


@pytest.mark.parametrize("gitea", [False, True], ids=["github", "gitea"])
def test_two_pushes_leave_one_comment_holding_the_second(tmp_path, monkeypatch, gitea):
    # 60 comments of people first (the review's comment lands on the second page), one quoting the marker.
    people = [f"comment {i}" for i in range(59)] + [f"about the bot: {review_comment.MARKER}"]
    forge = Forge(gitea, people)
    try:
        monkeypatch.setenv("TOKEN", "t0ken")
        first = _review(tmp_path, preview=1, verdicts=0)
        assert _comment([str(first), "--post", forge.url])[:2] == (0, "review-comment: created\n")
        assert len(forge.ours()) == 1 and "REFUSED" in forge.ours()[0]["body"]
        (first / "preview.code").write_text("0\n")
        (first / "preview.txt").write_text("the second push's preview\n")
        code, out, _ = _comment([str(first), "--post", forge.url])
        assert (code, out) == (0, f"review-comment: updated {forge.ours()[0]['id']}\n")
        [ours] = forge.ours()
        assert ours["body"] == review_comment.comment(first) and "the second push's preview" in ours["body"]
        assert ours["body"].rstrip().endswith("**Verdict: PASS**: every section above passed; the check passes.")
        assert [c["body"] for c in forge.comments if c is not ours] == people  # nobody else's comment touched
        assert ("PATCH", f"{forge.prefix}/repos/o/r/issues/comments/{ours['id']}") in forge.calls
        assert [m for m, _ in forge.calls].count("POST") == 1
    finally:
        forge.server.shutdown()


def test_a_second_marked_comment_from_a_raced_run_is_deleted(tmp_path, monkeypatch):
    forge = Forge(True, [f"{review_comment.MARKER}\nold one", "a person", f"{review_comment.MARKER}\nold two"])
    try:
        monkeypatch.setenv("TOKEN", "t0ken")
        assert _comment([str(_review(tmp_path, preview=0, verdicts=0)), "--post", forge.url])[0] == 0
        assert [c["id"] for c in forge.ours()] == [1] and [c["body"] for c in forge.comments][1] == "a person"
        assert ("DELETE", "/api/v1/repos/o/r/issues/comments/3") in forge.calls
    finally:
        forge.server.shutdown()


def test_an_api_refusal_is_exit_2_with_the_call_and_the_fix(tmp_path, monkeypatch):
    forge = Forge(False, [])
    try:
        monkeypatch.setenv("TOKEN", "wrong")
        review = _review(tmp_path, preview=0, verdicts=0)
        code, out, err = _comment([str(review), "--post", forge.url])
        assert (code, out) == (2, "")
        assert err.startswith(f"review-comment: GET {forge.url}?page=1") and "answered 401" in err
        assert "fix: give the token the right to comment on pull requests" in err and "Traceback" not in err
        monkeypatch.delenv("TOKEN")
        code, _, err = _comment([str(review), "--post", forge.url])
        assert code == 2 and "--post needs the API token in $TOKEN" in err
    finally:
        forge.server.shutdown()
