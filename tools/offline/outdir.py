"""Write a rendering: the output directory replaced atomically, and held by one preview at a time.

Every file is written to a temporary sibling directory (:func:`stage_tree`), which is then swapped
in (:func:`commit_tree`) with one ``renameat2(RENAME_EXCHANGE)`` (Linux) or two renames elsewhere,
so a failed run leaves the previous rendering untouched. Only a missing directory or an earlier
rendering (``0-crd/`` and ``1-manifest/`` alone) is replaced (:func:`check_out_dir`); a second
preview into the same directory is refused (:func:`lock_out_dir`). Errors:
:class:`tools.offline.render.RenderError`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from tools.offline.render import CRD_DIR, MANIFEST_DIR, RenderError


def write_tree(files: dict[str, str], out_dir: Path) -> None:
    """Replace ``out_dir`` with exactly ``files`` (relative path -> text), atomically:
    :func:`stage_tree`, then :func:`commit_tree`.

    ``out_dir`` may be missing, or an earlier rendering (only ``0-crd/`` and ``1-manifest/``
    in it); any other existing directory is refused, so a wrong ``--out`` cannot delete a
    user's files. Raises :class:`RenderError`; on any error the old ``out_dir`` is unchanged and
    no temporary directory is left behind.
    """
    commit_tree(stage_tree(files, out_dir), out_dir)


def stage_tree(files: dict[str, str], out_dir: Path) -> Path:
    """Write ``files`` aside, into a new temporary directory beside ``out_dir``, and return it:
    :func:`commit_tree` moves it in place (the preview does once the verdict is in), or
    :func:`discard_tree` removes it. Raises :class:`RenderError` (nothing left behind)."""
    out_dir = Path(out_dir).absolute()
    check_out_dir(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.new-", dir=out_dir.parent))
    except OSError as err:
        raise RenderError(f"cannot write {out_dir}: {err.strerror}; fix: check the directory's permissions and free "
                          "space") from None
    try:
        for sub in (CRD_DIR, MANIFEST_DIR):
            (tmp / sub).mkdir()
        for rel, text in files.items():
            (tmp / rel).write_text(text, encoding="utf-8")
    except BaseException as err:
        discard_tree(tmp)
        if isinstance(err, OSError):
            raise RenderError(f"cannot write {out_dir}: {err.strerror}; fix: check the directory's permissions and "
                              "free space") from None
        raise
    return tmp


def commit_tree(staged: Path, out_dir: Path) -> None:
    """Move the :func:`stage_tree` directory ``staged`` in place of ``out_dir`` (one atomic
    exchange where the C library has it); the old rendering is removed. Raises
    :class:`RenderError` when ``out_dir`` changed meanwhile into something not replaceable."""
    out_dir = Path(out_dir).absolute()
    try:
        _check_replaceable(out_dir)
        _swap_in(staged, out_dir)
    except OSError as err:
        raise RenderError(f"cannot write {out_dir}: {err.strerror or err}; fix: check the directory's permissions and "
                          "free space (a read-only clone: pass --out a writable directory)") from None
    finally:
        discard_tree(staged)


def discard_tree(staged: Path) -> None:
    """Remove a staged directory (after the swap it holds the old rendering)."""
    if staged.exists():
        shutil.rmtree(staged, ignore_errors=True)


def lock_out_dir(out_dir: Path) -> Callable[[], None]:
    """Hold ``out_dir`` for one preview: an exclusive lock on ``.<name>.lock`` beside it, so a second
    preview into the same ``--out`` is refused (:class:`RenderError`) instead of one rendering
    silently replacing the other's. Returns the release (which removes the lock file). Without
    the parent directory it is created first (and removed again on release while empty), so two
    previews into a new ``--out`` whose parent does not exist take the same lock too."""
    out_dir = Path(os.path.abspath(out_dir))  # noqa: PTH100
    created: list[Path] = []
    for _ in range(3):  # a parent another preview removes meanwhile is made again
        missing = [p for p in [out_dir.parent, *out_dir.parent.parents] if not p.exists()]
        try:
            for d in reversed(missing):
                d.mkdir(exist_ok=True)
                created.append(d)
        except OSError:
            _remove_empty(created)
            return lambda: None  # a parent that cannot be made is refused when the rendering is staged
        lock = out_dir.parent / f".{out_dir.name}.lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            break
        except FileNotFoundError:
            continue
        except OSError:
            _remove_empty(created)
            return lambda: None  # an unwritable parent is refused when the rendering is staged
    else:
        _remove_empty(created)
        return lambda: None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        _remove_empty(created)
        raise RenderError(f"another preview is writing {out_dir} now (it holds {lock}); fix: wait for it to end, or "
                          "pass another --out") from None

    def release() -> None:
        lock.unlink(missing_ok=True)
        os.close(fd)
        _remove_empty(created)
    return release


def _remove_empty(created: list[Path]) -> None:
    """Remove the directories :func:`lock_out_dir` made, deepest first, each only while empty."""
    for d in reversed(created):
        try:
            d.rmdir()
        except OSError:
            break


#: Where no rendering may go: kernel file systems.
_SYSTEM_ROOTS = (Path("/dev"), Path("/proc"), Path("/sys"))
#: The longest file name Linux file systems take (NAME_MAX), in bytes.
NAME_MAX = 255


def check_out_dir(out_dir: Path) -> None:
    """Refuse an ``--out`` the rendering cannot go to, before any work: under ``/dev``, ``/proc``
    or ``/sys``; a symbolic link (replacing it would replace the link, not write where it
    points); a path through a file; a name over :data:`NAME_MAX` bytes; a directory that
    cannot be written; an existing directory that is not an earlier rendering. Raises
    :class:`RenderError` with the fix."""
    out_dir = Path(os.path.abspath(out_dir))  # noqa: PTH100
    fix = "fix: pass --out a new or earlier-rendered directory in a writable place (default: out/<stack>/)"
    if any(out_dir == r or r in out_dir.parents for r in _SYSTEM_ROOTS):
        raise RenderError(f"cannot write {out_dir}: it is under a kernel file system (/dev, /proc, /sys); {fix}")
    long = [part for part in out_dir.parts if len(os.fsencode(part)) > NAME_MAX]
    if long:
        raise RenderError(f"cannot write {out_dir}: the name {long[0][:40]}... is {len(os.fsencode(long[0]))} bytes, over "
                          f"the {NAME_MAX}-byte limit of a file name; {fix}")
    if out_dir.is_symlink():
        raise RenderError(f"cannot write {out_dir}: it is a symbolic link (to {os.readlink(out_dir)}), which would be "  # noqa: PTH115
                          f"replaced, not written through; {fix}")
    existing = out_dir
    while not existing.exists():
        if existing.is_symlink():  # a dangling link on the way
            raise RenderError(f"cannot write {out_dir}: {existing} is a dangling symbolic link; {fix}")
        existing = existing.parent
    if existing != out_dir and not existing.is_dir():
        raise RenderError(f"cannot write {out_dir}: {existing} is a file, not a directory; {fix}")
    writable = existing.parent if existing == out_dir else existing
    if not os.access(writable, os.W_OK | os.X_OK):
        raise RenderError(f"cannot write {out_dir}: {writable} is not writable (read-only, or another owner); {fix}")
    _check_replaceable(out_dir)


def _check_replaceable(out_dir: Path) -> None:
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise RenderError(f"cannot write {out_dir}: it is a file; fix: pass a directory path to --out")
    strangers = sorted(p.name for p in out_dir.iterdir() if p.name not in (CRD_DIR, MANIFEST_DIR))
    if strangers:
        raise RenderError(
            f"cannot replace {out_dir}: it is not an earlier rendering (it holds {', '.join(strangers[:3])}); "
            "fix: pass an empty or new directory to --out, or remove it"
        )


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _swap_in(new: Path, target: Path) -> None:
    """Make ``new`` appear at ``target``; the old ``target`` ends up at ``new`` (then removed by
    the caller). One atomic ``renameat2(RENAME_EXCHANGE)`` where the C library has it."""
    if not target.exists():
        os.rename(new, target)  # noqa: PTH104
        return
    if _exchange(new, target):
        return
    old = new.with_name(new.name.replace(".new-", ".old-"))
    os.rename(target, old)  # noqa: PTH104
    os.rename(new, target)  # noqa: PTH104
    os.rename(old, new)  # noqa: PTH104


def _exchange(a: Path, b: Path) -> bool:
    libc_name = ctypes.util.find_library("c")
    if not libc_name:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0

