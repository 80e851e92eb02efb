"""The real path's toolchain command (testbed/toolchain.py), the stand-in language host
(testbed/langhost.py) and the KServe stand-in (testbed/kserve_standin.py), without building anything."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed import kserve_standin, langhost, toolchain
from tests.paths import PROD_STACK_FILE, ROOT


def _pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def test_python_pins_name_the_toolchains_versions():
    v = toolchain.load_versions()
    req = _pins(ROOT / "requirements.txt")
    pack = _pins(ROOT / "policies" / "requirements.txt")
    assert req["pulumi"] == pack["pulumi"] == v["pulumi"]["python_sdk"] == v["pulumi"]["version"].lstrip("v")
    assert req["pulumi-kubernetes"] == v["kubernetes_provider"]["python_sdk"]


def test_the_provider_is_the_stable_release_built_at_its_tag():
    """requirements.txt pins a stable pulumi-kubernetes (no pre-release), and the toolchain builds
    the provider at that release's tag: the plugin version is the tag's, and the module's
    pseudo-version names the tag's commit and that commit's time. The tag's commit was read from
    pulumi/pulumi-kubernetes (``git rev-parse v4.25.0^{commit}`` = f47bc2d6f199..., committed
    2026-01-14T19:34:56-08:00), the commit PyPI's alpha 4.25.0a1768448096 was also built from."""
    import datetime

    k = toolchain.load_versions()["kubernetes_provider"]
    pin = _pins(ROOT / "requirements.txt")["pulumi-kubernetes"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pin), pin  # stable: no a/b/rc/dev part
    assert pin == k["python_sdk"] == k["plugin_version"] == k["tag"].removeprefix("v") == "4.25.0"
    _, stamp, commit = k["version"].rsplit("-", 2)
    assert k["tag_commit"].startswith(commit) and len(k["tag_commit"]) == 40
    when = datetime.datetime.strptime(stamp, "%Y%m%d%H%M%S").replace(tzinfo=datetime.UTC)
    assert when == datetime.datetime(2026, 1, 15, 3, 34, 56, tzinfo=datetime.UTC)
    # The alpha the project pinned before was numbered by that same commit's Unix time.
    assert int(when.timestamp()) == 1768448096
    assert toolchain.plugin_dir(toolchain.load_versions(), Path("/c")).name == "resource-kubernetes-v4.25.0"


def test_the_users_workflows_install_the_same_cli_version():
    v = toolchain.load_versions()["pulumi"]["python_sdk"]
    for wf in sorted((ROOT / ".gitea" / "workflows").glob("*.yaml")):
        env = (yaml.safe_load(wf.read_text()) or {}).get("env") or {}
        if "PULUMI_VERSION" in env:
            assert env["PULUMI_VERSION"] == v, wf.name


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "testbed.toolchain", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_missing_go_is_one_clear_line_and_exit_2(tmp_path):
    env = dict(os.environ, PATH=str(Path(sys.executable).parent), LLM_SERVING_CACHE=str(tmp_path / "cache"))
    proc = _run([], env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("toolchain: go not found on PATH")
    assert "python3 dev.py toolchain" in lines[-1]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "cache" / "bin").exists() or not any((tmp_path / "cache" / "bin").iterdir())


@pytest.mark.skipif(shutil.which("go") is None, reason="needs Go (the missing-Go case is the test above)")
def test_an_unreachable_module_proxy_is_one_clear_line_and_exit_2(tmp_path):
    env = dict(os.environ, LLM_SERVING_CACHE=str(tmp_path / "cache"), GOPROXY="http://127.0.0.1:9",
               GOMODCACHE=str(tmp_path / "mod"), GOSUMDB="off", GOFLAGS="-mod=mod")
    proc = _run(["--only", "etcd"], env)
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("toolchain: etcd") and "unreachable" in last, last
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "cache" / "bin" / "etcd").exists()


def test_check_lists_every_part_and_exits_1_on_an_empty_cache(tmp_path):
    env = dict(os.environ, LLM_SERVING_CACHE=str(tmp_path / "cache"))
    proc = _run(["--check"], env)
    assert proc.returncode == 1
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    assert names == [n for n, _, _ in toolchain.PARTS]


def test_a_second_run_with_the_same_versions_builds_nothing(tmp_path):
    """Stamps that match the pinned versions, with their outputs present: nothing to do, and
    go is not even needed (PATH without go)."""
    cache = tmp_path / "cache"
    v = toolchain.load_versions()
    (cache / "stamps").mkdir(parents=True)
    for name, keys, _ in toolchain.PARTS:
        out = cache / "bin" / name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("built")
        (cache / "stamps" / f"{name}.json").write_text(json.dumps({"fingerprint": toolchain._fingerprint(v, keys, name), "outputs": [str(out)]}))
    env = dict(os.environ, PATH=str(Path(sys.executable).parent), LLM_SERVING_CACHE=str(cache))
    proc = _run([], env)
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stderr and "nothing to build" in proc.stderr
    assert _run(["--check"], env).returncode == 0
    # A changed pin invalidates exactly that part.
    v2 = json.loads(json.dumps(v))
    v2["etcd"]["version"] = "v3.6.15"
    assert toolchain.status(v2, cache) == {n: n != "etcd" for n, _, _ in toolchain.PARTS}


def test_the_language_host_finds_the_kubernetes_plugin_of_the_projects_virtualenv():
    venv = ROOT / ".venv"
    deps = langhost.required_packages(venv, str(ROOT))
    v = toolchain.load_versions()["kubernetes_provider"]["plugin_version"]
    assert {"name": "kubernetes", "version": v, "server": ""} in deps
    assert all(d["name"] != "policy" for d in deps)


def test_the_kserve_standin_creates_the_predictor_the_stable_service_selects():
    """Prod's reasoning InferenceService, as the program registers it: the stand-in's predictor
    pods carry the labels the stable Service reasoning-long-predictor selects."""
    from tools import analyze
    from tools.offline.manifests import load_stack_file

    resources = analyze.program_resources(load_stack_file(PROD_STACK_FILE), "prod")
    objects = {(r.props.get("kind"), r.props.get("metadata", {}).get("name")): r.props for r in resources if r.custom}
    isvc = json.loads(json.dumps(objects[("InferenceService", "reasoning")]))
    isvc["metadata"]["uid"] = "0000"
    dep = kserve_standin.predictor_deployment(isvc)
    pod = dep["spec"]["template"]
    selector = objects[("Service", "reasoning-long-predictor")]["spec"]["selector"]
    assert selector and {k: pod["metadata"]["labels"].get(k) for k in selector} == selector
    assert dep["metadata"]["name"] == "reasoning-predictor"
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["strategy"] == {"type": "Recreate"}
    assert pod["spec"]["containers"] == isvc["spec"]["predictor"]["containers"]
    assert pod["spec"]["runtimeClassName"] == "nvidia"
    assert "minReplicas" not in pod["spec"] and "deploymentStrategy" not in pod["spec"]
    assert dep["metadata"]["ownerReferences"][0]["uid"] == "0000"
    # A parked InferenceService (min and max replicas 0) gets a predictor at 0 replicas; minReplicas 0
    # alone still runs one (RawDeployment has no scale to zero: kserve #3514).
    isvc["spec"]["predictor"]["minReplicas"] = 0
    assert kserve_standin.predictor_deployment(isvc)["spec"]["replicas"] == 1
    isvc["spec"]["predictor"]["maxReplicas"] = 0
    assert kserve_standin.predictor_deployment(isvc)["spec"]["replicas"] == 0


def test_the_kserve_standin_copies_what_kserve_copies_into_the_pod_template():
    """KServe's buildObjectMeta: the InferenceService's labels and annotations (less its disallowed
    list) and the predictor's own reach the predictor's pod template, so changing one rolls it."""
    isvc = _isvc("reasoning")
    isvc["metadata"]["labels"] = {"team": "a"}
    isvc["metadata"]["annotations"] = {"pulumi.com/waitFor": "condition=Ready", "pulumi.com/patchForce": "true",
                                       "kubectl.kubernetes.io/last-applied-configuration": "{}"}
    isvc["spec"]["predictor"]["annotations"] = {"x/y": "1"}
    template = kserve_standin.predictor_deployment(isvc)["spec"]["template"]["metadata"]
    assert template["annotations"] == {"pulumi.com/waitFor": "condition=Ready", "pulumi.com/patchForce": "true", "x/y": "1"}
    assert template["labels"]["team"] == "a"


@pytest.mark.parametrize("status, ready", [
    ({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1}, "True"),
    ({"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1}, "False"),  # not observed yet
    ({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1}, "False"),  # the pod is not Ready
    ({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "readyReplicas": 1}, "False"),  # old pod still there
])
def test_the_kserve_standin_reports_ready_once_its_predictor_is(status, ready):
    dep = {"metadata": {"generation": 2}, "spec": {"replicas": 1}, "status": status}
    out = kserve_standin.ready_status({"metadata": {"generation": 5}}, dep)
    assert out == {"observedGeneration": 5, "conditions": [{"type": "Ready", "status": ready}]}
    assert kserve_standin.ready_status({"metadata": {"generation": 5}}, None)["conditions"][0]["status"] == "False"


def _isvc(name: str, stop: str | None = None) -> dict:
    annotations = {kserve_standin.STOP_ANNOTATION: stop} if stop is not None else {}
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": name, "namespace": "llm-serving", "uid": f"uid-{name}", "annotations": annotations},
            "spec": {"predictor": {"containers": [{"name": "kserve-container", "image": "x"}]}}}


def test_the_kserve_standin_keeps_no_predictor_for_a_stopped_inference_service(monkeypatch):
    """KServe's ``serving.kserve.io/stop: "true"``: the predictor Deployment is deleted (once),
    not applied; without the annotation (or with "false") it is applied again."""
    assert kserve_standin.is_stopped(_isvc("coder", "true")) and kserve_standin.is_stopped(_isvc("coder", "True"))
    assert not kserve_standin.is_stopped(_isvc("coder", "false")) and not kserve_standin.is_stopped(_isvc("coder"))
    items: list[dict] = []
    calls: list[tuple[str, ...]] = []
    statuses: list[tuple[str, str]] = []

    def kubectl(kubeconfig: str, *args: str, stdin: str | None = None):
        import subprocess

        if args[:2] == ("get", "deployment"):  # the predictor's live state: not created (a fake apply)
            return subprocess.CompletedProcess(args, 1, "", "NotFound")
        if args[0] == "get":
            return subprocess.CompletedProcess(args, 0, json.dumps({"items": items}), "")
        if args[0] == "patch":
            statuses.append((args[2], json.loads(args[-1])["status"]["conditions"][0]["status"]))
            return subprocess.CompletedProcess(args, 0, "", "")
        calls.append(args[:3] if args[0] == "delete" else (args[0], json.loads(stdin or "{}")["metadata"]["name"]))
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setattr(kserve_standin, "_kubectl", kubectl)
    applied: dict[str, str] = {}
    items[:] = [_isvc("coder", "true"), _isvc("reasoning")]
    assert kserve_standin.reconcile_once("kc", applied) == 2
    assert calls == [("delete", "deployment", "coder-predictor"), ("apply", "reasoning-predictor")]
    # The applied predictor is not Ready yet: the InferenceService's Ready condition says False; the
    # stopped one's status is left alone.
    assert statuses == [("reasoning", "False")]
    calls.clear()
    assert kserve_standin.reconcile_once("kc", applied) == 0 and calls == []  # nothing changed: nothing done
    items[:] = [_isvc("coder", "false"), _isvc("reasoning")]
    assert kserve_standin.reconcile_once("kc", applied) == 1
    assert calls == [("apply", "coder-predictor")]


@pytest.mark.parametrize("text, version", [
    ("go1.26.1", (1, 26)), ("go1.26rc1", (1, 26)), ("go1.27", (1, 27)),
    ("devel go1.27-3f1a2b4 Mon Nov 2 10:00:00 2026 +0000", (1, 27)), ("", None), ("gccgo", None),
])
def test_go_version_reads_releases_candidates_and_devel_builds(text, version):
    """A release candidate was read as (1,) and refused as too old before."""
    assert toolchain.go_version(text) == version
