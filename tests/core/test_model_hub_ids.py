"""A model the catalog knows is recognised when a manifest names it by its hub id, in the forms teams
write (core.catalog.modelfacts.hub_ids, Models.find), so capacity and model rules judge it."""

from __future__ import annotations

import pytest

from core.catalog.modelfacts import CATALOG, ModelEntry, Models, hub_ids
from policylib.pack import policies
from tests.policy_harness import FIXTURES, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file

HUB = "Qwen/Qwen3-30B-A3B-GPTQ-Int4"


@pytest.mark.parametrize("arg, expected", [
    (HUB, [HUB]),
    (f"hf://{HUB}", [HUB]),
    (f"hf://{HUB}:5a6c3a1b", [HUB]),
    ("/root/.cache/huggingface/hub/models--Qwen--Qwen3-30B-A3B-GPTQ-Int4/snapshots/0a1b2c/", [HUB]),
    ("/models/Qwen3-30B-A3B-GPTQ-Int4", [HUB]),
    ("/mnt/models/qwen3-30b-a3b-gptq-int4/", [HUB]),
    ("/mnt/models/coder-14b-fp16", []),
    ("s3://bucket/Qwen3-30B-A3B-GPTQ-Int4", []),
    ("hf://not-a-repo", []),
])
def test_hub_ids(arg, expected):
    assert hub_ids(arg) == expected


def test_the_stack_entry_wins_and_the_catalog_answers_for_the_rest():
    entries = {"reasoning": ModelEntry(catalog=HUB, weights_path="/mnt/models/reasoning")}
    models = Models(entries=entries, facts={"reasoning": CATALOG[HUB]})
    for arg in (HUB, f"hf://{HUB}", "/models/Qwen3-30B-A3B-GPTQ-Int4", "/mnt/models/reasoning"):
        assert models.find(arg) == ("reasoning", CATALOG[HUB]), arg
    other = "Qwen/Qwen2.5-Coder-14B-Instruct"
    assert models.find(f"hf://{other}") == (other, CATALOG[other])
    assert models.find("Qwen/Not-In-The-Catalog") is None and models.find("/mnt/models/unknown") is None


@pytest.mark.parametrize("model", [
    "Qwen/Qwen3-Coder-30B-A3B-Instruct", "/models/Qwen3-Coder-30B-A3B-Instruct",
    "/data/hub/models--Qwen--Qwen3-Coder-30B-A3B-Instruct/snapshots/abc",
])
def test_weights_fit_card_judges_a_catalog_model_the_inventory_does_not_list(model):
    """The public inventory lists no Qwen3-Coder-30B-A3B-Instruct; its bf16 weights (about 57 GiB) do not fit an L4."""
    use_stack_config(load_stack_file(FIXTURES / "Pulumi.public.yaml"))
    policy = next(p for p in policies() if p.name == "weights-fit-card")
    found = run_policy(policy, manifests(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: coder, namespace: serving}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: coder}}}}
  template:
    metadata: {{labels: {{app: coder}}}}
    spec:
      nodeSelector: {{kubernetes.io/hostname: l4-0}}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "{model}", "--max-model-len", "8192"]
        resources: {{limits: {{nvidia.com/gpu: "1"}}}}
"""))
    assert len(found) == 1 and "(Qwen/Qwen3-Coder-30B-A3B-Instruct, TP=1)" in found[0].message, found
