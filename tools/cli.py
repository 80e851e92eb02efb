"""The command line every command shares: its parser, its exit codes, its one-line error, its
interrupt and its child processes.

One exit-code contract for every command (preview, analyze, plan, adopt-diff, rollout, the
``llm-serving`` console script, ``dev.py toolchain``, ``dev.py cluster`` and ``dev.py`` itself),
stated once in :data:`EXIT_CODES`:

  ====  ===============  =================================================================================
  code  name             meaning
  ====  ===============  =================================================================================
  0     :data:`OK`       done, nothing to report against (the Pulumi CLI's success)
  1     :data:`VERDICT`  done, and the answer is no: a mandatory policy violated, a refused plan, changes
                         on adoption, a Deployment not rolled out, a cluster not running, a toolchain not
                         built (each command names its own)
  2     :data:`BAD_INPUT`  nothing judged: the input or the environment is wrong (a file, a value, a path,
                         a full disk); one line on stderr says what, why and what to do (argparse's usage
                         errors are 2 as well)
  3     :data:`CRASH`    a bug in the program or the tool, with its traceback
  130   :data:`INTERRUPTED`  Ctrl-C (SIGINT): one line, no traceback
  141   :data:`BROKEN_PIPE`  the reader of stdout went away (``... | head -1``, SIGPIPE): nothing more said
  143   :data:`TERMINATED`  SIGTERM: one line, no traceback
  ====  ===============  =================================================================================

130, 141 and 143 are 128 + the signal's number, as a shell reports a process the signal ended
(POSIX ``sh``, "Exit Status for Commands"; bash's manual, "Exit Status").
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import os
import re
import signal
import subprocess
import sys
import traceback
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

OK, VERDICT, BAD_INPUT, CRASH = 0, 1, 2, 3
INTERRUPTED = 128 + signal.SIGINT
BROKEN_PIPE = 128 + signal.SIGPIPE
TERMINATED = 128 + signal.SIGTERM
#: How the user called the command when not as its own ``prog``: ``llm-serving VERB`` (tools/main.py).
invoked_as: str | None = None

#: The contract, code -> (name, meaning); the module docstring's table says the same at length.
EXIT_CODES: dict[int, tuple[str, str]] = {
    OK: ("OK", "done, nothing to report against"),
    VERDICT: ("VERDICT", "done, and the answer is no (a violation, a refused plan, changes, not rolled out)"),
    BAD_INPUT: ("BAD_INPUT", "nothing judged: the input or the environment is wrong; one line says what and the fix"),
    CRASH: ("CRASH", "a bug in the program or the tool, with its traceback"),
    INTERRUPTED: ("INTERRUPTED", "Ctrl-C (SIGINT): one line, no traceback"),
    BROKEN_PIPE: ("BROKEN_PIPE", "the reader of stdout went away (SIGPIPE)"),
    TERMINATED: ("TERMINATED", "SIGTERM: one line, no traceback"),
}

#: An OS error on writing that is the environment's fault, not the program's: exit 2.
_ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})
#: Seconds a child gets to end after its parent passed it SIGTERM, before SIGKILL.
CHILD_GRACE_S = 10.0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread by :func:`run`'s handler. A ``KeyboardInterrupt``, so no
    ``except Exception`` swallows it and asyncio re-raises it out of the mock runtime's event loop
    as it does Ctrl-C (a plain ``BaseException`` raised in a callback is logged with a traceback
    and the loop runs on, so the program went on until SIGKILL); catch it before KeyboardInterrupt."""


def parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The command's parser: ``prog`` as the user types it, the first paragraph of its module
    docstring ``doc`` as the ``--help`` description; the console script's ``llm-serving VERB``
    (:data:`invoked_as`) replaces ``prog`` when set."""
    return argparse.ArgumentParser(prog=invoked_as or prog, description=(doc or "").split("\n\n")[0])


#: A stack name as the Pulumi CLI takes it (``pulumi stack init``: letters, digits, '-', '_', '.').
_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def stack_name(text: str) -> str:
    """``--stack``'s type: ``text`` when it is a stack name the Pulumi CLI takes (not empty, not
    ``.`` or ``..``, no '/' or space: it becomes part of a file name, ``Pulumi.<stack>.yaml``);
    otherwise argparse's usage error (exit 2) with the fix."""
    if not _STACK_NAME.fullmatch(text) or text in (".", ".."):
        raise argparse.ArgumentTypeError(f"{printable(repr(text))} is not a stack name (letters, digits, '-', '_' "
                                         "and '.', 1 to 100 of them, as `pulumi stack init` takes); fix: name a "
                                         "stack, e.g. prod, or pass --stack-file")
    return text


def fail(name: str, message: object, stderr: TextIO | None = None, code: int = BAD_INPUT) -> int:
    """Write ``<name>: <message>`` as one line on ``stderr`` (default: the process's) and return
    ``code`` (default :data:`BAD_INPUT`). Control characters in ``message`` are escaped
    (:func:`printable`), so no raw escape sequence reaches the terminal."""
    try:  # noqa: SIM105
        (stderr or sys.stderr).write(f"{name}: {printable(str(message))}\n")
    except (OSError, ValueError, AttributeError, UnicodeEncodeError):
        pass  # stderr closed (None) or full: the exit code still says it
    return code


#: Unicode categories written as escapes: controls, format characters (zero-width, bidi
#: overrides), line and paragraph separators, surrogates and unassigned code points.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})


def printable(text: str) -> str:
    """``text`` with every control or format character but newline and tab written as Python
    writes it in a literal (``\\x1b``, ``\\x00``, ``\\u202e``): a message or report quoting the
    input cannot move the cursor, clear the screen or reverse the line, and stays valid XML."""  # noqa: D301
    if text.isprintable():
        return text
    return "".join(c if c in "\n\t" or unicodedata.category(c) not in _UNSAFE_CATEGORIES
                   else repr(c)[1:-1] for c in text)


def one_line(text: str) -> str:
    """:func:`printable` ``text`` with its line breaks escaped too (``\\n``, ``\\r``): one line of a
    report a name in the input cannot split into a forged line (``REFUSED: ...``)."""  # noqa: D301
    return printable(text).replace("\r", "\\r").replace("\n", "\\n")


def write_files(files: dict, mode: int = 0o644) -> None:
    """Write each ``path -> text`` of ``files`` aside (a temporary file in its directory, flushed to
    disk), then move each in place (``os.replace``, atomic on one file system): a full disk, an
    interrupt or a crash leaves every old file as it was and no partial one. The parents are
    created. Raises the OSError that stopped it (:func:`environment_error` words it), after
    removing what it wrote aside."""
    import tempfile
    from pathlib import Path

    staged: list[tuple[Path, Path]] = []
    try:
        for path, text in files.items():
            target = Path(path).absolute()
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            staged.append((Path(tmp), target))
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            Path(tmp).chmod(mode)
        for tmp_path, target in staged:
            tmp_path.replace(target)
        staged = []
    finally:
        for tmp_path, _ in staged:
            with contextlib.suppress(OSError):
                tmp_path.unlink()


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def _quiet_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's last flush of a closed or full stdout
    neither prints "Exception ignored" nor turns the exit code into 120 (the Python docs'
    recipe, signal module, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def outcome(main: Callable[[], int], name: str) -> int:
    """``main()``'s exit code, or the contract's code for what ended it: Ctrl-C
    :data:`INTERRUPTED`, SIGTERM :data:`TERMINATED` (each one line), a closed stdout
    :data:`BROKEN_PIPE` (silent), a full disk or read-only file system :data:`BAD_INPUT` (one
    line with the fix), input nested past Python's recursion limit :data:`BAD_INPUT`, any other
    exception :data:`CRASH` with its traceback. Output is flushed inside, so a full or closed
    stdout is caught here too. SIGTERM raises :class:`Terminated` in the main thread meanwhile."""
    old = signal.signal(signal.SIGTERM, _terminate) if _main_thread() else None
    try:
        try:
            code = main()
        except SystemExit as exit_:  # argparse's --help (0) and usage errors (2)
            code = exit_.code if isinstance(exit_.code, int) else (BAD_INPUT if exit_.code else OK)
        sys.stdout.flush()
        sys.stderr.flush()
        return code
    except Terminated:
        return fail(name, "terminated (SIGTERM)", code=TERMINATED)
    except KeyboardInterrupt:
        return fail(name, "interrupted", code=INTERRUPTED)
    except BrokenPipeError:
        _quiet_stdout()
        return BROKEN_PIPE
    except RecursionError as err:
        return fail(name, environment_error(err))
    except OSError as err:
        message = environment_error(err)
        if message is None:
            return _crash(name)
        _quiet_stdout()
        return fail(name, message)
    except Exception as err:  # noqa: BLE001 - a bug: say so, with where (a damaged install: exit 2)
        message = environment_error(err)
        return fail(name, message) if message is not None else _crash(name)
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


def environment_error(err: BaseException) -> str | None:
    """The one line (what, and the fix) for an error that is the environment's, not the program's:
    a full disk, a quota, a read-only file system, an I/O error, input nested past Python's
    recursion limit. None for any other error (a bug: :data:`CRASH`)."""
    if isinstance(err, RecursionError):
        return ("an input nests too deeply to read (deeper than any stack file, manifest or plan); "
                "fix: check the file for runaway nesting, e.g. [[[[...]]]]")
    datafile = sys.modules.get("core.catalog.datafile")
    if datafile is not None and isinstance(err, datafile.DataFileError):  # a damaged install, not a bug
        return " ".join(err.render().split("\n", 1)[-1].split())
    if isinstance(err, OSError) and err.errno == errno.EROFS:
        where = f" {err.filename}" if err.filename else ""
        return (f"cannot write{where}: the file system is read-only; fix: write to a writable directory, or make "
                "the clone writable")
    if isinstance(err, OSError) and err.errno in _ENVIRONMENT_ERRNOS:
        where = f" {err.filename}" if err.filename else ""
        return (f"cannot write{where}: {err.strerror or err}; fix: free space on the disk, or write elsewhere "
                "(a writable directory)")
    return None


def _crash(name: str) -> int:
    try:
        sys.stderr.write(f"{name}: internal error (a bug in {name}, not in the input); the traceback follows\n")
        sys.stderr.write(traceback.format_exc())
    except (OSError, ValueError):
        pass
    return CRASH


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block, then restore its state (on only if it was
    on). For short-lived work that allocates many containers and little cyclic garbage (imports
    that build pydantic models, the program under the mock runtime): full collections over the
    growing heap cost time, not memory that matters; reference counting still frees the rest."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def add_project(ap: argparse.ArgumentParser) -> None:
    """``--project DIR``: the project directory the command reads (:func:`core.base.inputs.project_dir`)."""
    ap.add_argument("--project", type=Path, metavar="DIR",
                    help="the project directory: Pulumi.yaml, __main__.py, the Pulumi.<stack>.yaml files (default: the "
                         "checkout this runs from, as python3 dev.py does; the current directory for an installed package)")


@contextlib.contextmanager
def project(explicit: Path | None) -> Iterator[Path]:
    """Resolve the project directory (:func:`core.base.inputs.project_dir`) and make it the one every
    reader uses while the command runs: ``core.base.inputs.PROJECT_DIR`` here (the program run in this
    process reads it) and ``$LLM_SERVING_PROJECT`` for the processes started meanwhile (the pack);
    both restored after. Raises ``ValueError`` when the directory holds no ``Pulumi.yaml``."""
    from core.base import inputs

    where = inputs.project_dir(explicit)
    if not (where / "Pulumi.yaml").is_file():
        raise ValueError(f"{where} is not a Pulumi project directory (it has no Pulumi.yaml); fix: run in the project "
                         "directory or pass --project DIR")
    before, env = inputs.PROJECT_DIR, os.environ.get(inputs.PROJECT_ENV)
    inputs.PROJECT_DIR = where
    os.environ[inputs.PROJECT_ENV] = str(where)
    try:
        yield where
    finally:
        inputs.PROJECT_DIR = before
        if env is None:
            os.environ.pop(inputs.PROJECT_ENV, None)
        else:
            os.environ[inputs.PROJECT_ENV] = env


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def run(main: Callable[[], int], name: str) -> NoReturn:
    """A command's ``if __name__ == "__main__"``: leave with :func:`outcome`'s code; with standard
    output closed (``cmd >&-``: Python gives ``sys.stdout = None``) :data:`BROKEN_PIPE` at once,
    as for a reader that went away."""
    if sys.stdout is None:
        _quiet_stdout()
        os._exit(BROKEN_PIPE)
    for stream in (sys.stdout, sys.stderr):  # an ASCII locale (LANG=C PYTHONUTF8=0): escape, never fail
        if stream is not None and (getattr(stream, "encoding", "") or "").lower().replace("-", "") != "utf8":
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    sys.exit(outcome(main, name))


def call(cmd: Sequence[str], cwd: str | None = None, grace: float = CHILD_GRACE_S, **kwargs: object) -> int:
    """Run the child ``cmd`` and return its exit code; if this process is interrupted or
    terminated meanwhile, the child is passed SIGTERM (after Ctrl-C it has SIGINT already, from
    the terminal), given ``grace`` seconds (default :data:`CHILD_GRACE_S`) to end, then killed,
    and the interrupt raised again: no child outlives its parent."""
    proc = subprocess.Popen(list(cmd), cwd=cwd, **kwargs)  # type: ignore[call-overload]
    try:
        return int(proc.wait())
    except BaseException:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise
