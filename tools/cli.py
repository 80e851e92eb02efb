"""The command line every command of ``tools/`` shares: its parser, its exit codes, its one-line
error and its interrupt.

Exit codes (the same for preview, analyze, plan, adopt-diff, rollout and the console script):

  0 :data:`OK`         done, nothing to report against (the Pulumi CLI's success)
  1 :data:`VERDICT`    done, and the answer is no: a mandatory policy violated, a refused plan, changes
                       on adoption, a Deployment not rolled out (each command names its own)
  2 :data:`BAD_INPUT`  nothing judged: the input or the environment is wrong; one line on stderr says
                       what, why and what to do (argparse's usage errors are 2 as well)
  3 :data:`CRASH`      a bug in the program or the tool, with its traceback
  130 :data:`INTERRUPTED`  Ctrl-C: one line, no traceback (128 + SIGINT, as a shell reports it)
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, NoReturn, TextIO

OK, VERDICT, BAD_INPUT, CRASH = 0, 1, 2, 3
INTERRUPTED = 130
#: How the user called the command when not as its own ``prog``: ``llm-serving VERB`` (tools/main.py).
invoked_as: str | None = None


def parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The command's parser: ``prog`` as the user types it, the first paragraph of its module
    docstring ``doc`` as the ``--help`` description; the console script's ``llm-serving VERB``
    (:data:`invoked_as`) replaces ``prog`` when set."""
    return argparse.ArgumentParser(prog=invoked_as or prog, description=(doc or "").split("\n\n")[0])


def fail(name: str, message: object, stderr: TextIO | None = None, code: int = BAD_INPUT) -> int:
    """Write ``<name>: <message>`` as one line on ``stderr`` (default: the process's) and return
    ``code`` (default :data:`BAD_INPUT`)."""
    (stderr or sys.stderr).write(f"{name}: {message}\n")
    return code


def run(main: Callable[[], int], name: str) -> NoReturn:
    """A command's ``if __name__ == "__main__"``: leave with ``main()``'s code; on Ctrl-C, one line
    ``<name>: interrupted`` and :data:`INTERRUPTED`."""
    try:
        code = main()
    except KeyboardInterrupt:
        code = fail(name, "interrupted", code=INTERRUPTED)
    sys.exit(code)
