"""core.rulebook.capacity_view (through policylib.capacity_helpers in the pack): the capacity read model the policies and the preview summary share."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import core.k8s.manifests
from core.capacity.inventory import ClusterInventory
from core.engines.config import human_int
from core.rulebook import capacity_view as ch
from policylib import stackconfig
from tests.policy_harness import DEFAULT_STACK_FILE, FIXTURES, manifests, use_stack_config
from tools.offline.manifests import load_manifest_dir, load_stack_file

PROD_SERVERS = [
    FIXTURES / "kv-cache-fits-max-model-len/allowed/candle-vllm-14b-tp2.yaml",
    FIXTURES / "kv-cache-fits-max-model-len/allowed/clef-candle.yaml",
    FIXTURES / "kv-cache-fits-max-model-len/allowed/reasoning-64k.yaml",
]
PARKED_PYTORCH = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: clef-serve, namespace: llm-serving}
spec:
  replicas: 0
  template:
    spec:
      containers:
      - {name: clef, image: "forgejo.riotpiao.com/riotpiao-poimen/clef-serve:latest", resources: {limits: {nvidia.com/gpu: "1"}}}
"""


@pytest.fixture
def config():
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return stackconfig.inventory(), stackconfig.models()


def view(resources):
    return core.k8s.manifests.stack_view(SimpleNamespace(resource_type=r.type, props=r.props, urn=r.urn) for r in resources)


def test_prod_servers_give_one_row_each_with_their_numbers(config):
    """The three running servers of the intended prod state (spec), as the preview shows them;
    the parked PyTorch clef-serve runs no vLLM or candle-vllm and has no row.

    Changed when the runtime memory and the sampler's sort were counted (tests/core/test_capacity.py says
    why): coder 150,848 -> 143,872 tokens, reasoning 129,984 / 1.98x -> 124,400 / 1.90x."""
    resources = [r for path in PROD_SERVERS for r in load_manifest_dir(path)] + manifests(PARKED_PYTORCH)
    rows = ch.capacity_rows(view(resources), *config)
    assert [(r.server, r.engine, r.model, r.cards) for r in rows] == [
        ("candle-vllm", "candle-vllm", "coder-14b-fp16", 2),
        ("clef-candle", "candle-vllm", "clef-flash", 1),
        ("reasoning", "vllm", "qwen3-30b-a3b-gptq-int4", 1),
    ]
    coder, clef, reasoning = rows
    assert (round(coder.weights_gib_per_card, 2), coder.kv_tokens, coder.max_model_len) == (15.21, 143_872, 32_768)
    assert (round(reasoning.weights_gib_per_card, 2), reasoning.kv_tokens, reasoning.max_model_len) == (15.65, 124_400, 65_536)
    assert round(reasoning.concurrency, 2) == 1.90
    assert all(r.fits and r.problem is None and r.node == "worker-1" for r in rows)
    assert clef.card == "Tesla-V100-PCIE-32GB"


def test_unknown_model_row_says_why_and_server_estimate_is_none(config):
    inv, models = config
    (r,) = manifests(open(PROD_SERVERS[2]).read().replace("Qwen/Qwen3-30B-A3B-GPTQ-Int4", "acme/unknown"))  # noqa: PTH123, SIM115
    w = core.k8s.manifests.workload(r.type, r.props, r.urn)
    (c, s), = w.servers
    assert ch.server_estimate(w, c, s, inv, models) is None
    (row,) = ch.capacity_rows(view([r]), inv, models)
    assert row.kv_tokens is None and row.fits is None
    assert row.problem.startswith("model acme/unknown (--model) is not in the stack's models (llm-serving:models)")


def test_card_for_pinned_unpinned_and_missing_nodes(config):
    inv = ClusterInventory.model_validate({"nodes": [
        {"name": "b-small", "cards": 2, "card": {"product": "Small-16GB", "memory_mib": 16384, "compute_capability": "7.5",
                                                   "nvlink": False, "hbm_bandwidth_gb_s": 300}, "allocatable_memory_mib": 1000},
        {"name": "a-v100", "cards": 4, "card": {"product": "Tesla-V100-PCIE-32GB", "memory_mib": 32768,
                                                "compute_capability": "7.0", "nvlink": False, "hbm_bandwidth_gb_s": 900},
         "allocatable_memory_mib": 63495},
        {"name": "cpu", "cards": 0, "allocatable_memory_mib": 1000},
    ]})

    def workload(cards, node=None):
        sel = f"nodeSelector: {{kubernetes.io/hostname: {node}}}" if node else ""
        (r,) = manifests(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: w}}
spec:
  template:
    spec:
      {sel}
      containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: "{cards}"}}}}}}]
""")
        return core.k8s.manifests.workload(r.type, r.props, r.urn)

    assert ch.card_for(workload(1), inv)[:2] == ("b-small", inv.node("b-small").card)  # smallest card
    assert ch.card_for(workload(3), inv)[0] == "a-v100"  # the small node has 2 cards
    assert ch.card_for(workload(1, "a-v100"), inv)[0] == "a-v100"  # pinned wins
    assert ch.card_for(workload(1, "gone"), inv) == ("gone", None, "node gone is not in the stack's inventory (llm-serving:cluster)")
    assert ch.card_for(workload(1, "cpu"), inv)[2] == "node cpu has no card spec in the inventory"
    assert ch.card_for(workload(8), inv)[2] == "no node in the inventory has 8 card(s)"


@pytest.mark.parametrize("text, value", [("65536", 65536), ("64k", 64_000), ("64K", 65_536), ("1.5M", 1_572_864), ("x", None), (None, None)])
def test_human_int_reads_vllm_spellings(text, value):
    assert human_int(text) == value


def test_the_pack_takes_the_vllm_release_from_the_containers_image(config):
    """The vLLM release comes from the image tag (core.catalog.images). The reasoning server
    of the prod fixture, on v0.6.4 (V0 on sm_70: the profile runs 2048 tokens, chunked prefill
    being on above 32,768, and the driver rank samples), on v0.17.0 (no sort in the sampler
    warm-up: less activation, a larger pool) and on v0.11.0 as in prod."""
    inv, models = config
    text = open(PROD_SERVERS[2]).read()  # noqa: PTH123, SIM115
    pools = {}
    for tag in ("v0.6.4", "v0.11.0", "v0.17.0"):
        (r,) = manifests(text.replace("vllm/vllm-openai:v0.11.0@", f"vllm/vllm-openai:{tag}@"))
        w = core.k8s.manifests.workload(r.type, r.props, r.urn)
        (c, s), = w.servers
        e = ch.server_estimate(w, c, s, inv, models)
        assert e is not None and e.engine_version == tuple(int(x) for x in tag[1:].split("."))
        pools[tag] = e
    assert pools["v0.11.0"].kv_tokens == 124_400  # prod
    assert pools["v0.17.0"].activation_gib < pools["v0.11.0"].activation_gib
    assert pools["v0.17.0"].kv_tokens > pools["v0.11.0"].kv_tokens
    assert round(pools["v0.6.4"].runtime_gib, 2) == 0.35 and round(pools["v0.11.0"].runtime_gib, 2) == 0.15
