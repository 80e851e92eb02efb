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

Printed: one markdown comment, a section per output, each headed by its verdict (exit code 0
PASS, 1 REFUSED, 2 BAD INPUT, other FAILED); a missing real preview is said to be skipped.
``--check``: print nothing, exit 0 when every present code is 0, 2 when one is 2 (bad input), else
1. A directory without the offline preview's outputs is bad input (exit 2).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TextIO

from core.inputs import MAX_INPUT_BYTES, InputFileError, read_text_inside
from tools import cli

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
    whole number counts as a crash (3). Read by :func:`core.inputs.read_text_inside`: a link, a
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


def comment(directory: Path) -> str:
    """The markdown comment (see the module docstring)."""
    found = codes(directory)
    lines = ["## llm-serving: what this pull request changes on prod", ""]
    for stem, title, fence in SECTIONS:
        if stem not in found:
            if stem == "real":
                lines += [f"### {title}: skipped", "",
                          "KUBECONFIG_DATA is not set for this repository: no real preview (docs/runbooks/ci.md).", ""]
            continue
        verdict = VERDICTS.get(found[stem], f"FAILED (exit {found[stem]})")
        body = _body(directory, stem)
        lines += [f"### {title}: {verdict}", ""]
        lines += (fenced(body) if fence else [body]) + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:  # noqa: D103
    ap = cli.parser("python3 dev.py review-comment", __doc__)
    ap.add_argument("dir", type=Path, help="the review job's output directory (out/review)")
    ap.add_argument("--check", action="store_true", help="print nothing; exit with the worst verdict")
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
    if not args.check:
        stdout.write(comment(args.dir))
        return cli.OK
    # Our own commands speak tools/cli.py's contract (a 3 is a crash, not a verdict); the real
    # `pulumi preview` ends 255 on any failure, a verdict here.
    if any(found.get(stem) == cli.CRASH for stem in ("preview", "verdicts", "plan")):
        return cli.CRASH
    if any(c == cli.BAD_INPUT for c in found.values()):
        return cli.BAD_INPUT
    return cli.OK if all(c == 0 for c in found.values()) else cli.VERDICT


if __name__ == "__main__":
    cli.run(main, "review-comment")
