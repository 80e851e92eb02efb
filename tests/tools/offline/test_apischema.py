"""The API server's own schema (tools/offline/apischema.py): each hostile manifest the pack used to
pass is refused with its key path and fix, before any judgement."""

from __future__ import annotations

import copy
import json

import pytest

from tests.paths import ROOT
from tools import analyze, cli
from tools.offline import apischema

INVENTORY = ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "llm-serving"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                                   "resources": {"requests": {"memory": "1Gi"}}}]}}},
}
SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
           "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}
POLICY = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "web"},
          "spec": {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]}}
ISVC = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "coder"},
        "spec": {"predictor": {"containers": [{"name": "kserve-container", "image": "vllm/vllm-openai:v0.6.3"}]}}}


def _with(obj: dict, path: str, value) -> dict:
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    at = out
    for key in parents:
        at = at[int(key)] if key.isdigit() else at[key]
    at[int(last) if last.isdigit() else last] = value
    return out


def test_the_kubernetes_version_is_the_toolchains():
    versions = json.loads((ROOT / "testbed" / "toolchain" / "versions.json").read_text())
    assert versions["kubernetes"]["version"].lstrip("v").rsplit(".", 1)[0] == apischema.KUBERNETES_MINOR


@pytest.mark.parametrize("obj", [DEPLOYMENT, SERVICE, POLICY, ISVC], ids=lambda o: o["kind"])
def test_a_valid_object_has_no_problem(obj):
    assert apischema.object_problems(obj) == []


C0 = "spec.template.spec.containers.0"
HOSTILE = {
    "selector as a list": (_with(SERVICE, "spec.selector", ["app", "web"]), "spec.selector", "a map"),
    "ports as a string": (_with(SERVICE, "spec.ports", "80"), "spec.ports", "a list"),
    "from as a map": (_with(POLICY, "spec.ingress.0.from", {"podSelector": {}}), "spec.ingress[0].from", "a list"),
    "containers: []": (_with(DEPLOYMENT, "spec.template.spec.containers", []), "spec.template.spec.containers",
                       "at least one container"),
    "negative memory": (_with(DEPLOYMENT, f"{C0}.resources.requests.memory", "-1Gi"),
                        "spec.template.spec.containers[0].resources.requests.memory", "must not be negative"),
    "numeric annotation": (_with(DEPLOYMENT, "metadata.annotations", {"a": 5}), "metadata.annotations.a", "text"),
    "string strategy": (_with(DEPLOYMENT, "spec.strategy", "Recreate"), "spec.strategy", "a map"),
    "zero-width space": (_with(DEPLOYMENT, "metadata.name", "web\u200b"), "metadata.name", "DNS-1123 subdomain"),
    "RTL override": (_with(DEPLOYMENT, "metadata.name", "\u202eweb"), "metadata.name", "DNS-1123 subdomain"),
    "254 characters": (_with(DEPLOYMENT, "metadata.name", "a" * 254), "metadata.name", "no more than 253"),
    "Service name with a dot": (_with(SERVICE, "metadata.name", "web.v1"), "metadata.name", "DNS-1035 label"),
    "unknown field": (_with(DEPLOYMENT, f"{C0}.readonly", True), "spec.template.spec.containers[0].readonly",
                      "unknown field"),
    "predictor container field": (_with(ISVC, "spec.predictor.containers.0.imagePullPolicy", 3),
                                  "spec.predictor.containers[0].imagePullPolicy", "text"),
}


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_each_hostile_object_is_refused_with_its_key_path_and_fix(case):
    obj, path, words = HOSTILE[case]
    problems = apischema.object_problems(obj)
    assert any(p.path == path and words in p.rule for p in problems), problems
    assert all(p.fix for p in problems)


def test_an_unknown_field_says_did_you_mean():
    (problem,) = apischema.object_problems(_with(DEPLOYMENT, f"{C0}.securityContext", {"readonly": True}))
    assert problem.path == "spec.template.spec.containers[0].securityContext.readonly"
    assert problem.fix.startswith("did you mean readOnlyRootFilesystem?") or "readOnly" in problem.fix


def test_analyze_refuses_a_manifest_the_api_server_refuses_with_exit_2(tmp_path, capsys):
    (tmp_path / "svc.yaml").write_text(json.dumps(_with(SERVICE, "spec.ports", "80")))
    code = analyze.main(["--manifests", str(tmp_path), "--inventory", str(INVENTORY)])
    text = capsys.readouterr().err
    assert code == cli.BAD_INPUT, text
    assert "Service 'web': spec.ports = (text, 2 characters): the API server's schema wants a list here" in text  # never the value
    assert "fix:" in text and "Traceback" not in text


VLLM = _with(DEPLOYMENT, f"{C0}.args", ["--max-model-len=0", "--gpu-memory-utilization", "1.5", "--max-num-seqs=lots"])
VLLM["spec"]["template"]["spec"]["containers"][0]["command"] = ["vllm", "serve", "/mnt/models/coder"]


def test_engine_nonsense_is_judged_by_the_engines_argument_rules():
    problems = {p.value: p for p in apischema.object_problems(VLLM)}
    assert set(problems) == {"--max-model-len=0", "--gpu-memory-utilization=1.5", "--max-num-seqs=lots"}
    assert "vllm's --max-model-len must be greater than 0" in problems["--max-model-len=0"].rule
    assert "must be less than or equal to 1" in problems["--gpu-memory-utilization=1.5"].rule
    assert "cannot read 'lots'" in problems["--max-num-seqs=lots"].rule
    assert all(p.path == "spec.template.spec.containers[0].args" and p.fix for p in problems.values())
