"""multi-gpu-shm: pods with more than one card mount a sized, Memory-backed /dev/shm (coder.yaml)."""

from __future__ import annotations

from policylib.pack import policy
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file


def _pod(cards, shm_volume: str, memory_limit: str = "40Gi", mount: str = "/dev/shm") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: tp, namespace: llm-serving}}
spec:
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
      - name: server
        image: x
        args: [--w, /mnt/models/m, --d, "0,1"]
        resources: {{limits: {{memory: {memory_limit}, nvidia.com/gpu: {cards}}}}}
        volumeMounts: [{{name: shm, mountPath: {mount}}}]
      volumes:
      - {shm_volume}
"""


def _run(text: str, config=None):
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(policy("multi-gpu-shm"), manifests(text), config)]


GOOD = "{name: shm, emptyDir: {medium: Memory, sizeLimit: 8Gi}}"


def test_a_right_shm_passes_and_so_does_a_trailing_slash_and_grpc_floats():
    assert _run(_pod(2, GOOD)) == []
    assert _run(_pod(2.0, GOOD, mount="/dev/shm/")) == []


def test_one_card_needs_no_shm():
    assert _run(_pod(1, "{name: shm, emptyDir: {}}", mount="/scratch")) == []


def test_a_volume_that_is_not_an_empty_dir():
    (message,) = _run(_pod(2, "{name: shm, hostPath: {path: /dev/shm}}"))
    assert "mounts volume shm at /dev/shm, which is not an emptyDir of the pod" in message


def test_memory_limit_must_cover_the_size_limit_and_the_message_gives_both():
    (message,) = _run(_pod(4, GOOD, memory_limit="4Gi"))
    assert message.startswith("Deployment tp, container server: pods hold 4 cards and the container's resources.limits.memory "
                              "4,096 MiB does not cover its /dev/shm sizeLimit 8Gi (8,192 MiB)")


def test_no_memory_limit_is_not_a_finding():
    """Without a limit the tmpfs is bounded by the node, not by a cgroup that OOM-kills the server."""
    text = _pod(2, GOOD).replace("memory: 40Gi, ", "")
    assert _run(text) == []


def test_min_size_parameter():
    small = "{name: shm, emptyDir: {medium: Memory, sizeLimit: 512Mi}}"
    (message,) = _run(_pod(2, small))
    assert "sizeLimit 512Mi is below 1024 MiB" in message
    assert _run(_pod(2, small), {"minSizeLimitMiB": 256}) == []


def test_disk_backed_and_unsized_report_one_violation_each():
    messages = _run(_pod(2, "{name: shm, emptyDir: {}}"))
    assert len(messages) == 2
    assert "is not medium: Memory" in messages[0] and "has no sizeLimit" in messages[1]
