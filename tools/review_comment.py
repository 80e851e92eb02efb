"""The pull request's one comment, from the review job's outputs (``.gitea/workflows/pull-request.yaml``).

``DIR`` holds what the job's steps wrote, each command's output beside its exit code:

=================================  ============================================================
``preview.txt`` / ``.code``        ``dev.py preview --base <main's rendering>``: the field diff
                                   with replacements, restarts and costs, the cards per node at
                                   the update's peak and the capacity table
``verdicts.md`` / ``.code``        ``dev.py analyze --format markdown``: the policy verdicts
``real.txt`` / ``.code``           ``pulumi preview --refresh --diff`` (only with the cluster secrets)
``plan.txt`` / ``.code``           ``dev.py plan`` on that preview's ``--json`` plan
=================================  ============================================================

Printed: one markdown comment, its first line the marker :data:`MARKER`, a section per output,
each headed by its verdict (exit code 0 PASS, 1 REFUSED, 2 BAD INPUT, other FAILED; a missing
real preview is said to be skipped), its last line the check's verdict (:func:`verdict`, the one
``--check`` exits with). ``--check``: print nothing, exit 0 when every present code is 0, 2 when
one is 2 (bad input), 3 when our own command crashed, else 1. A directory without the offline
preview's outputs is bad input (exit 2).

``--post URL``: keep ONE comment per pull request, as Atlantis and pulumi/actions'
``edit-pr-comment`` do: ``URL`` is the pull request's issue-comments endpoint, the same path on
GitHub (``{api_url}/repos/{owner}/{repo}/issues/{number}/comments``) and Gitea
(``{server_url}/api/v1/repos/...``); the token is ``$TOKEN`` (``Authorization: token ...``, which
both accept). Every page of the PR's comments is read (``per_page`` for GitHub, ``limit`` for
Gitea); the first comment whose body starts with the marker is PATCHed in place
(``.../issues/comments/{id}``) and any later one with the marker deleted; with none, the comment is
POSTed. An API error is exit 2 with the method, the URL, the status and the fix.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, TextIO

from core.base.inputs import MAX_INPUT_BYTES, InputFileError, read_text_inside
from tools import cli

#: The comment's first line: how the next push finds the comment to update (an HTML comment,
#: invisible in the rendered markdown).
MARKER = "<!-- llm-serving:review-comment -->"
#: Comments read per page of the PR's comments (GitHub's maximum is 100, Gitea's default 50).
PAGE = 50

#: (file stem, title, fenced): the sections, in the comment's order.
SECTIONS = (
    ("preview", "Offline preview against main: diff, restarts, update peak, capacity", True),
    ("verdicts", "Policy verdicts", False),
    ("real", "Real `pulumi preview --refresh` against the cluster", True),
    ("plan", "The real plan read back (`python3 dev.py plan`)", True),
)
VERDICTS = {0: "PASS", 1: "REFUSED", 2: "BAD INPUT"}
#: A comment above GitHub's 65,536-character limit is refused; each section is cut to this.
MAX_SECTION = 15_000


#: The largest exit-code file read, in bytes: a code is a few digits.
MAX_CODE_BYTES = 64


class OutputError(ValueError):
    """A file of the review job's output directory cannot be used (its message names it and the fix)."""


def _code(directory: Path, stem: str) -> int | None:
    """The exit code ``<stem>.code`` holds, None when there is none; text that is not an ASCII
    whole number counts as a crash (3). Read by :func:`core.base.inputs.read_text_inside`: a link, a
    FIFO, a directory, a device or a file that is not UTF-8 raises :class:`OutputError`."""
    try:
        text = read_text_inside(directory, f"{stem}.code", "exit-code file", MAX_CODE_BYTES)
    except InputFileError as err:
        raise OutputError(str(err)) from None
    if text is None:
        return None
    text = text.strip()
    return int(text) if re.fullmatch(r"-?[0-9]{1,6}", text) else cli.CRASH


def _body(directory: Path, stem: str) -> str:
    for suffix in (".txt", ".md"):
        try:
            text = read_text_inside(directory, f"{stem}{suffix}", "output file")
        except InputFileError as err:
            if "UTF-8" not in str(err):
                raise OutputError(str(err)) from None
            raw = (directory / f"{stem}{suffix}").read_bytes()[:MAX_INPUT_BYTES]
            text = raw.decode("utf-8", errors="replace")
        if text is not None:
            text = cli.printable(text.rstrip())
            return text if len(text) <= MAX_SECTION else text[:MAX_SECTION] + "\n... (cut; the whole output is in the job's artefacts)"
    return ""


def fenced(body: str) -> list[str]:
    """``body`` between code fences longer than any run of backticks in it (CommonMark: a fence
    closes only on one at least as long), so a ``\u0060\u0060\u0060`` in an output cannot end the block."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, body, fence]


def codes(directory: Path) -> dict[str, int]:
    """Stem -> exit code of each output present."""
    return {stem: c for stem, _, _ in SECTIONS if (c := _code(directory, stem)) is not None}


def check(found: dict[str, int]) -> int:
    """The review's exit code from its outputs' codes (see the module docstring)."""
    # Our own commands speak tools/cli.py's contract (a 3 is a crash, not a verdict); the real
    # `pulumi preview` ends 255 on any failure, a verdict here.
    if any(found.get(stem) == cli.CRASH for stem in ("preview", "verdicts", "plan")):
        return cli.CRASH
    if any(c == cli.BAD_INPUT for c in found.values()):
        return cli.BAD_INPUT
    return cli.OK if all(c == 0 for c in found.values()) else cli.VERDICT


def verdict(found: dict[str, int]) -> str:
    """The comment's last line: the check's verdict and the sections that decide it."""
    code = check(found)
    titles = {stem: title.split(":")[0] for stem, title, _ in SECTIONS}
    bad = [titles[stem] for stem, _, _ in SECTIONS if found.get(stem, 0) != 0]
    if code == cli.OK:
        return "**Verdict: PASS**: every section above passed; the check passes."
    word = {cli.VERDICT: "REFUSED", cli.BAD_INPUT: "BAD INPUT", cli.CRASH: "FAILED"}.get(code, "FAILED")
    return f"**Verdict: {word}**: the check fails (exit {code}) on: {'; '.join(bad)}."


def comment(directory: Path) -> str:
    """The markdown comment (see the module docstring)."""
    found = codes(directory)
    lines = [MARKER, "## llm-serving: what this pull request changes on prod", ""]
    for stem, title, fence in SECTIONS:
        if stem not in found:
            if stem == "real":
                lines += [f"### {title}: skipped", "",
                          "KUBECONFIG_DATA is not set for this repository: no real preview (docs/runbooks/ci.md).", ""]
            continue
        heading = VERDICTS.get(found[stem], f"FAILED (exit {found[stem]})")
        body = _body(directory, stem)
        lines += [f"### {title}: {heading}", ""]
        lines += (fenced(body) if fence else [body]) + [""]
    return "\n".join([*lines, verdict(found)]) + "\n"


class ApiError(Exception):
    """The forge's API refused a call; the message names it and the fix."""


def _call(method: str, url: str, token: str, body: dict | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"token {token}", "Accept": "application/json", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 - the forge's API URL, from the workflow
            raw = resp.read()
    except urllib.error.HTTPError as err:
        raise ApiError(f"{method} {url} answered {err.code} {err.reason}: {err.read(500).decode(errors='replace')!r}; "
                       "fix: give the token the right to comment on pull requests (PR_COMMENT_TOKEN, docs/runbooks/ci.md) "
                       "and check the URL") from None
    except (urllib.error.URLError, OSError) as err:
        raise ApiError(f"{method} {url} failed: {err}; fix: check the forge's API URL is reachable from the runner") from None
    return json.loads(raw) if raw.strip() else None


def _page(url: str, page: int) -> str:
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query) + [("page", str(page)), ("per_page", str(PAGE)), ("limit", str(PAGE))]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def _comment_url(comments_url: str, comment_id: Any) -> str:
    """``.../issues/{number}/comments`` -> ``.../issues/comments/{id}`` (GitHub and Gitea alike)."""
    base, sep, _ = comments_url.rstrip("/").rpartition("/issues/")
    if not sep:
        raise ApiError(f"{comments_url} is not an issue-comments endpoint (.../repos/OWNER/REPO/issues/NUMBER/comments); "
                       "fix: pass the pull request's comments URL")
    return f"{base}/issues/comments/{comment_id}"


def post(comments_url: str, body: str, token: str) -> str:
    """Update the PR's review comment in place, or create it (see the module docstring); returns
    ``updated <id>`` or ``created``."""
    _comment_url(comments_url, 0)  # the URL's shape, before any call
    ours: list[Any] = []
    page = 1
    while True:
        batch = _call("GET", _page(comments_url, page), token)
        if not isinstance(batch, list):
            raise ApiError(f"GET {comments_url} did not answer a list of comments; fix: pass the pull request's comments URL")
        ours += [c["id"] for c in batch if isinstance(c, dict) and str(c.get("body", "")).startswith(MARKER)]
        if len(batch) < PAGE:
            break
        page += 1
    if not ours:
        _call("POST", comments_url, token, {"body": body})
        return "created"
    _call("PATCH", _comment_url(comments_url, ours[0]), token, {"body": body})
    for extra in ours[1:]:  # from runs that raced before this one: one comment stays
        _call("DELETE", _comment_url(comments_url, extra), token)
    return f"updated {ours[0]}"


def main(argv: list[str] | None = None, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:  # noqa: D103
    ap = cli.parser("python3 dev.py review-comment", __doc__)
    ap.add_argument("dir", type=Path, help="the review job's output directory (out/review)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="print nothing; exit with the worst verdict")
    mode.add_argument("--post", metavar="URL", help="update the PR's one review comment in place (or create it) through "
                      "this issue-comments API URL; the token is $TOKEN")
    args = ap.parse_args(argv)
    try:
        return _main(args, stdout, stderr)
    except OutputError as err:
        return cli.fail("review-comment", err, stderr)


def _main(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    if not args.dir.is_dir():
        return cli.fail("review-comment", f"{args.dir} is not a directory; fix: name the review job's output "
                        "directory (out/review)", stderr)
    if _code(args.dir, "preview") is None or _code(args.dir, "verdicts") is None:
        return cli.fail("review-comment", f"{args.dir} has no preview.code or verdicts.code: the offline preview "
                        "step did not run; fix: run the review job's steps in order", stderr)
    found = codes(args.dir)
    if args.post:
        token = os.environ.get("TOKEN", "")
        if not token:
            return cli.fail("review-comment", "--post needs the API token in $TOKEN; fix: set TOKEN (the workflow: "
                            "secrets.PR_COMMENT_TOKEN or github.token)", stderr)
        try:
            done = post(args.post, comment(args.dir), token)
        except ApiError as err:
            return cli.fail("review-comment", err, stderr)
        stdout.write(f"review-comment: {done}\n")
        return cli.OK
    if not args.check:
        stdout.write(comment(args.dir))
        return cli.OK
    return check(found)


if __name__ == "__main__":
    cli.run(main, "review-comment")
