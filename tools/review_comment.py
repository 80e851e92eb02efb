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

import sys
from pathlib import Path
from typing import TextIO

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


def _code(directory: Path, stem: str) -> int | None:
    path = directory / f"{stem}.code"
    if not path.exists():
        return None
    text = path.read_text().strip()
    return int(text) if text.lstrip("-").isdigit() else 3


def _body(directory: Path, stem: str) -> str:
    for suffix in (".txt", ".md"):
        path = directory / f"{stem}{suffix}"
        if path.exists():
            text = path.read_text(errors="replace").rstrip()
            return text if len(text) <= MAX_SECTION else text[:MAX_SECTION] + "\n... (cut; the whole output is in the job's artefacts)"
    return ""


def codes(directory: Path) -> dict[str, int]:
    """Stem -> exit code of each output present."""
    return {stem: c for stem, _, _ in SECTIONS if (c := _code(directory, stem)) is not None}


def comment(directory: Path) -> str:
    """The markdown comment (see the module docstring)."""
    found = codes(directory)
    lines = ["## llm-serving: what this pull request changes on prod", ""]
    for stem, title, fenced in SECTIONS:
        if stem not in found:
            if stem == "real":
                lines += [f"### {title}: skipped", "",
                          "KUBECONFIG_DATA is not set for this repository: no real preview (docs/runbooks/ci.md).", ""]
            continue
        verdict = VERDICTS.get(found[stem], f"FAILED (exit {found[stem]})")
        body = _body(directory, stem)
        lines += [f"### {title}: {verdict}", ""]
        lines += (["```", body, "```"] if fenced else [body]) + [""]
    return "\n".join(lines)


def main(argv: list[str] | None = None, stdout: TextIO = sys.stdout, stderr: TextIO = sys.stderr) -> int:  # noqa: D103
    ap = cli.parser("python3 dev.py review-comment", __doc__)
    ap.add_argument("dir", type=Path, help="the review job's output directory (out/review)")
    ap.add_argument("--check", action="store_true", help="print nothing; exit with the worst verdict")
    args = ap.parse_args(argv)
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
