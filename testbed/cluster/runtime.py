"""The loopback cluster's processes (as kwokctl's ``pkg/kwokctl/runtime/binary``): start each in
its own process group and record it at once (:class:`Starter`), wait for its health, stop a
recorded group (SIGTERM, then SIGKILL), identity by (pid, start time), free ports, HTTP to the
components (never through a proxy), the one-line reason from a component's log."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

from testbed.cluster.layout import (
    LOOPBACK, KSERVE_STANDIN, TOOLCHAIN_HINT, CLI, DEFAULT_TIMEOUT, ClusterError, Layout,
    write_state,
)
from testbed.cluster.components import HEALTH_PATH, REPO_ROOT, component_argv, component_url
from testbed.cluster.pki import tls_context


STOP_GRACE = 8.0
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


# --------------------------------------------------------------------------------------------
# processes: identity by (pid, start time), so a recycled pid is never signalled


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start time in clock ticks) of a live process, or None."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2 :].split()  # fields[0] is field 3 of proc(5)
    return fields[0], int(fields[2]), int(fields[19])


def proc_start(pid: int) -> int | None:
    st = _stat(pid)
    if st is None or st[0] in ("Z", "X"):
        return None
    return st[2]


def group_pids(rec: dict[str, Any]) -> list[int]:
    """Live processes of a recorded process group (empty if the group is gone or not ours)."""
    pgid = rec["pgid"]
    if not Path("/proc").is_dir():  # not Linux: the leader's pid is all we can check
        try:
            os.kill(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return []
        return [pgid]
    leader = _stat(pgid)
    if leader is not None and leader[0] not in ("Z", "X") and leader[2] != rec.get("start"):
        return []  # the pid was reused by a process that is not ours
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        st = _stat(int(entry.name))
        if st is not None and st[1] == pgid and st[0] not in ("Z", "X"):
            out.append(int(entry.name))
    return out


def _reap(popens: dict[int, subprocess.Popen] | None) -> None:
    for p in (popens or {}).values():
        p.poll()


def stop_records(records: list[dict[str, Any]], popens: dict[int, subprocess.Popen] | None = None) -> list[str]:
    """Stop every recorded process group: SIGTERM, SIGKILL after STOP_GRACE s. Returns the
    names of groups still alive afterwards (none, normally)."""
    _reap(popens)
    live = [r for r in reversed(records) if group_pids(r)]
    for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, 3.0)):
        for r in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(r["pgid"], sig)
        deadline = time.monotonic() + grace
        while True:
            _reap(popens)
            live = [r for r in live if group_pids(r)]
            if not live or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if not live:
            break
    # Stopped processes whose parent was an `up` that has exited are zombies until init reaps
    # them; wait briefly for that too, so `pgrep` shows nothing once `down` returns.
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and any(_is_our_zombie(r) for r in records):
        _reap(popens)
        time.sleep(0.05)
    return [r["name"] for r in live]


def _is_our_zombie(rec: dict[str, Any]) -> bool:
    st = _stat(rec["pid"])
    return st is not None and st[0] in ("Z", "X") and st[2] == rec.get("start")


# --------------------------------------------------------------------------------------------
# ports


def free_ports(n: int) -> list[int]:
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


def port_holder(port: int) -> str:
    """'pid 123 (etcd)' for the process listening on the port, best effort, or ''."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f[9])
    if not inodes:
        return ""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            for fd in os.scandir(f"/proc/{entry.name}/fd"):
                link = os.readlink(fd.path)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    comm = Path(f"/proc/{entry.name}/comm").read_text().strip()
                    return f"pid {entry.name} ({comm})"
        except OSError:
            continue
    return ""


# --------------------------------------------------------------------------------------------
# HTTP to the components (never through a proxy)

_OPENER_PLAIN = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _opener(ctx: ssl.SSLContext | None) -> urllib.request.OpenerDirector:
    if ctx is None:
        return _OPENER_PLAIN
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx))


def http(url: str, ctx: ssl.SSLContext | None = None, method: str = "GET", body: bytes | None = None,
         content_type: str | None = None, timeout: float = 3.0) -> tuple[int | None, str]:
    """(status, body) or (None, reason) when nothing answered."""
    req = urllib.request.Request(url, data=body, method=method)
    if content_type:
        req.add_header("Content-Type", content_type)
    try:
        with _opener(ctx).open(req, timeout=timeout) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (urllib.error.URLError, OSError, ssl.SSLError) as e:
        return None, str(getattr(e, "reason", e))


def healthy(name: str, url: str, ctx: ssl.SSLContext | None) -> tuple[bool, str]:
    status, body = http(url + HEALTH_PATH[name], ctx if url.startswith("https") else None, timeout=2.0)
    if name == "etcd":
        ok = status == 200 and '"health":"true"' in body.replace(" ", "")
    else:
        ok = status == 200 and body.strip() == "ok"
    if status is None:
        return ok, body
    failing = [ln[3:].split(" ")[0] for ln in body.splitlines() if ln.startswith("[-]")]
    return ok, f"HTTP {status}" + (f", failing: {', '.join(failing[:3])}" if failing else "")


def _log_tail(log: Path) -> list[str]:
    try:
        with open(log, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 65536))
            return fh.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def _port_taken_line(log: Path) -> str:
    return next((ln for ln in reversed(_log_tail(log)) if "address already in use" in ln.lower()), "")


def last_error_line(log: Path) -> str:
    """The last line of a log that looks like an error, shortened, for the one-line message."""
    lines = _log_tail(log)
    pat = re.compile(r'(^[EF]\d{4} |error|fatal|panic|already in use|"level":"(error|fatal|panic)")', re.I)
    hits = [ln.strip() for ln in lines if pat.search(ln)] or [ln.strip() for ln in lines if ln.strip()]
    if not hits:
        return ""
    line = hits[-1]
    return line if len(line) <= 200 else line[:197] + "..."


# --------------------------------------------------------------------------------------------
# up


class Starter:
    """Starts components, records them at once, and stops all of them on any failure."""

    def __init__(self, lay: Layout, bin_dir: Path, ports: dict[str, int], state: dict[str, Any]) -> None:
        self.lay, self.bin_dir, self.ports, self.state = lay, bin_dir, ports, state
        self.popens: dict[int, subprocess.Popen] = {}
        self.env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS and k != "KUBECONFIG"}
        self.ctx: ssl.SSLContext | None = None
        self.timeout = DEFAULT_TIMEOUT
        self.t0 = time.monotonic()
        if not state.get("ready"):  # a fresh `up`: a fresh trace
            self.lay.log("up").write_text("")

    def trace(self, msg: str) -> None:
        """One line in logs/up.log: what `up` did, and when (seconds since it began)."""
        with open(self.lay.log("up"), "a") as fh:
            fh.write(f"{time.monotonic() - self.t0:7.2f}s  {msg}\n")

    def spawn(self, name: str) -> None:
        argv = component_argv(name, self.bin_dir, self.lay, self.ports)
        env = dict(self.env)
        if name == "kwok":
            env["HOME"] = str(self.lay.kwok_home)
        if name == KSERVE_STANDIN:
            env["PYTHONPATH"] = str(REPO_ROOT)
        log = self.lay.log(name)
        with open(log, "wb") as fh:
            try:
                p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env, cwd=str(self.lay.root), close_fds=True)
            except OSError as e:
                raise ClusterError(f"{name}: cannot run {argv[0]}: {e.strerror or e}; {TOOLCHAIN_HINT}") from None
        self.popens[p.pid] = p
        self.trace(f"started {name} (pid {p.pid})")
        self.state["processes"].append({
            "name": name, "pid": p.pid, "pgid": p.pid, "start": proc_start(p.pid),
            "url": component_url(name, self.ports), "log": str(log), "argv": argv,
        })
        write_state(self.lay, self.state)

    def record(self, name: str) -> dict[str, Any]:
        return next(r for r in self.state["processes"] if r["name"] == name)

    def check_running(self) -> None:
        for rec in self.state["processes"]:
            p = self.popens.get(rec["pid"])
            code = p.poll() if p is not None else (None if group_pids(rec) else "?")
            if code is not None:
                raise ClusterError(self._died(rec["name"], code))

    def _died(self, name: str, code: Any) -> str:
        log = self.lay.log(name)
        taken = _port_taken_line(log)
        if taken:
            m = re.search(r"127\.0\.0\.1:(\d+)", taken)
            port = f" {m.group(1)}" if m else ""
            return (f"{name} could not listen: port{port} on {LOOPBACK} was taken by another process after "
                    f"`up` chose it; run `{CLI} up` again (log: {log})")
        line = last_error_line(log)
        why = f": {line}" if line else ""
        return f"{name} exited with code {code} before the cluster was ready{why} (log: {log})"

    def wait(self, what: str, component: str, check: Callable[[], tuple[bool, str]], deadline: float) -> None:
        last = ""
        while True:
            self.check_running()
            ok, last = check()
            if ok:
                self.trace(f"{component}: {what}")
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"{component} did not get to {what} within the {self.timeout:g}s --timeout "
                                   f"(last: {last}) (log: {self.lay.log(component)})")
            time.sleep(0.1)

    def wait_healthy(self, name: str, deadline: float) -> None:
        url = self.record(name)["url"]
        self.wait(f"{HEALTH_PATH[name]} ok", name, lambda: healthy(name, url, self.ctx), deadline)

    def stop(self) -> list[str]:
        return stop_records(self.state["processes"], self.popens)


def running_status(lay: Layout, state: dict[str, Any] | None) -> tuple[list[str], list[str], bool]:
    """(running names, dead names, apiserver ready) of a recorded cluster."""
    if not state or not state.get("processes"):
        return [], [], False
    running: list[str] = []
    dead: list[str] = []
    for rec in state["processes"]:
        (running if group_pids(rec) else dead).append(rec["name"])
    ready = False
    if "kube-apiserver" in running and (lay.pki / "ca.crt").exists():
        with contextlib.suppress(ssl.SSLError, OSError):
            ready = healthy("kube-apiserver", state["apiserver"], tls_context(lay.pki))[0]
    return running, dead, ready
