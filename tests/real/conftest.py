"""Fixtures of the real suite (``pytest -m real``; ``python3 dev.py test`` runs it after the
fast suite) and of the forge suite (``pytest -m forge``: ``python3 dev.py test --forge``): the
built toolchain, loopback clusters from ``testbed.cluster``, and copies of the project for the
real CLI (:class:`tests.real.realpath.RealProject`)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from testbed import toolchain
from tests.real.realpath import ClusterError, RealProject, loopback_cluster


def _interrupted(signum: int, frame: FrameType | None) -> None:
    """The first SIGINT or SIGTERM: ignore further SIGTERMs (``python3 dev.py test`` sends one
    right after the terminal's Ctrl-C) and end the run as Ctrl-C does, so the teardown that stops
    the clusters runs to its end. A second Ctrl-C still interrupts it (Python's default)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raise KeyboardInterrupt(f"pytest received signal {signum}")


@pytest.fixture(scope="session", autouse=True)
def interrupts_stop_the_clusters() -> Iterator[None]:
    """SIGTERM (a cancelled CI job, ``kill``) and Ctrl-C end the real suite through pytest's
    teardown, so every loopback cluster it started is stopped (Python's default for SIGTERM exits
    without running it and leaves the cluster's processes behind). A fixture, not a hook: it holds
    however pytest was started (``python3 dev.py test`` names no path)."""
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s in before:
        signal.signal(s, _interrupted)
    yield
    for s, handler in before.items():
        signal.signal(s, handler)


@pytest.fixture(scope="session")
def toolchain_ready() -> Iterator[None]:
    """The toolchain is built; its bin/ (pulumi, kubectl, the control plane) leads PATH."""
    status = toolchain.status(toolchain.load_versions(), toolchain.cache_dir())
    missing = [name for name, ok in status.items() if not ok and name not in toolchain.FORGE_PARTS]
    if missing:
        pytest.fail(f"the real toolchain is not built ({', '.join(missing)}): run `python3 dev.py toolchain` "
                    "(python3 dev.py test does it before the real suite)", pytrace=False)
    yield from _on_path()


def _on_path() -> Iterator[None]:
    """The toolchain's environment (its bin/ first on PATH, its PULUMI_HOME) for the session, undone after."""
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


@pytest.fixture(scope="module")
def stack(project: RealProject, request: pytest.FixtureRequest) -> str:
    """The module's stack (its ``STACK``), initialised on the module's project copy: the tests
    that read it ask for it rather than lean on an earlier test's ``stack init``."""
    name = request.module.STACK
    project.stack_init(name)
    return name


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "forge: the forge suite (tests/real/test_forge_*.py): a real Gitea and act (python3 dev.py test --forge; "
        "needs python3 dev.py toolchain --forge)",
    )


@pytest.fixture(scope="session")
def forge_toolchain() -> Iterator[None]:
    """The act and Gitea parts built (``python3 dev.py toolchain --forge``), the toolchain's bin/ first on PATH."""
    status = toolchain.status(toolchain.load_versions(), toolchain.cache_dir())
    missing = [name for name in ("act", "gitea") if not status[name]]
    if missing:
        pytest.fail(f"{', '.join(missing)} not built: run `python3 dev.py toolchain --forge` "
                    "(python3 dev.py test --forge does it first)", pytrace=False)
    yield from _on_path()
