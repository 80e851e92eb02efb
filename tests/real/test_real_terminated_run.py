"""A real-suite run that is terminated (SIGTERM: a cancelled CI job, ``kill``) stops its
loopback cluster: no control-plane process outlives pytest (``tests/real/conftest.py`` turns
SIGTERM into Ctrl-C, so the fixtures' teardown runs)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from testbed.cluster import kwokctl
from testbed.cluster.layout import Layout, read_state
from tests.paths import ROOT

pytestmark = pytest.mark.real

HOLD = textwrap.dedent('''
    import time

    def test_hold(cluster):
        print("CLUSTER-UP", cluster.parent, flush=True)
        time.sleep(600)
''')


def test_a_terminated_run_stops_its_loopback_cluster(toolchain_ready, tmp_path: Path):
    (tmp_path / "test_hold.py").write_text(HOLD)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "tests.real.conftest",
         "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "base"), str(tmp_path / "test_hold.py")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines: list[str] = []
    records: list[dict] = []
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
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    try:
        assert proc.returncode != 0, rest
        deadline = time.monotonic() + 15
        while any(kwokctl.alive(r) for r in records) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert [r["name"] for r in records if kwokctl.alive(r)] == [], rest
    finally:
        kwokctl.kill_left(records)  # a failed run leaves no cluster behind either
