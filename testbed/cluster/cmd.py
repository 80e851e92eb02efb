"""A loopback test cluster for the llm-serving stack: a real control plane, a fake GPU node.

The command line (as kwokctl's ``pkg/kwokctl/cmd``): ``up``, ``down``, ``status``, ``env``, their
options and exit codes; the package docstring (``testbed/cluster/__init__.py``) has the whole
description.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import ssl
import sys
import time
from pathlib import Path
from typing import Any

from testbed.cluster.layout import (
    LOOPBACK, NODE_NAME, NAMESPACE, CLAIM, CRD_NAME, KSERVE_STANDIN, COMPONENTS, TOOLCHAIN_HINT,
    CLI, DEFAULT_TIMEOUT, ClusterError, Interrupted, cache_dir, Layout, read_state, write_state,
    locked, prepare_dirs,
)
from testbed.cluster.pki import kubeconfig_text, make_pki, tls_context
from testbed.cluster.components import HEALTH_PATH, component_url, missing_binaries
from testbed.cluster.runtime import (
    Starter, free_ports, group_pids, healthy, http, port_holder, port_in_use, running_status,
    stop_records,
)
from testbed.cluster.setup import (
    OBJECTS_FILE, apply_objects, check_claim, check_crd, check_node, check_service_account,
    load_objects, render_stages, conditions, get_json,
)


EXIT_OK, EXIT_NOT_RUNNING, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 130


def restart_kwok(lay: Layout, state: dict[str, Any], delay: float, timeout: float) -> None:
    rec = next(r for r in state["processes"] if r["name"] == "kwok")
    left = stop_records([rec])
    if left:
        raise ClusterError(f"kwok (pid {rec['pid']}) would not stop; run `{CLI} down`")
    state["processes"] = [r for r in state["processes"] if r["name"] != "kwok"]
    # The node Lease names the old kwok as holder; a new kwok would leave worker-1's pods alone
    # until it expires (40 s). Delete it: the new kwok creates its own at once.
    ctx = tls_context(lay.pki)
    status, text = http(f"{state['apiserver']}/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{NODE_NAME}",
                        ctx, "DELETE")
    if status not in (200, 202, 404):
        raise ClusterError(f"kube-apiserver: deleting kwok's node Lease failed ({status or text}); run `{CLI} down`, then `{CLI} up`")
    lay.stages.write_text(render_stages(delay))
    state["options"]["pod_ready_delay"] = delay
    s = Starter(lay, Path(state["bin_dir"]), state["ports"], state)
    s.ctx, s.timeout = ctx, timeout
    deadline = time.monotonic() + timeout
    try:
        s.spawn("kwok")
        s.wait_healthy("kwok", deadline)
    except BaseException:
        s.stop()
        state["processes"] = [r for r in state["processes"] if r["name"] != "kwok"]
        write_state(lay, state)
        raise
    write_state(lay, state)


def cmd_up(args: argparse.Namespace) -> int:
    lay, bin_dir = Layout(args.state_dir), args.bin_dir
    t0 = time.monotonic()
    with locked(lay):
        state = read_state(lay)
        running, dead, ready = running_status(lay, state)
        if running and not dead and ready and state is not None:
            have = state["options"].get("pod_ready_delay", 0.0)
            if args.pod_ready_delay is not None and args.pod_ready_delay != have:
                restart_kwok(lay, state, args.pod_ready_delay, args.timeout)
                print(f"cluster: already up at {state['apiserver']}; restarted kwok with --pod-ready-delay "
                      f"{args.pod_ready_delay:g}s (was {have:g}s)")
            else:
                print(f"cluster: already up at {state['apiserver']} ({', '.join(running)}); nothing to do "
                      f"(KUBECONFIG={lay.kubeconfig})")
            return EXIT_OK
        if state and state.get("processes"):
            left = stop_records(state["processes"])
            if left:
                raise ClusterError(f"a recorded process would not stop ({', '.join(left)}); stop it by hand, then run `{CLI} up`")
            if running:
                down = [c for c in COMPONENTS if c not in running]
                print(f"cluster: the recorded cluster was not healthy (not running: {', '.join(down) or 'none'}; "
                      f"apiserver ready: {'yes' if ready else 'no'}); stopped it, starting afresh", file=sys.stderr)
            with contextlib.suppress(FileNotFoundError):
                lay.state.unlink()

        missing = missing_binaries(bin_dir)
        if missing:
            raise ClusterError(f"missing {', '.join(missing)} in {bin_dir}; {TOOLCHAIN_HINT}. Nothing was started")

        ports = _choose_ports(args)
        delay = args.pod_ready_delay or 0.0
        prepare_dirs(lay)
        make_pki(lay.pki)
        api = component_url("kube-apiserver", ports)
        lay.kubeconfig.write_text(kubeconfig_text(lay.pki, api))
        os.chmod(lay.kubeconfig, 0o600)
        lay.stages.write_text(render_stages(delay))
        objects = load_objects()

        state = {"version": 1, "state_dir": str(lay.root), "bin_dir": str(bin_dir), "apiserver": api,
                 "kubeconfig": str(lay.kubeconfig), "ports": ports, "started_at": time.time(),
                 "ready": False, "options": {"pod_ready_delay": delay}, "processes": []}
        write_state(lay, state)
        s = Starter(lay, bin_dir, ports, state)
        ctx = tls_context(lay.pki)
        s.ctx, s.timeout = ctx, args.timeout
        deadline = time.monotonic() + args.timeout
        try:
            s.spawn("etcd")
            s.wait_healthy("etcd", deadline)
            s.spawn("kube-apiserver")
            s.wait_healthy("kube-apiserver", deadline)
            s.spawn("kube-controller-manager")
            s.spawn("kube-scheduler")
            try:  # before kwok starts, so it finds worker-1 complete
                apply_objects(api, s.ctx, objects)
            except ClusterError as e:
                raise ClusterError(f"{e} (log: {lay.log('kube-apiserver')})") from None
            s.trace(f"applied {len(objects)} objects from {OBJECTS_FILE.name}")
            s.spawn("kwok")
            for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
                s.wait_healthy(name, deadline)
            s.wait(f"CRD {CRD_NAME} Established", "kube-apiserver", lambda: check_crd(api, ctx), deadline)
            s.wait(f"node {NODE_NAME} Ready without taints", "kwok", lambda: check_node(api, ctx), deadline)
            s.wait(f"PVC {NAMESPACE}/{CLAIM} Bound", "kube-controller-manager", lambda: check_claim(api, ctx), deadline)
            s.wait(f"ServiceAccount {NAMESPACE}/default", "kube-controller-manager",
                   lambda: check_service_account(api, ctx), deadline)
            s.spawn(KSERVE_STANDIN)
            s.wait_healthy(KSERVE_STANDIN, deadline)
        except BaseException as e:
            left = s.stop()
            state["processes"] = [r for r in state["processes"] if r["name"] in left]
            write_state(lay, state)
            if isinstance(e, ClusterError):
                tail = (f"; {', '.join(left)} would not stop: see {lay.state}" if left
                        else "; everything it had started was stopped")
                raise ClusterError(f"{e}{tail}") from None
            raise
        state["ready"] = True
        write_state(lay, state)
    took = time.monotonic() - t0
    node = next(o for o in objects if o["kind"] == "Node")
    alloc = node["status"]["allocatable"]
    print(f"cluster: up in {took:.1f}s at {api}: {', '.join(COMPONENTS)}; node {NODE_NAME} Ready "
          f"({alloc['nvidia.com/gpu']} nvidia.com/gpu, {alloc['memory']}), RuntimeClass nvidia, PVC {NAMESPACE}/{CLAIM} Bound, CRD {CRD_NAME}; "
          f"pod-ready delay {delay:g}s; logs in {lay.logs}")
    print(f"export KUBECONFIG={shlex.quote(str(lay.kubeconfig))}")
    return EXIT_OK


def _choose_ports(args: argparse.Namespace) -> dict[str, int]:
    fixed = {"kube-apiserver": (args.apiserver_port, "--apiserver-port"), "etcd": (args.etcd_port, "--etcd-port")}
    for name, (port, flag) in fixed.items():
        if port and port_in_use(port):
            holder = port_holder(port)
            by = f" by {holder}" if holder else ""
            raise ClusterError(
                f"port {port} on {LOOPBACK} ({name}, {flag}) is already in use{by}; stop that process or pick "
                f"another port (omit {flag} to use a free one). Nothing was started")
    names = ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", KSERVE_STANDIN)
    taken = {p for p, _ in fixed.values() if p}
    pool = [p for p in free_ports(len(names) + len(taken)) if p not in taken]
    ports = {}
    for name in names:
        given = fixed.get(name, (0, ""))[0]
        ports[name] = given or pool.pop(0)
    return ports


# --------------------------------------------------------------------------------------------
# down, status, env


def cmd_down(args: argparse.Namespace) -> int:
    lay = Layout(args.state_dir)
    if not lay.root.exists():
        print(f"cluster: nothing to stop (no state in {lay.root})")
        return EXIT_OK
    with locked(lay):
        state = read_state(lay)
        recs = (state or {}).get("processes") or []
        running = [r["name"] for r in recs if group_pids(r)]
        left = stop_records(recs)
        if left:
            raise ClusterError(f"{', '.join(left)} would not stop even after SIGKILL (see {lay.state}); "
                               "stop them by hand")
        with contextlib.suppress(FileNotFoundError):
            lay.state.unlink()
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
    running, dead, ready = running_status(lay, state)
    ctx = None
    with contextlib.suppress(ssl.SSLError, OSError):
        ctx = tls_context(lay.pki)
    lines = []
    for rec in state["processes"]:
        alive = rec["name"] in running
        health = ""
        if alive:
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
                        help="where etcd, kube-* and kwok are (default: %(default)s)")
    common.add_argument("--state-dir", type=Path, default=cache / "cluster",
                        help="certificates, kubeconfig, logs, pids (default: %(default)s)")
    p = argparse.ArgumentParser(prog="python -m testbed.cluster", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", parents=[common], help="start the loopback cluster (does nothing if it is up)")
    up.add_argument("--pod-ready-delay", type=_seconds, default=None, metavar="SECONDS",
                    help="seconds kwok keeps a started pod not Ready (a cold start); default 0, or what runs")
    up.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                    help="give up (and stop everything) if not ready by then (default: %(default)g)")
    up.add_argument("--apiserver-port", type=_port, default=0, metavar="N", help="fixed apiserver port (default: a free one)")
    up.add_argument("--etcd-port", type=_port, default=0, metavar="N", help="fixed etcd client port (default: a free one)")
    down = sub.add_parser("down", parents=[common], help="stop every recorded process (safe to repeat)")
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
    except (KeyboardInterrupt, Interrupted):
        print("cluster: interrupted; everything it had started was stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, old)


if __name__ == "__main__":
    sys.exit(main())
