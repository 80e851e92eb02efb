"""The loopback cluster on ``kwokctl --runtime binary`` (``sigs.k8s.io/kwok/cmd/kwokctl``, built by
``python3 dev.py toolchain``): its configuration (the local binaries, 127.0.0.1 only, the ports
``up`` chose, the flags kwokctl's defaults lack, the KServe stand-in as a component of its own),
``kwokctl create cluster`` / ``delete cluster`` under ``KWOK_WORKDIR=<state>/kwokctl``, the
processes it started (its pid files), free ports, and HTTP to the components (never through a
proxy). kwokctl makes the certificates, runs and stops the processes; this module only tells it
what to run."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import socket
import ssl
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.cluster.layout import (
    BINARIES,
    CLUSTER_NAME,
    COMPONENTS,
    KSERVE_STANDIN,
    LOOPBACK,
    Layout,
)

SERVICE_CIDR = "10.96.0.0/16"  # allocation range inside the apiserver only
POD_CIDR = "10.244.0.0/24"  # kwok writes these into pod status; nothing routes them
KWOK_NODE_SELECTOR = "kwok.x-k8s.io/node=fake"
REPO_ROOT = Path(__file__).resolve().parents[2]
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
#: The ports ``up`` chooses (kwokctl's own choice counts down from 32767: two clusters could race).
PORT_NAMES = ("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok-controller",
              KSERVE_STANDIN)
#: kwokctl's option for each port.
PORT_OPTIONS = {"etcd": "etcdPort", "etcd-peer": "etcdPeerPort", "kube-apiserver": "kubeApiserverPort",
                "kube-controller-manager": "kubeControllerManagerPort", "kube-scheduler": "kubeSchedulerPort",
                "kwok-controller": "kwokControllerPort"}
HEALTH_PATH = {"etcd": "/health", "kube-apiserver": "/readyz", "kube-controller-manager": "/healthz",
               "kube-scheduler": "/healthz", "kwok-controller": "/healthz", KSERVE_STANDIN: "/healthz"}


def _args(**flags: str) -> list[dict[str, str]]:
    return [{"key": k.replace("_", "-"), "value": v} for k, v in flags.items()]


def config(bin_dir: Path, lay: Layout, ports: dict[str, int]) -> dict[str, Any]:
    """The KwokctlConfiguration of ``up`` (``-c <state>/kwokctl.yaml``). On top of kwokctl's
    defaults: every address 127.0.0.1; the apiserver's Service range and advertise address as
    before kwokctl (a loopback advertise address is no valid endpoint, hence no reconciler); the
    claim binder's resync at 1 s (a claim seen before its pre-bound volume waits for it, default
    15 s); kwok manages only annotated nodes, with our pod IP range and a 40 s node Lease; Stages
    come from the apiserver (``enableCRDs: [Stage]``: ``up`` applies ours, and a new pod-ready
    delay is a new Stage, no restart)."""
    options: dict[str, Any] = {
        "runtime": "binary",
        "bindAddress": LOOPBACK,
        "kubeAuthorization": True,
        "kubeAdmission": True,
        "enableCRDs": ["Stage"],
        "etcdBinary": str(bin_dir / "etcd"),
        "kubeApiserverBinary": str(bin_dir / "kube-apiserver"),
        "kubeControllerManagerBinary": str(bin_dir / "kube-controller-manager"),
        "kubeSchedulerBinary": str(bin_dir / "kube-scheduler"),
        "kwokControllerBinary": str(bin_dir / "kwok"),
        "kubectlBinary": str(bin_dir / "kubectl"),
        **{PORT_OPTIONS[name]: ports[name] for name in PORT_OPTIONS},
    }
    patches = [
        {"name": "kube-apiserver", "extraArgs": _args(
            advertise_address=LOOPBACK, service_cluster_ip_range=SERVICE_CIDR, endpoint_reconciler_type="none",
            profiling="false")},
        {"name": "kube-controller-manager", "extraArgs": _args(
            pvclaimbinder_sync_period="1s", profiling="false", leader_elect="false",
            # its default, /usr/libexec/kubernetes/..., would be created outside the state dir
            flex_volume_plugin_dir=str(lay.cluster / "flexvolume"))},
        {"name": "kube-scheduler", "extraArgs": _args(profiling="false", leader_elect="false")},
        {"name": "kwok-controller", "extraArgs": _args(
            manage_all_nodes="false", manage_nodes_with_annotation_selector=KWOK_NODE_SELECTOR,
            node_ip=LOOPBACK, cidr=POD_CIDR, node_lease_duration_seconds="40")},
    ]
    kubectl = bin_dir / "kubectl"
    standin = {
        "name": KSERVE_STANDIN,
        # kwokctl names a component's log after its binary: a link named kserve-standin to this
        # interpreter (the stand-in needs the standard library only).
        "binary": str(lay.root / "bin" / KSERVE_STANDIN),
        "args": ["-m", "testbed.kserve_standin", f"--kubeconfig={lay.cluster / 'kubeconfig.yaml'}",
                 f"--kubectl={kubectl}", f"--health-address={LOOPBACK}:{ports[KSERVE_STANDIN]}"],
        "workDir": str(lay.cluster),
        # The project and this environment's packages: the link below runs the base interpreter
        # (a link to a venv's python outside the venv does not find the venv), and the stand-in
        # imports core (KServe's copied-annotation rules), which needs the project's dependencies.
        "envs": [{"name": "PYTHONPATH", "value": os.pathsep.join(
            [str(REPO_ROOT), *dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])])}],
    }
    return {"kind": "KwokctlConfiguration", "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "options": options, "componentsPatches": patches, "components": [standin]}


def write_config(bin_dir: Path, lay: Layout, ports: dict[str, int]) -> None:
    """``<state>/kwokctl.yaml`` and the stand-in's interpreter link ``<state>/bin/kserve-standin``."""
    import yaml

    link = lay.root / "bin" / KSERVE_STANDIN
    link.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        link.unlink()
    link.symlink_to(os.path.realpath(sys.executable))
    lay.config.write_text(yaml.safe_dump(config(bin_dir, lay, ports), sort_keys=False))


def component_url(name: str, ports: dict[str, int]) -> str:
    scheme = "http" if name in ("etcd", KSERVE_STANDIN) else "https"
    return f"{scheme}://{LOOPBACK}:{ports[name]}"


def missing_binaries(bin_dir: Path) -> list[str]:
    return [c for c in BINARIES if not ((bin_dir / c).is_file() and os.access(bin_dir / c, os.X_OK))]


# --------------------------------------------------------------------------------------------
# running kwokctl


def _env(lay: Layout) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS and k != "KUBECONFIG"}
    env["KWOK_WORKDIR"] = str(lay.workdir)
    return env


def run(bin_dir: Path, lay: Layout, *args: str, timeout: float,
        watch: Callable[[], None] | None = None) -> tuple[int, str]:
    """Run ``kwokctl <args> --name llm-serving``; its output goes to ``logs/kwokctl.log``.
    ``watch`` is called every 0.2 s while it runs; what it raises stops kwokctl and goes up.
    Returns (exit code, its last error message, or '')."""
    lay.logs.mkdir(parents=True, exist_ok=True)
    log = lay.log("kwokctl")
    with open(log, "ab") as fh:  # noqa: PTH123
        fh.write(f"$ kwokctl {' '.join(args)} --name {CLUSTER_NAME}\n".encode())
        fh.flush()
        start = fh.tell()
        proc = subprocess.Popen([str(bin_dir / "kwokctl"), *args, "--name", CLUSTER_NAME], stdin=subprocess.DEVNULL,
                                stdout=fh, stderr=subprocess.STDOUT, env=_env(lay), cwd=str(lay.root))
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    code = proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    if watch is not None:
                        watch()
                    if time.monotonic() > deadline:
                        return -1, f"kwokctl {args[0]} took longer than {timeout:g}s"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    with open(log, "rb") as fh:  # noqa: PTH123
        fh.seek(start)
        return code, _error_message(fh.read().decode(errors="replace").splitlines())


def _error_message(lines: list[str]) -> str:
    """Kwokctl's last ERROR record (its ``err`` field), shortened, or its last line."""
    for line in reversed(lines):
        with contextlib.suppress(ValueError, AttributeError):
            rec = json.loads(line)
            if rec.get("level") in ("ERROR", "FATAL"):
                msg = str(rec.get("err") or rec.get("msg"))
                return msg if len(msg) <= 300 else msg[:297] + "..."
    tail = next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
    return tail[:300]


# --------------------------------------------------------------------------------------------
# the processes kwokctl started: identity by (pid, start time), so a recycled pid is never signalled


def proc_start(pid: int) -> int | None:
    """Start time (clock ticks after boot) of a live process, or None."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2 :].split()  # fields[0] is field 3 of proc(5)
    return None if fields[0] in ("Z", "X") else int(fields[19])


def read_pids(lay: Layout) -> dict[str, dict[str, Any]]:
    """{component: {"pid", "start"}} from kwokctl's pid files, for the processes alive now."""
    out = {}
    for name in COMPONENTS:
        with contextlib.suppress(OSError, ValueError):
            pid = int(lay.pid_file(name).read_text().strip())
            start = proc_start(pid)
            if start is not None:
                out[name] = {"pid": pid, "start": start}
    return out


def alive(rec: dict[str, Any]) -> bool:
    start = proc_start(rec["pid"])
    return start is not None and start == rec.get("start")


def kill_left(records: list[dict[str, Any]], grace: float = 8.0) -> list[str]:
    """After ``kwokctl delete``: SIGKILL what still runs of the recorded processes (the same
    pid AND start time), wait for them; the names of any that would not go."""
    deadline = time.monotonic() + grace
    live = [r for r in records if alive(r)]
    while live and time.monotonic() < deadline:
        for r in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(r["pid"], signal.SIGKILL)
        time.sleep(0.05)
        live = [r for r in live if alive(r)]
    return [r["name"] for r in live]


# --------------------------------------------------------------------------------------------
# ports


def ephemeral_low() -> int:
    """The first port the kernel hands out for outgoing connections (Linux default 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports on 127.0.0.1, drawn at random below the ephemeral range (as
    kwokctl does, which counts down from 32767): there, no outgoing connection can take one
    between the choice and the component's listen, and two ``up`` at once rarely draw the same."""
    low, high = 10000, ephemeral_low() - 1
    if high - low < 1000:  # an unusual ip_local_port_range: the kernel's choice, then
        return _kernel_ports(n)
    out: list[int] = []
    rng = random.SystemRandom()
    while len(out) < n:
        port = rng.randint(low, high)
        if port not in out and not port_in_use(port):
            out.append(port)
    return out


def _kernel_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the Go servers do
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return True
    return False


# --------------------------------------------------------------------------------------------
# HTTP to the components (never through a proxy), with the admin certificate kwokctl made


def tls_context(pki: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return ctx


def http(url: str, ctx: ssl.SSLContext | None = None, method: str = "GET", body: bytes | None = None,
         content_type: str | None = None, timeout: float = 3.0) -> tuple[int | None, str]:
    """(status, body) or (None, reason) when nothing answered."""
    req = urllib.request.Request(url, data=body, method=method)
    if content_type:
        req.add_header("Content-Type", content_type)
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if ctx is not None:
        handlers.append(urllib.request.HTTPSHandler(context=ctx))
    try:
        with urllib.request.build_opener(*handlers).open(req, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (urllib.error.URLError, OSError, ssl.SSLError) as e:
        return None, str(getattr(e, "reason", e))


def healthy(name: str, url: str, ctx: ssl.SSLContext | None) -> tuple[bool, str]:
    """(ok, why not) of a component's health path."""
    if url.startswith("https") and name != "kube-apiserver":
        # kube-controller-manager, -scheduler and kwok serve certificates of their own (or
        # kwokctl's admin one) not made for 127.0.0.1; their health paths are open to anyone:
        # only the answer matters.
        ctx = _unverified()
    status, body = http(url + HEALTH_PATH[name], ctx if url.startswith("https") else None, timeout=2.0)
    if name == "etcd":
        ok = status == 200 and '"health":"true"' in body.replace(" ", "")
    else:
        ok = status == 200 and body.strip() == "ok"
    if status is None:
        return ok, body
    failing = [ln[3:].split(" ")[0] for ln in body.splitlines() if ln.startswith("[-]")]
    return ok, f"HTTP {status}" + (f", failing: {', '.join(failing[:3])}" if failing else "")


def _unverified() -> ssl.SSLContext:
    out = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    out.check_hostname = False
    out.verify_mode = ssl.CERT_NONE
    return out


def last_error_line(log: Path) -> str:
    """The last line of a log that looks like an error, shortened, for the one-line message."""
    try:
        with open(log, "rb") as fh:  # noqa: PTH123
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 65536))
            lines = fh.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    pat = re.compile(r'(^[EF]\d{4} |error|fatal|panic|already in use|"level":"(error|fatal|panic)")', re.I)
    hits = [ln.strip() for ln in lines if pat.search(ln)] or [ln.strip() for ln in lines if ln.strip()]
    if not hits:
        return ""
    line = hits[-1]
    return line if len(line) <= 200 else line[:197] + "..."
