"""testbed/cluster/ without the real binaries: the failure paths of `up` (each one line, exit 2,
nothing left running), `down`/`status`/`env`, and the data it applies (testbed/cluster/cluster_objects.yaml,
testbed/cluster/cluster_kwok_stages.yaml) against the stack's own facts.

The binaries are faked with small Python scripts in a temporary bin dir. The happy path (a real
control plane) needs the toolchain and is checked by hand / in tests/real/.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from core import facts
from testbed.cluster import cmd, components, layout, runtime, setup

ROOT = Path(__file__).resolve().parent.parent
needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed")


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LLM_SERVING_CACHE"}
    return subprocess.run([sys.executable, "-m", "testbed.cluster", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{text}"
    assert "Traceback" not in text
    return lines[0]


def alive(pid: int) -> bool:
    return runtime.proc_start(pid) is not None


# Fake binaries. Each records its pid in $FAKE_MARKS/<name>.pid when it runs.
_PRELUDE = """\
#!{python}
import os, sys, time
name = os.path.basename(sys.argv[0])
with open(os.path.join({marks!r}, name + ".pid"), "w") as fh:
    fh.write(str(os.getpid()))
"""
SLEEP = "time.sleep(300)\n"
FAIL = 'print("E1201 12:00:00.000000 1 run.go:72] error: boom: cannot load the world", flush=True)\nsys.exit(1)\n'
PORT_RACE = ('print(\'{"level":"fatal","msg":"listen tcp 127.0.0.1:40123: bind: address already in use"}\', flush=True)\n'
             "sys.exit(1)\n")
ETCD_HEALTHY = """\
import http.server
url = [a for a in sys.argv if a.startswith("--listen-client-urls=")][0].split("=", 1)[1]
port = int(url.rsplit(":", 1)[1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"health":"true","reason":""}'
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def make_bin(tmp_path: Path, scripts: dict[str, str], *, skip: tuple[str, ...] = ()) -> tuple[Path, Path]:
    bin_dir, marks = tmp_path / "bin", tmp_path / "marks"
    bin_dir.mkdir()
    marks.mkdir()
    for name in layout.COMPONENTS:
        if name in skip:
            continue
        path = bin_dir / name
        path.write_text(_PRELUDE.format(python=sys.executable, marks=str(marks)) + scripts.get(name, SLEEP))
        path.chmod(0o755)
    return bin_dir, marks


def started_pids(marks: Path) -> dict[str, int]:
    return {p.stem: int(p.read_text()) for p in marks.glob("*.pid")}


def recorded(state_dir: Path) -> list:
    path = state_dir / "state.json"
    return json.loads(path.read_text())["processes"] if path.exists() else []


# --------------------------------------------------------------------------------------------
# up: the failures


def test_missing_binaries_one_line_exit_2(tmp_path):
    r = run("up", "--bin-dir", str(tmp_path / "nothing"), "--state-dir", str(tmp_path / "state"))
    assert r.returncode == 2
    assert r.stdout == ""
    line = one_line(r.stderr)
    assert line == (f"cluster: missing etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok in "
                    f"{tmp_path / 'nothing'}; run `python3 dev.py toolchain` to build them. Nothing was started")


def test_one_missing_binary_is_named_and_nothing_runs(tmp_path):
    bin_dir, marks = make_bin(tmp_path, {}, skip=("kwok",))
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(tmp_path / "state"))
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert line.startswith(f"cluster: missing kwok in {bin_dir}; run `python3 dev.py toolchain`")
    assert started_pids(marks) == {}


@pytest.mark.parametrize("flag,component", [("--apiserver-port", "kube-apiserver"), ("--etcd-port", "etcd")])
def test_port_taken_one_line_exit_2_nothing_started(tmp_path, flag, component):
    bin_dir, marks = make_bin(tmp_path, {})
    state = tmp_path / "state"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), flag, str(port))
    assert r.returncode == 2
    assert r.stdout == ""
    line = one_line(r.stderr)
    assert line.startswith(f"cluster: port {port} on 127.0.0.1 ({component}, {flag}) is already in use by pid {os.getpid()} (")
    assert f"omit {flag} to use a free one" in line
    assert line.endswith("Nothing was started")
    assert started_pids(marks) == {}  # no fake binary ever ran
    assert recorded(state) == []


@needs_openssl
def test_component_that_exits_stops_everything(tmp_path):
    bin_dir, marks = make_bin(tmp_path, {"etcd": ETCD_HEALTHY, "kube-apiserver": FAIL})
    state = tmp_path / "state"
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), "--timeout", "30")
    assert r.returncode == 2, r.stderr
    line = one_line(r.stderr)
    log = state / "logs" / "kube-apiserver.log"
    assert line == (f"cluster: kube-apiserver exited with code 1 before the cluster was ready: "
                    f"E1201 12:00:00.000000 1 run.go:72] error: boom: cannot load the world (log: {log}); "
                    f"everything it had started was stopped")
    pids = started_pids(marks)
    assert set(pids) == {"etcd", "kube-apiserver"}  # the rest was never started
    assert not alive(pids["etcd"])  # etcd was healthy and running: stopped
    assert recorded(state) == []
    assert (state / "logs" / "etcd.log").exists() and (state / "kubeconfig").exists()


@needs_openssl
def test_port_taken_after_choice_says_run_up_again(tmp_path):
    bin_dir, marks = make_bin(tmp_path, {"etcd": PORT_RACE})
    state = tmp_path / "state"
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), "--timeout", "30")
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert line == (f"cluster: etcd could not listen: port 40123 on 127.0.0.1 was taken by another process after "
                    f"`up` chose it; run `python3 dev.py cluster up` again (log: {state / 'logs' / 'etcd.log'}); "
                    f"everything it had started was stopped")
    assert recorded(state) == []


@needs_openssl
def test_component_not_ready_in_time_is_stopped(tmp_path):
    bin_dir, marks = make_bin(tmp_path, {})  # etcd sleeps, never answers /health
    state = tmp_path / "state"
    t0 = time.monotonic()
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), "--timeout", "1.5")
    assert time.monotonic() - t0 < 20
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert line.startswith("cluster: etcd did not get to /health ok within the 1.5s --timeout (last: ")
    assert line.endswith(f"(log: {state / 'logs' / 'etcd.log'}); everything it had started was stopped")
    pids = started_pids(marks)
    assert set(pids) == {"etcd"}
    assert not alive(pids["etcd"])
    assert recorded(state) == []


# --------------------------------------------------------------------------------------------
# down, status, env


def _spawn_group() -> subprocess.Popen:
    """A process group of two: a shell and its background child."""
    return subprocess.Popen(["sh", "-c", "sleep 300 & wait"], start_new_session=True)


def _write_state(state: Path, recs: list) -> None:
    state.mkdir(parents=True, exist_ok=True)
    (state / "state.json").write_text(json.dumps({"apiserver": "https://127.0.0.1:1", "options": {},
                                                  "processes": recs}))


def _group_members(pgid: int) -> list[int]:
    return runtime.group_pids({"pgid": pgid, "start": runtime.proc_start(pgid)})


def test_down_stops_recorded_groups_and_is_safe_to_repeat(tmp_path):
    state = tmp_path / "state"
    p = _spawn_group()
    try:
        deadline = time.monotonic() + 5
        while len(_group_members(p.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        members = _group_members(p.pid)
        assert len(members) == 2
        _write_state(state, [{"name": "kwok", "pid": p.pid, "pgid": p.pid, "start": runtime.proc_start(p.pid),
                              "url": "http://127.0.0.1:1", "log": "x", "argv": []}])
        threading.Thread(target=p.wait, daemon=True).start()  # reap it the way init would
        r = run("down", "--state-dir", str(state))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "cluster: stopped kwok"
        p.wait(timeout=5)
        assert not any(alive(m) for m in members if m != p.pid)  # the background child too
        assert not (state / "state.json").exists()
        again = run("down", "--state-dir", str(state))
        assert again.returncode == 0
        assert again.stdout.strip() == f"cluster: nothing was running (state in {state})"
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def test_down_never_signals_a_recycled_pid(tmp_path):
    """A recorded pid whose start time differs is some other process now: left alone."""
    state = tmp_path / "state"
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        start = runtime.proc_start(p.pid)
        _write_state(state, [{"name": "etcd", "pid": p.pid, "pgid": p.pid, "start": start - 1,
                              "url": "http://127.0.0.1:1", "log": "x", "argv": []}])
        r = run("down", "--state-dir", str(state))
        assert r.returncode == 0
        assert r.stdout.strip() == f"cluster: nothing was running (state in {state})"
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


def test_down_without_state_dir(tmp_path):
    r = run("down", "--state-dir", str(tmp_path / "none"))
    assert r.returncode == 0
    assert r.stdout.strip() == f"cluster: nothing to stop (no state in {tmp_path / 'none'})"
    assert not (tmp_path / "none").exists()


def test_status_when_not_running_exits_1(tmp_path):
    r = run("status", "--state-dir", str(tmp_path / "state"))
    assert r.returncode == 1
    assert r.stdout.strip() == (f"cluster: not running (no cluster recorded in {tmp_path / 'state'}); "
                                "start it with `python3 dev.py cluster up`")


def test_env_prints_the_export_line(tmp_path):
    r = run("env", "--state-dir", str(tmp_path / "my state"))
    assert r.returncode == 0
    assert r.stdout == f"export KUBECONFIG='{tmp_path / 'my state' / 'kubeconfig'}'\n"


def test_default_dirs_follow_llm_serving_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_SERVING_CACHE", str(tmp_path / "cache"))
    args = cmd.parser().parse_args(["up"])
    assert args.bin_dir == tmp_path / "cache" / "bin"
    assert args.state_dir == tmp_path / "cache" / "cluster"
    monkeypatch.delenv("LLM_SERVING_CACHE")
    args = cmd.parser().parse_args(["down"])
    assert args.state_dir == Path.home() / ".cache" / "llm-serving" / "cluster"


# --------------------------------------------------------------------------------------------
# loopback only


def test_every_address_in_every_command_line_is_loopback(tmp_path):
    lay = layout.Layout(tmp_path)
    ports = dict(zip(("etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
                      layout.KSERVE_STANDIN), range(40001, 40008), strict=True))
    ips = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?:/\d+)?\b")
    for name in layout.COMPONENTS:
        argv = components.component_argv(name, tmp_path / "bin", lay, ports)
        assert argv[0] == (str(tmp_path / "bin" / name) if name in layout.BINARIES else sys.executable)
        found = [m for a in argv for m in ips.findall(a)]
        assert found, name
        for addr in found:
            if "/" in addr:  # allocation ranges only: the apiserver's service IPs, kwok's fake pod IPs
                assert addr in (components.SERVICE_CIDR, components.POD_CIDR), (name, addr)
                assert ipaddress.ip_network(addr).is_private
            else:
                assert addr == "127.0.0.1", (name, addr)
        for a in argv:
            if a.startswith(("--bind-address=", "--advertise-address=", "--node-ip=")):
                assert a.endswith("=127.0.0.1"), (name, a)
            if "://" in a and not a.startswith("--service-account-issuer="):  # an identifier, never dialled
                assert re.search(r"https?://127\.0\.0\.1:\d+", a), (name, a)
    api = components.component_argv("kube-apiserver", tmp_path / "bin", lay, ports)
    assert "--secure-port=40003" in api and "--etcd-servers=http://127.0.0.1:40001" in api
    assert "--service-cluster-ip-range=10.96.0.0/16" in api
    kwok = components.component_argv("kwok", tmp_path / "bin", lay, ports)
    assert "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake" in kwok
    assert f"--config={tmp_path / 'kwok' / 'stages.yaml'}" in kwok
    assert "--server-address=127.0.0.1:40006" in kwok


# --------------------------------------------------------------------------------------------
# the objects applied


def _objects() -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"]["name"]): o for o in setup.load_objects()}


def _prod_inventory() -> dict:
    cfg = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())["config"]
    return cfg


def test_objects_file_worker_1_has_the_prod_cards_and_memory():
    node = _objects()[("Node", "worker-1")]
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["metadata"]["labels"] == {"kubernetes.io/hostname": "worker-1", "kubernetes.io/os": "linux",
                                          "kubernetes.io/arch": "amd64", "type": "kwok"}
    assert "taints" not in node["spec"]
    alloc, cap = node["status"]["allocatable"], node["status"]["capacity"]
    assert alloc["nvidia.com/gpu"] == "4" and cap["nvidia.com/gpu"] == "4"
    assert alloc["memory"] == "63495Mi"
    assert cap["memory"] == "65536Mi"
    assert alloc["cpu"] == "32" and alloc["pods"] == "110"
    # the same facts as the stack's inventory, so a change there shows up here
    (prod_node,) = [n for n in _prod_inventory()["llm-serving:cluster"]["nodes"] if n["name"] == "worker-1"]
    assert int(alloc[facts.GPU_RESOURCE]) == prod_node["cards"] == 4
    assert alloc["memory"] == f"{prod_node['allocatable_memory_mib']}Mi"
    assert node["metadata"]["labels"][facts.HOSTNAME_LABEL] == "worker-1"


def test_objects_file_runtime_class_namespace_and_bound_claim():
    objs = _objects()
    rc = objs[("RuntimeClass", "nvidia")]
    assert rc["handler"] == "nvidia" == facts.GPU_RUNTIME_CLASS
    ns = _prod_inventory()["llm-serving:namespace"]
    assert ("Namespace", ns) in objs and ns == "llm-serving"
    pvc, pv = objs[("PersistentVolumeClaim", facts.MODELS_PVC)], objs[("PersistentVolume", "llm-models")]
    assert pvc["metadata"]["namespace"] == "llm-serving"
    # pre-bound both ways, no storage class: the PV binder binds it, no provisioner needed
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pv["spec"]["claimRef"]["name"] == facts.MODELS_PVC
    assert pv["spec"]["claimRef"]["namespace"] == "llm-serving"
    assert pvc["spec"]["storageClassName"] == pv["spec"]["storageClassName"] == ""
    assert pvc["spec"]["accessModes"] == pv["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert pvc["spec"]["resources"]["requests"]["storage"] == pv["spec"]["capacity"]["storage"] == "1Ti"
    (term,) = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["worker-1"]}]
    # namespace before the claim in it: applied in file order
    order = [(o["kind"], o["metadata"]["name"]) for o in setup.load_objects()]
    assert order.index(("Namespace", "llm-serving")) < order.index(("PersistentVolumeClaim", "llm-models"))


def test_objects_file_inferenceservice_crd_stand_in():
    crd = _objects()[("CustomResourceDefinition", "inferenceservices.serving.kserve.io")]
    spec = crd["spec"]
    assert spec["group"] == "serving.kserve.io" and spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == "InferenceService"
    assert spec["names"]["plural"] == "inferenceservices"
    assert spec["names"]["shortNames"] == ["isvc"]
    (version,) = spec["versions"]
    assert version["name"] == "v1beta1" and version["served"] and version["storage"]
    props = version["schema"]["openAPIV3Schema"]["properties"]
    assert props["spec"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["status"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert version["subresources"] == {"status": {}}
    # the stack's rendered InferenceService is of this group/version
    assert "stand-in" in crd["metadata"]["annotations"]["llm-serving/stand-in"]


def test_every_object_has_a_rest_path():
    paths = [setup.resource_path(o) for o in setup.load_objects()]
    assert paths == [
        "/api/v1/nodes/worker-1",
        "/apis/node.k8s.io/v1/runtimeclasses/nvidia",
        "/api/v1/namespaces/llm-serving",
        "/api/v1/persistentvolumes/llm-models",
        "/api/v1/namespaces/llm-serving/persistentvolumeclaims/llm-models",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/inferenceservices.serving.kserve.io",
    ]
    assert setup.resource_path(_objects()[("Node", "worker-1")], "status") == "/api/v1/nodes/worker-1/status"


# --------------------------------------------------------------------------------------------
# the kwok stages


def _stages(delay: float) -> dict[str, dict]:
    return {s["metadata"]["name"]: s for s in yaml.safe_load_all(setup.render_stages(delay))}


def test_stages_cover_node_and_pod_lifecycle():
    stages = _stages(0)
    assert list(stages) == ["node-initialize", "node-heartbeat-with-lease", "pod-start", "pod-ready",
                            "pod-complete", "pod-delete"]
    kinds = {name: s["spec"]["resourceRef"]["kind"] for name, s in stages.items()}
    assert kinds == {"node-initialize": "Node", "node-heartbeat-with-lease": "Node", "pod-start": "Pod",
                     "pod-ready": "Pod", "pod-complete": "Pod", "pod-delete": "Pod"}
    # pod-start takes Pending pods to Running, not ready; pod-ready takes Running, not-Ready ones to Ready
    start_sel = {e["key"]: e for e in stages["pod-start"]["spec"]["selector"]["matchExpressions"]}
    ready_sel = {e["key"]: e for e in stages["pod-ready"]["spec"]["selector"]["matchExpressions"]}
    assert start_sel[".status.phase"]["values"] == ["Pending"]
    assert ready_sel[".status.phase"]["values"] == ["Running"]
    assert "phase: Running" in stages["pod-start"]["spec"]["next"]["statusTemplate"]
    assert 'status: "False"\n  reason: ContainersNotReady\n  type: Ready' in \
        stages["pod-start"]["spec"]["next"]["statusTemplate"]
    assert 'status: "True"\n  reason: null\n  type: Ready' in stages["pod-ready"]["spec"]["next"]["statusTemplate"]
    assert stages["pod-delete"]["spec"]["next"] == {"delete": True}


@pytest.mark.parametrize("delay,ms", [(0, 0), (240, 240000), (2.5, 2500)])
def test_pod_ready_delay_is_rendered(delay, ms):
    ready = _stages(delay)["pod-ready"]["spec"]["delay"]
    assert ready["durationMilliseconds"] == ms
    assert ready["durationFrom"] == {"jq": {"expression": '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"]'}}
    # nothing else moves with it
    assert _stages(delay)["node-heartbeat-with-lease"]["spec"]["delay"]["durationMilliseconds"] == 600000
    assert "delay" not in _stages(delay)["pod-start"]["spec"]


def test_bad_pod_ready_delay_is_refused(tmp_path):
    r = run("up", "--pod-ready-delay", "-3", "--state-dir", str(tmp_path / "s"), "--bin-dir", str(tmp_path))
    assert r.returncode == 2
    assert "--pod-ready-delay: must be >= 0: '-3'" in r.stderr
    assert "Traceback" not in r.stderr
