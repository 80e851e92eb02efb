"""testbed/cluster/ without the real binaries: the failure paths of `up` (each one line, exit 2,
nothing left running), `down`/`status`/`env`, the kwokctl configuration it writes, and the data
it applies (testbed/cluster/cluster_objects.yaml, testbed/cluster/cluster_kwok_stages.yaml)
against the stack's own facts.

kwokctl is faked by a small Python script in a temporary bin dir (the other binaries by empty
executables it never runs): ``create cluster`` starts the processes the test asks for and writes
kwokctl's pid files and logs, ``delete cluster`` stops them and removes the cluster's directory,
as kwokctl does; each call is recorded. The happy path (a real control plane) needs the
toolchain and is checked in tests/real/.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
import yaml

from core.base import facts
from testbed.cluster import cmd, kwokctl, layout, setup
from tests.paths import PROD_STACK_FILE, ROOT


def run(*args: str, fake: str = "", timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LLM_SERVING_CACHE"}
    env["FAKE_KWOKCTL"] = fake
    return subprocess.run([sys.executable, "-m", "testbed.cluster", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{text}"
    assert "Traceback" not in text
    return lines[0]


def alive(pid: int) -> bool:
    return kwokctl.proc_start(pid) is not None


# The fake kwokctl. $FAKE_KWOKCTL says what `create cluster` does:
#   "fail"   prints kwokctl's JSON error record, exits 1 (after starting etcd)
#   "sleep"  starts etcd and kube-apiserver (they sleep; no certificates), exits 0
#   "dies"   as "sleep", but kube-apiserver prints an error line and exits after 0.5 s
#   "race"   starts etcd, which finds its port taken and exits; then waits (as kwokctl waits for
#            the apiserver) until it is killed
FAKE_KWOKCTL = """\
#!{python}
import json, os, shutil, signal, subprocess, sys, time
calls = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "calls.jsonl")
with open(calls, "a") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "workdir": os.environ.get("KWOK_WORKDIR")}}) + "\\n")
cluster = os.path.join(os.environ["KWOK_WORKDIR"], "clusters", sys.argv[sys.argv.index("--name") + 1])
mode = os.environ.get("FAKE_KWOKCTL", "")
def start(name, code):
    for d in ("pids", "logs"):
        os.makedirs(os.path.join(cluster, d), exist_ok=True)
    log = open(os.path.join(cluster, "logs", name + ".log"), "w")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=log, start_new_session=True)
    with open(os.path.join(cluster, "pids", name + ".pid"), "w") as fh:
        fh.write(str(p.pid))
SLEEP = "import time; time.sleep(300)"
DIES = "import sys, time; time.sleep(0.5); print('E1201 12:00:00.000000 1 run.go:72] error: boom: cannot load the world'); sys.exit(1)"
RACE = "print('{{\\"level\\":\\"fatal\\",\\"msg\\":\\"discovery failed\\",\\"error\\":\\"listen tcp 127.0.0.1:40123: bind: address already in use\\"}}')"
if sys.argv[1:3] == ["create", "cluster"] and mode == "race":
    start("etcd", RACE)
    time.sleep(60)
elif sys.argv[1:3] == ["create", "cluster"]:
    start("etcd", SLEEP)
    if mode == "fail":
        print(json.dumps({{"level": "ERROR", "msg": "Execute exit", "err": "failed to start cluster: boom"}}))
        sys.exit(1)
    start("kube-apiserver", DIES if mode == "dies" else SLEEP)
elif sys.argv[1:3] == ["delete", "cluster"]:
    for f in os.listdir(os.path.join(cluster, "pids")) if os.path.isdir(cluster) else []:
        try:
            os.kill(int(open(os.path.join(cluster, "pids", f)).read()), signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(cluster, ignore_errors=True)
"""


def make_bin(tmp_path: Path, *, skip: tuple[str, ...] = ()) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in layout.BINARIES:
        if name in skip:
            continue
        path = bin_dir / name
        path.write_text(FAKE_KWOKCTL.format(python=sys.executable) if name == "kwokctl" else "#!/bin/sh\nexit 3\n")
        path.chmod(0o755)
    return bin_dir


def calls(bin_dir: Path) -> list[list[str]]:
    path = bin_dir / "calls.jsonl"
    return [json.loads(ln)["argv"][:2] for ln in path.read_text().splitlines()] if path.exists() else []


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
    assert line == (f"cluster: missing kwokctl, etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok, "
                    f"kubectl in {tmp_path / 'nothing'}; run `python3 dev.py toolchain` to build them. Nothing was started")


def test_one_missing_binary_is_named_and_nothing_runs(tmp_path):
    bin_dir = make_bin(tmp_path, skip=("kwok",))
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(tmp_path / "state"))
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert line.startswith(f"cluster: missing kwok in {bin_dir}; run `python3 dev.py toolchain`")
    assert calls(bin_dir) == []


@pytest.mark.parametrize("flag,component", [("--apiserver-port", "kube-apiserver"), ("--etcd-port", "etcd")])
def test_port_taken_one_line_exit_2_nothing_started(tmp_path, flag, component):
    bin_dir = make_bin(tmp_path)
    state = tmp_path / "state"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), flag, str(port))
    assert r.returncode == 2
    assert r.stdout == ""
    line = one_line(r.stderr)
    assert line == (f"cluster: port {port} on 127.0.0.1 ({component}, {flag}) is already in use; stop that process "
                    f"or pick another port (omit {flag} to use a free one). Nothing was started")
    assert calls(bin_dir) == []  # kwokctl never ran
    assert recorded(state) == []


def _pids(state: Path) -> dict[str, int]:
    """The pids the fake kwokctl started, from the fresh state.json the failing `up` left."""
    return {r["name"]: r["pid"] for r in json.loads((state / "state.json").read_text()).get("processes", [])}


def test_kwokctl_create_failure_is_one_line_and_deleted(tmp_path):
    bin_dir = make_bin(tmp_path)
    state = tmp_path / "state"
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), fake="fail")
    assert r.returncode == 2
    assert r.stdout == ""
    line = one_line(r.stderr)
    assert line == (f"cluster: kwokctl create cluster failed: failed to start cluster: boom "
                    f"(log: {state / 'logs' / 'kwokctl.log'}); everything it had started was stopped")
    assert calls(bin_dir) == [["create", "cluster"], ["delete", "cluster"]]
    assert recorded(state) == []
    assert not (state / "kwokctl" / "clusters" / "llm-serving").exists()
    assert (state / "logs" / "etcd.log").exists()  # kept


def test_component_that_exits_stops_everything(tmp_path):
    bin_dir = make_bin(tmp_path)
    state = tmp_path / "state"
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), "--timeout", "30", fake="dies")
    assert r.returncode == 2, r.stderr
    line = one_line(r.stderr)
    log = state / "logs" / "kube-apiserver.log"
    assert line == (f"cluster: kube-apiserver exited before the cluster was ready: "
                    f"E1201 12:00:00.000000 1 run.go:72] error: boom: cannot load the world (log: {log}); "
                    f"everything it had started was stopped")
    assert "boom" in log.read_text()  # kept where the line says
    assert calls(bin_dir) == [["create", "cluster"], ["delete", "cluster"]]
    assert recorded(state) == []


def test_port_taken_after_choice_tries_other_ports_then_says_run_up_again(tmp_path):
    attempts = cmd.PORT_ATTEMPTS
    bin_dir = make_bin(tmp_path)
    state = tmp_path / "state"
    t0 = time.monotonic()
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), fake="race")
    assert time.monotonic() - t0 < 30  # seen while kwokctl still waits, not after its timeout
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert line == (f"cluster: etcd could not listen: a port on 127.0.0.1 was taken by another process after "
                    f"`up` chose it; run `python3 dev.py cluster up` again (log: {state / 'logs' / 'etcd.log'}); "
                    f"everything it had started was stopped")
    assert calls(bin_dir) == [["create", "cluster"], ["delete", "cluster"]] * attempts
    assert (state / "logs" / "up.log").read_text().count("again on other ports") == attempts - 1


def test_port_taken_on_a_given_port_is_not_retried(tmp_path):
    bin_dir = make_bin(tmp_path)
    state = tmp_path / "state"
    port = kwokctl.free_ports(1)[0]
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), "--apiserver-port", str(port), fake="race")
    assert r.returncode == 2
    assert one_line(r.stderr).startswith("cluster: etcd could not listen: a port on 127.0.0.1 was taken")
    assert calls(bin_dir) == [["create", "cluster"], ["delete", "cluster"]]


def test_ports_are_free_distinct_and_below_the_ephemeral_range():
    ports = kwokctl.free_ports(50)
    assert len(set(ports)) == 50
    assert all(10000 <= p < kwokctl.ephemeral_low() for p in ports)
    assert not any(kwokctl.port_in_use(p) for p in ports)


def test_not_ready_in_time_is_stopped(tmp_path):
    bin_dir = make_bin(tmp_path)
    state = tmp_path / "state"
    t0 = time.monotonic()
    r = run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), "--timeout", "1.5", fake="sleep")
    assert time.monotonic() - t0 < 20
    assert r.returncode == 2
    line = one_line(r.stderr)
    pki = state / "kwokctl" / "clusters" / "llm-serving" / "pki"
    assert line.startswith(f"cluster: kwokctl did not get to its certificates in {pki} within the 1.5s --timeout (last: ")
    assert line.endswith(f"(log: {state / 'logs' / 'kwokctl.log'}); everything it had started was stopped")
    assert calls(bin_dir) == [["create", "cluster"], ["delete", "cluster"]]
    assert recorded(state) == []


def test_kwokctl_runs_with_its_workdir_in_the_state_dir(tmp_path):
    bin_dir = make_bin(tmp_path)
    state = tmp_path / "state"
    run("up", "--bin-dir", str(bin_dir), "--state-dir", str(state), fake="fail")
    first = json.loads((bin_dir / "calls.jsonl").read_text().splitlines()[0])
    assert first["workdir"] == str(state / "kwokctl")  # ~/.kwok is neither read nor written
    argv = first["argv"]
    assert argv[argv.index("--config") + 1] == str(state / "kwokctl.yaml")
    assert argv[argv.index("--kubeconfig") + 1] == str(state / "kubeconfig")
    assert argv[argv.index("--name") + 1] == "llm-serving"


# --------------------------------------------------------------------------------------------
# down, status, env


def _sleeper_state(state: Path, name: str = "etcd", start_offset: int = 0) -> subprocess.Popen:
    """A sleeping process recorded in state.json and in kwokctl's pid file, as `up` leaves them."""
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    lay = layout.Layout(state)
    lay.pid_file(name).parent.mkdir(parents=True)
    lay.pid_file(name).write_text(str(p.pid))
    lay.live_log(name).parent.mkdir(parents=True)
    lay.live_log(name).write_text("its log\n")
    rec = {"name": name, "pid": p.pid, "start": kwokctl.proc_start(p.pid) + start_offset,
           "url": "http://127.0.0.1:1", "log": str(lay.live_log(name))}
    (state / "state.json").write_text(json.dumps({"apiserver": "https://127.0.0.1:1", "options": {},
                                                  "bin_dir": str(state.parent / "bin"), "processes": [rec]}))
    return p


@pytest.mark.parametrize("with_kwokctl", [True, False])
def test_down_runs_kwokctl_delete_keeps_the_logs_and_is_safe_to_repeat(tmp_path, with_kwokctl):
    """Without kwokctl (its bin dir gone) the recorded processes are stopped all the same."""
    bin_dir = make_bin(tmp_path) if with_kwokctl else tmp_path / "bin"
    state = tmp_path / "state"
    p = _sleeper_state(state)
    try:
        r = run("down", "--state-dir", str(state))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "cluster: stopped etcd"
        assert p.wait(timeout=5) == -9
        assert calls(bin_dir) == ([["delete", "cluster"]] if with_kwokctl else [])
        assert not (state / "state.json").exists()
        assert (state / "logs" / "etcd.log").read_text() == "its log\n"
        again = run("down", "--state-dir", str(state))
        assert again.returncode == 0
        assert again.stdout.strip() == f"cluster: nothing was running (state in {state})"
    finally:
        p.kill()
        p.wait()


def test_down_never_signals_a_recycled_pid(tmp_path):
    """A recorded pid whose start time differs is some other process now: left alone."""
    state = tmp_path / "state"
    p = _sleeper_state(state, start_offset=-1)
    layout.Layout(state).pid_file("etcd").unlink()  # kwokctl's own record is gone with it
    try:
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


def test_status_names_a_dead_process_and_exits_1(tmp_path):
    state = tmp_path / "state"
    p = _sleeper_state(state)
    p.kill()
    p.wait()
    r = run("status", "--state-dir", str(state))
    assert r.returncode == 1
    first = r.stdout.splitlines()[0]
    assert first.startswith("cluster: NOT HEALTHY (not running: etcd, kube-apiserver, kube-controller-manager, "
                            "kube-scheduler, kwok-controller, kserve-standin); apiserver https://127.0.0.1:1 ready: no")
    assert re.search(rf"^  etcd +NOT RUNNING +pid {p.pid} ", r.stdout, re.M)


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
# kwokctl's configuration: the local binaries, loopback only


PORTS = dict(zip(kwokctl.PORT_NAMES, range(40001, 40008), strict=True))


def test_kwokctl_config_runs_the_local_binaries_on_the_chosen_ports(tmp_path):
    lay = layout.Layout(tmp_path / "state")
    conf = kwokctl.config(tmp_path / "bin", lay, PORTS)
    assert conf["kind"] == "KwokctlConfiguration" and conf["apiVersion"] == "config.kwok.x-k8s.io/v1alpha1"
    opts = conf["options"]
    assert opts["runtime"] == "binary" and opts["bindAddress"] == "127.0.0.1"
    assert opts["enableCRDs"] == ["Stage"]  # up applies the Stages; a new pod-ready delay needs no restart
    assert {k: v for k, v in opts.items() if k.endswith("Binary")} == {
        "etcdBinary": str(tmp_path / "bin" / "etcd"), "kubeApiserverBinary": str(tmp_path / "bin" / "kube-apiserver"),
        "kubeControllerManagerBinary": str(tmp_path / "bin" / "kube-controller-manager"),
        "kubeSchedulerBinary": str(tmp_path / "bin" / "kube-scheduler"),
        "kwokControllerBinary": str(tmp_path / "bin" / "kwok"), "kubectlBinary": str(tmp_path / "bin" / "kubectl")}
    assert {k: v for k, v in opts.items() if k.endswith("Port")} == {
        "etcdPort": 40001, "etcdPeerPort": 40002, "kubeApiserverPort": 40003, "kubeControllerManagerPort": 40004,
        "kubeSchedulerPort": 40005, "kwokControllerPort": 40006}
    patches = {p["name"]: {a["key"]: a["value"] for a in p["extraArgs"]} for p in conf["componentsPatches"]}
    assert patches["kube-apiserver"]["service-cluster-ip-range"] == "10.96.0.0/16"
    assert patches["kube-controller-manager"]["pvclaimbinder-sync-period"] == "1s"
    assert patches["kube-controller-manager"]["flex-volume-plugin-dir"] == str(lay.cluster / "flexvolume")
    assert patches["kwok-controller"]["manage-all-nodes"] == "false"
    assert patches["kwok-controller"]["manage-nodes-with-annotation-selector"] == "kwok.x-k8s.io/node=fake"
    (standin,) = conf["components"]
    assert standin["name"] == "kserve-standin" and standin["binary"] == str(lay.root / "bin" / "kserve-standin")
    assert standin["args"] == ["-m", "testbed.kserve_standin", f"--kubeconfig={lay.cluster / 'kubeconfig.yaml'}",
                               f"--kubectl={tmp_path / 'bin' / 'kubectl'}", "--health-address=127.0.0.1:40007"]
    # The project first, then this environment's packages (the stand-in runs the base interpreter).
    (env,) = standin["envs"]
    path = env["value"].split(os.pathsep)
    assert env["name"] == "PYTHONPATH" and path[0] == str(ROOT) and sysconfig.get_paths()["purelib"] in path


def test_every_address_in_the_kwokctl_config_is_loopback(tmp_path):
    text = yaml.safe_dump(kwokctl.config(tmp_path / "bin", layout.Layout(tmp_path / "state"), PORTS))
    found = re.findall(r"\b\d{1,3}(?:\.\d{1,3}){3}(?:/\d+)?\b", text)
    assert sorted(set(found)) == ["10.244.0.0/24", "10.96.0.0/16", "127.0.0.1"]
    for addr in found:
        if "/" in addr:  # allocation ranges only: the apiserver's service IPs, kwok's fake pod IPs
            assert ipaddress.ip_network(addr).is_private
    assert re.findall(r"(?:address|ip|Address): (\S+)", text) == ["127.0.0.1"]  # bindAddress
    patches = {p["name"]: {a["key"]: a["value"] for a in p["extraArgs"]} for p in
               kwokctl.config(tmp_path / "bin", layout.Layout(tmp_path / "state"), PORTS)["componentsPatches"]}
    assert patches["kube-apiserver"]["advertise-address"] == "127.0.0.1"
    assert patches["kwok-controller"]["node-ip"] == "127.0.0.1"


def test_write_config_links_the_standin_to_this_python(tmp_path):
    lay = layout.Layout(tmp_path / "state")
    lay.root.mkdir()
    kwokctl.write_config(tmp_path / "bin", lay, PORTS)
    assert os.readlink(lay.root / "bin" / "kserve-standin") == os.path.realpath(sys.executable)  # noqa: PTH115
    assert yaml.safe_load(lay.config.read_text()) == kwokctl.config(tmp_path / "bin", lay, PORTS)


# --------------------------------------------------------------------------------------------
# the objects applied


def _objects() -> dict[tuple[str, str], dict]:
    return {(o["kind"], o["metadata"]["name"]): o for o in setup.load_objects()}


def _prod_inventory() -> dict:
    cfg = yaml.safe_load(PROD_STACK_FILE.read_text())["config"]
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
    assert [setup.resource_path(s) for s in setup.stages(0)][3] == "/apis/kwok.x-k8s.io/v1alpha1/stages/pod-ready"


# --------------------------------------------------------------------------------------------
# the kwok stages


def _stages(delay: float) -> dict[str, dict]:
    return {s["metadata"]["name"]: s for s in setup.stages(delay)}


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
