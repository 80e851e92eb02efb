"""autoscaler-within-cards beyond its fixtures: the other workloads on the node count, an HPA of a workload
that is not among the manifests is not judged."""

from __future__ import annotations

from policylib.pack import policies
from tests.paths import ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file

POLICY = next(p for p in policies() if p.name == "autoscaler-within-cards")
FIXTURE = ROOT / "policies" / "fixtures" / "autoscaler-within-cards" / "allowed" / "hpa-within-cards.yaml"


def judge(text: str) -> list[str]:
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(POLICY, manifests(text))]


def test_another_workloads_cards_on_the_node_leave_less_room():
    base = FIXTURE.read_text()
    assert judge(base) == []  # maxReplicas 2 x 2 cards on 4
    other = """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: clef, namespace: llm-serving}
spec:
  replicas: 1
  selector: {matchLabels: {app: clef}}
  template:
    metadata: {labels: {app: clef}}
    spec:
      nodeSelector: {kubernetes.io/hostname: worker-1}
      containers:
      - name: c
        image: ghcr.io/acme/clef:1
        resources: {limits: {nvidia.com/gpu: 1}}
"""
    (message,) = judge(base + other)
    assert "maxReplicas 2 pods x 2 cards = 4 cards, but worker-1 has 3 cards left for it" in message


def test_an_autoscaler_of_a_workload_not_in_the_manifests_is_not_judged():
    text = FIXTURE.read_text().replace("    name: coder-vllm\n  minReplicas", "    name: elsewhere\n  minReplicas")
    assert "name: elsewhere" in text
    assert judge(text.replace("maxReplicas: 2", "maxReplicas: 40")) == []


def test_a_leader_worker_set_scales_by_groups():
    lws = (ROOT / "policies" / "fixtures" / "lws-group-ranks" / "allowed" / "tp2-pp2-on-4-cards.yaml").read_text()
    hpa = """---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: coder-lws, namespace: llm-serving}
spec:
  scaleTargetRef: {apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, name: coder-vllm}
  minReplicas: 1
  maxReplicas: 2
"""
    (message,) = judge(lws + hpa)  # a group is 2 pods x 2 cards
    assert "maxReplicas 2 groups x 4 cards = 8 cards, but worker-1 has 4 cards left for it: every group past 1" in message
    assert judge(lws + hpa.replace("maxReplicas: 2", "maxReplicas: 1")) == []
