"""A loopback test cluster for the llm-serving stack: a real control plane, a fake GPU node.

    python -m testbed.cluster up [--pod-ready-delay SECONDS] [--timeout SECONDS]
                               [--apiserver-port N] [--etcd-port N]
    python -m testbed.cluster down [--purge]
    python -m testbed.cluster status
    python -m testbed.cluster env          # prints: export KUBECONFIG=<state>/kubeconfig

Common options: ``--bin-dir`` (default ``$LLM_SERVING_CACHE/bin``) and ``--state-dir``
(default ``$LLM_SERVING_CACHE/cluster``), with ``LLM_SERVING_CACHE`` defaulting to
``~/.cache/llm-serving``.

What ``up`` starts (envtest-style: plain processes, no containers, no root), every one of them
listening on 127.0.0.1 only, on free ports chosen at start (or the ones given), each in its own
process group:

  etcd                     v3.6.16   (go.etcd.io/etcd/server/v3), plain HTTP on loopback
  kube-apiserver           v1.34.2   (k8s.io/kubernetes), TLS, client-certificate auth, RBAC
  kube-controller-manager  v1.34.2   node lifecycle, PV binder, Deployments/ReplicaSets, SAs...
  kube-scheduler           v1.34.2   the real scheduler: the real "Insufficient nvidia.com/gpu"
  kwok                     v0.8.0    (sigs.k8s.io/kwok) plays the kubelet of node worker-1

The binaries come from the bin dir, built from source by ``python3 dev.py toolchain``. Once
the apiserver answers /readyz it server-side applies ``testbed/cluster_objects.yaml``: node
``worker-1`` (4 ``nvidia.com/gpu``, 63495Mi allocatable memory, 32 cpu, no taints), RuntimeClass
``nvidia``, namespace ``llm-serving``, PV + PVC ``llm-models`` (bound), and a stand-in for
KServe's InferenceService CRD. ``up`` returns when all six processes are healthy, worker-1 is
Ready and untainted, the claim is Bound, the CRD is Established and the namespace's default
ServiceAccount exists: a pod applied right after ``up`` schedules. That takes about 5 s on two
busy cores (3 s of it the apiserver's start); ``logs/up.log`` has the steps and their times.

``--service-cluster-ip-range=10.96.0.0/16`` and kwok's pod IPs (10.244.0.0/24) are only
allocation ranges: no route, proxy or CNI exists, so no traffic goes there or anywhere but
127.0.0.1.

Stand-ins, and what they leave untested:

* kwok instead of a kubelet: no container runs, no image is pulled, no probe executes. kwok
  (``testbed/cluster_kwok_stages.yaml``) moves a pod bound to worker-1 to Running (containers
  started, not ready), then to Ready after ``--pod-ready-delay`` seconds (default 0; per pod the
  annotation ``pod-ready.stage.kwok.x-k8s.io/delay: "240s"`` wins), and deletes a terminating
  pod at once (no grace period). ``nvidia.com/gpu`` is only a counted extended resource: no
  device plugin, so which card a pod gets, card memory, NVLink, /dev/shm size, libcuda
  injection by the nvidia runtime and the PVC's mount are all untested. RuntimeClass ``nvidia``
  exists so that admission accepts the stack's pods; a pod that forgot ``runtimeClassName``
  runs here like any other (on worker-1 it crashes at start). Cards, cpu and memory requests
  are checked by the real scheduler; limits are not enforced. Services get ClusterIPs and EndpointSlices from kwok's fake pod IPs, but nothing
  carries traffic, and a NetworkPolicy is stored, never enforced.
* The InferenceService CRD is our own schema-less stand-in (``x-kubernetes-preserve-unknown-
  fields`` on spec and status; the kserve Go module is not reachable here): the apiserver
  accepts any InferenceService, including one KServe's schema would refuse. No KServe
  controller runs; ``testbed/kserve_standin.py`` (a sixth process) does the one part of its
  RawDeployment reconciler the tests need: each InferenceService gets its predictor Deployment
  (so its pods are scheduled and counted, and a Service selecting them gets endpoints). KServe's
  own ``<name>-predictor`` Services, autoscaling and status (Ready) are not reproduced.
* Every component uses the one admin identity (``O=system:masters``): component RBAC is not
  exercised. No DNS, no kube-proxy, no metrics-server.

State layout (``--state-dir``):

  state.json         what runs: per process name, pid, process group, start time, argv, log,
                     URL; the ports; the options. Written as each process starts, so ``down``
                     finds even a half-started cluster.
  kubeconfig         admin credentials (embedded) for https://127.0.0.1:<port>
  pki/               CA, serving certificate (127.0.0.1, localhost, kubernetes.default...), admin
                     client certificate, service-account key; EC P-256 via the openssl CLI,
                     fresh on every ``up``
  etcd/              etcd's data, wiped on every ``up``: each ``up`` starts an empty cluster
  kwok/stages.yaml   the kwok Stage config with the pod-ready delay; kwok/home is kwok's HOME,
                     so a ~/.kwok/kwok.yaml of the user's is not read
  logs/<name>.log    each process's stdout and stderr; logs/up.log: what ``up`` did, when
  flexvolume/        an empty directory kube-controller-manager insists on (its default is
                     under /usr/libexec)
  .lock              held by ``up`` and ``down``

``up`` on a healthy cluster does nothing and says so (given another ``--pod-ready-delay``, it
restarts kwok alone with it). ``up`` on a half-dead one stops what is left and starts afresh.
``down`` stops every recorded process group (SIGTERM, then SIGKILL after 8 s) and is safe to
repeat; ``--purge`` also deletes the state directory.

Exit codes: 0 done (``status``: up and ready); 1 ``status`` only: not running, or not healthy;
2 could not do it: a binary is missing, a port is taken, a component exited or was not ready
in time, another ``up``/``down`` holds the lock, a process would not stop. Each of these prints
ONE line on stderr naming what, why and what to run, and leaves nothing it started running;
130 interrupted (everything started was stopped).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
OBJECTS_FILE = HERE / "cluster_objects.yaml"
STAGES_FILE = HERE / "cluster_kwok_stages.yaml"

LOOPBACK = "127.0.0.1"
SERVICE_CIDR = "10.96.0.0/16"  # allocation range inside the apiserver only
POD_CIDR = "10.244.0.0/24"  # kwok writes these into pod status; nothing routes them
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
FIELD_MANAGER = "llm-serving-cluster"
NODE_NAME = "worker-1"
NAMESPACE = "llm-serving"
CLAIM = "llm-models"
CRD_NAME = "inferenceservices.serving.kserve.io"
KWOK_NODE_SELECTOR = "kwok.x-k8s.io/node=fake"
POD_READY_STAGE = "pod-ready"

# Start order; stopped in reverse.
#: The stand-in for KServe's RawDeployment reconciler (testbed/kserve_standin.py), a Python process.
KSERVE_STANDIN = "kserve-standin"
#: The binaries from the bin dir, then the Python processes of this repository.
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
COMPONENTS = (*BINARIES, KSERVE_STANDIN)
REPO_ROOT = Path(__file__).resolve().parent.parent
TOOLCHAIN_HINT = "run `python3 dev.py toolchain` to build them"
CLI = "python3 dev.py cluster"

EXIT_OK, EXIT_NOT_RUNNING, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_TIMEOUT = 90.0
STOP_GRACE = 8.0
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")

# REST paths of the kinds in cluster_objects.yaml: (apiVersion, kind) -> (prefix, plural, namespaced)
RESOURCES: dict[tuple[str, str], tuple[str, str, bool]] = {
    ("v1", "Node"): ("/api/v1", "nodes", False),
    ("v1", "Namespace"): ("/api/v1", "namespaces", False),
    ("v1", "PersistentVolume"): ("/api/v1", "persistentvolumes", False),
    ("v1", "PersistentVolumeClaim"): ("/api/v1", "persistentvolumeclaims", True),
    ("node.k8s.io/v1", "RuntimeClass"): ("/apis/node.k8s.io/v1", "runtimeclasses", False),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): (
        "/apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        False,
    ),
}


class ClusterError(Exception):
    """An expected failure: one line for the user, exit 2."""


class Interrupted(Exception):
    """SIGINT or SIGTERM while ``up`` was starting things."""


# --------------------------------------------------------------------------------------------
# paths


def cache_dir() -> Path:
    return Path(os.path.expanduser(os.environ.get("LLM_SERVING_CACHE") or "~/.cache/llm-serving"))


class Layout:
    """Where a cluster's files live."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state.json"
        self.kubeconfig = root / "kubeconfig"
        self.pki = root / "pki"
        self.etcd = root / "etcd"
        self.kwok = root / "kwok"
        self.stages = root / "kwok" / "stages.yaml"
        self.kwok_home = root / "kwok" / "home"
        self.logs = root / "logs"
        self.lock = root / ".lock"

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"


# --------------------------------------------------------------------------------------------
# data files


def load_objects(path: Path = OBJECTS_FILE) -> list[dict[str, Any]]:
    import yaml

    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def load_stages(path: Path = STAGES_FILE) -> list[dict[str, Any]]:
    import yaml

    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def render_stages(pod_ready_delay: float, path: Path = STAGES_FILE) -> str:
    """The kwok Stage config with ``pod-ready``'s delay set to ``pod_ready_delay`` seconds."""
    import yaml

    stages = load_stages(path)
    found = False
    for stage in stages:
        if stage.get("kind") == "Stage" and stage["metadata"]["name"] == POD_READY_STAGE:
            stage["spec"].setdefault("delay", {})["durationMilliseconds"] = int(round(pod_ready_delay * 1000))
            found = True
    if not found:
        raise ClusterError(f"{path} has no Stage {POD_READY_STAGE!r}; it is part of this repository, restore it")

    class _Dumper(yaml.SafeDumper):
        pass

    def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    _Dumper.add_representer(str, _str)
    return yaml.dump_all(stages, Dumper=_Dumper, sort_keys=False, width=1000)


def resource_path(obj: dict[str, Any], subresource: str = "") -> str:
    key = (obj["apiVersion"], obj["kind"])
    if key not in RESOURCES:
        raise ClusterError(f"{OBJECTS_FILE.name}: no REST path known for {key[1]} ({key[0]}); add it to RESOURCES in testbed/cluster.py")
    prefix, plural, namespaced = RESOURCES[key]
    meta = obj["metadata"]
    ns = f"/namespaces/{meta['namespace']}" if namespaced else ""
    return f"{prefix}{ns}/{plural}/{meta['name']}" + (f"/{subresource}" if subresource else "")


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
# certificates and kubeconfig (openssl CLI; EC P-256 keys take milliseconds)

_OPENSSL_CNF = """\
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
[serving]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost, IP:10.96.0.1, DNS:kubernetes, DNS:kubernetes.default, DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local
authorityKeyIdentifier = keyid
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
"""


def _openssl(*args: str) -> None:
    r = subprocess.run(["openssl", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ClusterError(f"openssl {args[0]} failed making the cluster's certificates: {last}")


def make_pki(pki: Path) -> None:
    if shutil.which("openssl") is None:
        raise ClusterError("openssl is not on PATH (needed for the cluster's certificates); install it: apt-get install openssl")
    pki.mkdir(parents=True, exist_ok=True)
    cnf = pki / "openssl.cnf"
    cnf.write_text(_OPENSSL_CNF)

    def key(name: str) -> str:
        path = str(pki / f"{name}.key")
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)
        os.chmod(path, 0o600)
        return path

    def serial() -> str:
        return "0x" + (bytes([os.urandom(1)[0] & 0x7F]) + os.urandom(15)).hex()

    ca_key = key("ca")
    _openssl("req", "-x509", "-new", "-key", ca_key, "-subj", "/CN=llm-serving-loopback-ca", "-days", "3650",
             "-sha256", "-config", str(cnf), "-extensions", "ca", "-set_serial", serial(), "-out", str(pki / "ca.crt"))
    for name, subject, ext in (
        ("serving", "/CN=kube-apiserver", "serving"),
        ("admin", "/O=system:masters/CN=llm-serving-admin", "client"),
    ):
        k = key(name)
        csr = str(pki / f"{name}.csr")
        _openssl("req", "-new", "-key", k, "-subj", subject, "-config", str(cnf), "-out", csr)
        _openssl("x509", "-req", "-in", csr, "-CA", str(pki / "ca.crt"), "-CAkey", ca_key, "-set_serial", serial(),
                 "-days", "365", "-sha256", "-extfile", str(cnf), "-extensions", ext, "-out", str(pki / f"{name}.crt"))
    sa = key("sa")
    _openssl("pkey", "-in", sa, "-pubout", "-out", str(pki / "sa.pub"))


def kubeconfig_text(pki: Path, server: str) -> str:
    def b64(name: str) -> str:
        return base64.b64encode((pki / name).read_bytes()).decode()

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "llm-serving-loopback", "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [{"name": "llm-serving-admin", "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}],
        "contexts": [{"name": "llm-serving-loopback", "context": {"cluster": "llm-serving-loopback", "user": "llm-serving-admin"}}],
        "current-context": "llm-serving-loopback",
    }
    return json.dumps(cfg, indent=2) + "\n"  # JSON is YAML


# --------------------------------------------------------------------------------------------
# the command lines


def component_argv(name: str, bin_dir: Path, lay: Layout, ports: dict[str, int]) -> list[str]:
    """The argv of one component; every address in it is 127.0.0.1."""
    pki, kc = lay.pki, str(lay.kubeconfig)
    exe = str(bin_dir / name)
    serving = [f"--tls-cert-file={pki / 'serving.crt'}", f"--tls-private-key-file={pki / 'serving.key'}"]
    # No --authentication/authorization-kubeconfig: /healthz is served to anyone (always-allow
    # path), everything else on these ports is refused; nothing here needs more.
    kube_common = [
        f"--kubeconfig={kc}",
        f"--bind-address={LOOPBACK}",
        "--leader-elect=false",
        "--profiling=false",
        *serving,
    ]
    if name == "etcd":
        client, peer = f"http://{LOOPBACK}:{ports['etcd']}", f"http://{LOOPBACK}:{ports['etcd-peer']}"
        return [exe, "--name=default", f"--data-dir={lay.etcd}",
                f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}", "--initial-cluster-state=new",
                "--unsafe-no-fsync=true"]  # a throwaway cluster: speed over durability
    if name == "kube-apiserver":
        return [exe, f"--bind-address={LOOPBACK}", f"--advertise-address={LOOPBACK}",
                f"--secure-port={ports['kube-apiserver']}",
                f"--etcd-servers=http://{LOOPBACK}:{ports['etcd']}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                f"--client-ca-file={pki / 'ca.crt'}", *serving, f"--cert-dir={pki}",
                f"--service-account-issuer={SA_ISSUER}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--authorization-mode=Node,RBAC", "--allow-privileged=true",
                "--endpoint-reconciler-type=none",  # a loopback advertise address is no valid endpoint
                "--profiling=false"]
    if name == "kube-controller-manager":
        return [exe, *kube_common, f"--secure-port={ports[name]}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}", "--use-service-account-credentials=false",
                # a claim seen before its pre-bound volume waits for the next resync (default 15 s)
                "--pvclaimbinder-sync-period=1s",
                # its default, /usr/libexec/kubernetes/..., would be created outside the state dir
                f"--flex-volume-plugin-dir={lay.root / 'flexvolume'}"]
    if name == "kube-scheduler":
        return [exe, *kube_common, f"--secure-port={ports[name]}"]
    if name == "kwok":
        return [exe, f"--kubeconfig={kc}", f"--config={lay.stages}",
                f"--manage-nodes-with-annotation-selector={KWOK_NODE_SELECTOR}",
                f"--node-ip={LOOPBACK}", f"--cidr={POD_CIDR}",
                "--node-lease-duration-seconds=40",
                f"--server-address={LOOPBACK}:{ports['kwok']}"]
    if name == KSERVE_STANDIN:
        kubectl = bin_dir / "kubectl"
        return [sys.executable, "-m", "testbed.kserve_standin", f"--kubeconfig={kc}",
                f"--kubectl={kubectl if kubectl.exists() else 'kubectl'}", f"--health-address={LOOPBACK}:{ports[name]}"]
    raise ValueError(name)


def component_url(name: str, ports: dict[str, int]) -> str:
    scheme = "http" if name in ("etcd", "kwok", KSERVE_STANDIN) else "https"
    return f"{scheme}://{LOOPBACK}:{ports[name]}"


HEALTH_PATH = {"etcd": "/health", "kube-apiserver": "/readyz", "kube-controller-manager": "/healthz",
               "kube-scheduler": "/healthz", "kwok": "/healthz", KSERVE_STANDIN: "/healthz"}


# --------------------------------------------------------------------------------------------
# HTTP to the components (never through a proxy)

_OPENER_PLAIN = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _opener(ctx: ssl.SSLContext | None) -> urllib.request.OpenerDirector:
    if ctx is None:
        return _OPENER_PLAIN
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx))


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


# --------------------------------------------------------------------------------------------
# state file, lock


def read_state(lay: Layout) -> dict[str, Any] | None:
    try:
        return json.loads(lay.state.read_text())
    except (OSError, ValueError):
        return None


def write_state(lay: Layout, state: dict[str, Any]) -> None:
    tmp = lay.state.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, lay.state)


@contextlib.contextmanager
def locked(lay: Layout) -> Iterator[None]:
    lay.root.mkdir(parents=True, exist_ok=True)
    with open(lay.lock, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClusterError(f"another `{CLI} up` or `down` is running on {lay.root}; wait for it, then retry") from None
        yield


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


def apply_objects(api: str, ctx: ssl.SSLContext, objects: list[dict[str, Any]]) -> None:
    """Server-side apply each object (and its status, where it has one) in file order."""
    q = f"?fieldManager={FIELD_MANAGER}&force=true"
    for obj in objects:
        parts = [("", {k: v for k, v in obj.items() if k != "status"})]
        if "status" in obj:
            parts.append(("status", {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                                     "metadata": {"name": obj["metadata"]["name"]}, "status": obj["status"]}))
        for sub, body in parts:
            url = api + resource_path(obj, sub) + q
            status, text = http(url, ctx, "PATCH", json.dumps(body).encode(), "application/apply-patch+yaml", timeout=10)
            if status not in (200, 201):
                msg = text
                with contextlib.suppress(ValueError, AttributeError):
                    msg = json.loads(text).get("message", text)
                what = f"{obj['kind']} {obj['metadata']['name']}" + (f"/{sub}" if sub else "")
                raise ClusterError(f"kube-apiserver refused {what} from {OBJECTS_FILE.name} "
                                   f"(HTTP {status}): {' '.join(str(msg).split())[:200]}")


def _get_json(api: str, ctx: ssl.SSLContext, path: str) -> tuple[dict[str, Any] | None, str]:
    status, text = http(api + path, ctx)
    if status != 200:
        return None, f"GET {path}: " + (f"HTTP {status}" if status is not None else text)
    return json.loads(text), ""


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []}


def check_node(api: str, ctx: ssl.SSLContext) -> tuple[bool, str]:
    node, err = _get_json(api, ctx, f"/api/v1/nodes/{NODE_NAME}")
    if node is None:
        return False, err
    if _conditions(node).get("Ready") != "True":
        return False, f"node {NODE_NAME} not Ready yet"
    taints = (node.get("spec") or {}).get("taints") or []
    if taints:
        return False, f"node {NODE_NAME} still has taints {[t.get('key') for t in taints]}"
    return True, ""


def check_claim(api: str, ctx: ssl.SSLContext) -> tuple[bool, str]:
    pvc, err = _get_json(api, ctx, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims/{CLAIM}")
    if pvc is None:
        return False, err
    phase = (pvc.get("status") or {}).get("phase")
    return phase == "Bound", f"PVC {NAMESPACE}/{CLAIM} is {phase}"


def check_service_account(api: str, ctx: ssl.SSLContext) -> tuple[bool, str]:
    sa, err = _get_json(api, ctx, f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default")
    return sa is not None, err or ""


def check_crd(api: str, ctx: ssl.SSLContext) -> tuple[bool, str]:
    crd, err = _get_json(api, ctx, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}")
    if crd is None:
        return False, err
    return _conditions(crd).get("Established") == "True", f"CRD {CRD_NAME} not Established"


def missing_binaries(bin_dir: Path) -> list[str]:
    return [c for c in BINARIES if not ((bin_dir / c).is_file() and os.access(bin_dir / c, os.X_OK))]


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


def _prepare_dirs(lay: Layout) -> None:
    for d in (lay.pki, lay.etcd, lay.kwok):
        shutil.rmtree(d, ignore_errors=True)
    for p in (lay.kubeconfig, lay.state):
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    for d in (lay.pki, lay.logs, lay.kwok_home):
        d.mkdir(parents=True, exist_ok=True)
    lay.etcd.mkdir(mode=0o700)


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
        _prepare_dirs(lay)
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
        n, _ = _get_json(state["apiserver"], ctx, f"/api/v1/nodes/{NODE_NAME}")
        c, _ = _get_json(state["apiserver"], ctx, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims/{CLAIM}")
        if n is not None:
            alloc = (n.get("status") or {}).get("allocatable") or {}
            node = (f"  node {NODE_NAME}: Ready={_conditions(n).get('Ready')}, nvidia.com/gpu "
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
