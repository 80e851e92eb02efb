"""Seed 001's state for real: the pack refuses it in review, and the scheduler agrees.

After seed 001 the directory asked worker-1 for 6 of its 4 cards (candle-vllm 2 added while the
coder InferenceService's 2, clef-serve's 1 and reasoning's 1 were still managed), and a server
waited Pending forever. ``tests/stacks/after-001.yaml`` is that state as a stack file.

1. ``pulumi preview --policy-pack policies`` refuses it, with the same verdicts (policy,
   resource, level) as the offline runner (``tools.analyze``) gives for the same stack file.
2. ``pulumi up`` without the pack applies it; the scheduler then leaves a GPU pod Pending with
   ``Insufficient nvidia.com/gpu``, the cards of the pods that did schedule fit the node's 4,
   and the cards asked by all pods together are the pack's count (6). The update itself waits
   for the Pending Deployment, so the test interrupts it once the scheduler has spoken.
"""

from __future__ import annotations

import re

import pytest

from tests.real.realpath import STACKS, RealProject, kubectl_json, offline_verdicts, policy_messages, policy_verdicts, wait_for
from tools import analyze

pytestmark = pytest.mark.real

STACK = "after-001"
NS = "llm-serving"


def test_the_pack_refuses_seed_001_with_the_offline_runners_verdicts(project: RealProject, stack):
    res = project.preview(STACK)
    assert res.code != 0, res
    real = policy_verdicts(res.events)
    assert any(p == "gpu-card-allocation" and lvl == "mandatory" for p, _, lvl in real), res
    assert any("worker-1: 6 of 4 cards requested" in m for m in policy_messages(res.events)), res
    assert real == offline_verdicts(STACKS / f"{STACK}.yaml", STACK)


def _cards(pod) -> int:
    return sum(int(c["resources"].get("requests", {}).get("nvidia.com/gpu", 0)) for c in pod["spec"]["containers"])


def test_applied_without_the_pack_the_scheduler_leaves_a_gpu_pod_pending(project: RealProject, stack, cluster):
    pack = analyze.analyze_program(STACKS / f"{STACK}.yaml", stack=STACK)
    message = next(f.message for f in pack.findings if f.policy == "gpu-card-allocation")
    m = re.search(r"worker-1: (\d+) of (\d+) cards", message)
    assert m, message
    pack_asked, pack_capacity = int(m.group(1)), int(m.group(2))
    assert (pack_asked, pack_capacity) == (6, 4), message

    proc = project.start("up", "--yes", "--skip-preview", "--stack", STACK)
    try:
        def unschedulable():
            events = kubectl_json(cluster, "get", "events", "-n", NS, "--field-selector", "reason=FailedScheduling")["items"]
            return [e for e in events if "Insufficient nvidia.com/gpu" in e.get("message", "")] or None

        failed = wait_for(unschedulable, 240, interval_s=2, what="a FailedScheduling event for nvidia.com/gpu")

        # Every Deployment (and the KServe stand-in's predictors) creates its pods in its own
        # time: the cards all pods ask must come to the pack's count.
        def all_pods():
            pods = kubectl_json(cluster, "get", "pods", "-n", NS)["items"]
            return pods if sum(_cards(p) for p in pods) == pack_asked else None

        pods = wait_for(all_pods, 120, interval_s=2, what=f"pods asking {pack_asked} cards in all (the pack's count)")
    finally:
        project.stop(proc)

    pending = [p for p in pods if p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName") and _cards(p)]
    scheduled = [p for p in pods if p["spec"].get("nodeName") == "worker-1"]
    assert pending, "no GPU pod left Pending"
    assert {f["involvedObject"]["name"] for f in failed} & {p["metadata"]["name"] for p in pending}
    assert sum(_cards(p) for p in scheduled) <= pack_capacity
