"""Pod security: the rendered pods meet the Pod Security Standards' Baseline and as much
of Restricted as GPU servers allow, the pack's six matching policies find what is missing in
hand-written YAML (the user's manifests) and nothing in the program's, and checkov, when it is
installed, finds no failed check that is not waived with a reason.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess

import pytest

from core.base import facts
from policylib.pack import policy
from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE, ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, run_policy, use_stack_config
from tools.offline import mockrun, outdir, render
from tools.offline.manifests import load_manifest_dir, load_stack_file, resources_from_documents

PROD = load_stack_file(PROD_STACK_FILE)
POLICIES = ["pod-security-baseline", "pod-security-restricted", "pod-run-as-non-root", "no-service-account-token",
            "model-mounts-read-only", "model-server-readiness"]


def pods(manifests):
    for m in manifests:
        if m["kind"] == "Deployment":
            yield m, m["spec"]["template"]["spec"]
        elif m["kind"] == "InferenceService":
            yield m, m["spec"]["predictor"]


def findings(resources) -> list[tuple[str, str]]:
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return sorted((name, v.message.split(":")[0]) for name in POLICIES for v in run_policy(policy(name), resources))


def test_every_rendered_pod_carries_the_restricted_fields():
    manifests = render_manifests(load_stack_config(PROD))
    seen = []
    for m, pod in pods(manifests):
        seen.append(m["metadata"]["name"])
        assert pod["automountServiceAccountToken"] is False
        assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
        for c in pod["containers"]:
            assert c["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
            assert c["readinessProbe"]["periodSeconds"] == 10
            models = [v for v in c["volumeMounts"] if v["mountPath"] == "/mnt/models"]
            assert models and all(v["readOnly"] is True for v in models)
        assert m["metadata"]["annotations"][facts.RUNS_AS_ROOT_ANNOTATION]
    assert sorted(seen) == ["candle-vllm", "clef-candle", "clef-serve", "reasoning"]


def test_the_inference_service_reads_its_hugging_face_cache_offline():
    isvc = next(m for m in render_manifests(load_stack_config(PROD)) if m["kind"] == "InferenceService")
    env = {e["name"]: e.get("value") for e in isvc["spec"]["predictor"]["containers"][0]["env"]}
    assert env["HF_HOME"] == "/mnt/models" and env["HF_HUB_OFFLINE"] == "1"
    config = copy.deepcopy(PROD)
    config["llm-serving:workloads"]["reasoning"]["hf_home"] = "/mnt/models-cache"  # not on the models PVC
    isvc = next(m for m in render_manifests(load_stack_config(config)) if m["kind"] == "InferenceService")
    assert "HF_HUB_OFFLINE" not in {e["name"] for e in isvc["spec"]["predictor"]["containers"][0]["env"]}


def test_run_as_user_runs_non_root_and_drops_the_declaration_and_waivers():
    config = copy.deepcopy(PROD)
    for name in ("candle-vllm", "reasoning"):
        config["llm-serving:workloads"][name]["run_as_user"] = 10001
    manifests = {m["metadata"]["name"]: m for m in render_manifests(load_stack_config(config)) if m["kind"] != "Service"}
    for name in ("candle-vllm", "reasoning"):
        m = manifests[name]
        _, pod = next(pods([m]))
        assert pod["securityContext"] == {
            "seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": True, "runAsUser": 10001}
        annotations = m["metadata"]["annotations"]
        assert facts.RUNS_AS_ROOT_ANNOTATION not in annotations
        assert not any(v.startswith(("CKV_K8S_23=", "CKV_K8S_40=")) for v in annotations.values())
    assert facts.RUNS_AS_ROOT_ANNOTATION in manifests["clef-candle"]["metadata"]["annotations"]
    assert findings(resources_from_documents(list(manifests.values()))) == []


def test_the_program_passes_all_six_and_the_users_manifests_fail_them():
    assert findings(resources_from_documents(render_manifests(load_stack_config(PROD)))) == []
    got = findings(load_manifest_dir(ROOT / "tests" / "reference"))
    expected = []
    for obj, container in (("Deployment candle-vllm", "candle"), ("Deployment clef-candle", "candle"),
                           ("InferenceService coder", "kserve-container")):
        pod = obj + (", predictor" if obj.startswith("Inference") else "")
        where = f"{pod}{' ' if obj.startswith('Inference') else ', '}container {container}"
        expected += [("no-service-account-token", pod), ("pod-run-as-non-root", where)]
        expected += [("pod-security-restricted", where)] * 3
        if not obj.startswith("Inference"):
            expected.append(("model-server-readiness", where))
    expected.append(("model-mounts-read-only", "InferenceService coder, predictor container kserve-container"))
    assert got == sorted(expected)


def test_baseline_names_each_breach():
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "llm-serving"},
           "spec": {"template": {"spec": {
               "hostPID": True, "hostIPC": True,
               "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}],
                                   "seLinuxOptions": {"user": "system_u"}},
               "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
               "containers": [{"name": "c", "image": "x:1", "ports": [{"containerPort": 80, "hostPort": 80}],
                               "securityContext": {"privileged": True, "procMount": "Unmasked",
                                                   "capabilities": {"add": ["NET_ADMIN", "CHOWN"]},
                                                   "seccompProfile": {"type": "Unconfined"}}}]}}}}
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    got = [v.message.split(". Fix:")[0] for v in run_policy(policy("pod-security-baseline"), resources_from_documents([doc]))]
    assert got == [
        "Deployment d: hostPID is true (the pod shares the node's namespace)",
        "Deployment d: hostIPC is true (the pod shares the node's namespace)",
        "Deployment d: volume h is a hostPath (the node's filesystem)",
        "Deployment d: sysctl kernel.msgmax is not in the safe set",
        "Deployment d: seLinuxOptions {'user': 'system_u'} set a user, role or type outside the allowed list",
        "Deployment d, container c: privileged is true (full access to the node)",
        "Deployment d, container c: adds capabilities NET_ADMIN",
        "Deployment d, container c: procMount is Unmasked",
        "Deployment d, container c: hostPort 80 binds the node's port",
        "Deployment d, container c: seccompProfile is Unconfined",
    ]


def test_a_declared_reason_is_what_lets_a_root_container_pass():
    doc = json.loads(json.dumps(next(m for m in render_manifests(load_stack_config(PROD)) if m["kind"] == "InferenceService")))
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    assert run_policy(policy("pod-run-as-non-root"), resources_from_documents([doc])) == []
    doc["metadata"]["annotations"][facts.RUNS_AS_ROOT_ANNOTATION] = " "
    (v,) = run_policy(policy("pod-run-as-non-root"), resources_from_documents([doc]))
    assert "set run_as_user: <uid> under llm-serving:workloads.reasoning" in v.message


CHECKOV = os.environ.get("CHECKOV") or shutil.which("checkov")


@pytest.mark.skipif(not CHECKOV, reason="checkov is not installed (set CHECKOV=/path/to/checkov)")
def test_checkov_finds_no_failed_check_on_prods_manifests(tmp_path):
    """Measured with checkov 3.3.30 in its own virtualenv: 37 failed checks before the components set
    the pod security fields, 0 after,
    13 skipped by the Deployments' checkov.io/skip annotations, each with its reason."""
    run = mockrun.run_program(PROD)
    outdir.write_tree(render.render(render.manifests(run.resources)), tmp_path / "prod")
    proc = subprocess.run([CHECKOV, "-d", str(tmp_path / "prod"), "--framework", "kubernetes", "-o", "json",
                           "--skip-download"], capture_output=True, text=True, timeout=600)
    data = json.loads(proc.stdout)
    data = data if isinstance(data, dict) else data[0]
    assert data["summary"]["failed"] == 0, [c["check_id"] for c in data["results"]["failed_checks"]]
    skipped = data["results"]["skipped_checks"]
    assert len(skipped) == 13 and all(c["check_result"].get("suppress_comment") for c in skipped)
