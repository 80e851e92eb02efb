"""Running ``kubectl`` from the tools that read the user's cluster (``adopt_diff``, ``rollout``):
one runner, the kubeconfig given or kubectl's own default (``$KUBECONFIG``, ``~/.kube/config``)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Optional

#: How long one kubectl call may take by default (seconds).
TIMEOUT_S = 120


def run(kubeconfig: Optional[Path], *args: str, stdin: Optional[str] = None,
        timeout: float = TIMEOUT_S) -> subprocess.CompletedProcess:
    """``kubectl [--kubeconfig FILE] ARGS`` with its output captured as text. Raises
    :class:`FileNotFoundError` when kubectl is not on PATH and :class:`subprocess.TimeoutExpired`
    after ``timeout`` seconds; a non-zero exit is the caller's to read."""
    cmd = ["kubectl", *(["--kubeconfig", str(kubeconfig)] if kubeconfig else []), *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout)
