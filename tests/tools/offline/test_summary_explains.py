"""The preview summary explains its counts, marks a parked Service in the URL list, and
the diff shows a changed argv as a list diff."""

from __future__ import annotations

from core.base import facts
from policylib.pack import policy
from tests.paths import ROOT
from tests.tools.offline.test_summary import deployment
from tools.offline.manifests import Resource
from tools.offline.summary import counts_line, services_section
from tools.offline.treediff import list_diff


def _service(name: str, parked: str | None = None) -> Resource:
    annotations = {facts.PARKED_ANNOTATION: parked} if parked else {}
    props = {"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": name, "namespace": "llm-serving", "annotations": annotations}}
    return Resource(type="kubernetes:core/v1:Service", name=name, urn=f"u-{name}", props=props)


def test_counts_line_names_what_the_pack_judges():
    stack = Resource(type="pulumi:pulumi:Stack", name="s", urn="s", props={}, custom=False)
    component = Resource(type="llm-serving:index:GpuDeployment", name="c", urn="c", props={}, custom=False)
    line = counts_line([stack, component, deployment("c", 1), _service("svc")])
    assert line == ("  2 objects are written as manifests; the policy pack judges all 4 resources the program "
                    "registers: 2 objects, 1 component, 1 stack")


def test_a_parked_service_is_marked_in_the_url_list():
    outputs = {"services": {"clef-serve": {"http": "http://clef-serve:80"}, "coder": {"http": "http://coder:80"}}}
    lines = services_section(outputs, [_service("clef-serve", parked="clef-candle replaced it (000)"), _service("coder")])
    assert lines[1].startswith("  clef-serve (parked: clef-candle replaced it (000))  http://clef-serve:80")
    assert lines[2].startswith("  coder ") and "parked" not in lines[2]


def test_an_argv_change_is_a_list_diff():
    old = ["--model=m", "--served-model-name", "a", "--max-model-len=65536", "--port=8080"]
    new = ["--model=m", "--served-model-name", "a", "b", "--max-model-len=131072", "--port=8080"]
    assert list_diff(old, new) == [
        '            "a"',
        '          - "--max-model-len=65536"',
        '          + "b"',
        '          + "--max-model-len=131072"',
        '            "--port=8080"',
        "          (2 unchanged items not shown)",
    ]


def test_the_fix_is_in_the_stack_file_s_terms_for_the_program_s_objects():
    """After seed 001 through the program: the over-allocation's fix names the stack-file key
    (parked: {reason: ...} on llm-serving:workloads.<name>), not the annotation it renders to."""
    from stackfile import load_stack_config
    from stackfile.build import render_manifests
    from tests.policy_harness import DEFAULT_STACK_FILE, run_policy, use_stack_config
    from tools.offline.manifests import load_stack_file, resources_from_documents

    raw = load_stack_file(ROOT / "tests" / "stacks" / "after-001.yaml")
    use_stack_config(raw)
    try:
        resources = resources_from_documents(render_manifests(load_stack_config(raw)), stack="after-001")
        (v,) = run_policy(policy("gpu-card-allocation"), resources)
    finally:
        use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    assert v.message.startswith("worker-1: 6 of 4 cards requested: candle-vllm 2, coder 2, clef-serve 1, reasoning 1")
    assert v.message.endswith(
        ". Fix: bring the cards to 4 or fewer: park one workload (parked: {reason: ...}), lower the cards of one "
        "(cards, with its tensor parallel size), or pin one to another node (node) under "
        "llm-serving:workloads.candle-vllm, llm-serving:workloads.coder, llm-serving:workloads.clef-serve, "
        "llm-serving:workloads.reasoning. Source: seeds 001 and 003 (6 and 7 cards asked of worker-1's 4; a surge pod Pending "
        "for a card the old pod holds).")
    assert facts.PARKED_ANNOTATION not in v.message
