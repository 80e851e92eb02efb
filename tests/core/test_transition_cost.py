"""What an update costs, offline: the servers it restarts and for how long, per object, in the
preview's ``--base`` diff (:mod:`core.transition_cost`), and the deletions it refuses unless the
stack file retires them (``llm-serving:retire``). The real plan's side is ``tests/tools/test_plan.py``;
on the loopback cluster, ``tests/real/test_real_update_cost.py``."""

from __future__ import annotations

import copy

import pytest

from core import transition_cost
from stackfile import ConfigError, load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tests.tools.offline.test_transition import run_preview, write_stack
from tools.offline import render
from tools.offline.manifests import load_stack_file

PROD = load_stack_file(PROD_STACK_FILE)
ISVC = "1-manifest/serving.kserve.io_v1beta1-inferenceservice-llm-serving-reasoning.yaml"
CANDLE = "1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml"
SERVICE = "1-manifest/v1-service-llm-serving-coder-predictor.yaml"


def _tree(config: dict) -> dict[str, dict]:
    return {render.render_path(m): m for m in render_manifests(load_stack_config(config))}


_write, _preview = write_stack, run_preview


def test_reasonings_shorter_context_restarts_it_for_its_cold_start(prod_base, tmp_path):
    cfg = copy.deepcopy(PROD)
    cfg["llm-serving:workloads"]["reasoning"]["max_model_len"] = 40960
    code, text = _preview("--stack-file", str(_write(tmp_path, "short", cfg)), "--base", str(prod_base),
                          "--out", str(tmp_path / "out"))
    assert code == 0, text
    assert "~  serving.kserve.io/v1beta1 InferenceService llm-serving/reasoning (update, RESTARTS reasoning)" in text
    assert "update in place" not in text
    assert ("cost: reasoning restarts (1 card(s) on worker-1): down about 600 s (Recreate: the old pod stops first, "
            "the new one needs its declared cold start); cause: spec.predictor.containers[name=kserve-container].args "
            "changes, which KServe copies into the predictor's pod template") in text
    assert "update cost: 1 model server(s) stop: reasoning restarts (down about 600 s)" in text


def _cost(path: str, change) -> transition_cost.ObjectCost:
    old = _tree(PROD)
    new = copy.deepcopy(old)
    change(new[path])
    [diff] = render.diff_trees(old, new).objects
    return diff.cost


@pytest.mark.parametrize("change, restarts", [
    (lambda o: o["metadata"]["annotations"].update({"team/owner": "a"}), True),  # copied to the pod template
    (lambda o: o["metadata"]["labels"].update({"team": "a"}), True),
    (lambda o: o["metadata"]["annotations"].update({"kubectl.kubernetes.io/last-applied-configuration": "{}"}), False),
    (lambda o: o["spec"]["predictor"]["containers"][0]["env"].append({"name": "X", "value": "1"}), True),
    (lambda o: o["spec"]["predictor"].update({"deploymentStrategy": {"type": "RollingUpdate"}}), False),
])
def test_which_inference_service_changes_roll_the_predictor(change, restarts):
    cost = _cost(ISVC, change)
    assert cost.restarts is restarts
    if restarts:
        [server] = cost.servers
        assert (server.server, server.effect, server.node, server.cards, server.down_seconds) == (
            "reasoning", "restarts", "worker-1", 1, 600)


def test_a_deployments_own_metadata_restarts_nothing_its_template_does():
    assert not _cost(CANDLE, lambda o: o["metadata"]["annotations"].update({"team/owner": "a"})).restarts
    cost = _cost(CANDLE, lambda o: o["spec"]["template"]["metadata"]["annotations"].update({"team/owner": "a"})
                 if o["spec"]["template"]["metadata"].get("annotations") is not None
                 else o["spec"]["template"]["metadata"].update({"annotations": {"team/owner": "a"}}))
    [server] = cost.servers
    assert (server.server, server.cards, server.down_seconds) == ("candle-vllm", 2, 300)
    assert "changes the pod template" in server.why


def test_a_service_port_change_restarts_nothing():
    assert _cost(SERVICE, lambda o: o["spec"]["ports"][0].update({"port": 81})) == transition_cost.ObjectCost()


def test_a_secrets_new_value_is_named_as_reaching_no_running_pod():
    cost = transition_cost.object_cost("update", {"kind": "Secret"}, {"kind": "Secret"}, ["stringData.HF_TOKEN"])
    assert not cost.restarts
    assert cost.lines() == ["cost: a Secret's new value reaches no running pod (environment variables are read at "
                            "start); it takes effect when the pods reading it next restart"]


def test_removing_a_workload_is_refused_unless_the_stack_file_retires_it(prod_base, tmp_path):
    cfg = copy.deepcopy(PROD)
    del cfg["llm-serving:workloads"]["clef-serve"]  # parked: no card, no Service selects it
    code, text = _preview("--stack-file", str(_write(tmp_path, "gone", cfg)), "--base", str(prod_base),
                          "--out", str(tmp_path / "out"))
    assert code == 1, text
    assert ("REFUSED: Deployment llm-serving/clef-serve: the update deletes it, and the stack file does not say that is "
            "intended") in text
    assert "Fix: if it should go, add it to the stack file: llm-serving:retire: {workloads: [clef-serve]}" in text
    cfg["llm-serving:retire"] = {"workloads": ["clef-serve"]}
    code, text = _preview("--stack-file", str(_write(tmp_path, "retired", cfg)), "--base", str(prod_base),
                          "--out", str(tmp_path / "out2"))
    assert code == 0, text
    assert "-  apps/v1 Deployment llm-serving/clef-serve (remove)" in text and "REFUSED" not in text


def test_deleting_the_network_policy_is_refused_unless_the_stack_file_retires_it(prod_base, tmp_path):
    """Every kind the stack manages is covered: renaming llm-serving:network_policy deletes the old
    NetworkPolicy (its namespace's ingress rules), which retire did not cover."""
    cfg = copy.deepcopy(PROD)
    cfg["llm-serving:network_policy"]["name"] = "llm-serving-ingress-v2"
    code, text = _preview("--stack-file", str(_write(tmp_path, "renamed", cfg)), "--base", str(prod_base),
                          "--out", str(tmp_path / "out"))
    assert code == 1, text
    assert "REFUSED: NetworkPolicy llm-serving/llm-serving-ingress: the update deletes it" in text
    assert "llm-serving:retire: {network_policies: [llm-serving-ingress]}" in text
    cfg["llm-serving:retire"] = {"network_policies": ["llm-serving-ingress"]}
    code, text = _preview("--stack-file", str(_write(tmp_path, "retired", cfg)), "--base", str(prod_base),
                          "--out", str(tmp_path / "out2"))
    assert code == 0, text
    cfg["llm-serving:retire"] = {"network_policies": ["llm-serving-ingress-v2"]}
    with pytest.raises(ConfigError, match="llm-serving-ingress-v2 is still in llm-serving:network_policy"):
        load_stack_config(cfg)


def test_retire_may_not_name_a_current_workload_or_service_nor_one_twice():
    cfg = copy.deepcopy(PROD)
    cfg["llm-serving:retire"] = {"workloads": ["reasoning", "old-one", "old-one"], "services": ["clef-serve"]}
    with pytest.raises(ConfigError) as err:
        load_stack_config(cfg)
    problems = {(p.path, p.value): p.rule for p in err.value.problems}
    assert problems == {
        ("llm-serving:retire.workloads[0]", "reasoning"): "reasoning is still in llm-serving:workloads, so it is not retired",
        ("llm-serving:retire.workloads[2]", "old-one"): "old-one is listed twice",
        ("llm-serving:retire.services[0]", "clef-serve"): "clef-serve is still in llm-serving:services, so it is not retired",
    }


def test_a_misspelt_namespace_is_refused_before_anything_is_deleted(prod_base, tmp_path):
    cfg = copy.deepcopy(PROD)
    cfg["llm-servign:workloads"] = cfg.pop("llm-serving:workloads")
    code, text = _preview("--stack-file", str(_write(tmp_path, "typo", cfg)), "--base", str(prod_base),
                          "--out", str(tmp_path / "out"))
    assert code == 2, text
    assert "llm-servign:workloads" in text and "llm-serving:workloads" in text
    assert not (tmp_path / "out").exists()
