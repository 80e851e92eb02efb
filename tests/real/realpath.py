"""The real path, driven from the tests: the Pulumi CLI on a copy of the project.

:class:`RealProject` copies the program and the policy pack into a temporary project
directory (the CLI writes ``encryptionsalt`` into the stack file on ``stack init``, and the
tracked ``Pulumi.prod.yaml`` must stay as it is), links the project's ``.venv`` into it, and
runs the toolchain's ``pulumi`` there with a local backend (``PULUMI_BACKEND_URL=file://...``,
passphrase secrets provider) and the loopback cluster's kubeconfig. The policy pack's own
virtualenv (``policies/venv``) is what the user's workflow creates
(``python3 -m venv policies/venv && policies/venv/bin/pip install -r policies/requirements.txt``;
the CLI does not create it for a local pack), built once per ``policies/requirements.txt`` in
the toolchain cache and linked into each copy (``tests/pack_env.py``).

:func:`policy_verdicts` reads the engine's events: ``--json`` with
``PULUMI_ENABLE_STREAMING_JSON_PREVIEW=true`` streams them on stdout (``policyEvent``:
``policyName``, ``resourceUrn``, ``enforcementLevel``). This CLI has no ``--event-log`` flag, and
``up --json`` without ``--skip-preview`` prints the preview's digest first: :func:`read_events`
keeps only the events (:func:`tools.plan.read_events`, the parser ``python3 dev.py plan`` uses).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from testbed import toolchain
from tests import pack_env
from tests.paths import PROD_STACK_FILE
from tools.plan import read_events

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "tests" / "stacks"
PASSPHRASE = "llm-serving-real-suite"
#: What the copy leaves out: git, environments, outputs, and the parts of the repo the CLI
#: does not use.
IGNORE = shutil.ignore_patterns(".git", ".venv", "venv", "out", "rendered", "__pycache__", ".pytest_cache",
                                "tests", "bench", ".gitea", ".github", ".ci", "*.pyc")
#: Generous bounds for one CLI command on a loaded 2-core machine (seconds).
CLI_TIMEOUT_S = 900


@dataclass(frozen=True)
class CliResult:
    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    events: tuple[dict, ...]

    @property
    def output(self) -> str:
        """Everything the command said: its text and the messages of its events."""
        messages = [e.get("diagnosticEvent", {}).get("message", "") for e in self.events]
        messages += [e.get("policyEvent", {}).get("message", "") for e in self.events]
        return self.stdout + self.stderr + "\n".join(m for m in messages if m)

    def __str__(self) -> str:  # shown by pytest when an assertion fails
        return f"pulumi {' '.join(self.args)} -> exit {self.code}\n--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-4000:]}"


def diagnostics(events: Iterable[dict], severity: str = "error") -> list[str]:
    return [e["diagnosticEvent"]["message"] for e in events if e.get("diagnosticEvent", {}).get("severity") == severity]


def policy_verdicts(events: Iterable[dict]) -> set[tuple[str, str, str]]:
    """``{(policy, resource URN, level)}`` of the policy events (a stack policy's event may
    carry no URN: then "")."""
    out = set()
    for e in events:
        pe = e.get("policyEvent")
        if pe:
            out.add((pe["policyName"], pe.get("resourceUrn", ""), pe["enforcementLevel"]))
    return out


def offline_verdicts(stack_file: Path, stack: str) -> set[tuple[str, str, str]]:
    """``{(policy, URN, level)}`` of the offline runner (``tools.analyze``) on ``stack_file``
    under the stack name the real CLI uses: what :func:`policy_verdicts` is compared with."""
    from tools import analyze

    return {(f.policy, f.urn, f.level) for f in analyze.analyze_program(stack_file, stack=stack).findings}


def policy_messages(events: Iterable[dict]) -> list[str]:
    return [e["policyEvent"]["message"] for e in events if e.get("policyEvent")]


def change_summary(events: Iterable[dict]) -> dict[str, int]:
    """The engine's summary event: operation -> count (``same``, ``create``, ``update``, ...)."""
    for e in events:
        if e.get("summaryEvent"):
            return dict(e["summaryEvent"].get("resourceChanges") or {})
    return {}


class RealProject:
    """A copy of the project for the real CLI, with its own local backend."""

    def __init__(self, workdir: Path, kubeconfig: Path | None):
        self.dir = workdir / "project"
        self.backend = workdir / "backend"
        self.logs = workdir / "events"
        self.kubeconfig = kubeconfig
        shutil.copytree(ROOT, self.dir, ignore=IGNORE)
        # The real tests assert prod's exact values: the copy's prod is the frozen one (tests/paths.py).
        shutil.copy2(PROD_STACK_FILE, self.dir / "Pulumi.prod.yaml")
        (self.dir / ".venv").symlink_to(ROOT / ".venv")
        pack_env.link_into(self.dir / "policies", "venv")
        for f in sorted(STACKS.glob("*.yaml")):
            shutil.copy2(f, self.dir / f"Pulumi.{f.stem}.yaml")
        self.backend.mkdir(parents=True)
        self.logs.mkdir(parents=True)
        self._n = 0

    def env(self, streaming: bool = True, confirm: bool = False) -> dict[str, str]:
        """The CLI's environment; ``streaming``: ``--json`` streams the engine's events (else a
        preview's ``--json`` is the CLI's default document, as a user gets it); ``confirm``:
        without ``PULUMI_SKIP_CONFIRMATIONS``, so ``up`` needs ``--yes`` as in a user's shell."""
        # The user's own PULUMI_* settings (a backend, a stack, a token) stay out of the tests.
        env = {k: v for k, v in os.environ.items() if not k.startswith("PULUMI_")}
        env.update(toolchain.environment())
        env.update({
            "PULUMI_BACKEND_URL": f"file://{self.backend}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            "NO_COLOR": "1",
        })
        if streaming:
            env["PULUMI_ENABLE_STREAMING_JSON_PREVIEW"] = "true"
        if confirm:
            del env["PULUMI_SKIP_CONFIRMATIONS"]
        if self.kubeconfig is not None:
            env["KUBECONFIG"] = str(self.kubeconfig)
        else:
            env["KUBECONFIG"] = str(self.dir / "no-cluster.kubeconfig")
        return env

    def run(self, *args: str, events: bool = False, timeout: float = CLI_TIMEOUT_S, streaming: bool = True,
            confirm: bool = False) -> CliResult:
        """Run ``pulumi ARGS``; with ``events``, as ``--json`` and parse the engine's events
        (``streaming=False``: the CLI's default ``--json`` document, left in ``stdout``;
        ``confirm``: see :meth:`env`)."""
        argv = [*args, "--json"] if events else list(args)
        # Its own process group: on a timeout the language host, pack and provider go too.
        proc = subprocess.Popen(["pulumi", *argv, "--non-interactive", "--color", "never"], cwd=self.dir,
                                env=self.env(streaming, confirm), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            raise AssertionError(f"pulumi {' '.join(argv)} did not finish in {timeout:.0f} s:\n{stdout[-3000:]}\n{stderr[-3000:]}") from None
        self._n += 1
        (self.logs / f"{self._n:03d}.out").write_text(f"pulumi {' '.join(argv)} -> {proc.returncode}\n{stdout}\n{stderr}")
        return CliResult(tuple(argv), proc.returncode, stdout, stderr, read_events(stdout) if events else ())

    def start(self, *args: str) -> subprocess.Popen:
        """Start a CLI command in the background, in its own process group; its output goes to a
        log file under the work directory (a pipe nobody reads would block it)."""
        self._n += 1
        log = open(self.logs / f"{self._n:03d}.background.out", "w")  # noqa: PTH123, SIM115
        with log:
            return subprocess.Popen(["pulumi", *args, "--non-interactive", "--color", "never"],
                                    cwd=self.dir, env=self.env(), stdout=log, stderr=subprocess.STDOUT,
                                    text=True, start_new_session=True)

    @staticmethod
    def stop(proc: subprocess.Popen, grace_s: float = 30.0) -> None:
        """Interrupt a background CLI command the way Ctrl-C does (it cancels the update and
        writes its state), then kill what is left."""
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what the CLI left of its plugins

    def stack_init(self, stack: str) -> CliResult:
        res = self.run("stack", "init", stack, "--secrets-provider", "passphrase")
        assert res.code == 0, res
        return res

    def config_set(self, stack: str, key: str, value: str) -> None:
        res = self.run("config", "set", "--stack", stack, key, value)
        assert res.code == 0, res

    def preview(self, stack: str, *, policy_pack: bool = True, extra: tuple[str, ...] = ()) -> CliResult:
        args = ["preview", "--stack", stack, *extra]
        if policy_pack:
            args += ["--policy-pack", "policies"]
        return self.run(*args, events=True)

    def up(self, stack: str, *, policy_pack: bool = True, extra: tuple[str, ...] = ()) -> CliResult:
        args = ["up", "--yes", "--skip-preview", "--stack", stack, *extra]
        if policy_pack:
            args += ["--policy-pack", "policies"]
        return self.run(*args, events=True)


def up_timed(project: RealProject, stack: str) -> tuple[CliResult, float]:
    """``pulumi up`` of ``stack`` without the pack: (its result, seconds it took)."""
    started = time.monotonic()
    res = project.up(stack, policy_pack=False)
    return res, time.monotonic() - started


def pod_ready_delay(cluster: Path, seconds: int) -> None:
    """Another pod-ready delay for pods started from now on (``testbed.cluster up`` on a running
    cluster applies kwok's pod-ready Stage again; nothing restarts): a server's cold start."""
    proc = subprocess.run([sys.executable, "-m", "testbed.cluster", "up", "--state-dir", str(cluster.parent),
                           "--pod-ready-delay", str(seconds)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def wait_for(predicate, timeout_s: float, interval_s: float = 1.0, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value; return it, or raise AssertionError."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what} (last value: {last!r})")


def kubectl(kubeconfig: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} -> exit {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def kubectl_json(kubeconfig: Path, *args: str) -> dict:
    return json.loads(kubectl(kubeconfig, *args, "-o", "json"))


class ClusterError(Exception):
    """The loopback cluster did not start; the message is testbed.cluster's own line."""


@contextmanager
def loopback_cluster(state_dir: Path, *extra: str) -> Iterator[Path]:
    """A loopback cluster (``python -m testbed.cluster up``) with its state in ``state_dir``;
    stopped on exit whatever happened. Yields the kubeconfig path. Raises :class:`ClusterError`."""
    args = [sys.executable, "-m", "testbed.cluster"]
    up = subprocess.run([*args, "up", "--state-dir", str(state_dir), *extra], cwd=ROOT, capture_output=True, text=True)
    try:
        if up.returncode != 0:
            raise ClusterError(f"the loopback cluster did not start (exit {up.returncode}): {up.stderr.strip()[-2000:]}")
        yield state_dir / "kubeconfig"
    finally:
        subprocess.run([*args, "down", "--state-dir", str(state_dir)], cwd=ROOT, capture_output=True, text=True)
