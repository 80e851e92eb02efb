"""engine-contract on the forms teams write: production-stack's Helm chart as `helm template`
renders it, vLLM's own Kubernetes sample (sh -c), `$(VAR)` from the env, a KServe
InferenceService; each judged against the release its image tag names, from the engine contract
(core/data/vllm_releases.json)."""

from __future__ import annotations

from policylib.pack import policy
from tests.policy_harness import FIXTURES, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_manifest_dir, load_stack_file

PUBLIC = FIXTURES / "Pulumi.public.yaml"
V100_STACK = FIXTURES / "Pulumi.public-v100.yaml"


def _run(text: str, stack=PUBLIC) -> list[str]:
    use_stack_config(load_stack_file(stack))
    return [v.message for v in run_policy(policy("engine-contract"), manifests(text))]


def production_stack(tag: str, extra: list[str] | None = None) -> str:
    """The vLLM Deployment of vllm-project/production-stack helm/templates/deployment-vllm-multi.yaml
    (commit 010004eea56fa9ee522a4cf66d363a213fdc67ab, Apache-2.0), rendered by hand as `helm template
    vllm .` renders it for a modelSpec with modelURL meta-llama/Llama-3.1-8B-Instruct, repository
    vllm/vllm-openai, tag ``tag``, vllmConfig {enablePrefixCaching: false, maxModelLen: 4096,
    dtype: bfloat16, maxNumSeqs: 32, gpuMemoryUtilization: 0.9, maxLoras: 4, extraArgs}, enableLoRA
    and servingEngineSpec.configs (the envFrom). Trimmed to the container's command, env and resources."""
    args = "\n".join(f'            - "{a}"' for a in (extra or []))
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: "vllm-llama3-deployment-vllm"
  namespace: default
  labels: {{model: llama3, helm-release-name: vllm}}
spec:
  replicas: 1
  selector:
    matchLabels: {{model: llama3, helm-release-name: vllm}}
  template:
    metadata:
      labels: {{model: llama3, helm-release-name: vllm}}
    spec:
      containers:
        - name: "vllm"
          image: "vllm/vllm-openai:{tag}"
          command:
            - "vllm"
            - "serve"
            - "meta-llama/Llama-3.1-8B-Instruct"
            - "--host"
            - "0.0.0.0"
            - "--port"
            - "8000"
            - "--enable-lora"
            - "--no-enable-prefix-caching"
            - "--max-model-len"
            - "4096"
            - "--dtype"
            - "bfloat16"
            - "--max-num-seqs"
            - "32"
            - "--gpu_memory_utilization"
            - "0.9"
            - "--max_loras"
            - "4"
{args}
          imagePullPolicy: "Always"
          env:
          - name: HF_HOME
            value: /tmp
          - name: POD_IP
            valueFrom:
              fieldRef:
                fieldPath: status.podIP
          - name: LMCACHE_LOG_LEVEL
            value: "DEBUG"
          - name: PROMETHEUS_MULTIPROC_DIR
            value: "/tmp"
          envFrom:
            - configMapRef:
                name: "vllm-configs"
          resources:
            requests: {{cpu: "10", memory: "16Gi", nvidia.com/gpu: "1"}}
            limits: {{nvidia.com/gpu: "1"}}
"""


def test_the_helm_rendered_chart_passes_on_the_releases_that_have_its_flags():
    """--gpu_memory_utilization and --max_loras as the chart writes them (vLLM reads _ as -),
    --no-enable-prefix-caching (a BooleanOptionalAction's negative)."""
    for tag in ("v0.10.1.1", "v0.11.0", "v0.14.1", "v0.19.1"):
        assert _run(production_stack(tag)) == [], tag


def test_a_misspelt_extra_arg_says_did_you_mean():
    # A unique prefix of a long option is that option to argparse (allow_abbrev, which vLLM's
    # FlexibleArgumentParser leaves on): not a typo.
    assert _run(production_stack("v0.11.0", ["--disable-log-request", "--max-num-batched-token", "8192"])) == []
    (message,) = _run(production_stack("v0.11.0", ["--enable-prefix-cache"]))
    assert "flag --enable-prefix-cache is not a flag of vLLM 0.11.0" in message
    assert "did you mean --enable-prefix-caching?" in message
    assert "Deployment vllm-llama3-deployment-vllm, container vllm" in message


def test_an_extra_arg_the_newer_release_dropped_names_both_releases():
    (message,) = _run(production_stack("v0.19.1", ["--disable-log-requests"]))
    assert "flag --disable-log-requests was removed from vLLM: vLLM 0.14.1 has it, vLLM 0.19.1 has not" in message
    assert _run(production_stack("v0.14.1", ["--disable-log-requests"])) == []


def test_a_wrong_choice_and_a_wrong_type_name_the_allowed_values():
    messages = _run(production_stack("v0.11.0", ["--kv-cache-dtype", "fp16", "--max-num-batched-tokens", "lots"]))
    assert any("flag --kv-cache-dtype=fp16: vLLM 0.11.0 takes one of auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_inc"
               in m for m in messages)
    assert any("flag --max-num-batched-tokens=lots: vLLM 0.11.0 takes an integer (64k and 64K allowed)" in m
               for m in messages)


def _dollar_var(value: str, source: str = "value") -> str:
    entry = (f"{{name: MAX_LEN, value: '{value}'}}" if source == "value"
             else "{name: MAX_LEN, valueFrom: {configMapKeyRef: {name: c, key: k}}}")
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: chat, namespace: serving}}
spec:
  template:
    spec:
      containers:
      - name: server
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len=$(MAX_LEN)"]
        env: [{entry}]
        resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""


def test_a_dollar_var_is_judged_as_the_kubelet_expands_it():
    """The read model expands $(VAR) from the env (core.k8s.manifests.argv): 64k is a valid
    human-readable integer, lots is not; a value from a ConfigMap is not in the manifest."""
    assert _run(_dollar_var("64k")) == []
    (message,) = _run(_dollar_var("lots"))
    assert "flag --max-model-len=lots: vLLM 0.11.0 takes an integer" in message
    assert _run(_dollar_var("", source="configmap")) == []


def test_a_vllm_env_typo_says_did_you_mean():
    text = production_stack("v0.11.0").replace(
        "          - name: HF_HOME\n", "          - name: VLLM_ATTENTION_BACKEN\n            value: TRITON_ATTN\n"
                                      "          - name: HF_HOME\n")
    (message,) = _run(text)
    assert "env VLLM_ATTENTION_BACKEN is not read by vLLM 0.11.0" in message
    assert "did you mean VLLM_ATTENTION_BACKEND?" in message


def test_cpu_offload_is_checked_against_the_memory_limit():
    text = production_stack("v0.11.0", ["--cpu-offload-gb", "24"]).replace(
        'limits: {nvidia.com/gpu: "1"}', 'limits: {memory: "20Gi", nvidia.com/gpu: "1"}')
    (message,) = _run(text)
    assert "--cpu-offload-gb 24 on 1 rank(s) keeps 24 GiB of weights in CPU memory, above the container's " \
           "memory limit of 20 GiB" in message
    assert _run(text.replace('"24"', '"8"')) == []
    # No limit: nothing bounds it, nothing to judge here (gpu-memory-request asks for the limit).
    assert _run(production_stack("v0.11.0", ["--cpu-offload-gb", "24"])) == []


def test_an_image_build_without_the_cards_capability_is_refused(monkeypatch):
    """Every covered release's default build carries sm_70 (docker/Dockerfile
    torch_cuda_arch_list within CMakeLists.txt's 12.8 branch); a release whose build lacks it is
    refused on the V100, and an image built elsewhere is not judged on it."""
    from core.engines import contracts

    assert _run(production_stack("v0.11.0").replace("meta-llama/Llama-3.1-8B-Instruct", "m"), V100_STACK) == []
    rel = contracts.release("0.19.1")
    (build,) = rel.image_builds
    narrowed = rel.model_copy(update={"image_builds": (build.model_copy(update={"capabilities": (75, 80, 90)}),)})
    monkeypatch.setattr(contracts, "release_of_image", lambda image: narrowed if "0.19.1" in image else None)
    messages = _run(production_stack("v0.19.1"), V100_STACK)
    assert any("image vllm/vllm-openai:v0.19.1 (vLLM 0.19.1, CUDA 12.9.1) is built for sm_75, sm_80, sm_90: no kernels "
               "for the Tesla-V100" in m for m in messages), messages
    assert _run(production_stack("v0.19.1").replace("vllm/vllm-openai", "registry.local/vllm-openai"), V100_STACK) == []


def _candle(tag: str, args: list[str]) -> str:
    """The reference candle-vllm Deployment's container (tests/reference/coder-14b-fp16.yaml's argv,
    seed 001), with an image tag naming a candle-vllm commit."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: candle-vllm, namespace: llm-serving}}
spec:
  template:
    spec:
      containers:
      - name: candle
        image: registry.local/candle-vllm:{tag}
        command: [/usr/local/bin/candle-vllm]
        args: {args}
        resources: {{limits: {{nvidia.com/gpu: "2"}}}}
"""


CANDLE_ARGS = ["--w", "/mnt/models/coder-14b-fp16", "--d", "0,1", "--dtype", "f16", "--p", "8080",
               "--max-num-seqs", "32", "--kv-fraction", "0.85"]


def test_candle_flags_are_judged_against_the_commit_the_tag_names():
    from core.engines import contracts

    (commit,) = contracts.candle_commits()
    tag = f"sm70-{commit.release[:7]}"
    assert _run(_candle(tag, CANDLE_ARGS)) == []
    (message,) = _run(_candle(tag, [*CANDLE_ARGS, "--kv-fractoin", "0.5"]))
    assert f"flag --kv-fractoin is not a flag of candle-vllm {commit.release[:7]}" in message
    assert "did you mean --kv-fraction?" in message
    (message,) = _run(_candle(tag, [a if a != "0,1" else "0,x" for a in CANDLE_ARGS]))
    assert "flag --d=0,x" in message
    # A tag naming no covered commit (the user's :sm70) is not judged here; coverage lists it.
    assert _run(_candle("sm70", [*CANDLE_ARGS, "--kv-fractoin", "0.5"])) == []


def test_a_parser_name_the_release_does_not_register_is_refused():
    """production-stack's chart renders enableTool and toolCallParser as --enable-auto-tool-choice
    --tool-call-parser NAME; vLLM 0.11.0 registers hermes but not hermes2, and qwen3 as a reasoning
    parser but not qwen3-thinking (vllm/reasoning/, the tool parsers' package). A plugin flag may
    register any name."""
    assert _run(production_stack("v0.11.0", ["--enable-auto-tool-choice", "--tool-call-parser", "hermes",
                                             "--reasoning-parser", "qwen3"])) == []
    (message,) = _run(production_stack("v0.11.0", ["--enable-auto-tool-choice", "--tool-call-parser", "hermes2"]))
    assert "--tool-call-parser hermes2: vLLM 0.11.0 registers no such parser" in message
    assert "did you mean hermes?" in message
    (message,) = _run(production_stack("v0.11.0", ["--reasoning-parser", "qwen3-thinking"]))
    assert "--reasoning-parser qwen3-thinking: vLLM 0.11.0 registers no such parser" in message
    assert _run(production_stack("v0.11.0", ["--tool-call-parser", "hermes2", "--tool-parser-plugin",
                                             "/plugins/hermes2.py"])) == []


def _t4(tag: str, args: list[str]) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: chat, namespace: serving}}
spec:
  template:
    spec:
      nodeSelector: {{kubernetes.io/hostname: t4-0}}
      containers:
      - name: server
        image: vllm/vllm-openai:{tag}
        args: {args}
        resources: {{limits: {{nvidia.com/gpu: "1"}}}}
"""


def test_dtype_and_quantization_against_the_releases_capability_rules(tmp_path):
    """On a T4 (sm_75): bfloat16 needs sm_80 in every covered release (vllm/platforms/cuda.py);
    fp8 needs sm_80 in 0.11.0's Fp8Config and sm_75 in 0.19.1's (quantization/fp8.py); gptq sm_60."""
    stack = tmp_path / "Pulumi.t4.yaml"
    stack.write_text(PUBLIC.read_text().replace("name: l4-0", "name: t4-0").replace(
        "product: NVIDIA-L4, memory_mib: 23034, compute_capability: '8.9'",
        "product: Tesla-T4, memory_mib: 15360, compute_capability: '7.5'"))
    model = ["--model", "meta-llama/Llama-3.1-8B-Instruct"]
    (message,) = _run(_t4("v0.11.0", [*model, "--dtype", "bfloat16"]), stack)
    assert "--dtype bfloat16: vLLM 0.11.0 refuses it below sm_80 and the Tesla-T4 is sm_75" in message
    assert _run(_t4("v0.11.0", [*model, "--dtype", "half"]), stack) == []
    (message,) = _run(_t4("v0.11.0", [*model, "--quantization", "fp8"]), stack)
    assert "--quantization fp8: vLLM 0.11.0's Fp8Config needs sm_80, the Tesla-T4 is sm_75" in message
    assert _run(_t4("v0.19.1", [*model, "--quantization", "fp8"]), stack) == []
    assert _run(_t4("v0.11.0", [*model, "--quantization", "gptq"]), stack) == []


def test_a_cubin_of_the_cards_major_capability_below_it_serves_the_card():
    """CUDA's binary compatibility: a cubin for X.y runs on X.z, z >= y (NVIDIA's CUDA C++
    Programming Guide); across majors it does not."""
    from core.rulebook.contract import kernels_run_on

    builds = (70, 75, 80, 89, 90, 100, 120)
    assert [sm for sm in (61, 70, 75, 80, 86, 87, 89, 90, 100, 103, 120, 121) if not kernels_run_on(builds, sm)] == [61]
    assert not kernels_run_on((75, 90), 86)
    assert not kernels_run_on((80,), 90)


def test_vllms_published_image_serves_an_a10_on_aibrixs_quickstart(monkeypatch):
    """AIBrix's quickstart (vllm-project/aibrix samples/quickstart/model.yaml, Apache-2.0; the corpus case
    carries its source and commit) runs vllm/vllm-openai:v0.11.0 on VKE's A10 pool (sm_86): the build's
    sm_80 kernels run there. A build without sm_80 still leaves the A10 without kernels."""
    import json

    from core.engines import contracts
    from tests.policies import corpus

    case = corpus.CORPUS / "cases" / "aibrix-quickstart.yaml"
    use_stack_config(json.loads(corpus._config(corpus.header(case)["Inventory"])))
    resources = load_manifest_dir(case, stack="corpus")
    assert [v.message for v in run_policy(policy("engine-contract"), resources) if "kernels" in v.message] == []
    rel = contracts.release("0.11.0")
    (build,) = rel.image_builds
    narrowed = rel.model_copy(update={"image_builds": (build.model_copy(update={"capabilities": (75, 90)}),)})
    monkeypatch.setattr(contracts, "release_of_image", lambda image: narrowed if "0.11.0" in image else None)
    found = [v.message for v in run_policy(policy("engine-contract"), resources) if "kernels" in v.message]
    assert any("is built for sm_75, sm_90: no kernels for the NVIDIA-A10's sm_86" in m for m in found), found
