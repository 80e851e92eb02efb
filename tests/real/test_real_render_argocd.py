"""ArgoCD keeps applying: the rendered directory in place of the hand-edited YAML.

The cluster is seeded as ArgoCD left it (``tests/reference/`` and seed 002's NetworkPolicy,
``kubectl apply --server-side --field-manager argocd-controller``). Then ArgoCD's sync of the
rendered prod directory is played by the same command on ``out/prod/1-manifest`` (the offline
preview's rendering, equal file for file to the provider's ``renderYamlToDirectory`` output:
``tests/real/test_real_parity.py``):

- the first apply updates the seeded objects in place: every seeded object keeps its UID and each
  Service its ClusterIP (one manager, ``argocd-controller``, so no field conflict, seed 002's
  NetworkPolicy included);
- a second apply of the same directory is a no-op: no object's ``resourceVersion`` moves;
- before the first, ``kubectl diff --server-side --force-conflicts`` of the directory lists the
  fields that will change (README runbook step 2) and changes nothing.
"""

from __future__ import annotations

import io
import subprocess

import pytest
import yaml

from tests.paths import PROD_STACK_FILE
from tests.real.realpath import ROOT, kubectl, kubectl_json
from tools import preview

pytestmark = pytest.mark.real

NS = "llm-serving"
REFERENCE = ("coder-14b-fp16.yaml", "clef-candle.yaml", "coder-service.yaml", "reasoning-long-service.yaml")
SEED_002_NETPOL = ROOT / "policies" / "fixtures" / "network-ingress-for-clients" / "disallowed" / "seed-002-gateway-ports.yaml"
KINDS = ("deployments", "services", "networkpolicies", "inferenceservices.serving.kserve.io")
#: Kinds whose controller writes their status (moving the resourceVersion without a change of spec).
STATUS_WRITTEN = ("Deployment", "InferenceService")


def _argocd_apply(cluster, path) -> None:
    kubectl(cluster, "apply", "--server-side", "--field-manager", "argocd-controller", "-f", str(path))


def _objects(cluster) -> dict[tuple[str, str], dict]:
    out = {}
    for kind in KINDS:
        for item in kubectl_json(cluster, "get", kind, "-n", NS)["items"]:
            out[(item["kind"], item["metadata"]["name"])] = item
    return out


def test_argocd_applying_the_rendered_directory_keeps_the_objects_and_then_does_nothing(cluster, tmp_path):
    for f in REFERENCE:
        _argocd_apply(cluster, ROOT / "tests" / "reference" / f)
    netpol = tmp_path / "seed-002-netpol.yaml"
    netpol.write_text(yaml.safe_dump_all([d for d in yaml.safe_load_all(SEED_002_NETPOL.read_text())
                                          if d and d.get("kind") == "NetworkPolicy"]))
    _argocd_apply(cluster, netpol)
    seeded = _objects(cluster)

    rendered = tmp_path / "prod"
    out = io.StringIO()
    assert preview.main(["--stack-file", str(PROD_STACK_FILE), "--out", str(rendered), "--no-policy"], stdout=out, stderr=out) == 0, out.getvalue()
    # Before anything changes, every field that will change, from the live objects (README runbook step 2).
    proc = subprocess.run(["kubectl", "--kubeconfig", str(cluster), "diff", "--server-side", "--force-conflicts",
                           "-f", str(rendered / "1-manifest")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr  # 1: differences found
    assert "+    pulumi.com/timeoutSeconds: \"510\"" in proc.stdout, proc.stdout
    assert "+    - port: 8080" in proc.stdout or "+      port: 8080" in proc.stdout, proc.stdout
    after_diff = _objects(cluster)  # a diff changes nothing (Deployments, InferenceServices: their controller writes status)
    assert all(after_diff[k]["metadata"]["resourceVersion"] == v["metadata"]["resourceVersion"]
               for k, v in seeded.items() if k[0] not in STATUS_WRITTEN)

    _argocd_apply(cluster, rendered / "1-manifest")
    first = _objects(cluster)
    for key, obj in seeded.items():
        assert first[key]["metadata"]["uid"] == obj["metadata"]["uid"], key
        if key[0] == "Service":
            assert first[key]["spec"]["clusterIP"] == obj["spec"]["clusterIP"], key
    # The program's form reached the live objects (e.g. the gateway's 8080, the await bounds).
    ports = [p["port"] for p in first[("NetworkPolicy", "llm-serving-ingress")]["spec"]["ingress"][0]["ports"]]
    assert ports == [80, 8000, 8080]
    assert first[("Deployment", "candle-vllm")]["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == "510"

    _argocd_apply(cluster, rendered / "1-manifest")
    second = _objects(cluster)
    moved = {key: (first[key]["metadata"]["resourceVersion"], obj["metadata"]["resourceVersion"])
             for key, obj in second.items()
             if key in first and obj["metadata"]["resourceVersion"] != first[key]["metadata"]["resourceVersion"]
             and key[0] not in STATUS_WRITTEN}
    assert moved == {}, moved
    # Deployments and InferenceServices: the spec ArgoCD applies is unchanged (same generation); only
    # the controller's status (the Deployment controller's; KServe's Ready, the stand-in's here) may
    # move their resourceVersion.
    for key, obj in second.items():
        if key[0] in STATUS_WRITTEN and key in first:
            assert obj["metadata"]["generation"] == first[key]["metadata"]["generation"], key
