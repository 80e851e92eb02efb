"""A stack file's dtype, quantities, capacity and cards, from the stack file to the pack.

1. ``dtype`` and capacity: every dtype the stack-file type takes loads; the pack judges it once
   on the rendered manifest (``vllm-volta`` / ``candle-vllm-args`` refuse all but the card's half
   dtype, ``kv-cache-fits-max-model-len`` the KV pool), its fix in stack-file keys.
2. Kubernetes quantities: one parser (``core.k8s.quantity``) on both sides. ``1Pi`` is a valid
   quantity and is accepted by the stack file (it was refused, "not a memory quantity");
   ``1e3Mi`` and ``lots`` are not Kubernetes quantities (the grammar allows an exponent OR a
   suffix, not both: ``k8s.io/apimachinery/pkg/api/resource`` ``<suffix> ::= <binarySI> |
   <decimalExponent> | <decimalSI>``) and are refused on both sides with the key path (the
   pack counted ``1e3Mi`` as 1000 Mi and ignored ``lots``).
3. Cards per node: the stack output's card table, the preview summary and
   ``gpu-card-allocation`` count the same shares, through one function
   (``core.capacity.allocation.allocate``); an unpinned pod used to be "not placed" in the summary and
   packed onto a node by the policy.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import allocation as allocation_policies
import pytest

from policylib.pack import policy
from stackfile import CandleWorkload, ConfigError, VllmWorkload, load_stack_config
from stackfile.build import StackResources, render_manifests, stack_outputs
from tests.paths import PROD_STACK_FILE, ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tests.stackfile.verdicts import mandatory
from tests.tools.offline.test_summary import deployment, inventory, isvc
from tools.offline.manifests import load_stack_file, resources_from_documents
from tools.offline.summary import card_rows

PROD = load_stack_file(PROD_STACK_FILE)
W = "llm-serving:workloads"
STACKS = [PROD_STACK_FILE, *sorted((ROOT / "tests" / "stacks").glob("*.yaml"))]


@pytest.fixture(autouse=True)
def prod_in_the_pack():
    use_stack_config(PROD)
    yield
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))


def _load(change) -> tuple[Any, list]:
    config = copy.deepcopy(PROD)
    change(config)
    try:
        return load_stack_config(config), []
    except ConfigError as err:
        return None, err.problems


def _set(workload: str, **fields):
    def change(config):
        config[W][workload].update(fields)
        # A measurement holds for the settings it was taken at (docs/capacity.md): changed settings drop it.
        config[W][workload].pop("measured", None)
    return change


def _pack(policy: str, change) -> list[str]:
    """The mandatory findings of ``policy`` on the manifests prod renders with ``change``."""
    config = copy.deepcopy(PROD)
    change(config)
    return mandatory(config, policy)


# --- 1. dtype and capacity: judged once, by the pack on the rendered manifests -----------------

VLLM_DTYPES = VllmWorkload.model_fields["dtype"].annotation.__args__
CANDLE_DTYPES = CandleWorkload.model_fields["dtype"].annotation.__args__


@pytest.mark.parametrize("dtype", VLLM_DTYPES)
def test_vllm_dtype_on_the_v100_is_judged_by_the_pack(dtype):
    """Reasoning (vLLM on worker-1's V100): every dtype the stack-file type takes loads; the pack's
    vllm-volta refuses all but the half ones on the rendered InferenceService."""
    assert _load(_set("reasoning", dtype=dtype))[1] == []
    found = _pack("vllm-volta", _set("reasoning", dtype=dtype))
    assert bool(found) is (dtype not in ("float16", "half")), found


def test_dtype_auto_is_refused_by_the_pack_with_the_stack_file_fix():
    """``dtype: auto`` takes the checkpoint's dtype; the pack says which to set, in stack-file keys."""
    (m,) = _pack("vllm-volta", _set("reasoning", dtype="auto"))
    assert "dtype: float16" in m and "under llm-serving:workloads.reasoning" in m


@pytest.mark.parametrize("dtype", CANDLE_DTYPES)
def test_candle_dtype_on_the_v100_is_judged_by_the_pack(dtype):
    assert _load(_set("candle-vllm", dtype=dtype))[1] == []
    found = _pack("candle-vllm-args", _set("candle-vllm", dtype=dtype))
    assert bool(found) is (dtype != "f16"), found


def test_capacity_is_refused_by_the_pack():
    """weights-fit-card / kv-cache-fits-max-model-len judge the estimate core.capacity.estimator.estimate
    makes from the rendered argv. (The pool went from 129,984 to 124,400 tokens: runtime memory
    and the sampler's sort, tests/core/test_capacity.py.)"""
    (m,) = _pack("kv-cache-fits-max-model-len", _set("candle-vllm", kv_fraction=0.01))
    assert "no room for a KV cache" in m and "under llm-serving:workloads.candle-vllm" in m
    # With YaRN stretching the window to 262,144 (factor 8 from 32,768), the KV pool is what refuses it.
    yarn8 = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 32768}
    (m,) = _pack("kv-cache-fits-max-model-len", _set("reasoning", max_model_len=262144, rope_scaling=yarn8))
    assert "the pool holds about 124,400 tokens on one Tesla-V100-PCIE-32GB" in m
    assert "Fix: lower max_model_len to at most 124,400" in m and "under llm-serving:workloads.reasoning" in m


def test_capacity_takes_the_vllm_release_from_the_stack_files_image():
    """The stack file's vLLM image names the release whose profile applies; v0.17.0's
    sampler warm-up needs no sort, so the same server holds more tokens than on v0.11.0."""
    image = "vllm/vllm-openai:v0.17.0@sha256:" + "0" * 64
    yarn8 = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 32768}
    (m,) = _pack("kv-cache-fits-max-model-len", _set("reasoning", max_model_len=262144, rope_scaling=yarn8, image=image))
    held = re.search(r"at most ([\d,]+)", m)
    assert held and int(held.group(1).replace(",", "")) > 124_400, m


# --- 2. quantities ----------------------------------------------------------------------------

def _limits(memory: str):
    def change(config):
        config[W]["reasoning"]["resources"]["limits"]["memory"] = memory
    return change


def test_stack_file_accepts_a_pebibyte_limit():
    """``1Pi`` is a valid quantity; a limit may exceed the node (overcommit is allowed)."""
    config, problems = _load(_limits("1Pi"))
    assert problems == []
    assert config.workloads["reasoning"].resources.limits.memory == "1Pi"


@pytest.mark.parametrize("value", ["1e3Mi", "lots", "12 Gi", "1K", "NaN", "1_0Gi"])
def test_stack_file_refuses_what_kubernetes_refuses(value):
    _, problems = _load(_limits(value))
    (p,) = problems
    assert p.path == f"{W}.reasoning.resources.limits.memory"
    assert p.value == value
    assert "not a Kubernetes quantity" in p.rule


POD_WITH_MEMORY = """
apiVersion: apps/v1
kind: Deployment
metadata: {{name: m, namespace: llm-serving}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  selector: {{matchLabels: {{app: m}}}}
  template:
    metadata: {{labels: {{app: m}}}}
    spec:
      nodeSelector: {{kubernetes.io/hostname: worker-1}}
      containers:
      - name: server
        image: x@sha256:{digest}
        resources:
          requests: {{memory: "{memory}"}}
"""


@pytest.mark.parametrize("value", ["1e3Mi", "lots"])
def test_pack_refuses_an_invalid_quantity_with_its_key_path(value):
    text = POD_WITH_MEMORY.format(memory=value, digest="0" * 64)
    messages = [v.message for v in run_policy(policy("node-memory-allocation"), manifests(text))]
    assert any(
        "spec.template.spec.containers[0].resources.requests.memory" in m and repr(value) in m
        and "not a Kubernetes quantity" in m
        for m in messages
    ), messages


def test_pack_counts_a_pebibyte_request():
    text = POD_WITH_MEMORY.format(memory="1Pi", digest="0" * 64)
    messages = [v.message for v in run_policy(policy("node-memory-allocation"), manifests(text))]
    assert len(messages) == 1 and "1,073,741,824 MiB" in messages[0], messages


# --- 3. cards per node ------------------------------------------------------------------------

def _policy_used(resources, inv) -> dict[str, float]:
    """What gpu-card-allocation counts per node: the arguments its validate passes to
    stack_helpers.report_allocation, placed by core.capacity.allocation.allocate."""
    from core.capacity import allocation
    from tools.offline.summary import view_of

    gpu = [w for w in view_of(resources).workloads if w.is_gpu]
    alloc = allocation.allocate(allocation.demands(gpu, allocation_policies._cards),
                                {n.name: n.cards for n in inv.nodes}, reserved=allocation.reservations(inv))
    return {name: use.used for name, use in alloc.nodes.items()}


@pytest.mark.parametrize("stack_file", STACKS, ids=lambda p: p.stem)
def test_card_table_summary_and_policy_agree_on_every_stack(stack_file):
    config = load_stack_config(load_stack_file(stack_file))
    resources = resources_from_documents(render_manifests(config), stack=stack_file.stem)
    table = stack_outputs(config, StackResources({}, {}, None))["cards"]
    rows, loose = card_rows(resources, config.cluster)
    assert loose == []
    summary = {r.node: r.used for r in rows}
    output = {node: row["used"] for node, row in table.items()}
    assert output == summary == _policy_used(resources, config.cluster)


def test_an_unpinned_pod_is_counted_where_the_policy_counts_it():
    """One node: an unpinned candle-vllm (2 cards) can only land on worker-1, so the summary
    counts it there, as gpu-card-allocation does (6 of 4)."""
    resources = [deployment("candle-vllm", 2, node=None), isvc("coder", 2), isvc("reasoning", 1),
                 deployment("clef-serve", 1)]
    inv = inventory({"name": "worker-1", "cards": 4})
    (row,), loose = card_rows(resources, inv)
    assert loose == []
    assert row.used == 6 == _policy_used(resources, inv)["worker-1"]
    assert row.line() == ["worker-1", "6 / 4  OVER by 2", "candle-vllm 2 (unpinned), coder 2, clef-serve 1, reasoning 1"]


def test_one_allocation_function(monkeypatch):
    """The policy, the summary and the stack output all call core.capacity.allocation.allocate."""
    import core.capacity.allocation

    calls: list[str] = []
    real = core.capacity.allocation.allocate

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(core.capacity.allocation, "allocate", spy)
    config = load_stack_config(PROD)
    resources = resources_from_documents(render_manifests(config), stack="prod")
    stack_outputs(config, StackResources({}, {}, None))
    assert len(calls) == 1
    card_rows(resources, config.cluster)
    assert len(calls) == 2
    run_policy(policy("gpu-card-allocation"), resources)
    assert len(calls) == 3


@pytest.mark.parametrize("value", ["1Pi", "12Gi", "500m", "1.5", ".5Ki", "1e3", "2E", "+4", "-1", "100n", "7u", "3k", "5M"])
def test_valid_quantities_parse_as_the_official_client_parses_them(value):
    """core.k8s.quantity is the official client's parse_quantity behind the API grammar."""
    from kubernetes.utils.quantity import parse_quantity

    from core.k8s import quantity

    assert quantity.parse(value) == parse_quantity(value)


def test_pack_names_an_invalid_shm_size_limit():
    import pods as pod_policies

    import core.k8s.manifests

    text = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: m, namespace: llm-serving}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: m}}
  template:
    metadata: {labels: {app: m}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker-1}
      volumes: [{name: shm, emptyDir: {medium: Memory, sizeLimit: lots}}]
      containers:
      - name: server
        image: x
        volumeMounts: [{name: shm, mountPath: /dev/shm}]
        resources: {limits: {nvidia.com/gpu: "2", memory: 32Gi}}
"""
    (r,) = manifests(text)
    w = core.k8s.manifests.workload(r.type, r.props, r.urn)
    (c,) = w.containers
    (breach,) = pod_policies.multi_gpu_shm_container_problems(w, c, 1024)
    assert "the container volume shm sizeLimit: 'lots' is not a Kubernetes quantity; write e.g. \"8Gi\"" in breach.wrong
