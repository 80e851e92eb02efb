"""Values Kubernetes would refuse are refused at the stack file, at their
key path, by Kubernetes' own rules (core.k8s.kube: apimachinery's validation.go regexes and limits,
the distribution reference grammar for images, int32 API fields), and counts are whole numbers
written as numbers (``cards: true`` was 1 card).
"""

from __future__ import annotations

import copy

import pytest

from core.k8s import kube
from stackfile import ConfigError, load_stack_config
from tests.paths import PROD_STACK_FILE
from tools.offline.manifests import load_stack_file

PROD = load_stack_file(PROD_STACK_FILE)
W = "llm-serving:workloads"


def problems_of(edit) -> dict[str, object]:
    config = copy.deepcopy(PROD)
    edit(config)
    with pytest.raises(ConfigError) as err:
        load_stack_config(config)
    return {p.path: p for p in err.value.problems}


def workload(name: str, **fields):
    def edit(config):
        config[W][name].update(fields)
    return edit


@pytest.mark.parametrize("edit, path, words", [
    (workload("candle-vllm", node="Worker_1"), f"{W}.candle-vllm.node", "node name 'Worker_1' is refused by Kubernetes"),
    (workload("candle-vllm", node=""), f"{W}.candle-vllm.node", "node name '' is refused"),
    (workload("candle-vllm", node="a" * 64), f"{W}.candle-vllm.node", "kubernetes.io/hostname label value"),
    (workload("reasoning", labels={"app.kubernetes.io/name": "llm reasoning"}),
     f"{W}.reasoning.labels.app.kubernetes.io/name", "label value 'llm reasoning'"),
    (workload("reasoning", labels={"-bad/key": "x"}), f"{W}.reasoning.labels.-bad/key.[key]", "label key '-bad/key'"),
    (workload("candle-vllm", labels={"team": "x" * 64}), f"{W}.candle-vllm.labels.team", "no more than 63 characters"),
    (workload("candle-vllm", env={"MY-VAR": "1"}), f"{W}.candle-vllm.env.MY-VAR.[key]", "a C identifier"),
    (workload("candle-vllm", env={"1ST": "1"}), f"{W}.candle-vllm.env.1ST.[key]", "environment variable name '1ST'"),
    (workload("candle-vllm", image="forgejo.riotpiao.com/Riotpiao/candle-vllm:sm70"), f"{W}.candle-vllm.image",
     "InvalidImageName"),
    (workload("clef-serve", image="clef-serve:latest "), f"{W}.clef-serve.image", "leading or trailing whitespace"),
    (workload("reasoning", image="vllm/vllm-openai:v0.11.0@sha256:xyz"), f"{W}.reasoning.image", "is not an image reference"),
    (workload("candle-vllm", cold_start_seconds=10**12), f"{W}.candle-vllm.cold_start_seconds",
     "beyond the int32 the Kubernetes API accepts (2,147,483,647)"),
    (workload("candle-vllm", startup_probe={"failure_threshold": 2**31}),
     f"{W}.candle-vllm.startup_probe.failure_threshold", "less than or equal to 2147483647"),
    (workload("clef-candle", cards=True), f"{W}.clef-candle.cards", "true is a boolean, not a whole number"),
    (workload("clef-candle", cards=1.0), f"{W}.clef-candle.cards", "1.0 is a fraction, not a whole number"),
    (workload("clef-candle", cold_start_seconds="180"), f"{W}.clef-candle.cold_start_seconds", '"180" is text'),
    (workload("clef-candle", kv_fraction=True), f"{W}.clef-candle.kv_fraction", "true is a boolean, not a number"),
    (workload("clef-candle", models_pvc="LLM_models"), f"{W}.clef-candle.models_pvc", "name 'LLM_models' is refused"),
])
def test_a_value_kubernetes_refuses_is_refused_at_its_key(edit, path, words):
    found = problems_of(edit)
    assert path in found, sorted(found)
    assert words in found[path].rule, found[path].rule


def test_an_inference_service_name_too_long_for_kserves_pod_label_is_refused():
    def edit(config):
        config[W]["r" * 49] = config[W].pop("reasoning")
        config["llm-serving:services"]["reasoning-long-predictor"]["selects"] = "r" * 49
    found = problems_of(edit)
    p = found[f"{W}.{'r' * 49}"]
    assert "app: isvc." + "r" * 49 + "-predictor" in p.rule and "63" in p.rule
    assert p.fix == "shorten the workload's name to at most 48 characters"
    ok = copy.deepcopy(PROD)
    ok[W]["r" * 48] = ok[W].pop("reasoning")
    ok["llm-serving:services"]["reasoning-long-predictor"]["selects"] = "r" * 48
    load_stack_config(ok)


def test_a_card_whose_memory_contradicts_its_product_is_refused():
    def edit(config):
        config["llm-serving:cluster"]["nodes"][0]["card"]["memory_mib"] = 16384
    found = problems_of(edit)
    p = found["llm-serving:cluster.nodes.0.card"]
    assert ("memory_mib 16384 contradicts the product Tesla-V100-PCIE-32GB, for which the card catalog "
            "(core.catalog.cards) gives 32768 MiB (within 5%)") in p.rule


def test_a_card_memory_as_the_driver_reports_it_is_accepted():
    """nvidia-smi's figure names the card as well as the nameplate: an L4 at 23,034 MiB (24 GB
    nameplate, 6% apart) and an H200 at 143,771 MiB are not contradictions; an unknown product
    is judged by the size its name states (a 48GB name at 24,576 MiB is)."""
    from core.capacity.inventory import CardSpec

    def card(product, mib):
        return CardSpec(product=product, memory_mib=mib, compute_capability="8.9", nvlink=False,
                        hbm_bandwidth_gb_s=300)

    assert card("NVIDIA-L4", 23034).memory_mib == 23034
    assert card("NVIDIA-H200", 143771).memory_mib == 143771
    with pytest.raises(ValueError, match="for which its name states 49152 MiB"):
        card("Acme-Accelerator-48GB", 24576)


def test_an_inventory_node_name_is_a_kubernetes_node_name():
    def edit(config):
        config["llm-serving:cluster"]["nodes"][0]["name"] = "worker 1"
    found = problems_of(edit)
    assert "node name 'worker 1' is refused" in found["llm-serving:cluster.nodes.0.name"].rule


@pytest.mark.parametrize("check, good, bad", [
    # apimachinery validation_test.go's own examples
    (kube.dns1123_label_problems, ["a", "ab", "a-b", "0", "a" * 63], ["", "A", "a_b", "-a", "a-", "a.b", "a" * 64]),
    (kube.dns1123_subdomain_problems, ["a.b.c", "1.a", "a" * 253], ["", "a..b", "A.b", ".a", "a" * 254]),
    (kube.dns1035_label_problems, ["a", "a-1"], ["1a", "a_b", "A"]),
    (kube.label_key_problems, ["simple", "now-with-dashes", "1-starts-with-num", "example.com/Name_3", "a" * 63],
     ["", "nospecialchars%", "-leading", "trailing-", "/simple", "a" * 64, "Example.com/name", "a/b/c"]),
    (kube.label_value_problems, ["", "simple", "now-with-dashes", "1.2", "a" * 63], ["nospecial$", "-x", "x-", "a" * 64]),
    (kube.env_name_problems, ["A", "_A", "a_1"], ["1A", "A-B", "A.B", ""]),
    (kube.image_problems, ["nginx", "docker.io/library/nginx:1.27", "localhost:5000/a/b:c", "a/b@sha256:" + "0" * 64,
                           "forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70-gptq-slim"],
     ["", "Nginx", "nginx:", "nginx::1", "a b", "a/b@sha256:xyz", "x:" + "t" * 129]),
])
def test_core_kube_follows_apimachinery(check, good, bad):
    assert {v: check(v) for v in good} == {v: [] for v in good}
    assert [v for v in bad if not check(v)] == []


@pytest.mark.parametrize("value", ["Nvidia_Bad!", ""])
def test_the_gpu_runtime_class_is_a_kubernetes_object_name(value):
    """A RuntimeClass name is a DNS-1123 subdomain: 'Nvidia_Bad!' or '' would be rendered as the
    pods' runtimeClassName and refused by the API server (or, '', by the pack's own check)."""
    def edit(config):
        config["llm-serving:cluster"]["gpu_runtime_class"] = value
    found = problems_of(edit)
    assert "llm-serving:cluster.gpu_runtime_class" in found, found
