"""core.k8s.manifests.argv: the argv a container will run: Kubernetes' $(VAR) expansion,
shells, image entrypoints, and the server the argv starts; the workload view reads servers
through it."""

from __future__ import annotations

import pytest

import core.k8s.manifests
from core.k8s.manifests import argv as A  # noqa: N812
from core.k8s.manifests.argv import image_engine, server_of
from tests.policy_harness import manifests


def _env(**values):
    return [{"name": k, "value": v} for k, v in values.items()]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("--model=$(MODEL)", "--model=Qwen/Qwen3-8B"),
        ("$(UNDEFINED)", "$(UNDEFINED)"),  # unknown names stay literal
        ("$$(MODEL)", "$(MODEL)"),  # $$ escapes
        ("$$", "$"),
        ("cost $5", "cost $5"),
        ("$(MODEL", "$(MODEL"),  # no closing paren: literal
        ("a$(PORT)b", "a8000b"),
    ],
)
def test_kubernetes_expansion_rules(text, expected):
    env = A.container_env(_env(MODEL="Qwen/Qwen3-8B", PORT="8000"))
    assert A.k8s_expand(text, env) == expected


def test_env_values_expand_against_earlier_entries_only():
    env = A.container_env(_env(A="x", B="$(A)-y", C="$(D)") + [{"name": "D", "value": "late"}])
    assert (env["B"], env["C"]) == ("x-y", "$(D)")


def test_value_from_and_env_from_make_the_argv_unknown():
    env = [{"name": "MODEL", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "model"}}}]
    got = A.effective_argv(["vllm", "serve"], ["$(MODEL)"], env)
    assert got.argv is None and "$(MODEL) is set from a Secret, ConfigMap or field" in got.unknown
    got = A.effective_argv(["vllm", "serve"], ["$(MODEL)"], [], env_from=True)
    assert got.argv is None and "may come from envFrom" in got.unknown
    # Without envFrom an undefined name stays literal, as the kubelet leaves it.
    assert A.effective_argv(["vllm", "serve"], ["$(MODEL)"]).argv == ("vllm", "serve", "$(MODEL)")


def test_sh_c_script_is_split_and_its_variables_expanded():
    got = A.effective_argv(
        ["/bin/sh", "-c"],
        ['pip install -q hf_transfer && exec vllm serve "$MODEL_ID" --tensor-parallel-size ${TP:-1} --port 8000'],
        _env(MODEL_ID="meta-llama/Llama-3.1-8B-Instruct"),
    )
    assert got == A.Argv(("vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "1",
                          "--port", "8000"), None, "sh -c")


def test_bash_flag_groups_and_python_module_form():
    got = A.effective_argv(["bash", "-ec", "python3 -m vllm.entrypoints.openai.api_server --model /models/x"], [])
    call = A.server_of(got.argv)
    assert (call.engine, call.args) == ("vllm", ("--model", "/models/x"))


def test_single_quotes_are_not_expanded_and_command_substitution_is_unknown():
    got = A.effective_argv(["sh", "-c", "vllm serve '$HOME' --port 1"], [], _env(HOME="/root"))
    assert got.argv == ("vllm", "serve", "$HOME", "--port", "1")
    got = A.effective_argv(["sh", "-c", "vllm serve $(cat /etc/model)"], [])
    assert got.argv is None and "command substitution" in got.unknown


def test_omitted_command_takes_a_known_image_entrypoint():
    got = A.effective_argv([], ["--model", "m"], image="vllm/vllm-openai:v0.11.0")
    assert (got.argv, got.via) == (("vllm", "serve", "--model", "m"), "image entrypoint")
    got = A.effective_argv([], ["--model-id", "m"], image="ghcr.io/huggingface/text-generation-inference:3.0")
    assert A.server_of(got.argv).engine == "tgi"
    got = A.effective_argv([], ["--x"], image="registry.example/own:1")
    assert got.argv is None and "entrypoint of image registry.example/own:1 is not known" in got.unknown


@pytest.mark.parametrize(
    "argv, engine",
    [
        (["python3", "-m", "sglang.launch_server", "--model-path", "m"], "sglang"),
        (["sglang", "serve", "--model-path", "m"], "sglang"),
        (["text-generation-launcher", "--model-id", "m"], "tgi"),
        (["/usr/local/bin/candle-vllm", "--w", "/m"], "candle-vllm"),
        (["python3", "serve.py"], None),
    ],
)
def test_server_of(argv, engine):
    call = A.server_of(argv)
    assert (call.engine if call else None) == engine


def _container(yaml_container: str) -> core.k8s.manifests.Container:
    (r,) = manifests(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: d}}
spec:
  template:
    spec:
      containers:
      - {yaml_container}
""")
    return core.k8s.manifests.workload(r.type, r.props, r.urn).containers[0]


def test_workload_view_reads_the_model_through_k8s_expansion():
    c = _container('{name: v, image: vllm/vllm-openai:v0.8.5, args: ["--model", "$(MODEL)", "--tensor-parallel-size", "$(TP)"],'
                   ' env: [{name: MODEL, value: org/m}, {name: TP, value: "2"}], resources: {limits: {nvidia.com/gpu: 2}}}')
    assert (c.server.model_arg, c.server.tensor_parallel) == ("org/m", 2)


def test_vllm_serve_positional_model_after_flags():
    c = _container('{name: v, image: vllm/vllm-openai:latest, command: [vllm, serve], '
                   'args: ["--tensor-parallel-size", "2", "--enable-prefix-caching", "org/m", "--port", "8000"]}')
    assert (c.server.model_arg, c.server.tensor_parallel, c.server.get("--port")) == ("org/m", 2, "8000")


def test_unknown_argv_gives_no_server_and_says_why():
    c = _container('{name: v, image: vllm/vllm-openai:v0.9.0, args: ["--model", "$(M)"], envFrom: [{configMapRef: {name: c}}]}')
    assert c.server is None and c.looks_like_server
    assert "may come from envFrom" in c.argv.unknown


def test_sglang_is_recognised_but_not_modelled():
    c = _container('{name: s, image: lmsysorg/sglang:v0.4.6, command: [python3, -m, sglang.launch_server], args: ["--model-path", "m", "--tp", "2"]}')
    assert c.server is None and c.call.engine == "sglang"


def test_vllm_reads_underscored_flags_as_dashed():
    c = _container('{name: v, image: vllm/vllm-openai:v0.9.0, args: ["--model", "m", "--tensor_parallel_size", "2", '
                   '"--max_model_len=4096"]}')
    assert (c.server.tensor_parallel, c.server.get("--max-model-len")) == (2, "4096")


@pytest.mark.parametrize(("argv", "engine"), [  # noqa: PT006
    (["tritonserver", "--model-repository=/models"], "triton"),
    (["/app/llama-server", "-m", "/models/m.gguf", "--port", "8080"], "llama.cpp"),
    (["python3", "-m", "llama_cpp.server", "--model", "/m.gguf"], "llama.cpp"),
    (["ollama", "serve"], "ollama"),
    (["local-ai", "run"], "localai"),
    (["serve", "run", "app:deployment"], "ray-serve"),
])
def test_servers_the_pack_does_not_model_are_recognised(argv, engine):
    call = server_of(argv)
    assert call is not None and call.engine == engine


@pytest.mark.parametrize(("image", "engine"), [  # noqa: PT006
    ("nvcr.io/nvidia/tritonserver:24.08-py3", "triton"), ("ghcr.io/ggml-org/llama.cpp:server-cuda", "llama.cpp"),
    ("ollama/ollama:0.7.0", "ollama"), ("localai/localai:latest-gpu-nvidia-cuda-12", "localai"),
    ("ghcr.io/huggingface/text-generation-inference:3.0", "tgi"), ("vllm/vllm-openai:v0.11.0", None),
])
def test_serving_images_name_their_engine(image, engine):
    assert image_engine(image) == engine
