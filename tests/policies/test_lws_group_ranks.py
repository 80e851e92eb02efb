"""lws-group-ranks on the leader's argv as the kubelet runs it: ``$(LWS_GROUP_SIZE)`` inside ``sh -c`` is
the group's size, a variable the LeaderWorkerSet controller adds to every container of a group."""

from __future__ import annotations

import json

from core.k8s.manifests import pods
from policylib.pack import policy
from tests.policies import corpus
from tests.policy_harness import manifests, run_policy, use_stack_config
from tools.offline.manifests import load_manifest_dir

#: LeaderWorkerSet's own vLLM example (kubernetes-sigs/lws docs/examples/vllm/GPU/lws.yaml, Apache-2.0; the
#: corpus case carries its source and commit): size 2 x 8 cards, TP 8 x PP 2, the leader's script starting
#: Ray with --ray_cluster_size=$(LWS_GROUP_SIZE) before the server.
LWS_VLLM = corpus.CORPUS / "cases" / "lws-vllm-gpu.yaml"


def _use_inventory():
    use_stack_config(json.loads(corpus._config(corpus.header(LWS_VLLM)["Inventory"])))


def test_the_leaders_server_is_read_through_the_controllers_group_size():
    _use_inventory()
    leader, worker = pods.lws_workloads(
        next(r.props for r in load_manifest_dir(LWS_VLLM, stack="corpus") if r.type.endswith("LeaderWorkerSet")), "")
    (c,) = leader.containers
    assert (c.environment.value("LWS_GROUP_SIZE"), c.environment.value("LWS_WORKER_INDEX")) == ("2", "0")
    assert (c.server.tensor_parallel, c.server.pipeline_parallel) == (8, 2)
    assert worker.containers[0].environment.value("LWS_WORKER_INDEX") is None  # it differs by worker
    assert [e["name"] for e in c.env_list] == ["HF_TOKEN"]  # the manifest's own env list stays as written


def test_the_public_example_passes_and_a_group_too_small_for_its_ranks_fails():
    _use_inventory()
    assert run_policy(policy("lws-group-ranks"), load_manifest_dir(LWS_VLLM, stack="corpus")) == []
    text = LWS_VLLM.read_text().replace("--pipeline_parallel_size 2", "--pipeline_parallel_size 3")
    (v,) = run_policy(policy("lws-group-ranks"), manifests(text))
    assert "--tensor-parallel-size=8 x --pipeline-parallel-size=3 = 24 ranks, but a group of size 2 holds 16 cards" in v.message
