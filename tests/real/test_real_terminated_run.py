"""A real-suite run that is cancelled stops its loopback cluster: no control-plane process outlives
it. Two ways in, each started as a user starts the suite (no test path named, so nothing but the
suite's own conftest installs the handling, ``tests/real/conftest.py``):

- SIGTERM to pytest (a cancelled CI job, ``kill``);
- Ctrl-C to ``python3 dev.py test`` (SIGINT to the terminal's process group: pytest gets it, and
  dev.py passes pytest a SIGTERM right after, which must not cut the teardown short).

The held run is :func:`test_hold_a_cluster_until_cancelled`, skipped unless
``LLM_SERVING_HOLD_CLUSTER`` is set."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.cluster import kwokctl
from testbed.cluster.layout import Layout, read_state
from tests.paths import ROOT

pytestmark = pytest.mark.real

HOLD_ENV = "LLM_SERVING_HOLD_CLUSTER"
HOLD_TEST = "test_hold_a_cluster_until_cancelled"


@pytest.mark.skipif(not os.environ.get(HOLD_ENV), reason=f"held only by the cancelled-run tests ({HOLD_ENV})")
def test_hold_a_cluster_until_cancelled(cluster):
    print("CLUSTER-UP", cluster.parent, flush=True)
    time.sleep(600)


def _pytest_sigterm(tmp_path: Path) -> tuple[list[str], bool]:
    return [sys.executable, "-m", "pytest", "-m", "real", "-q", "-s", "-p", "no:cacheprovider",
            "--basetemp", str(tmp_path / "base"), "-k", HOLD_TEST], False


def _dev_py_ctrl_c(tmp_path: Path) -> tuple[list[str], bool]:
    return [sys.executable, "dev.py", "test", "--real", "-q", "-s", "-p", "no:cacheprovider",
            "--basetemp", str(tmp_path / "base"), "-k", HOLD_TEST], True


@pytest.mark.parametrize("start", [_pytest_sigterm, _dev_py_ctrl_c], ids=["sigterm-to-pytest", "ctrl-c-to-dev.py"])
def test_a_cancelled_run_stops_its_loopback_cluster(toolchain_ready, tmp_path: Path, start):
    cmd, ctrl_c = start(tmp_path)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, HOLD_ENV: "1"}, start_new_session=True)
    lines: list[str] = []
    records: list[dict] = []
    rest = ""
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("CLUSTER-UP"):
                break
        else:
            pytest.fail("the held run ended before its cluster was up:\n" + "".join(lines[-40:]))
        state = read_state(Layout(Path(line.split()[1])))
        assert state is not None
        records = state["processes"]
        assert records and all(kwokctl.alive(r) for r in records), records
        if ctrl_c:
            os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends its foreground group
        else:
            proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=180)
        assert proc.returncode != 0, rest
        deadline = time.monotonic() + 15
        while any(kwokctl.alive(r) for r in records) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [r["name"] for r in records if kwokctl.alive(r)] == [], rest
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        kwokctl.kill_left(records)  # a failed run leaves no cluster behind either
