"""The coder InferenceService that prod no longer manages is left alone, and the real
``pulumi preview`` says so (spec: "No longer managed: the coder
InferenceService"; history row "after 000: coder ISVC unmanaged").

Seeded the way the cluster holds it after seed 000: ArgoCD applied ``coder.yaml`` (the user's
file, ``tests/reference/coder.yaml``) with ``kubectl apply --server-side --field-manager
argocd-controller``, and prune off left the live object when 000 removed it from git. Its
predictor asks 2 cards; on worker-1 beside prod's 4 it would keep prod's pods Pending (seed 000:
"it permanently occupies half the GPU pool"). Seed 000 says the user deletes it by hand; until
then it must hold no card. Here the user stops it with KServe's ``serving.kserve.io/stop: "true"``
(``kubectl annotate``, field manager ``kubectl-annotate``), which the KServe stand-in honours
(``testbed/kserve_standin.py``: the predictor Deployment is deleted, the InferenceService kept).

Then a fresh prod stack: its ``pulumi preview`` names the coder InferenceService as left alone
(an ``info`` diagnostic in the one wording, ``stackfile.objects.left_alone_text``) and plans
nothing for it, in the CLI's display and its ``--json`` events (with the stack output
``left_alone`` it plans); its ``pulumi up`` succeeds and the coder InferenceService keeps its UID and
resourceVersion, with no Pulumi field manager in its managedFields; the stack output
``left_alone`` lists it.
"""

from __future__ import annotations

import json

import pytest

from stackfile import load_stack_config
from stackfile.objects import left_alone_outputs, left_alone_text
from testbed.kserve_standin import FIELD_MANAGER, STOP_ANNOTATION
from tests.paths import PROD_STACK_FILE
from tests.real.realpath import ROOT, RealProject, diagnostics, kubectl, kubectl_json, wait_for

pytestmark = pytest.mark.real

STACK = "prod"
NS = "llm-serving"
ISVC = "inferenceservices.serving.kserve.io"
CODER = ROOT / "tests" / "reference" / "coder.yaml"


def _prod_left_alone() -> list[dict[str, str]]:
    import yaml

    return left_alone_outputs(load_stack_config(yaml.safe_load(PROD_STACK_FILE.read_text())["config"]))


def _coder(cluster) -> dict:
    return kubectl_json(cluster, "get", ISVC, "coder", "-n", NS, "--show-managed-fields")


def _predictor(cluster) -> list[dict]:
    return kubectl_json(cluster, "get", "deployments", "-n", NS, "--field-selector", "metadata.name=coder-predictor")["items"]


def _pods(cluster) -> list[dict]:
    return kubectl_json(cluster, "get", "pods", "-n", NS, "-l", "serving.kserve.io/inferenceservice=coder")["items"]


@pytest.fixture(scope="module")
def seeded(cluster) -> dict:
    """The coder InferenceService as ArgoCD left it, then stopped by the user; returns it as
    the cluster holds it once the stand-in has removed its predictor."""
    kubectl(cluster, "apply", "--server-side", "--field-manager", "argocd-controller", "-f", str(CODER))
    # The stand-in runs its 2-card predictor, as KServe did (the state seed 000 describes).
    wait_for(lambda: _predictor(cluster), 60, what="the coder predictor Deployment")
    kubectl(cluster, "annotate", ISVC, "coder", "-n", NS, f"{STOP_ANNOTATION}=true")
    wait_for(lambda: not _predictor(cluster) and not _pods(cluster), 120, what="the stopped coder predictor gone")
    coder = _coder(cluster)
    managers = {m["manager"] for m in coder["metadata"]["managedFields"]}
    # ArgoCD's apply, the user's annotation, and the status the controller wrote (KServe's; the stand-in's here).
    assert managers - {FIELD_MANAGER} == {"argocd-controller", "kubectl-annotate"}, managers
    return coder


def test_the_real_preview_names_the_coder_inference_service_as_left_alone(project: RealProject, stack, cluster, seeded):
    expected = _prod_left_alone()
    assert [(o["kind"], o["namespace"], o["name"]) for o in expected] == [("InferenceService", NS, "coder")]
    res = project.preview(STACK, policy_pack=False)
    assert res.code == 0, res
    infos = diagnostics(res.events, "info")
    assert [left_alone_text(**o) for o in expected] == [m.strip() for m in infos if "left alone" in m], infos
    # ... and the stack output the offline preview prints it from, planned by the preview.
    stack_outputs = [e["resOutputsEvent"]["metadata"]["new"]["outputs"] for e in res.events
                     if e.get("resOutputsEvent", {}).get("metadata", {}).get("type") == "pulumi:pulumi:Stack"]
    assert stack_outputs and stack_outputs[-1].get("left_alone") == expected, stack_outputs  # the last: the program's exports
    # Nothing is planned for it: no step names an InferenceService coder.
    steps = [e["resourcePreEvent"]["metadata"] for e in res.events if e.get("resourcePreEvent")]
    assert steps and not [s for s in steps if s["type"].endswith(":InferenceService") and s["urn"].endswith("::coder")], steps
    # The CLI's own display (no --json) shows it under Diagnostics, on the stack.
    text = project.run("preview", "--stack", STACK)
    assert text.code == 0, text
    assert "Diagnostics:" in text.stdout and left_alone_text(**expected[0]) in " ".join(text.stdout.split()), text


def test_up_leaves_the_coder_inference_service_as_it_was(project: RealProject, stack, cluster, seeded):
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    assert any("left alone: InferenceService llm-serving/coder" in m for m in diagnostics(res.events, "info")), res
    after = _coder(cluster)
    assert after["metadata"]["uid"] == seeded["metadata"]["uid"]
    assert after["metadata"]["resourceVersion"] == seeded["metadata"]["resourceVersion"]
    managers = [m["manager"] for m in after["metadata"]["managedFields"]]
    assert not [m for m in managers if m.startswith("pulumi")], managers
    assert after["metadata"]["annotations"][STOP_ANNOTATION] == "true"
    assert not _predictor(cluster)
    # prod itself is up beside it: its own InferenceService, by Pulumi's manager.
    reasoning = kubectl_json(cluster, "get", ISVC, "reasoning", "-n", NS, "--show-managed-fields")
    assert [m for m in reasoning["metadata"]["managedFields"] if m["manager"].startswith("pulumi")]
    out = project.run("stack", "output", "--stack", STACK, "left_alone", "--json")
    assert out.code == 0, out
    assert json.loads(out.stdout) == _prod_left_alone()
