"""gpu-runtime-class: GPU pods set runtimeClassName nvidia (seed 001, 003)."""

from __future__ import annotations

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


def _deployment(runtime: str = "", gpu: str = "1", replicas: int = 1) -> str:
    rc = f"runtimeClassName: {runtime}" if runtime else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: srv, namespace: llm-serving}}
spec:
  replicas: {replicas}
  template:
    spec:
      {rc}
      containers:
      - name: a
        image: x@sha256:{'0' * 64}
        resources: {{limits: {{nvidia.com/gpu: "{gpu}"}}}}
"""


def _run(text: str, config=None):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return run_policy(policy("gpu-runtime-class"), manifests(text), config)


def test_seed_001_message_names_object_cards_and_fix_and_carries_the_urn():
    (v,) = _run(_deployment())
    assert v.message.startswith("Deployment srv: pods hold 1 card(s) of nvidia.com/gpu but set no runtimeClassName;"
                                " GPU pods need runtimeClassName nvidia")
    assert "runtimeClassName: nvidia" in v.message
    assert v.urn.endswith("kubernetes:apps/v1:Deployment::llm-serving/srv")


def test_parked_gpu_workload_is_still_judged():
    """Unparking is one replicas change; the pod template must already be right."""
    assert len(_run(_deployment(replicas=0))) == 1


def test_no_cards_means_no_rule():
    assert _run(_deployment(gpu="0")) == []


def test_runtime_class_parameter_overrides_the_default():
    assert _run(_deployment(runtime="nvidia-cdi"), {"runtimeClassName": "nvidia-cdi"}) == []
    (v,) = _run(_deployment(runtime="nvidia"), {"runtimeClassName": "nvidia-cdi"})
    assert "set runtimeClassName nvidia; GPU pods need runtimeClassName nvidia-cdi" in v.message


def _public_inventory() -> None:
    """A cluster whose inventory does not say GPU pods need a RuntimeClass (GKE, GPU Operator)."""
    config = load_stack_file(DEFAULT_STACK_FILE)
    cluster = dict(config["llm-serving:cluster"])
    cluster.pop("gpu_runtime_class")
    use_stack_config({**config, "llm-serving:cluster": cluster})


def test_not_run_when_the_inventory_does_not_say_the_cluster_needs_a_runtime_class():
    _public_inventory()
    assert run_policy(policy("gpu-runtime-class"), manifests(_deployment())) == []
    assert run_policy(policy("gpu-runtime-class"), manifests(_deployment(runtime="runc"))) == []
    # The parameter still asks for it explicitly.
    (v,) = run_policy(policy("gpu-runtime-class"), manifests(_deployment()), {"runtimeClassName": "nvidia"})
    assert "need runtimeClassName nvidia" in v.message


def test_the_users_inventory_says_nvidia():
    config = load_stack_file(DEFAULT_STACK_FILE)
    assert config["llm-serving:cluster"]["gpu_runtime_class"] == "nvidia"


def test_other_types_are_not_judged():
    text = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: llm-serving}\nspec: {selector: {app: x}}\n"
    assert _run(text) == []
