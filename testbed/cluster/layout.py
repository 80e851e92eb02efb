"""The loopback cluster's names, ports' address, errors and files: the constants every part
shares, :class:`Layout` (where a cluster's files live under ``--state-dir``), the state file and
the lock ``up`` and ``down`` hold. The layout itself is described in the package docstring."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterator


LOOPBACK = "127.0.0.1"
NODE_NAME = "worker-1"
NAMESPACE = "llm-serving"
CLAIM = "llm-models"
CRD_NAME = "inferenceservices.serving.kserve.io"

# Start order; stopped in reverse.
#: The stand-in for KServe's RawDeployment reconciler (testbed/kserve_standin.py), a Python process.
KSERVE_STANDIN = "kserve-standin"
#: The binaries from the bin dir, then the Python processes of this repository.
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
COMPONENTS = (*BINARIES, KSERVE_STANDIN)
TOOLCHAIN_HINT = "run `python3 dev.py toolchain` to build them"
CLI = "python3 dev.py cluster"

DEFAULT_TIMEOUT = 90.0


class ClusterError(Exception):
    """An expected failure: one line for the user, exit 2."""


class Interrupted(Exception):
    """SIGINT or SIGTERM while ``up`` was starting things."""


# --------------------------------------------------------------------------------------------
# paths


def cache_dir() -> Path:
    return Path(os.path.expanduser(os.environ.get("LLM_SERVING_CACHE") or "~/.cache/llm-serving"))


class Layout:
    """Where a cluster's files live."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state.json"
        self.kubeconfig = root / "kubeconfig"
        self.pki = root / "pki"
        self.etcd = root / "etcd"
        self.kwok = root / "kwok"
        self.stages = root / "kwok" / "stages.yaml"
        self.kwok_home = root / "kwok" / "home"
        self.logs = root / "logs"
        self.lock = root / ".lock"

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"


# --------------------------------------------------------------------------------------------
# state file, lock


def read_state(lay: Layout) -> dict[str, Any] | None:
    try:
        return json.loads(lay.state.read_text())
    except (OSError, ValueError):
        return None


def write_state(lay: Layout, state: dict[str, Any]) -> None:
    tmp = lay.state.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, lay.state)


@contextlib.contextmanager
def locked(lay: Layout) -> Iterator[None]:
    lay.root.mkdir(parents=True, exist_ok=True)
    with open(lay.lock, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClusterError(f"another `{CLI} up` or `down` is running on {lay.root}; wait for it, then retry") from None
        yield


def prepare_dirs(lay: Layout) -> None:
    for d in (lay.pki, lay.etcd, lay.kwok):
        shutil.rmtree(d, ignore_errors=True)
    for p in (lay.kubeconfig, lay.state):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    for d in (lay.pki, lay.logs, lay.kwok_home):
        d.mkdir(parents=True, exist_ok=True)
    lay.etcd.mkdir(mode=0o700)
