"""The prod stack through the real path: the user's review, deploy and teardown commands.

``pulumi preview --policy-pack policies`` of a fresh prod stack (nothing created yet, so many
values are unknown to the pack), ``pulumi up`` onto the loopback cluster, a second ``up``,
and ``pulumi destroy``. Run in file order, on one cluster and one project copy; the stack
(the ``stack`` fixture) and its first ``up`` (:func:`applied`) are module fixtures, so each test also
passes alone.

Untested here, because no KServe controller runs on the test cluster: the predictor Service,
hostname and status KServe would create for ``reasoning``; ``testbed.kserve_standin`` only
creates its predictor Deployment (so the scheduler counts its card and the stable Service
gets endpoints). Untested because kwok fakes the kubelet: image pulls, probes, the nvidia
runtime and the GPUs themselves.
"""

from __future__ import annotations

import pytest

from tests.paths import PROD_STACK_FILE
from tests.real.realpath import CliResult, RealProject, change_summary, diagnostics, kubectl_json, policy_verdicts, wait_for
from tools import analyze
from tools.offline.manifests import load_stack_file

pytestmark = pytest.mark.real

STACK = "prod"
NS = "llm-serving"


def _expected_objects() -> set[tuple[str, str]]:
    """(kind, name) of every Kubernetes object the program registers for prod (mock runtime)."""
    config = load_stack_file(PROD_STACK_FILE)
    out = set()
    for r in analyze.program_resources(config, STACK):
        if r.type.startswith("kubernetes:") and r.type != "pulumi:providers:kubernetes":
            out.add((r.props["kind"], r.props["metadata"]["name"]))
    return out


@pytest.fixture(scope="module")
def applied(project: RealProject, stack: str) -> CliResult:
    """The first ``pulumi up`` of the stack, with the pack."""
    return project.up(stack)


def test_preview_of_a_fresh_prod_stack_passes_the_pack(project, stack):
    res = project.preview(STACK, extra=("--diff",))
    assert res.code == 0, res
    # The pack ran its stack policies and every one passed; no policy event at all.
    summary = next(e["policyAnalyzeStackSummaryEvent"] for e in res.events if e.get("policyAnalyzeStackSummaryEvent"))
    assert summary["policyPackName"] == "llm-serving-policies"
    assert summary.get("failed", []) == [] and len(summary["passed"]) >= 6, summary  # "failed" is omitted when empty
    assert policy_verdicts(res.events) == set(), res
    # Unknown values (nothing is created yet) did not crash a policy: no error diagnostics.
    assert diagnostics(res.events) == [], res
    # Every resource the program registers (the mock runtime's count) is a create.
    config = load_stack_file(PROD_STACK_FILE)
    registered = analyze.program_resources(config, STACK)
    assert change_summary(res.events).get("create", 0) == len(registered), res


def test_up_creates_every_object_and_the_pods_run_on_worker_1(applied: CliResult, cluster):
    assert applied.code == 0, applied
    present = set()
    for kind in ("deployments", "services", "networkpolicies", "inferenceservices.serving.kserve.io"):
        for item in kubectl_json(cluster, "get", kind, "-n", NS)["items"]:
            present.add((item["kind"], item["metadata"]["name"]))
    assert _expected_objects() <= present

    def running(app: str):
        pods = kubectl_json(cluster, "get", "pods", "-n", NS, "-l", f"app={app}")["items"]
        return [p for p in pods if p["status"].get("phase") == "Running"] or None

    for app in ("candle-vllm", "clef-candle"):
        pods = wait_for(lambda app=app: running(app), 60, what=f"a Running {app} pod")
        assert {p["spec"]["nodeName"] for p in pods} == {"worker-1"}

    # The parked reference server is a Deployment at 0 replicas.
    parked = kubectl_json(cluster, "get", "deployment", "clef-serve", "-n", NS)
    assert parked["spec"]["replicas"] == 0

    # The InferenceService is stored as the program wrote it.
    isvc = kubectl_json(cluster, "get", "inferenceservices.serving.kserve.io", "reasoning", "-n", NS)
    assert isvc["spec"]["predictor"]["runtimeClassName"] == "nvidia"

    # Every Service has ready endpoints (reasoning-long-predictor through the KServe stand-in).
    for svc in ("coder-predictor", "clef-serve", "reasoning-long-predictor"):
        def ready_addresses(svc=svc):
            slices = kubectl_json(cluster, "get", "endpointslices", "-n", NS, "-l", f"kubernetes.io/service-name={svc}")["items"]
            return [ep for s in slices for ep in (s.get("endpoints") or []) if ep.get("conditions", {}).get("ready")]
        assert wait_for(ready_addresses, 60, what=f"ready endpoints of Service {svc}")

    # All four cards of worker-1 are allocated, none over.
    pods = kubectl_json(cluster, "get", "pods", "-n", NS, "--field-selector", "spec.nodeName=worker-1")["items"]
    cards = sum(int(c["resources"].get("requests", {}).get("nvidia.com/gpu", 0)) for p in pods
                if p["status"].get("phase") in ("Running", "Pending") for c in p["spec"]["containers"])
    assert cards == 4


def test_a_second_up_changes_nothing(project, applied: CliResult):
    assert applied.code == 0, applied
    res = project.up(STACK)
    assert res.code == 0, res
    changes = change_summary(res.events)
    assert set(changes) == {"same"}, res


def test_destroy_refuses_the_protected_services(project, applied: CliResult, cluster):
    assert applied.code == 0, applied
    before = {s["metadata"]["name"]: s["spec"]["clusterIP"] for s in kubectl_json(cluster, "get", "services", "-n", NS)["items"]}
    res = project.run("destroy", "--yes", "--stack", STACK, events=True)
    assert res.code != 0, res
    assert "protected" in res.output, res
    for name in ("coder-predictor", "clef-serve", "reasoning-long-predictor"):
        assert name in res.output, res
    after = {s["metadata"]["name"]: s["spec"]["clusterIP"] for s in kubectl_json(cluster, "get", "services", "-n", NS)["items"]}
    assert after == before
