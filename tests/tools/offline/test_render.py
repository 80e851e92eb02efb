"""tools/offline/render.py: renderYamlToDirectory file names, the atomic write, and the diff.

File names follow pulumi-kubernetes ``renderPathForResource`` (provider/pkg/provider/provider.go):
``<apiVersion with / and : -> _>-<lower-cased kind>-<namespace or default>-<name>.yaml``, CRDs
under ``0-crd/``, everything else under ``1-manifest/``.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
import yaml

from core.base import facts
from tools.offline import outdir, render, rendering, treediff
from tools.offline.manifests import InputError


def obj(api_version: str, kind: str, name: str, namespace: str | None = "llm-serving", **body) -> dict:
    meta = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}


def deployment(name="candle-vllm", replicas=1, app="candle-vllm", image="forgejo.riotpiao.com/x/candle-vllm:sm70") -> dict:
    return obj(
        "apps/v1", "Deployment", name,
        spec={
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "candle", "image": image}, {"name": "sidecar", "image": "busybox"}]},
            },
        },
    )


def service(name="coder-predictor", cluster_ip=None, type_="ClusterIP", selector=None) -> dict:
    spec = {"type": type_, "selector": selector or {"app": "candle-vllm"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    return obj("v1", "Service", name, spec=spec)


# --- file names ------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "o, path",
    [
        (deployment(), "1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml"),
        (service("clef-serve"), "1-manifest/v1-service-llm-serving-clef-serve.yaml"),
        (obj("serving.kserve.io/v1beta1", "InferenceService", "reasoning"),
         "1-manifest/serving.kserve.io_v1beta1-inferenceservice-llm-serving-reasoning.yaml"),
        (obj("networking.k8s.io/v1", "NetworkPolicy", "llm-serving-ingress"),
         "1-manifest/networking.k8s.io_v1-networkpolicy-llm-serving-llm-serving-ingress.yaml"),
        # cluster-scoped: the namespace part is "default"
        (obj("node.k8s.io/v1", "RuntimeClass", "nvidia", namespace=None), "1-manifest/node.k8s.io_v1-runtimeclass-default-nvidia.yaml"),
        (obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "inferenceservices.serving.kserve.io", namespace=None),
         "0-crd/apiextensions.k8s.io_v1-customresourcedefinition-default-inferenceservices.serving.kserve.io.yaml"),
        # a kind named like a CRD in another group is not a CRD for the provider
        (obj("example.com/v1", "CustomResourceDefinition", "x", namespace=None),
         "1-manifest/example.com_v1-customresourcedefinition-default-x.yaml"),
        # ":" in an apiVersion becomes "_" too
        (obj("a:b/v1", "Thing", "t"), "1-manifest/a_b_v1-thing-llm-serving-t.yaml"),
    ],
)
def test_render_path_follows_render_path_for_resource(o, path):
    assert render.render_path(o) == path


def test_an_object_without_a_name_is_refused():
    with pytest.raises(render.RenderError, match="no metadata.name.*auto-name"):
        render.render_path({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "x"}})


def test_two_objects_on_one_file_are_refused():
    with pytest.raises(render.RenderError, match="same apiVersion, kind, namespace and name"):
        render.render([service(), service()])


def test_yaml_has_sorted_keys_and_round_trips():
    o = deployment()
    text = render.dump(o)
    assert text.splitlines()[:3] == ["apiVersion: apps/v1", "kind: Deployment", "metadata:"]
    assert yaml.safe_load(text) == o
    long_annotation = "x" * 300
    o["metadata"]["annotations"] = {facts.CLIENTS_ANNOTATION: long_annotation}
    assert f"{facts.CLIENTS_ANNOTATION}: {long_annotation}" in render.dump(o)  # one line, not folded


# --- atomic write ----------------------------------------------------------------------------

def tree(directory: Path) -> dict[str, str]:
    return {p.relative_to(directory).as_posix(): p.read_text() for p in sorted(directory.rglob("*")) if p.is_file()}


def test_write_tree_creates_both_directories(tmp_path):
    out = tmp_path / "out" / "prod"
    outdir.write_tree(render.render([deployment()]), out)
    assert sorted(p.name for p in out.iterdir()) == ["0-crd", "1-manifest"]
    assert list(tree(out)) == ["1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["prod"]  # no temporary directory left


def test_write_tree_replaces_an_earlier_rendering_whole(tmp_path):
    out = tmp_path / "prod"
    outdir.write_tree(render.render([deployment(), service()]), out)
    outdir.write_tree(render.render([deployment(replicas=0)]), out)
    assert list(tree(out)) == ["1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml"]  # the Service file is gone
    assert "replicas: 0" in tree(out)["1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml"]
    assert [p.name for p in tmp_path.iterdir()] == ["prod"]


def test_a_failed_write_leaves_the_earlier_rendering_untouched(tmp_path):
    out = tmp_path / "prod"
    outdir.write_tree(render.render([deployment()]), out)
    before = tree(out)
    files = render.render([service()])
    files["1-manifest/no-such-dir/x.yaml"] = "boom"  # cannot be written: its directory does not exist
    with pytest.raises(render.RenderError, match="cannot write"):
        outdir.write_tree(files, out)
    assert tree(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["prod"]


def test_a_directory_that_is_not_a_rendering_is_not_replaced(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("mine")
    with pytest.raises(render.RenderError, match="not an earlier rendering.*notes.txt"):
        outdir.write_tree(render.render([deployment()]), home)
    assert tree(home) == {"notes.txt": "mine"}


def test_the_swap_is_one_exchange_where_the_c_library_has_renameat2(tmp_path, monkeypatch):
    """With renameat2 the new tree replaces the old one in a single step; this pins that the
    exchange is used (the two-rename fallback has a moment with no directory)."""
    out = tmp_path / "prod"
    outdir.write_tree(render.render([deployment()]), out)
    renames = []
    real_rename = os.rename
    monkeypatch.setattr(outdir.os, "rename", lambda a, b: (renames.append((a, b)), real_rename(a, b)))
    if not outdir._exchange(tmp_path / "prod", tmp_path / "prod"):  # exchanging a path with itself is a no-op
        pytest.skip("the C library has no renameat2 here; the two-rename fallback is used")
    outdir.write_tree(render.render([service()]), out)
    assert renames == []
    assert list(tree(out)) == ["1-manifest/v1-service-llm-serving-coder-predictor.yaml"]


# --- diff ----------------------------------------------------------------------------------

def as_tree(*objects: dict) -> dict[str, dict]:
    return {render.render_path(o): copy.deepcopy(o) for o in objects}


def test_a_replica_count_to_zero_is_an_in_place_change_that_stops_the_server():
    d = treediff.diff_trees(as_tree(deployment(replicas=1), service()), as_tree(deployment(replicas=0), service()))
    assert [(o.action, o.title) for o in d.objects] == [("update", "apps/v1 Deployment llm-serving/candle-vllm")]
    assert [(c.path, c.old, c.new, c.replace_reason) for c in d.objects[0].changes] == [("spec.replicas", 1, 0, "")]
    # In place (no replacement), but the server stops: never "update in place", never "no restarts".
    assert "~  apps/v1 Deployment llm-serving/candle-vllm (update, STOPS candle-vllm)\n      spec.replicas: 1 -> 0" in d.render()
    assert "update cost: 1 model server(s) stop: candle-vllm stops (until scaled up again)" in d.render()
    assert "REPLACE" not in d.render() and "no model server restarts" not in d.render()


def test_a_replica_count_up_is_an_in_place_change():
    d = treediff.diff_trees(as_tree(deployment(replicas=1), service()), as_tree(deployment(replicas=2), service()))
    assert "~  apps/v1 Deployment llm-serving/candle-vllm (update in place)\n      spec.replicas: 1 -> 2" in d.render()
    assert "update cost: no model server restarts" in d.render()


def test_a_changed_service_cluster_ip_is_a_replacement():
    d = treediff.diff_trees(as_tree(service(cluster_ip="10.43.0.17")), as_tree(service(cluster_ip="10.43.0.99")))
    (o,) = d.objects
    assert o.action == "replace"
    assert o.changes[0].path == "spec.clusterIP"
    assert o.replace_reasons == [
        "spec.clusterIP is immutable: the provider deletes and re-creates Service llm-serving/coder-predictor; "
        "the ClusterIP its clients cached is dropped"
    ]
    text = d.render()
    assert '+- v1 Service llm-serving/coder-predictor (REPLACE)' in text
    assert 'spec.clusterIP: "10.43.0.17" -> "10.43.0.99"   [forces replacement]' in text


def test_a_changed_deployment_selector_is_a_replacement():
    old = deployment(app="candle-vllm")
    new = deployment(app="coder")
    d = treediff.diff_trees(as_tree(old), as_tree(new))
    (o,) = d.objects
    assert o.action == "replace"
    marked = {c.path: bool(c.replace_reason) for c in o.changes}
    assert marked == {"spec.selector.matchLabels.app": True, "spec.template.metadata.labels.app": False}
    assert "spec.selector is immutable" in o.replace_reasons[0]


def test_service_type_to_external_name_drops_the_cluster_ip():
    d = treediff.diff_trees(as_tree(service()), as_tree(service(type_="ExternalName")))
    assert d.objects[0].action == "replace"
    assert "the ClusterIP its clients cached is dropped" in d.objects[0].replace_reasons[0]
    # a selector change of a Service is in place (it only moves the endpoints)
    d = treediff.diff_trees(as_tree(service()), as_tree(service(selector={"app": "clef-candle"})))
    assert d.objects[0].action == "update"


def test_a_renamed_object_is_paired_and_marked_replace():
    old = service("coder-predictor")
    new = service("coder")
    for o in (old, new):
        o["metadata"]["annotations"] = {facts.COMPONENT_ANNOTATION: "StablePredictorService/coder-predictor"}
    d = treediff.diff_trees(as_tree(old), as_tree(new))
    (o,) = d.objects
    assert (o.action, o.old_path, o.new_path) == (
        "replace", "1-manifest/v1-service-llm-serving-coder-predictor.yaml", "1-manifest/v1-service-llm-serving-coder.yaml")
    assert o.changes[0].path == "metadata.name"
    assert o.replace_reasons == [
        "metadata.name changes: the provider deletes Service llm-serving/coder-predictor and creates "
        "llm-serving/coder; the ClusterIP its clients cached is dropped"
    ]


def test_added_and_removed_objects_and_named_list_items():
    old = as_tree(deployment(), service("gone", selector={"app": "gone"}))
    new_dep = deployment(image="forgejo.riotpiao.com/x/candle-vllm:sm70-v2")
    new = as_tree(new_dep, obj("v1", "ConfigMap", "new"))
    d = treediff.diff_trees(old, new)
    summary = [(o.action, o.title) for o in d.objects]
    assert summary == [
        ("update", "apps/v1 Deployment llm-serving/candle-vllm"),
        ("add", "v1 ConfigMap llm-serving/new"),
        ("remove", "v1 Service llm-serving/gone"),
    ]
    change = d.objects[0].changes[0]
    assert change.path == "spec.template.spec.containers[name=candle].image"
    assert d.render().splitlines()[0] == "diff: 1 to add, 1 to update, 1 to remove"
    # Removing a Service is never routine: its ClusterIP goes with it (newcomer finding).
    assert d.objects[2].warning == treediff.SERVICE_REMOVAL_WARNING
    assert "      warning: deletes the Service: its ClusterIP is released" in d.render()
    assert d.objects[1].warning == ""  # an added ConfigMap needs no warning


def test_identical_renderings_have_no_diff():
    assert treediff.diff_trees(as_tree(deployment()), as_tree(deployment())).render() == "diff: no changes\n"


def test_load_tree_reads_a_rendering_back(tmp_path):
    objects = [deployment(), service()]
    outdir.write_tree(render.render(objects), tmp_path / "base")
    assert rendering.load_tree(tmp_path / "base") == as_tree(*objects)
    with pytest.raises(InputError, match="not a rendering"):
        rendering.load_tree(tmp_path)
    with pytest.raises(InputError, match="no such directory"):
        rendering.load_tree(tmp_path / "missing")


def test_strings_kubectl_would_read_as_other_values_are_quoted():
    """yaml.v2 (kubectl) reads a plain y as true and 08 as 8.0; PyYAML's dumper left both plain."""
    from core.k8s.yaml11 import Yaml11Loader
    from tools.offline.render import dump

    obj = {"labels": {"a": "y", "b": "N", "c": "08", "d": "1e3", "e": "on", "f": "text", "g": "0700"}}
    text = dump(obj)
    assert yaml.load(text, Loader=Yaml11Loader) == obj
    assert "f: text\n" in text and "a: 'y'\n" in text
