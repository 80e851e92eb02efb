"""A loopback test cluster for the llm-serving stack: a real control plane, a fake GPU node.

The command line (as kwokctl's ``pkg/kwokctl/cmd``): ``up``, ``down``, ``status``, ``env``, their
options and exit codes; the package docstring (``testbed/cluster/__init__.py``) has the whole
description.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import shutil
import signal
import ssl
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.cluster import kwokctl
from testbed.cluster.kwokctl import HEALTH_PATH, healthy, tls_context
from testbed.cluster.layout import (
    CLAIM,
    CLI,
    COMPONENTS,
    CRD_NAME,
    DEFAULT_TIMEOUT,
    LOOPBACK,
    NAMESPACE,
    NODE_NAME,
    TOOLCHAIN_HINT,
    ClusterError,
    Interrupted,
    Layout,
    cache_dir,
    locked,
    read_state,
    write_state,
)
from testbed.cluster.setup import (
    OBJECTS_FILE,
    apply_objects,
    check_claim,
    check_crd,
    check_node,
    check_service_account,
    conditions,
    get_json,
    load_objects,
    stages,
)
from tools import cli

EXIT_OK, EXIT_NOT_RUNNING, EXIT_FAILED, EXIT_INTERRUPTED = cli.OK, cli.VERDICT, cli.BAD_INPUT, cli.INTERRUPTED
STAGE_CRD = "stages.kwok.x-k8s.io"


class Up:
    """One ``up``: its trace in ``logs/up.log``, the waits, and what it started."""

    def __init__(self, lay: Layout, state: dict[str, Any], timeout: float) -> None:
        self.lay, self.state, self.timeout = lay, state, timeout
        self.t0 = time.monotonic()
        self.deadline = self.t0 + timeout
        self.ctx: ssl.SSLContext | None = None

    def trace(self, msg: str) -> None:
        """One line in logs/up.log: what `up` did, and when (seconds since it began)."""
        with open(self.lay.log("up"), "a") as fh:  # noqa: PTH123
            fh.write(f"{time.monotonic() - self.t0:7.2f}s  {msg}\n")

    def record(self) -> None:
        """The processes kwokctl started (its pid files), into state.json at once."""
        seen = {r["name"] for r in self.state["processes"]}
        for name, rec in kwokctl.read_pids(self.lay).items():
            if name not in seen:
                url = kwokctl.component_url(name, self.state["ports"])
                self.state["processes"].append({"name": name, **rec, "url": url, "log": str(self.lay.live_log(name))})
        write_state(self.lay, self.state)

    def check_running(self) -> None:
        for rec in self.state["processes"]:
            if not kwokctl.alive(rec):
                self._died(rec["name"])

    def check_started(self) -> None:
        """While kwokctl runs: has a process it started (a pid file) exited already?"""
        for name in COMPONENTS:
            with contextlib.suppress(OSError, ValueError):
                if kwokctl.proc_start(int(self.lay.pid_file(name).read_text().strip())) is None:
                    self._died(name)

    def _died(self, name: str) -> None:
        log = self.lay.log(name)  # where teardown keeps it
        line = kwokctl.last_error_line(self.lay.live_log(name))
        if "already in use" in line.lower():
            raise PortTaken(f"{name} could not listen: a port on {LOOPBACK} was taken by another process after "
                            f"`up` chose it; run `{CLI} up` again (log: {log})")
        raise ClusterError(f"{name} exited before the cluster was ready{': ' + line if line else ''} (log: {log})")

    def wait(self, what: str, component: str, check: Callable[[], tuple[bool, str]]) -> None:
        while True:
            self.check_running()
            ok, last = check()
            if ok:
                self.trace(f"{component}: {what}")
                return
            if time.monotonic() > self.deadline:
                raise ClusterError(f"{component} did not get to {what} within the {self.timeout:g}s --timeout "
                                   f"(last: {last}) (log: {self.lay.log(component)})")
            time.sleep(0.1)

    def load_pki(self) -> tuple[bool, str]:
        """The admin certificate kwokctl made, for ``up``'s own requests."""
        try:
            self.ctx = tls_context(self.lay.pki)
        except (OSError, ssl.SSLError) as e:
            return False, str(e)
        return True, ""

    def wait_healthy(self, name: str) -> None:
        url = kwokctl.component_url(name, self.state["ports"])
        self.wait(f"{HEALTH_PATH[name]} ok", name, lambda: healthy(name, url, self.ctx))


def teardown(lay: Layout, bin_dir: Path, state: dict[str, Any] | None) -> list[str]:
    """``kwokctl delete cluster``, then SIGKILL whatever of the recorded processes still runs.
    Returns the names of those that would not stop (none, normally)."""
    records = list((state or {}).get("processes") or [])
    known = {r["pid"] for r in records}
    records += [{"name": n, **r} for n, r in kwokctl.read_pids(lay).items() if r["pid"] not in known]
    lay.logs.mkdir(parents=True, exist_ok=True)
    for name in COMPONENTS:  # kept: `kwokctl delete` removes its cluster's directory
        with contextlib.suppress(OSError):
            shutil.copyfile(lay.live_log(name), lay.log(name))
    if (bin_dir / "kwokctl").exists() and lay.cluster.exists():
        kwokctl.run(bin_dir, lay, "delete", "cluster", timeout=60)
    return kwokctl.kill_left(records)


def apply_stages(api: str, ctx: ssl.SSLContext, delay: float) -> None:
    try:
        apply_objects(api, ctx, stages(delay))
    except ClusterError as e:
        raise ClusterError(f"{e} (log: kwok-controller's Stages)") from None


def set_pod_ready_delay(lay: Layout, state: dict[str, Any], delay: float) -> None:
    """A running cluster's new pod-ready delay: kwok's pod-ready Stage applied again (kwok
    watches its Stages: no restart)."""
    apply_stages(state["apiserver"], tls_context(lay.pki), delay)
    state["options"]["pod_ready_delay"] = delay
    write_state(lay, state)


def cluster_health(lay: Layout, state: dict[str, Any] | None) -> tuple[list[str], list[str], bool]:
    """(running names, dead names, apiserver ready) of a recorded cluster."""
    if not state or not state.get("processes"):
        return [], [], False
    running = [r["name"] for r in state["processes"] if kwokctl.alive(r)]
    dead = [r["name"] for r in state["processes"] if r["name"] not in running]
    ready = False
    if "kube-apiserver" in running and (lay.pki / "ca.crt").exists():
        with contextlib.suppress(ssl.SSLError, OSError):
            ready = healthy("kube-apiserver", state["apiserver"], tls_context(lay.pki))[0]
    return running, dead, ready


def cmd_up(args: argparse.Namespace) -> int:
    lay, bin_dir = Layout(args.state_dir), args.bin_dir
    t0 = time.monotonic()
    with locked(lay):
        state = read_state(lay)
        running, dead, ready = cluster_health(lay, state)
        if running and not dead and ready and state is not None and state.get("ready"):
            have = state["options"].get("pod_ready_delay", 0.0)
            if args.pod_ready_delay is not None and args.pod_ready_delay != have:
                set_pod_ready_delay(lay, state, args.pod_ready_delay)
                print(f"cluster: already up at {state['apiserver']}; kwok's pod-ready delay is now "
                      f"{args.pod_ready_delay:g}s (was {have:g}s)")
            else:
                print(f"cluster: already up at {state['apiserver']} ({', '.join(running)}); nothing to do "
                      f"(KUBECONFIG={lay.kubeconfig})")
            return EXIT_OK
        if state is not None or lay.cluster.exists():
            left = teardown(lay, Path((state or {}).get("bin_dir") or bin_dir), state)
            if left:
                raise ClusterError(f"a recorded process would not stop ({', '.join(left)}); stop it by hand, then run `{CLI} up`")
            if running:
                print(f"cluster: the recorded cluster was not healthy (not running: {', '.join(dead) or 'none'}; "
                      f"apiserver ready: {'yes' if ready else 'no'}); stopped it, starting afresh", file=sys.stderr)

        missing = kwokctl.missing_binaries(bin_dir)
        if missing:
            raise ClusterError(f"missing {', '.join(missing)} in {bin_dir}; {TOOLCHAIN_HINT}. Nothing was started")

        delay = args.pod_ready_delay or 0.0
        objects = load_objects()
        lay.logs.mkdir(parents=True, exist_ok=True)
        for name in ("up", "kwokctl"):
            lay.log(name).write_text("")
        fixed = bool(args.apiserver_port or args.etcd_port)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            ports = _choose_ports(args)
            try:
                started = start(lay, bin_dir, ports, delay, objects, args.timeout)
                break
            except PortTaken as e:
                if fixed or attempt == PORT_ATTEMPTS:
                    raise ClusterError(str(e)) from None
                with open(lay.log("up"), "a") as fh:  # noqa: PTH123
                    fh.write(f"attempt {attempt}: {e}; again on other ports\n")
    api = started["apiserver"]
    took = time.monotonic() - t0
    node = next(o for o in objects if o["kind"] == "Node")
    alloc = node["status"]["allocatable"]
    print(f"cluster: up in {took:.1f}s at {api}: {', '.join(COMPONENTS)}; node {NODE_NAME} Ready "
          f"({alloc['nvidia.com/gpu']} nvidia.com/gpu, {alloc['memory']}), RuntimeClass nvidia, PVC {NAMESPACE}/{CLAIM} Bound, CRD {CRD_NAME}; "
          f"pod-ready delay {delay:g}s; logs in {lay.cluster / 'logs'} (kept in {lay.logs} by `down`)")
    print(f"export KUBECONFIG={shlex.quote(str(lay.kubeconfig))}")
    return EXIT_OK


PORT_ATTEMPTS = 3


class PortTaken(ClusterError):  # noqa: N818
    """A component could not listen on a port ``up`` chose: taken since; ``up`` tries other ports."""


def start(lay: Layout, bin_dir: Path, ports: dict[str, int], delay: float, objects: list[dict[str, Any]],
          timeout: float) -> dict[str, Any]:
    """One attempt at a fresh cluster on these ports: kwokctl, then our Stages and objects, then
    the checks. On any failure it stops everything it started and raises."""
    for path in (lay.state, lay.kubeconfig):
        path.unlink(missing_ok=True)
    shutil.rmtree(lay.workdir, ignore_errors=True)
    for name in COMPONENTS:  # the last cluster's, kept by its teardown
        lay.log(name).unlink(missing_ok=True)
    kwokctl.write_config(bin_dir, lay, ports)
    api = kwokctl.component_url("kube-apiserver", ports)
    state: dict[str, Any] = {"bin_dir": str(bin_dir), "apiserver": api, "ports": ports, "started_at": time.time(),
                             "ready": False, "options": {"pod_ready_delay": delay}, "processes": []}
    write_state(lay, state)
    u = Up(lay, state, timeout)
    try:
        code, err = kwokctl.run(bin_dir, lay, "create", "cluster", "--config", str(lay.config),
                                "--kubeconfig", str(lay.kubeconfig), "--timeout", f"{timeout:g}s",
                                timeout=timeout + 15, watch=u.check_started)
        u.record()
        if code != 0:
            u.check_running()  # a component that died says more than kwokctl
            raise ClusterError(f"kwokctl create cluster failed: {err or f'exit {code}'} (log: {lay.log('kwokctl')})")
        u.trace(f"kwokctl created the cluster ({', '.join(r['name'] for r in state['processes'])})")
        u.wait(f"its certificates in {lay.pki}", "kwokctl", u.load_pki)
        u.wait_healthy("kube-apiserver")
        ctx = u.ctx
        assert ctx is not None
        u.wait(f"CRD {STAGE_CRD} Established", "kube-apiserver", lambda: check_crd(api, ctx, STAGE_CRD))
        apply_stages(api, ctx, delay)
        try:
            apply_objects(api, ctx, objects)
        except ClusterError as e:
            raise ClusterError(f"{e} (log: {lay.log('kube-apiserver')})") from None
        u.trace(f"applied kwok's Stages and {len(objects)} objects from {OBJECTS_FILE.name}")
        for name in COMPONENTS[2:]:
            u.wait_healthy(name)
        u.wait(f"CRD {CRD_NAME} Established", "kube-apiserver", lambda: check_crd(api, ctx))
        u.wait(f"node {NODE_NAME} Ready without taints", "kwok-controller", lambda: check_node(api, ctx))
        u.wait(f"PVC {NAMESPACE}/{CLAIM} Bound", "kube-controller-manager", lambda: check_claim(api, ctx))
        u.wait(f"ServiceAccount {NAMESPACE}/default", "kube-controller-manager",
               lambda: check_service_account(api, ctx))
    except BaseException as e:
        left = teardown(lay, bin_dir, state)
        state["processes"] = [r for r in state["processes"] if r["name"] in left]
        write_state(lay, state)
        if isinstance(e, ClusterError):
            tail = (f"; {', '.join(left)} would not stop: see {lay.state}" if left
                    else "; everything it had started was stopped")
            raise type(e)(f"{e}{tail}") from None
        raise
    state["ready"] = True
    write_state(lay, state)
    return state


def _choose_ports(args: argparse.Namespace) -> dict[str, int]:
    fixed = {"kube-apiserver": (args.apiserver_port, "--apiserver-port"), "etcd": (args.etcd_port, "--etcd-port")}
    for name, (port, flag) in fixed.items():
        if port and kwokctl.port_in_use(port):
            raise ClusterError(
                f"port {port} on {LOOPBACK} ({name}, {flag}) is already in use; stop that process or pick "
                f"another port (omit {flag} to use a free one). Nothing was started")
    taken = {p for p, _ in fixed.values() if p}
    pool = [p for p in kwokctl.free_ports(len(kwokctl.PORT_NAMES) + len(taken)) if p not in taken]
    return {name: fixed.get(name, (0, ""))[0] or pool.pop(0) for name in kwokctl.PORT_NAMES}


# --------------------------------------------------------------------------------------------
# down, status, env


def cmd_down(args: argparse.Namespace) -> int:
    lay = Layout(args.state_dir)
    if not lay.root.exists():
        print(f"cluster: nothing to stop (no state in {lay.root})")
        return EXIT_OK
    with locked(lay):
        state = read_state(lay)
        running = [r["name"] for r in (state or {}).get("processes") or [] if kwokctl.alive(r)]
        left = teardown(lay, Path((state or {}).get("bin_dir") or args.bin_dir), state)
        if left:
            raise ClusterError(f"{', '.join(left)} would not stop even after SIGKILL (see {lay.state}); "
                               "stop them by hand")
        lay.state.unlink(missing_ok=True)
        if running:
            print(f"cluster: stopped {', '.join(running)}")
        else:
            print(f"cluster: nothing was running (state in {lay.root})")
    if args.purge:
        shutil.rmtree(lay.root, ignore_errors=True)
        print(f"cluster: removed {lay.root}")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    lay = Layout(args.state_dir)
    state = read_state(lay)
    if not state or not state.get("processes"):
        print(f"cluster: not running (no cluster recorded in {lay.root}); start it with `{CLI} up`")
        return EXIT_NOT_RUNNING
    running, dead, ready = cluster_health(lay, state)
    ctx = None
    with contextlib.suppress(ssl.SSLError, OSError):
        ctx = tls_context(lay.pki)
    lines = []
    for rec in state["processes"]:
        alive = rec["name"] in running
        health = ""
        if alive and rec["name"] in HEALTH_PATH:  # a state.json of the launcher before kwokctl has "kwok"
            ok, why = healthy(rec["name"], rec["url"], ctx)
            health = f"{HEALTH_PATH[rec['name']]} ok" if ok else f"{HEALTH_PATH[rec['name']]} {why}"
        lines.append(f"  {rec['name']:<24} {'running' if alive else 'NOT RUNNING':<11} pid {rec['pid']:<8} "
                     f"{rec['url']:<24} {health:<16} {rec['log']}")
    missing = [c for c in COMPONENTS if c not in running and c not in dead]
    node = ""
    if ready and ctx is not None:
        n, _ = get_json(state["apiserver"], ctx, f"/api/v1/nodes/{NODE_NAME}")
        c, _ = get_json(state["apiserver"], ctx, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims/{CLAIM}")
        if n is not None:
            alloc = (n.get("status") or {}).get("allocatable") or {}
            node = (f"  node {NODE_NAME}: Ready={conditions(n).get('Ready')}, nvidia.com/gpu "
                    f"{alloc.get('nvidia.com/gpu')}, memory {alloc.get('memory')}; PVC {NAMESPACE}/{CLAIM}: "
                    f"{((c or {}).get('status') or {}).get('phase')}")
    good = ready and not dead and not missing and state.get("ready")
    head = "up" if good else "NOT HEALTHY" + (f" (not running: {', '.join(dead + missing)})" if dead or missing else "")
    print(f"cluster: {head}; apiserver {state['apiserver']} ready: {'yes' if ready else 'no'}; "
          f"pod-ready delay {state['options'].get('pod_ready_delay', 0):g}s")
    print("\n".join(lines))
    if node:
        print(node)
    print(f"  export KUBECONFIG={shlex.quote(str(lay.kubeconfig))}")
    if not good:
        print(f"  run `{CLI} up` to restart it, or `{CLI} down` to stop what is left")
    return EXIT_OK if good else EXIT_NOT_RUNNING


def cmd_env(args: argparse.Namespace) -> int:
    lay = Layout(args.state_dir)
    print(f"export KUBECONFIG={shlex.quote(str(lay.kubeconfig))}")
    if not read_state(lay):
        print(f"cluster: note: no cluster is running; start it with `{CLI} up`", file=sys.stderr)
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# main


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return v


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}") from None
    if not 1 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"not a port (1-65535): {text!r}")
    return v


def parser() -> argparse.ArgumentParser:
    cache = cache_dir()
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bin-dir", type=Path, default=cache / "bin",
                        help="where kwokctl, etcd, kube-*, kwok and kubectl are (default: %(default)s)")
    common.add_argument("--state-dir", type=Path, default=cache / "cluster",
                        help="kubeconfig, state.json, logs, kwokctl's cluster (default: %(default)s)")
    p = argparse.ArgumentParser(prog="python -m testbed.cluster", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", parents=[common], help="start the loopback cluster (does nothing if it is up)")
    up.add_argument("--pod-ready-delay", type=_seconds, default=None, metavar="SECONDS",
                    help="seconds kwok keeps a started pod not Ready (a cold start); default 0, or what runs "
                         "(a running cluster takes a new one at once)")
    up.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                    help="give up (and stop everything) if not ready by then (default: %(default)g)")
    up.add_argument("--apiserver-port", type=_port, default=0, metavar="N", help="fixed apiserver port (default: a free one)")
    up.add_argument("--etcd-port", type=_port, default=0, metavar="N", help="fixed etcd client port (default: a free one)")
    down = sub.add_parser("down", parents=[common], help="kwokctl delete cluster, and stop every recorded process (safe to repeat)")
    down.add_argument("--purge", action="store_true", help="also delete the state directory")
    sub.add_parser("status", parents=[common], help="what runs; exit 0 if up and ready, 1 if not")
    sub.add_parser("env", parents=[common], help="print `export KUBECONFIG=...`")
    return p


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.bin_dir = args.bin_dir.expanduser().absolute()
    args.state_dir = args.state_dir.expanduser().absolute()
    handler = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "env": cmd_env}[args.command]
    old = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        return handler(args)
    except ClusterError as e:
        print(f"cluster: {e}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # stdout closed early (`... | head -1`)
        return EXIT_OK
    except (KeyboardInterrupt, Interrupted, cli.Terminated) as e:
        print("cluster: interrupted; everything it had started was stopped", file=sys.stderr)
        return cli.TERMINATED if isinstance(e, cli.Terminated) else EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, old)


if __name__ == "__main__":
    cli.run(main, "cluster")
