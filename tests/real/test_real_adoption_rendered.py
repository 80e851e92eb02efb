"""Taking over what ArgoCD applied from the rendered directory: no pod restarts.

The README's two ways meet here: ArgoCD has been applying the rendered prod directory
(``python3 dev.py preview --out ...``, played by ``kubectl apply --server-side --field-manager
argocd-controller``), then steps back and the first ``pulumi up`` of a fresh prod stack takes the
objects over (``llm-serving:adopt: true``). The pod templates Pulumi applies are the ones ArgoCD
applied, so nothing may restart:

- before: ``kubectl diff --server-side --force-conflicts`` of the directory finds no difference;
- after ``pulumi up``: every Deployment (prod's and the predictor Deployment the KServe stand-in
  made for ``reasoning``) keeps its pod template and ReplicaSet (a Deployment's ``metadata.generation``
  does move: the API server bumps it on an annotation change, and adoption adds
  ``pulumi.com/patchForce`` to the Deployment's own metadata, which reaches no pod), every pod keeps
  its UID, every Service its UID and ClusterIP, and Pulumi's manager now owns fields of each object.

``tests/real/test_real_adoption.py`` is the other case: objects that differ (the hand-edited YAML)
are changed, and their Deployments roll, as the preview and ``kubectl diff`` said.

KServe copies an InferenceService's annotations into its predictor's pod template (less its
``ServiceAnnotationDisallowedList``), and so does the stand-in (``testbed/kserve_standin.py``): adoption
therefore leaves ``pulumi.com/patchForce`` off ``reasoning`` (``stackfile.build.adopt_object``), and its
predictor keeps its pod template here (docs/update-cost.md).
"""

from __future__ import annotations

import io
import subprocess

import pytest

from tests.real.realpath import RealProject, kubectl, kubectl_json, wait_for
from tools import preview

pytestmark = pytest.mark.real

STACK = "prod"
NS = "llm-serving"


def _deployments(cluster) -> dict[str, dict]:
    """Name -> pod template of each Deployment (not ``metadata.generation``: the API server bumps
    a Deployment's generation on an annotation change too, and adoption adds one)."""
    return {d["metadata"]["name"]: d["spec"]["template"] for d in kubectl_json(cluster, "get", "deployments", "-n", NS)["items"]}


def _replicasets(cluster) -> set[str]:
    return {r["metadata"]["name"] for r in kubectl_json(cluster, "get", "replicasets", "-n", NS)["items"]}


def _pods(cluster) -> dict[str, str]:
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in kubectl_json(cluster, "get", "pods", "-n", NS)["items"]}


def _services(cluster) -> dict[str, tuple[str, str]]:
    return {s["metadata"]["name"]: (s["metadata"]["uid"], s["spec"]["clusterIP"])
            for s in kubectl_json(cluster, "get", "services", "-n", NS)["items"]}


def _pulumi_owns_fields(cluster, kind: str, name: str) -> bool:
    obj = kubectl_json(cluster, "get", kind, name, "-n", NS, "--show-managed-fields")
    return any(m["manager"].startswith("pulumi") and m.get("fieldsV1") for m in obj["metadata"].get("managedFields") or [])


def test_adopting_what_argocd_applied_from_the_rendered_directory_restarts_no_pod(project: RealProject, cluster, tmp_path):
    rendered = tmp_path / "prod"
    out = io.StringIO()
    assert preview.main(["--stack", STACK, "--out", str(rendered), "--no-policy"], stdout=out, stderr=out) == 0, out.getvalue()
    kubectl(cluster, "apply", "--server-side", "--field-manager", "argocd-controller", "-f", str(rendered / "1-manifest"))
    # Every pod the rendered directory asks for runs (the stand-in makes reasoning's predictor).
    wanted = {p.name.split("-llm-serving-", 1)[1][:-5] for p in (rendered / "1-manifest").glob("apps_v1-deployment-*.yaml")}
    wanted.add("reasoning-predictor")
    wait_for(lambda: set(_deployments(cluster)) == wanted and all(
        d.get("status", {}).get("readyReplicas", 0) == d["spec"]["replicas"]
        for d in kubectl_json(cluster, "get", "deployments", "-n", NS)["items"]), 180, what="the seeded pods Ready")
    deployments, replicasets, pods, services = _deployments(cluster), _replicasets(cluster), _pods(cluster), _services(cluster)
    replicas = sum(d["spec"]["replicas"] for d in kubectl_json(cluster, "get", "deployments", "-n", NS)["items"])
    assert len(pods) == replicas >= 3, (deployments, pods)

    # Before anything changes: the live objects already are the program's.
    proc = subprocess.run(["kubectl", "--kubeconfig", str(cluster), "diff", "--server-side", "--force-conflicts",
                           "-f", str(rendered / "1-manifest")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr

    project.stack_init(STACK)
    project.config_set(STACK, "llm-serving:adopt", "true")
    res = project.up(STACK)
    assert res.code == 0, res
    assert _deployments(cluster) == deployments  # the same pod templates: nothing rolls
    assert _replicasets(cluster) == replicasets
    assert _pods(cluster) == pods
    assert _services(cluster) == services
    for kind, name in (("deployment", "candle-vllm"), ("deployment", "clef-candle"), ("service", "coder-predictor"),
                       ("networkpolicy", "llm-serving-ingress"), ("inferenceservice", "reasoning")):
        assert _pulumi_owns_fields(cluster, kind, name), (kind, name)
