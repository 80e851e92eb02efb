"""The loopback cluster's names, ports' address, errors and files: the constants every part
shares, :class:`Layout` (where a cluster's files live under ``--state-dir``), the state file and
the lock ``up`` and ``down`` hold. The layout itself is described in the package docstring."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.base.inputs import read_text

LOOPBACK = "127.0.0.1"
NODE_NAME = "worker-1"
NAMESPACE = "llm-serving"
CLAIM = "llm-models"
CRD_NAME = "inferenceservices.serving.kserve.io"
#: kwokctl's name of the cluster (``kwokctl --name``); its files are ``kwokctl/clusters/<name>/``.
CLUSTER_NAME = "llm-serving"

#: The stand-in for KServe's RawDeployment reconciler (testbed/kserve_standin.py), run by kwokctl
#: as a component of its own.
KSERVE_STANDIN = "kserve-standin"
#: The processes, by kwokctl's component names, in start order.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller", KSERVE_STANDIN)
#: What the bin dir must hold: kwokctl, and the binaries it runs (``kwok`` as ``kwok-controller``).
BINARIES = ("kwokctl", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kubectl")
TOOLCHAIN_HINT = "run `python3 dev.py toolchain` to build them"
CLI = "python3 dev.py cluster"

DEFAULT_TIMEOUT = 90.0


class ClusterError(Exception):
    """An expected failure: one line for the user, exit 2."""


class Interrupted(Exception):  # noqa: N818
    """SIGINT or SIGTERM while ``up`` was starting things."""


def cache_dir() -> Path:
    return Path(os.path.expanduser(os.environ.get("LLM_SERVING_CACHE") or "~/.cache/llm-serving"))  # noqa: PTH111


class Layout:
    """Where a cluster's files live: ours at the top, kwokctl's under ``kwokctl/``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state.json"
        self.kubeconfig = root / "kubeconfig"
        self.config = root / "kwokctl.yaml"
        self.logs = root / "logs"
        self.lock = root / ".lock"
        #: kwokctl's KWOK_WORKDIR (so ~/.kwok is neither read nor written)
        self.workdir = root / "kwokctl"
        self.cluster = self.workdir / "clusters" / CLUSTER_NAME
        self.pki = self.cluster / "pki"

    def log(self, name: str) -> Path:
        """``logs/<name>.log``: ours (``up``, ``kwokctl``), or a component's, copied there from
        kwokctl's (:meth:`live_log`) when the cluster is stopped (``kwokctl delete`` removes them)."""
        return self.logs / f"{name}.log"

    def live_log(self, name: str) -> Path:
        """A component's log while kwokctl's cluster exists."""
        return self.cluster / "logs" / f"{name}.log"

    def pid_file(self, name: str) -> Path:
        return self.cluster / "pids" / f"{name}.pid"


def read_state(lay: Layout) -> dict[str, Any] | None:
    """The recorded state of the cluster (``state.json``: apiserver URL, ports, options, one
    record per process), or None when there is none or it is damaged (cut short by a full disk,
    edited by hand): ``status`` then says not running, ``down`` stops what kwokctl's own pid files
    name, and the next ``up`` writes it anew. A damaged file is said once on stderr."""
    if not lay.state.exists() and not lay.state.is_symlink():
        return None
    try:  # a regular file only: a FIFO left in its place must not hold `status` forever
        data = json.loads(read_text(lay.state, "cluster state"))
    except (OSError, ValueError, RecursionError):  # InputFileError is a ValueError
        data = None
    if _state_shape(data):
        return data
    print(f"{CLI}: {lay.state} is damaged and was ignored; fix: `{CLI} down`, then `{CLI} up`", file=sys.stderr)
    return None


def _state_shape(data: object) -> bool:
    """``data`` has the keys and types :func:`write_state`'s callers write and later read."""
    if not isinstance(data, dict):
        return False
    procs = data.get("processes", [])
    return (isinstance(procs, list)
            and all(isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("pid"), int)
                    for r in procs)
            and isinstance(data.get("apiserver", ""), str) and isinstance(data.get("options", {}), dict)
            and isinstance(data.get("ports", {}), dict))


def write_state(lay: Layout, state: dict[str, Any]) -> None:
    tmp = lay.state.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, lay.state)  # noqa: PTH105


@contextlib.contextmanager
def locked(lay: Layout) -> Iterator[None]:
    lay.root.mkdir(parents=True, exist_ok=True)
    with open(lay.lock, "w") as fh:  # noqa: PTH123
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClusterError(f"another `{CLI} up` or `down` is running on {lay.root}; wait for it, then retry") from None
        yield
