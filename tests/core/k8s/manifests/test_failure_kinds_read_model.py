"""The read model the failure-kind rules stand on: where a container's cache lands, whose user an
image runs as, and how many pods a RawDeployment InferenceService at minReplicas 0 runs."""

from __future__ import annotations

import pytest

from core.catalog.images import image_user, repository_path
from core.k8s.manifests import filesystem as fs
from core.k8s.manifests import pods
from core.k8s.manifests.read import ISVC_TYPE

IMAGE = "vllm/vllm-openai:v0.11.0"


def _deployment(env=None, mounts=(), volumes=(), pod_sc=None, image=IMAGE):
    container = {"name": "vllm", "image": image, "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
                 "volumeMounts": list(mounts)}
    spec = {"containers": [container], "volumes": list(volumes), "securityContext": pod_sc or {}}
    w = pods.workload("kubernetes:apps/v1:Deployment",
                      {"kind": "Deployment", "metadata": {"name": "x"}, "spec": {"template": {"spec": spec}}})
    assert w is not None
    return w, w.containers[0]


@pytest.mark.parametrize(("env", "cache"), [  # noqa: PT006
    ({}, "/root/.cache/huggingface/hub"),
    ({"HOME": "/home/s"}, "/home/s/.cache/huggingface/hub"),
    ({"XDG_CACHE_HOME": "/x"}, "/x/huggingface/hub"),
    ({"HF_HOME": "/hf", "XDG_CACHE_HOME": "/x"}, "/hf/hub"),
    ({"HF_HUB_CACHE": "/c", "HF_HOME": "/hf"}, "/c"),
])
def test_the_hub_cache_follows_huggingface_hubs_precedence(env, cache):
    w, c = _deployment(env)
    assert fs.hub_cache(w, c) == cache
    assert fs.hub_cache(w, c, "/models-cache") == "/models-cache"  # vLLM --download-dir wins


def test_a_uid_the_image_does_not_know_has_home_slash_and_an_unknown_image_none():
    w, c = _deployment(pod_sc={"runAsUser": 1001})
    assert fs.home(w, c) == "/"
    w, c = _deployment(image="ghcr.io/acme/server:1")
    assert fs.hub_cache(w, c) is None


def test_a_path_lands_on_the_longest_mount_and_its_volume_decides():
    mounts = [{"name": "cache", "mountPath": "/root/.cache"}, {"name": "hub", "mountPath": "/root/.cache/huggingface", "readOnly": True}]
    volumes = [{"name": "cache", "emptyDir": {"sizeLimit": "5Gi"}}, {"name": "hub", "persistentVolumeClaim": {"claimName": "m"}}]
    w, c = _deployment(mounts=mounts, volumes=volumes)
    hub = fs.place(w, c, "/root/.cache/huggingface/hub")
    assert (hub.mount["name"], hub.writable, hub.persistent) == ("hub", False, True)
    other = fs.place(w, c, "/root/.cache/vllm")
    assert (other.mount["name"], other.writable, other.persistent, other.size_limit) == ("cache", True, False, "5Gi")
    own = fs.place(w, c, "/tmp/x")
    assert (own.mount, own.writable, own.persistent, own.where) == (None, True, False, "the container's own filesystem")


@pytest.mark.parametrize(("model", "hub"), [("Qwen/Qwen3-8B", True), ("gpt2", True), ("/mnt/models/x", False),  # noqa: PT006
                                            ("./x", False), ("s3://b/m", False), ("pvc://c/m", False), (None, False)])
def test_a_hub_id_is_neither_a_path_nor_a_uri(model, hub):
    assert fs.is_hub_id(model) is hub


def test_the_catalog_states_a_user_only_for_the_listed_repositories():
    assert repository_path("docker.io/vllm/vllm-openai:v0.11.0") == "vllm/vllm-openai"
    assert repository_path("localhost:5000/org/x") == "org/x"
    assert image_user("docker.io/vllm/vllm-openai:v0.11.0").user == "root"
    assert image_user("quay.io/rh-aiservices-bu/vllm-openai-ubi9:0.4.2") is None  # sets its own USER


@pytest.mark.parametrize(("annotations", "predictor", "replicas"), [  # noqa: PT006
    ({"serving.kserve.io/deploymentMode": "RawDeployment"}, {"minReplicas": 0, "maxReplicas": 1}, 1),
    ({"serving.kserve.io/deploymentMode": "RawDeployment"}, {"minReplicas": 0}, 1),
    ({"serving.kserve.io/deploymentMode": "RawDeployment"}, {"minReplicas": 0, "maxReplicas": 0}, 0),
    ({}, {"minReplicas": 0, "maxReplicas": 1}, 1),
    ({}, {"minReplicas": 0}, 0),
])
def test_a_raw_deployment_at_min_replicas_0_runs_one_pod(annotations, predictor, replicas):
    """Kserve #3514: RawDeployment has no scale-to-zero; both at 0 parks it (seed 000's ornith)."""
    w = pods.workload(ISVC_TYPE, {"kind": "InferenceService", "metadata": {"name": "m", "annotations": annotations},
                                  "spec": {"predictor": {**predictor, "containers": []}}})
    assert w is not None and w.replicas == replicas
