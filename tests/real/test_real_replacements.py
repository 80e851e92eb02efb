"""The offline diff's "forces replacement" marks against the real provider's diff.

A small program in the project copy registers three of prod's rendered objects as they are
(clef-candle's Deployment, the clef-serve Service, protected as StablePredictorService makes it,
and reasoning's InferenceService) from a YAML file, so a change the stack file cannot express (a
Service's clusterIP or type) reaches the provider too. After one ``pulumi up`` of the base, each
change below is previewed with ``pulumi preview --diff`` and compared, object by object, with
``tools.offline.treediff.diff_trees`` of the same two renderings: the same objects change, the same ones
are replaced, and on the same fields (the engine's replacement ``keys`` equal the offline
"[forces replacement]" paths).

Found on the cluster (pulumi-kubernetes f47bc2d6f199): a Deployment selector change is a
replacement on ``spec.selector.matchLabels.app`` alone (the pod template's label is an update),
delete-first because the name stays; a Service ``spec.clusterIP`` change is a replacement on
``spec.clusterIP``, and with ``protect`` the engine refuses the preview ("unable to replace
resource ... as it is currently marked for protection"); ``spec.type`` ClusterIP -> NodePort,
labels, container args and the InferenceService's predictor fields (replicas, args) are updates
in place (the stand-in CRD is schema-less: no field is immutable on it; KServe's own webhook
might refuse some of them, untested here).
"""

from __future__ import annotations

import copy

import pytest
import yaml

from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tests.real.realpath import RealProject, diagnostics
from tools.offline import render, treediff
from tools.offline.manifests import load_stack_file

pytestmark = pytest.mark.real

STACK = "replacements"
MANIFESTS = "replacement-manifests.yaml"

#: The program: each object of MANIFESTS through its kind's class; Services protected.
PROGRAM = '''
import pulumi
import pulumi_kubernetes as k8s
import yaml

for d in yaml.safe_load_all(open("replacement-manifests.yaml")):
    name = d["metadata"]["name"]
    if d["kind"] == "Deployment":
        k8s.apps.v1.Deployment(name, metadata=d["metadata"], spec=d["spec"])
    elif d["kind"] == "Service":
        k8s.core.v1.Service(name, metadata=d["metadata"], spec=d["spec"], opts=pulumi.ResourceOptions(protect=True))
    else:
        k8s.apiextensions.CustomResource(name, api_version=d["apiVersion"], kind=d["kind"],
                                         metadata=d["metadata"], spec=d["spec"])
'''


def base_objects() -> list[dict]:
    config = load_stack_config(load_stack_file(PROD_STACK_FILE))
    wanted = {("Deployment", "clef-candle"), ("Service", "clef-serve"), ("InferenceService", "reasoning")}
    return [m for m in render_manifests(config) if (m["kind"], m["metadata"]["name"]) in wanted]


def _edit(kind: str, fn):
    def change(objs: list[dict]) -> list[dict]:
        out = copy.deepcopy(objs)
        for o in out:
            if o["kind"] == kind:
                fn(o)
        return out
    return change


def _selector(d):
    d["spec"]["selector"]["matchLabels"]["app"] = "clef-candle-2"
    d["spec"]["template"]["metadata"]["labels"]["app"] = "clef-candle-2"


def _args(d):
    d["spec"]["template"]["spec"]["containers"][0]["args"] += ["--max-num-seqs", "8"]


def _labels(d):
    d["metadata"]["labels"]["tier"] = "gpu"


def _cluster_ip(s):
    s["spec"]["clusterIP"] = "10.96.200.200"


def _node_port(s):
    s["spec"]["type"] = "NodePort"


def _min_replicas(i):
    i["spec"]["predictor"]["minReplicas"] = 0
    i["spec"]["predictor"]["maxReplicas"] = 0


#: change name -> the change.
CHANGES = {
    "deployment-selector": _edit("Deployment", _selector),
    "deployment-container-args": _edit("Deployment", _args),
    "deployment-labels": _edit("Deployment", _labels),
    "service-cluster-ip": _edit("Service", _cluster_ip),
    "service-type-nodeport": _edit("Service", _node_port),
    "isvc-predictor-replicas": _edit("InferenceService", _min_replicas),
    "isvc-container-args": _edit("InferenceService", lambda i: i["spec"]["predictor"]["containers"][0]["args"].extend(["--max-num-seqs", "8"])),
}


def offline(objs: list[dict], changed: list[dict]) -> dict[str, tuple[str, frozenset[str]]]:
    """Object name -> (``update`` or ``replace``, the paths marked "forces replacement") per the
    offline diff (changed objects only)."""
    diff = treediff.diff_trees({render.render_path(o): o for o in objs}, {render.render_path(o): o for o in changed})
    return {d.title.rsplit("/", 1)[-1]: (d.action, frozenset(c.path for c in d.changes if c.replace_reason))
            for d in diff.objects}


REPLACE_OPS = {"replace", "create-replacement", "delete-replaced"}


def real(res) -> dict[str, tuple[str, frozenset[str]]]:
    """Object name -> (``update`` or ``replace``, the keys the engine says cause the replacement)
    per the steps of a preview (``resourcePreEvent``: ``op``, ``keys``)."""
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for e in res.events:
        pre = e.get("resourcePreEvent")
        if not pre or not pre["metadata"]["type"].startswith("kubernetes:"):
            continue
        meta = pre["metadata"]
        name = meta["urn"].rsplit("::", 1)[-1]
        if meta["op"] in REPLACE_OPS:
            keys = out.get(name, ("replace", frozenset()))[1] | frozenset(meta.get("keys") or ())
            out[name] = ("replace", keys)
        elif meta["op"] == "update":
            out.setdefault(name, ("update", frozenset()))
    return out


def _write(project: RealProject, objs: list[dict]) -> None:
    (project.dir / MANIFESTS).write_text(yaml.safe_dump_all(objs, sort_keys=False))


@pytest.fixture(scope="module")
def deployed(project: RealProject) -> RealProject:
    (project.dir / "__main__.py").write_text(PROGRAM)
    _write(project, base_objects())
    project.stack_init(STACK)
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    return project


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_offline_replacement_marks_equal_the_providers_diff(deployed: RealProject, change):
    objs = base_objects()
    changed = CHANGES[change](objs)
    _write(deployed, changed)
    res = deployed.preview(STACK, policy_pack=False, extra=("--diff",))
    want = offline(objs, changed)
    assert want, "the change changes nothing offline"
    if change.startswith("service-") and any(action == "replace" for action, _ in want.values()):
        # A protected object the change would replace: the engine refuses the plan.
        assert res.code != 0, res
        assert any("protect" in m for m in diagnostics(res.events)), res
    else:
        assert res.code == 0, res
    got = real(res)
    assert got == want, (change, got, want, str(res))
