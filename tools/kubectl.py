"""Running ``kubectl`` from the tools that read the user's cluster (``adopt_diff``, ``rollout``):
one runner, the kubeconfig given or kubectl's own default (``$KUBECONFIG``, ``~/.kube/config``),
and one reader of its ``-o json`` output."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from core.base.inputs import InputFileError, read_text

#: How long one kubectl call may take by default (seconds).
TIMEOUT_S = 120


class KubectlOutputError(RuntimeError):
    """kubectl's ``-o json`` output is not the JSON object asked for; the message says which
    call, why, and the fix."""


def run(kubeconfig: Path | None, *args: str, stdin: str | None = None,
        timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    """``kubectl [--kubeconfig FILE] ARGS`` with its output captured as text. Raises
    :class:`KubectlOutputError` for a kubeconfig that is no regular file (:func:`check_kubeconfig`),
    :class:`FileNotFoundError` when kubectl is not on PATH and :class:`subprocess.TimeoutExpired`
    after ``timeout`` seconds; a non-zero exit is the caller's to read."""
    if kubeconfig is not None:
        check_kubeconfig(kubeconfig)
    cmd = ["kubectl", *(["--kubeconfig", str(kubeconfig)] if kubeconfig else []), *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)


def check_kubeconfig(path: Path) -> None:
    """Refuse a ``--kubeconfig`` that is not a readable regular file of at most 16 MiB, before
    kubectl is run: a FIFO would hold kubectl until its timeout, a directory or a device is no
    kubeconfig. Raises :class:`KubectlOutputError` with the fix."""
    try:
        read_text(path, "kubeconfig")
    except InputFileError as err:
        raise KubectlOutputError(f"{err}; kubectl was not run") from None


def json_object(proc: subprocess.CompletedProcess, what: str, list_of_items: bool = False) -> dict[str, Any]:
    """The JSON object kubectl printed for ``what`` (``get deployments``): with
    ``list_of_items``, a list whose ``items`` are objects each with a ``metadata`` map. Raises
    :class:`KubectlOutputError` when the output is not JSON, nests past Python's limit, or has
    another shape (a kubectl plugin, a wrapper script or a proxy answering in its place)."""
    fix = "fix: check that `kubectl` on PATH is the Kubernetes client and talks to the API server (kubectl version)"
    try:
        data = json.loads(proc.stdout)
    except (ValueError, RecursionError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise KubectlOutputError(f"kubectl {what} printed no JSON ({reason}); {fix}") from None
    if not isinstance(data, dict):
        raise KubectlOutputError(f"kubectl {what} printed JSON that is not an object; {fix}")
    if list_of_items:
        items = data.get("items")
        if not isinstance(items, list) or not all(
                isinstance(i, dict) and isinstance(i.get("metadata"), dict) for i in items):
            raise KubectlOutputError(f"kubectl {what} printed no list of objects (items[].metadata); {fix}")
    elif not isinstance(data.get("metadata"), dict):
        raise KubectlOutputError(f"kubectl {what} printed an object without metadata; {fix}")
    return data
