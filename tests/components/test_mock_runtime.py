"""The components under Pulumi's mock runtime (tools/offline/mockrun.py runs the same __main__.py the
CLI runs): children registered with parent = the component and the right type tokens, the
Service protected, the prod stack's objects and outputs, the render provider on every object,
and a bad config refused with the rendered problems."""

from __future__ import annotations

import copy
import json
import textwrap

import pytest

from core.base import facts
from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tools.offline.manifests import load_stack_file
from tools.offline.mockrun import ProgramError, run_program

PROD = load_stack_file(PROD_STACK_FILE)

K8S_CHILD = {
    "llm-serving:index:CandleDeployment": "kubernetes:apps/v1:Deployment",
    "llm-serving:index:GpuDeployment": "kubernetes:apps/v1:Deployment",
    "llm-serving:index:VllmInferenceService": "kubernetes:serving.kserve.io/v1beta1:InferenceService",
    "llm-serving:index:StablePredictorService": "kubernetes:core/v1:Service",
    "llm-serving:index:NamespaceNetworkPolicy": "kubernetes:networking.k8s.io/v1:NetworkPolicy",
}


@pytest.fixture(scope="module")
def prod_run():
    return run_program(PROD)


def by_type(run, type_: str) -> dict:
    return {r.name: r for r in run.resources if r.type == type_}


def test_each_component_has_one_child_parented_to_it(prod_run):
    components = [r for r in prod_run.resources if r.type.startswith("llm-serving:index:")]
    assert sorted((r.type, r.name) for r in components) == [
        ("llm-serving:index:CandleDeployment", "candle-vllm"),
        ("llm-serving:index:CandleDeployment", "clef-candle"),
        ("llm-serving:index:GpuDeployment", "clef-serve"),
        ("llm-serving:index:NamespaceNetworkPolicy", "llm-serving-ingress"),
        ("llm-serving:index:StablePredictorService", "clef-serve"),
        ("llm-serving:index:StablePredictorService", "coder-predictor"),
        ("llm-serving:index:StablePredictorService", "reasoning-long-predictor"),
        ("llm-serving:index:VllmInferenceService", "reasoning"),
    ]
    for comp in components:
        children = [r for r in prod_run.resources if r.parent == comp.urn]
        assert [(c.type, c.name) for c in children] == [(K8S_CHILD[comp.type], comp.name)], comp.urn
        assert children[0].urn == f"urn:pulumi:prod::llm-serving::{comp.type}${K8S_CHILD[comp.type]}::{comp.name}"


def test_services_are_protected_and_nothing_else_is(prod_run):
    protected = sorted((r.type, r.name) for r in prod_run.resources if r.protect)
    assert protected == [("kubernetes:core/v1:Service", n)
                         for n in ("clef-serve", "coder-predictor", "reasoning-long-predictor")]


def test_prod_renders_the_intended_state(prod_run):
    """Spec: candle-vllm 2, clef-candle 1, reasoning 1, clef-serve parked, three Services,
    the NetworkPolicy."""
    deployments = by_type(prod_run, "kubernetes:apps/v1:Deployment")
    isvcs = by_type(prod_run, "kubernetes:serving.kserve.io/v1beta1:InferenceService")

    def cards(pod_spec):
        return int(pod_spec["containers"][0]["resources"]["limits"][facts.GPU_RESOURCE])

    running = {name: (d.props["spec"]["replicas"], cards(d.props["spec"]["template"]["spec"]))
               for name, d in deployments.items()}
    running.update({name: (i.props["spec"]["predictor"]["maxReplicas"], cards(i.props["spec"]["predictor"]))
                    for name, i in isvcs.items()})
    assert running == {"candle-vllm": (1, 2), "clef-candle": (1, 1), "reasoning": (1, 1), "clef-serve": (0, 1)}
    assert deployments["clef-serve"].props["metadata"]["annotations"][facts.PARKED_ANNOTATION]

    services = by_type(prod_run, "kubernetes:core/v1:Service")
    assert {n: s.props["spec"]["selector"] for n, s in services.items()} == {
        "coder-predictor": {"app": "candle-vllm"},
        "clef-serve": {"app": "clef-candle"},
        "reasoning-long-predictor": {"app.kubernetes.io/name": "llm-reasoning", "component": "predictor",
                                     "serving.kserve.io/inferenceservice": "reasoning"},
    }
    assert list(by_type(prod_run, "kubernetes:networking.k8s.io/v1:NetworkPolicy")) == ["llm-serving-ingress"]


def test_components_pass_the_pure_manifests_straight_through(prod_run):
    """What the engine receives is exactly what the pure functions build (tests/components/test_reference_manifests_reproduced.py
    compares those with the references)."""
    expected = {(m["kind"], m["metadata"]["name"]): m for m in render_manifests(load_stack_config(PROD))}
    got = {(r.props["kind"], r.props["metadata"]["name"]): r.props
           for r in prod_run.resources if r.type.startswith("kubernetes:")}
    assert got == expected


def test_stack_outputs_card_table_and_service_urls(prod_run):
    assert prod_run.outputs["cards"] == {
        "worker-1": {"cards": 4, "used": 4,
                     "workloads": {"candle-vllm": 2, "clef-candle": 1, "reasoning": 1, "clef-serve": 0}},
    }
    assert prod_run.outputs["services"]["reasoning-long-predictor"] == {
        "http": "http://reasoning-long-predictor.llm-serving.svc.cluster.local:80",
        "http-8080": "http://reasoning-long-predictor.llm-serving.svc.cluster.local:8080",
    }
    assert sorted(prod_run.outputs["services"]) == ["clef-serve", "coder-predictor", "reasoning-long-predictor"]


def test_render_yaml_to_directory_puts_every_object_on_the_render_provider():
    config = copy.deepcopy(PROD)
    config["llm-serving:render_yaml_to_directory"] = "rendered"
    run = run_program(config)
    providers = by_type(run, "pulumi:providers:kubernetes")
    assert list(providers) == ["render-yaml"]
    assert providers["render-yaml"].props["renderYamlToDirectory"] == "rendered"
    objects = [r for r in run.resources if r.type.startswith("kubernetes:")]
    assert len(objects) == 8
    assert {r.provider.split("::")[3] for r in objects} == {"render-yaml"}


def test_without_the_setting_objects_use_the_default_provider(prod_run):
    assert not by_type(prod_run, "pulumi:providers:kubernetes")
    assert {r.provider for r in prod_run.resources if r.type.startswith("kubernetes:")} == {""}


def test_a_bad_config_stops_the_program_with_every_problem():
    config = copy.deepcopy(PROD)
    config["llm-serving:workloads"]["candle-vllm"]["cards"] = -2
    config["llm-serving:services"]["coder-predictor"]["selects"] = "coder"
    with pytest.raises(ProgramError) as info:
        run_program(config)
    text = str(info.value)
    assert text.startswith("Cannot load the prod stack config: 2 problems.")
    assert "llm-serving:workloads.candle-vllm.cards\n  value: -2\n" in text
    assert "llm-serving:services.coder-predictor.selects\n  value: \"coder\"\n" in text
    assert "Traceback" not in text


def test_components_built_by_hand(tmp_path):
    """Each component on its own: the Service selects the workload component's labels (a typed
    reference) and its targetPort is that component's port."""
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent('''
        from core.k8s.placement import Placement
        from core.k8s.traffic import ServiceClient
        from components.service import StablePredictorService, StablePredictorServiceArgs
        from components.workload import GpuDeployment, GpuDeploymentArgs

        server = GpuDeployment("echo", GpuDeploymentArgs(
            name="echo", namespace="lab", image="registry/echo:v1", port=9000,
            placement=Placement(node="worker-1", cards=1, cold_start_seconds=30)))
        StablePredictorService("echo-svc", StablePredictorServiceArgs(
            namespace="lab", selects=server,
            clients=[ServiceClient(name="probe", namespace="lab", port=80)]))
    '''))
    run = run_program({}, program=program)
    comps = {r.type: r for r in run.resources if r.type.startswith("llm-serving:")}
    svc = by_type(run, "kubernetes:core/v1:Service")["echo-svc"]
    dep = by_type(run, "kubernetes:apps/v1:Deployment")["echo"]
    assert dep.parent == comps["llm-serving:index:GpuDeployment"].urn
    assert svc.parent == comps["llm-serving:index:StablePredictorService"].urn and svc.protect
    assert svc.props["spec"]["selector"] == {"app": "echo"}
    assert {p["targetPort"] for p in svc.props["spec"]["ports"]} == {9000}
    assert json.loads(svc.props["metadata"]["annotations"][facts.CLIENTS_ANNOTATION]) == [
        {"name": "probe", "namespace": "lab", "port": 80}]
    assert dep.props["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"
