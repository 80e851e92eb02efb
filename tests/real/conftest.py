"""Fixtures of the real suite (``pytest -m real``; ``python3 dev.py test`` runs it after the
fast suite): the built toolchain, loopback clusters from ``testbed.cluster``, and copies of the
project for the real CLI (:class:`tests.real.realpath.RealProject`)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from testbed import toolchain
from tests.real.realpath import ClusterError, RealProject, loopback_cluster


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"pytest received signal {signum}")


def pytest_sessionstart(session: pytest.Session) -> None:
    """SIGTERM (a cancelled CI job, ``kill``) ends the run as Ctrl-C does, so pytest tears the
    fixtures down and every loopback cluster is stopped; Python's default for SIGTERM exits
    without running them and leaves the cluster's processes behind."""
    signal.signal(signal.SIGTERM, _terminated)


@pytest.fixture(scope="session")
def toolchain_ready() -> Iterator[None]:
    """The toolchain is built; its bin/ (pulumi, kubectl, the control plane) leads PATH."""
    status = toolchain.status(toolchain.load_versions(), toolchain.cache_dir())
    missing = [name for name, ok in status.items() if not ok]
    if missing:
        pytest.fail(f"the real toolchain is not built ({', '.join(missing)}): run `python3 dev.py toolchain` "
                    "(python3 dev.py test does it before the real suite)", pytrace=False)
    mp = pytest.MonkeyPatch()
    for key, value in toolchain.environment().items():
        mp.setenv(key, value)
    yield
    mp.undo()


@pytest.fixture(scope="module")
def cluster(toolchain_ready, tmp_path_factory) -> Iterator[Path]:
    """A fresh loopback cluster for the module: its kubeconfig."""
    try:
        with loopback_cluster(tmp_path_factory.mktemp("cluster")) as kubeconfig:
            yield kubeconfig
    except ClusterError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="module")
def project(cluster, tmp_path_factory) -> RealProject:
    """A copy of the project for the real CLI, pointed at the module's cluster."""
    return RealProject(tmp_path_factory.mktemp("real"), cluster)
