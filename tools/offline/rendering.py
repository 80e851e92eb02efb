"""Read back an earlier rendering (``preview --base DIR``): each file one Kubernetes object the API
would take, nothing through a symbolic link.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.judging.problems import ConfigError
from tools.offline import apischema
from tools.offline.manifests import InputError, object_problem, read_input
from tools.offline.render import CRD_DIR, MANIFEST_DIR
from tools.offline.yamlload import YAMLError, load_documents


def load_tree(directory: Path) -> dict[str, dict[str, Any]]:
    """Relative path -> object of an earlier rendering (``0-crd/*.yaml`` and ``1-manifest/*.yaml``).

    Raises :class:`tools.offline.manifests.InputError` when the directory is missing, holds neither
    sub-directory, or a file is not one YAML object.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"--base {directory}: no such directory; fix: pass an earlier --out directory")
    subs = [directory / s for s in (CRD_DIR, MANIFEST_DIR) if (directory / s).is_dir()]
    if not subs:
        raise InputError(
            f"--base {directory}: not a rendering (no {CRD_DIR}/ or {MANIFEST_DIR}/ in it); "
            "fix: pass a directory an earlier preview wrote with --out"
        )
    out: dict[str, dict[str, Any]] = {}
    inside = directory.resolve()
    for sub in subs:
        for f in sorted(sub.glob("*.yaml")):
            if f.is_symlink() or not f.resolve().is_relative_to(inside):
                raise InputError(f"--base {f}: a symbolic link (to {os.path.realpath(f)}), not a file a preview wrote; "
                                 "fix: pass the directory an earlier preview wrote with --out, without links")
            try:
                docs = load_documents(read_input(f, "rendered manifest"), f"--base {f}", numbered=False)
            except ConfigError as err:
                raise InputError(err.render()) from None
            except YAMLError as err:
                raise InputError(f"--base {f}: not valid YAML: {err}") from None
            obj = docs[0] if len(docs) == 1 else None
            if not isinstance(obj, dict):
                raise InputError(f"--base {f}: not one Kubernetes object; fix: pass a directory an earlier preview "
                                 "wrote with --out, unedited")
            problem = object_problem(obj)
            if problem is not None:
                raise InputError(f"--base {f}: not a Kubernetes object: {problem}")
            refused = apischema.refusals([(f"--base {f}", obj)])
            if refused:
                raise InputError("\n".join(refused))
            out[f"{sub.name}/{f.name}"] = obj
    return out

