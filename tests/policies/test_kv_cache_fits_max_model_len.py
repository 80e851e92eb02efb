"""kv-cache-fits-max-model-len: fixtures, the coder.yaml history, and the card a server is judged on."""

from __future__ import annotations

import json

import pulumi.runtime
import pytest

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tests.policy_harness import FIXTURES as FIXTURES_DIR
from tools.offline.manifests import load_stack_file

V100 = {
    "product": "Tesla-V100-PCIE-32GB", "memory_mib": 32768, "compute_capability": "7.0", "nvlink": False,
    "hbm_bandwidth_gb_s": 900,
}
A100_80 = {
    "product": "NVIDIA-A100-SXM4-80GB", "memory_mib": 81920, "compute_capability": "8.0", "nvlink": True,
    "hbm_bandwidth_gb_s": 2039,
}
CODER_MODEL = "ModelCloud/Qwen3-Coder-30B-A3B-Instruct-GPTQMODEL-W4A16-A"


@pytest.fixture(autouse=True)
def default_stack():
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    yield
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))


def vllm(args: list[str], cards: int = 1, node: str | None = "worker-1", name: str = "coder", replicas: int = 1) -> str:
    selector = f"nodeSelector: {{kubernetes.io/hostname: {node}}}" if node else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: llm-serving}}
spec:
  replicas: {replicas}
  template:
    spec:
      {selector}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: {json.dumps(args)}
        resources: {{limits: {{nvidia.com/gpu: "{cards}"}}}}
"""


def coder_args(tp: int, mml: str = "262144") -> list[str]:
    return [
        f"--model={CODER_MODEL}", "--dtype=float16", f"--max-model-len={mml}", f"--tensor-parallel-size={tp}",
        "--gpu-memory-utilization=0.90", "--max-num-seqs=4", "--max-num-batched-tokens=8192",
    ]


def run(text: str, config: dict | None = None) -> list[str]:
    if config is not None:
        use_stack_config(config)
    return [v.message for v in run_policy(policy("kv-cache-fits-max-model-len"), manifests(text))]


def test_history_coder_262k_fits_at_tp2_and_not_at_tp1():
    """coder.yaml: 262,144 tokens do not fit one V100 (measured pool 132,672 tokens; the
    estimate is 134,736) and fit at TP=2; the message names both numbers and the card. (136,384
    and 444,464 before the runtime memory a rank holds was counted.)"""
    assert run(vllm(coder_args(2), cards=2)) == []
    (message,) = run(vllm(coder_args(1), cards=1))
    assert message.startswith(
        "Deployment coder: --max-model-len 262,144 needs 262,144 tokens of KV cache; the pool holds about "
        "134,736 tokens on one Tesla-V100-PCIE-32GB at --gpu-memory-utilization 0.90"
    )
    assert "vLLM refuses to start" in message
    assert "lower --max-model-len to at most 134,736" in message
    assert "run TP=2 on 2 cards" in message and "about 432,448 tokens" in message


def test_human_readable_and_underscore_spellings_are_read():
    """VLLM reads "256K" as 262,144 (human_readable_int) and accepts --max_model_len."""
    args = [a.replace("--max-model-len=262144", "--max_model_len=256K") for a in coder_args(1)]
    (message,) = run(vllm(args))
    assert "max-model-len 262,144 needs" in message


def test_pool_just_large_enough_passes_and_one_block_more_fails():
    assert run(vllm(coder_args(1, "134736"))) == []
    (message,) = run(vllm(coder_args(1, "134737")))
    assert "max-model-len 134,737 needs" in message


def test_no_larger_tp_suggested_when_the_node_has_no_more_cards():
    config = dict(load_stack_file(DEFAULT_STACK_FILE))
    config["llm-serving:cluster"] = {"nodes": [{"name": "small", "cards": 1, "card": V100, "allocatable_memory_mib": 63495}]}
    (message,) = run(vllm(coder_args(1), node="small"), config)
    assert "give the server more cards" in message and "run TP=" not in message


def test_unpinned_pod_is_judged_on_the_smallest_card_that_could_take_it():
    """Two nodes: 4 x V100 32 GB and 4 x A100 80 GB. Unpinned, the pod could land on the V100,
    where 262,144 tokens do not fit; pinned to the A100 node it fits."""
    config = dict(load_stack_file(DEFAULT_STACK_FILE))
    config["llm-serving:cluster"] = {"nodes": [
        {"name": "big", "cards": 4, "card": A100_80, "allocatable_memory_mib": 500000},
        {"name": "worker-1", "cards": 4, "card": V100, "allocatable_memory_mib": 63495},
    ]}
    (message,) = run(vllm(coder_args(1), node=None), config)
    assert "on one Tesla-V100-PCIE-32GB" in message
    assert run(vllm(coder_args(1), node="big"), config) == []


def test_unpinned_pod_skips_nodes_without_enough_cards():
    """A 2-card pod cannot land on a 1-card node with a bigger card: the V100 node judges it."""
    config = dict(load_stack_file(DEFAULT_STACK_FILE))
    config["llm-serving:cluster"] = {"nodes": [
        {"name": "big", "cards": 1, "card": A100_80, "allocatable_memory_mib": 500000},
        {"name": "worker-1", "cards": 4, "card": V100, "allocatable_memory_mib": 63495},
    ]}
    args = coder_args(2, "600000")
    (message,) = run(vllm(args, cards=2, node=None), config)
    assert "on each of 2 Tesla-V100-PCIE-32GB cards" in message


def test_pinned_to_a_node_missing_from_the_inventory_is_left_to_gpu_card_allocation():
    assert run(vllm(coder_args(1), node="worker-9")) == []


def test_parked_server_is_still_judged():
    """A parked server's arguments are what unparking starts: a wrong context is reported now."""
    (message,) = run(vllm(coder_args(1), replicas=0))
    assert "262,144 needs" in message


def test_two_servers_in_one_pod_are_named_by_container():
    text = f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: pair, namespace: llm-serving}}
spec:
  template:
    spec:
      nodeSelector: {{kubernetes.io/hostname: worker-1}}
      containers:
      - {{name: a, image: vllm/vllm-openai:v0.11.0, args: {json.dumps(coder_args(1))}, resources: {{limits: {{nvidia.com/gpu: "1"}}}}}}
      - {{name: b, image: vllm/vllm-openai:v0.11.0, args: {json.dumps(coder_args(1, "65536"))}, resources: {{limits: {{nvidia.com/gpu: "1"}}}}}}
"""
    (message,) = run(text)
    assert message.startswith("Deployment pair, container a: --max-model-len 262,144")


def test_refused_argument_is_reported_with_the_reason():
    (message,) = run(vllm(coder_args(1, "65536") + ["--gpu-memory-utilization=1.5"]))
    assert "the KV cache cannot be estimated: gpu-memory-utilization 1.5 is outside (0, 1]" in message


def test_invalid_stack_config_gives_one_violation_naming_the_key():
    pulumi.runtime.set_config("llm-serving:cluster", json.dumps({"nodes": []}))
    (message,) = run(vllm(coder_args(1)))
    assert message.startswith("Deployment coder: kv-cache-fits-max-model-len cannot check its KV cache: llm-serving:cluster is invalid")
    assert "Fix: give the stack file's config the llm-serving:cluster inventory" in message


def test_other_resource_types_are_not_read():
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: llm-serving}\nspec: {selector: {app: x}}\n"
    pulumi.runtime.set_config("llm-serving:cluster", "not json")
    assert run(service) == []


def _l4_server(tag: str, env: str = "[]") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: llama, namespace: serving}}
spec:
  template:
    spec:
      nodeSelector: {{kubernetes.io/hostname: l4-0}}
      containers:
      - name: server
        image: vllm/vllm-openai:{tag}
        args: [--model, meta-llama/Llama-3.1-8B-Instruct, --max-model-len, "32768"]
        env: {env}
        resources: {{limits: {{nvidia.com/gpu: "1"}}}}
"""


def test_the_sampler_warm_up_is_sized_as_the_release_samples():
    """Llama-3.1-8B at 32,768 tokens on an L4: vLLM 0.11.0 samples with FlashInfer by default there
    (its topk_topp_sampler.py: unset is on; FlashInfer supports sm_75 and up), so the profile's
    warm-up holds no sort and the pool holds about 35,168 tokens: it fits. Sized as the sort (which
    0.11.0 takes only with VLLM_USE_FLASHINFER_SAMPLER=0, and 0.14.1 by default) it holds about
    29,152 and vLLM refuses to start."""
    public = load_stack_file(FIXTURES_DIR / "Pulumi.public.yaml")
    assert run(_l4_server("v0.11.0"), public) == []
    (message,) = run(_l4_server("v0.11.0", "[{name: VLLM_USE_FLASHINFER_SAMPLER, value: '0'}]"), public)
    assert "the pool holds about 29,152 tokens on one NVIDIA-L4" in message
    (message,) = run(_l4_server("v0.14.1"), public)
    assert "the pool holds about 29,152 tokens on one NVIDIA-L4" in message
