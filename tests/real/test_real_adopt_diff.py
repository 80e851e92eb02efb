"""Before adoption, every field it will change, and exactly those, and its bad input, on the
loopback cluster.

The cluster is seeded as in ``tests/real/test_real_adoption.py`` (the user's ArgoCD-era objects
and seed 002's NetworkPolicy, ``kubectl apply --server-side --field-manager argocd-controller``):
objects that differ from the program's. ``python3 dev.py adopt-diff`` (:mod:`tools.adopt_diff`)
lists, per object, the fields the first ``pulumi up`` with ``llm-serving:adopt`` will change, and
changes nothing. Then that ``pulumi up`` runs, and the fields that actually changed on each live
object (the same diff, before against after) are the listed ones, no more and no fewer.
"""

from __future__ import annotations

import io

import pytest

from tests.paths import PROD_STACK_FILE
from tests.real.realpath import ROOT, RealProject, kubectl
from tests.real.test_real_adoption import REFERENCE, _seed_netpol, _versions
from tools import adopt_diff
from tools.offline import treediff

pytestmark = pytest.mark.real

STACK = "prod"


def _fields(diff: treediff.TreeDiff) -> dict[str, tuple[str, set[str]]]:
    return {(o.new_path or o.old_path): (o.action, {c.path for c in o.changes}) for o in diff.objects}


def test_adopt_diff_lists_exactly_the_fields_the_adopting_up_changes(project: RealProject, cluster):
    for f in REFERENCE:
        kubectl(cluster, "apply", "--server-side", "--field-manager", "argocd-controller", "-f", str(ROOT / "tests" / "reference" / f))
    _seed_netpol(cluster)
    objects = adopt_diff.stack_objects(PROD_STACK_FILE)
    before = adopt_diff.live_tree(objects, cluster)
    versions = _versions(cluster)

    out, err = io.StringIO(), io.StringIO()
    code = adopt_diff.main(["--stack", STACK, "--kubeconfig", str(cluster)], stdout=out, stderr=err)
    assert code == adopt_diff.EXIT_CHANGES, err.getvalue() + out.getvalue()
    text = out.getvalue()
    # The seed-002 NetworkPolicy gains the gateway's 8080; the Deployments get the await bound.
    assert "~  networking.k8s.io/v1 NetworkPolicy llm-serving/llm-serving-ingress (update in place)" in text, text
    assert "spec.ingress[0].ports[2]: <none> -> {\"port\":8080,\"protocol\":\"TCP\"}" in text, text
    assert "pulumi.com/timeoutSeconds" in text and "pulumi.com/patchForce" in text, text
    # Nothing changed (a server-side dry run).
    assert _versions(cluster) == versions
    predicted = _fields(adopt_diff.adoption_diff(objects, cluster))

    project.stack_init(STACK)
    project.config_set(STACK, "llm-serving:adopt", "true")
    res = project.up(STACK)
    assert res.code == 0, res
    after = adopt_diff.live_tree(objects, cluster)
    actual = _fields(treediff.diff_trees(before, after))
    added = {p for p, (action, _) in predicted.items() if action == "add"}
    assert added == set(after) - set(before)  # the objects that were not live were created
    assert {p: v for p, v in actual.items() if p not in added} == {p: v for p, v in predicted.items() if p not in added}
    # It found real changes on the seeded objects, not an empty list.
    changed = {p for p, (action, fields) in predicted.items() if action == "update" and fields}
    assert {"1-manifest/networking.k8s.io_v1-networkpolicy-llm-serving-llm-serving-ingress.yaml",
            "1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml"} <= changed, predicted
