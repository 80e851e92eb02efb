"""Reading an input file the user names: regular files only, with a size cap, UTF-8, and JSON
that must be an object with each key once. One reader for the stack file, the manifests, the
``--inventory`` file and a model's ``config_json`` (a FIFO, ``/dev/zero`` or a 2 GB
sparse file named as one of them hung the preview or exhausted its memory).

- :func:`read_text`: the text of a regular file of at most ``limit`` bytes (default
  :data:`MAX_INPUT_BYTES`); anything else raises :class:`InputFileError` naming the file and
  why, before a byte is read (a FIFO is opened non-blocking, so no writer is waited for).
- :func:`json_object`: a JSON object from text; a duplicate key (JSON leaves it undefined,
  Python keeps the last one silently) or another top-level type raises :class:`InputFileError`.

Plain Python.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import sys
from pathlib import Path
from typing import Any

#: The environment variable that names the project directory (``--project DIR`` of the
#: commands sets it for the processes they start: the policy pack).
PROJECT_ENV = "LLM_SERVING_PROJECT"


def project_dir(explicit: Path | None = None) -> Path:
    """The project directory: ``explicit`` (``--project DIR``), else ``$LLM_SERVING_PROJECT``,
    else the checkout this code runs from when it holds ``Pulumi.yaml`` (``pip install -e .``, as
    ``python3 dev.py`` does), else the current directory (an installed package: the Pulumi CLI runs
    the program there, and a user runs ``llm-serving`` there)."""
    if explicit is not None:
        return Path(explicit).resolve()
    if os.environ.get(PROJECT_ENV):
        return Path(os.environ[PROJECT_ENV]).resolve()
    checkout = Path(__file__).resolve().parent.parent
    return checkout if (checkout / "Pulumi.yaml").is_file() else Path.cwd().resolve()


#: The project directory (:func:`project_dir`): ``Pulumi.yaml`` and the stack files; relative
#: ``config_json`` paths of ``llm-serving:models`` resolve against it.
PROJECT_DIR = project_dir()


#: The largest input file read, in bytes (16 MiB). The largest stack file measured, the
#: 100-node benchmark stack (bench/genstack.py), is about 1 MiB; a Hugging Face config.json
#: is a few KiB. Above it the file is refused rather than read into memory.
MAX_INPUT_BYTES = 16 * 1024 * 1024


class InputFileError(ValueError):
    """A named input file cannot be used; the message names the file, why, and the fix."""


def read_text(path: str | Path, what: str = "input file", limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` (``what`` names it in messages, e.g.
    ``stack file``). Raises :class:`InputFileError` when it is missing or unreadable, not a
    regular file (a directory, FIFO, socket or device such as ``/dev/zero``), larger than
    ``limit`` bytes, or not UTF-8 (with the byte offset)."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        fix = (f"name an existing file (a relative path is read from {os.getcwd()})" if err.errno == errno.ENOENT  # noqa: PTH109
               else "make it readable (check its permissions), or name another file")
        raise InputFileError(f"{path}: cannot read the {what}: {err.strerror}; fix: {fix}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(f"{path}: the {what} is a {_kind(info.st_mode)}, not a regular file; "
                                 f"fix: name a regular file")
        if info.st_size > limit:
            raise InputFileError(f"{path}: the {what} is {info.st_size:,} bytes, above the {limit:,}-byte limit; "
                                 f"fix: name the intended file (a {what} is far smaller)")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while being read
        raise InputFileError(f"{path}: the {what} is above the {limit:,}-byte limit; fix: name the intended file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputFileError(f"{path}: the {what} is not UTF-8 text (byte {err.start}: {data[err.start:err.start + 1]!r}); "
                             "fix: save it as UTF-8") from None


def read_text_inside(directory: str | Path, name: str, what: str = "input file", limit: int = MAX_INPUT_BYTES) -> str | None:
    """:func:`read_text` of ``directory/name``, None when it does not exist; a symbolic link (to
    anywhere: a folder's input is its own files) or a path resolving outside ``directory`` raises
    :class:`InputFileError` before a byte is read, so a link to ``/etc/shadow`` is never read."""
    path = Path(directory) / name
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not os.path.realpath(path).startswith(os.path.realpath(directory) + os.sep):
        raise InputFileError(f"{path}: the {what} is a symbolic link (or leads out of {directory}), which is not "
                             f"followed; fix: write the {what} itself into {directory}")
    return read_text(path, what, limit)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"), (stat.S_ISSOCK, "socket"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InputFileError(f"key {key!r} is given twice in one object (JSON keeps the last one silently); "
                                 "fix: keep one")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise InputFileError(f"{name} is not JSON (Python's reader accepts it, the JSON standard and Kubernetes do not); "
                         "fix: give a finite number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputFileError(f"{text} is beyond a 64-bit float (it reads as infinity, which JSON cannot write back, so "
                             "the Pulumi CLI and the pack would fail on it later); fix: give a finite number")
    return value


def json_object(text: str, where: str) -> dict[str, Any]:
    """The JSON object in ``text`` (``where`` names its file in messages). Raises
    :class:`InputFileError` for invalid JSON, a duplicate key, or a top level that is not an
    object (a list, a string, a number)."""
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant, parse_float=_finite)
    except InputFileError as err:
        raise InputFileError(f"{where}: {err}") from None
    except ValueError as err:
        raise InputFileError(f"{where}: not valid JSON ({err}); fix: correct the JSON") from None
    except RecursionError:
        raise InputFileError(f"{where}: the JSON nests deeper than Python's reader goes (about "
                             f"{sys.getrecursionlimit():,} levels); fix: check it for runaway nesting "
                             "([[[[...]]]]); no config nests this deep") from None
    if not isinstance(data, dict):
        kind = {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string", list: "array"}
        raise InputFileError(f"{where}: the top level is a JSON {kind.get(type(data), type(data).__name__)}, not an "
                             "object; fix: give a JSON object ({...})")
    return data
