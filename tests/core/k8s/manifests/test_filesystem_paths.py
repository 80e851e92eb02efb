"""core.k8s.manifests.filesystem.paths: the paths a vLLM server writes and reads at start, on its container's filesystem."""

from __future__ import annotations

from core.k8s.manifests import filesystem, pods

IMAGE = "vllm/vllm-openai:v0.11.0"


def workload(container: dict, volumes: list | None = None) -> pods.Workload:
    w = pods.workload("kubernetes:apps/v1:Deployment", {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "template": {"spec": {"containers": [container], "volumes": volumes or []}}}})
    assert w is not None
    return w


def test_defaults_under_the_image_home_on_a_read_only_root():
    w = workload({"name": "vllm", "image": IMAGE, "args": ["--model=/m"], "securityContext": {"readOnlyRootFilesystem": True}})
    uses = {u.what: u for u in filesystem.paths(w, w.containers[0])}
    assert uses["Triton's kernel cache"].path == "/root/.triton/cache"
    assert uses["vLLM's cache (torch.compile)"].path == "/root/.cache/vllm"
    assert not any(u.writable for u in uses.values())


def test_env_moves_a_cache_onto_a_writable_mount_and_readonly_mounts_are_not_writable():
    w = workload({"name": "vllm", "image": IMAGE, "args": ["--model=/m"], "securityContext": {"readOnlyRootFilesystem": True},
                  "env": [{"name": "VLLM_CACHE_ROOT", "value": "/cache/vllm"}, {"name": "TRITON_CACHE_DIR", "value": "/m/t"}],
                  "volumeMounts": [{"name": "c", "mountPath": "/cache"}, {"name": "m", "mountPath": "/m", "readOnly": True}]},
                 [{"name": "c", "emptyDir": {}}, {"name": "m", "persistentVolumeClaim": {"claimName": "x"}}])
    uses = {u.what: u for u in filesystem.paths(w, w.containers[0])}
    assert uses["vLLM's cache (torch.compile)"].writable and uses["vLLM's cache (torch.compile)"].named_by == "env VLLM_CACHE_ROOT"
    assert not uses["Triton's kernel cache"].writable


def test_a_writable_root_holds_the_default_caches():
    w = workload({"name": "vllm", "image": IMAGE, "args": ["--model=/m"]})
    assert all(u.writable for u in filesystem.paths(w, w.containers[0]))


def test_chat_template_on_a_mount_in_the_image_or_nowhere():
    def template(path: str, mounts: list) -> tuple[bool, bool | None]:
        w = workload({"name": "vllm", "image": IMAGE, "args": ["--model=/m", f"--chat-template={path}"], "volumeMounts": mounts},
                     [{"name": "t", "configMap": {"name": "t"}}])
        (use,) = [u for u in filesystem.paths(w, w.containers[0]) if u.what == "the chat template"]
        return use.place.mount is not None, filesystem.in_image(w.containers[0], use.path)

    assert template("/etc/templates/t.jinja", [{"name": "t", "mountPath": "/etc/templates"}]) == (True, False)
    assert template("/etc/templates/t.jinja", []) == (False, False)
    assert template("/vllm-workspace/examples/tool_chat_template_llama3.1_json.jinja", []) == (False, True)
    other = workload({"name": "vllm", "image": "quay.io/org/vllm-custom:1", "args": ["--model=/m", "--chat-template=/x.j2"]})
    assert filesystem.in_image(other.containers[0], "/x.j2") is None  # the catalog does not describe it: not judged


def test_the_model_path_is_read_where_it_is_mounted():
    mounts = [{"name": "m", "mountPath": "/mnt/models", "readOnly": True}]
    w = workload({"name": "vllm", "image": IMAGE, "args": ["--model=/mnt/models/x"], "volumeMounts": mounts},
                 [{"name": "m", "persistentVolumeClaim": {"claimName": "models"}}])
    (model,) = [u for u in filesystem.paths(w, w.containers[0]) if u.what == "the model"]
    assert model.place.mount is not None and not model.writes
    hub = workload({"name": "vllm", "image": IMAGE, "args": ["--model=Qwen/Qwen3-8B"]})
    assert not [u for u in filesystem.paths(hub, hub.containers[0]) if u.what == "the model"]  # a hub id: model-cache-usable's
    serve = workload({"name": "vllm", "image": IMAGE, "command": ["vllm", "serve", "/models/x"]})
    (model,) = [u for u in filesystem.paths(serve, serve.containers[0]) if u.what == "the model"]
    assert (model.named_by, model.place.mount, filesystem.in_image(serve.containers[0], model.path)) == ("vllm serve's model", None, False)


def test_a_uid_the_image_does_not_know_cannot_write_under_home_slash():
    """llm-d/llm-d PR #1711: HOME=/ for a non-root uid, so Triton's /.triton cannot be written (fatal)."""
    w = pods.workload("kubernetes:apps/v1:Deployment", {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {
        "spec": {"securityContext": {"runAsUser": 1000}, "containers": [{"name": "vllm", "image": IMAGE, "args": ["--model=/m"]}]}}}})
    assert w is not None
    uses = {u.what: u for u in filesystem.paths(w, w.containers[0])}
    triton = uses["Triton's kernel cache"]
    assert (triton.path, triton.denied_uid, triton.writable) == ("/.triton/cache", 1000, False)
    assert "uid 1000 cannot write" in triton.where
    moved = pods.workload("kubernetes:apps/v1:Deployment", {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {
        "spec": {"securityContext": {"runAsUser": 1000}, "containers": [{"name": "vllm", "image": IMAGE, "args": ["--model=/m"],
                                                                         "env": [{"name": "HOME", "value": "/tmp/home"}]}]}}}})
    assert moved is not None and all(u.writable for u in filesystem.paths(moved, moved.containers[0]))  # /tmp is world-writable


def test_the_hub_cache_is_judged_on_the_same_filesystem():
    """model-cache-usable's cache and the server's caches come from one model: a read-only root holds neither."""
    w = workload({"name": "vllm", "image": IMAGE, "args": ["--model=Qwen/Qwen3-8B"], "securityContext": {"readOnlyRootFilesystem": True}})
    cache = filesystem.hub_cache(w, w.containers[0])
    assert cache == "/root/.cache/huggingface/hub"
    use = filesystem.path_use(w, w.containers[0], "the Hugging Face cache", "HF_HOME", cache, writes=True)
    assert use.place.writable and not use.writable  # the Place alone says writable; the root is read-only
