"""What an update costs, offline: the servers it restarts and for how long, per object, in the
preview's ``--base`` diff (:mod:`core.k8s.manifests.transition_cost`), and the deletions it refuses unless the
stack file retires them (``llm-serving:retire``). The real plan's side is ``tests/tools/test_plan.py``;
on the loopback cluster, ``tests/real/test_real_update_cost.py``."""

from __future__ import annotations

import copy

import pytest

from core.k8s.manifests import transition_cost
from stackfile import ConfigError, load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tests.tools.offline.test_transition import run_preview, write_stack
from tools.offline import render, treediff
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
    [diff] = treediff.diff_trees(old, new).objects
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


# --- what pulumi up refuses, and what the update leaves without a server ---------------------------


def _retired_clef_serve(listed: bool) -> dict:
    cfg = copy.deepcopy(PROD)
    del cfg["llm-serving:services"]["clef-serve"]
    if listed:
        cfg["llm-serving:retire"] = {"services": ["clef-serve"]}
    return cfg


def _last_line(text: str) -> str:
    return text.rstrip("\n").rsplit("\n", 1)[-1]


def test_the_protected_components_are_the_ones_the_program_protects_and_their_urns_are_the_engines():
    """facts.PROTECTED_COMPONENTS drives the program's protect option, and object_urn names each
    protected object as the engine does (the mock runtime builds URNs as the engine)."""
    from core.base import facts
    from tools.offline import mockrun

    run = mockrun.run_program(PROD, stack="prod")
    protected = [r for r in run.resources if r.protect]
    assert {transition_cost.protected_component(r.props) for r in protected} == set(facts.PROTECTED_COMPONENTS)
    assert sorted(r.name for r in protected) == sorted(PROD["llm-serving:services"])
    for r in protected:
        assert transition_cost.object_urn(r.props, "prod") == r.urn
    # Nothing else is protected: a workload's Deployment is deleted without a state command.
    assert all(transition_cost.protected_component(r.props) is None for r in run.resources if r.props and not r.protect)


def test_retiring_a_protected_service_shows_the_state_command_before_the_deploy(prod_base, tmp_path):
    code, text = _preview("--stack-file", str(_write(tmp_path, "retire", _retired_clef_serve(listed=True))),
                          "--base", str(prod_base), "--out", str(tmp_path / "out"))
    assert code == 0, text
    assert "-  v1 Service llm-serving/clef-serve (remove, PROTECTED)" in text
    urn = "urn:pulumi:retire::llm-serving::llm-serving:index:StablePredictorService$kubernetes:core/v1:Service::clef-serve"
    assert ("BEFORE THE DEPLOY: Service llm-serving/clef-serve: pulumi up refuses to delete it while the stack's state "
            "marks it protected") in text
    assert ("in order: 1. list it under llm-serving:retire: {services: [clef-serve]} (the stack file lists it); 2. before "
            f"the deploy, by someone with the stack's backend: `pulumi state unprotect --stack retire --yes '{urn}'`; "
            "3. pulumi up deletes it") in text
    assert ("OUTAGE: Service llm-serving/clef-serve is deleted: clients that lose it: gateway (namespace gateway, "
            "port 80)") in text
    assert _last_line(text) == ("PASS: the update as planned: 1 outage, 1 step before the deploy (the lines above); "
                                "the policy pack did not run (--no-policy)")


def test_dropping_a_protected_service_unlisted_is_refused_and_the_last_line_says_so(prod_base, tmp_path):
    code, text = _preview("--stack-file", str(_write(tmp_path, "drop", _retired_clef_serve(listed=False))),
                          "--base", str(prod_base), "--out", str(tmp_path / "out"))
    assert code == 1, text
    assert "REFUSED: Service llm-serving/clef-serve: the update deletes it" in text
    assert "(missing: add it)" in text
    assert _last_line(text).startswith("REFUSED: the update as planned: 1 reason to refuse, 1 outage, 1 step before the deploy")


@pytest.mark.parametrize("fmt", ["table", "json", "sarif", "junit", "markdown"])
def test_a_refused_plan_never_ends_with_pass_in_any_format(prod_base, tmp_path, fmt):
    """The pack passes, the plan is refused: the human stream's last line is REFUSED (stdout for
    the table, stderr beside a machine-readable report), never the pack's PASS headline."""
    import io

    from tools import preview

    out, err = io.StringIO(), io.StringIO()
    code = preview.main(["--stack-file", str(_write(tmp_path, "drop", _retired_clef_serve(listed=False))),
                         "--base", str(prod_base), "--out", str(tmp_path / "out"), "--format", fmt], stdout=out, stderr=err)
    assert code == 1, out.getvalue() + err.getvalue()
    human = out.getvalue() if fmt == "table" else err.getvalue()
    last = _last_line(human)
    assert last.startswith("REFUSED: the update as planned: 1 reason to refuse"), last
    assert "PASS" not in last and "policies: no mandatory violation" in last
    if fmt == "json":
        import json

        json.loads(out.getvalue())  # stdout stays the report alone


def test_parking_a_server_is_an_outage_naming_the_clients_not_no_restarts(prod_base, tmp_path):
    cfg = copy.deepcopy(PROD)
    cfg["llm-serving:workloads"]["clef-candle"]["parked"] = {"reason": "the card is needed for a test"}
    cfg["llm-serving:services"]["clef-serve"]["parked"] = {"reason": "clef-candle is parked"}
    code, text = _preview("--stack-file", str(_write(tmp_path, "park", cfg)), "--base", str(prod_base),
                          "--out", str(tmp_path / "out"))
    assert code == 0, text
    assert "~  apps/v1 Deployment llm-serving/clef-candle (update, STOPS clef-candle)" in text
    assert "cost: clef-candle stops (1 card(s) on worker-1): down until it is scaled up again" in text
    assert "update cost: 1 model server(s) stop: clef-candle stops (until scaled up again)" in text
    assert "no model server restarts" not in text
    assert ("OUTAGE: model server clef-candle goes from 1 to 0 replicas: Service llm-serving/clef-serve is left without "
            "a running backend: clients that lose it: gateway (namespace gateway, port 80)") in text
    assert _last_line(text).startswith("PASS: the update as planned: 1 outage (the lines above)")


def test_an_unchanged_stack_has_no_outage():
    tree = _tree(PROD)
    assert transition_cost.outages(tree, copy.deepcopy(tree)) == []


def test_a_service_pointed_at_a_parked_workload_is_an_outage_of_its_clients():
    old = _tree(PROD)
    new = copy.deepcopy(old)
    new[SERVICE]["spec"]["selector"] = {"app": "clef-serve"}  # the parked reference server: 0 replicas
    assert transition_cost.outages(old, new) == [
        "OUTAGE: Service llm-serving/coder-predictor is left without a running backend: clients that lose it: "
        "poimen-memory (namespace poimen, port 8080)"]


def test_a_protected_services_replacement_is_refused_with_the_state_command(prod_base, tmp_path):
    """A field that forces a replacement of a protected Service (its clusterIP) is refused offline,
    naming the state command with the Service's URN (the engine refuses it too)."""
    import shutil

    import yaml

    base = tmp_path / "base"
    shutil.copytree(prod_base, base)
    path = base / SERVICE
    svc = yaml.safe_load(path.read_text())
    svc["spec"]["clusterIP"] = "10.43.0.17"
    path.write_text(yaml.safe_dump(svc, sort_keys=False))
    code, text = _preview("--stack-file", str(PROD_STACK_FILE), "--base", str(base), "--out", str(tmp_path / "out"))
    assert code == 1, text
    assert "+- v1 Service llm-serving/coder-predictor (REPLACE)" in text
    urn = "urn:pulumi:prod::llm-serving::llm-serving:index:StablePredictorService$kubernetes:core/v1:Service::coder-predictor"
    assert f"or unprotect it deliberately first: `pulumi state unprotect --stack prod --yes '{urn}'`" in text
    assert _last_line(text).startswith("REFUSED: the update as planned: 1 reason to refuse")
