"""A rename on a full node, with the real CLI and provider on the loopback cluster.

Scaled down: worker-1 (4 cards) runs ``big`` (3 cards) and ``clef-candle`` (1 card) behind the
protected Service ``clef-serve``: 4 of 4. Declared cold starts of 10 s, so each await is
ceil(1.5 x 10) + 60 = 75 s; kwok makes pods Ready at once. Each step is a module fixture
(:func:`full_node`, :func:`stranded`, :func:`restored`) that the tests of its outcome ask for, so
each test passes alone (its steps run first) and the steps run once in file order.

1. Renaming ``clef-candle`` to ``clef-flash`` as a plain rename: the engine creates
   ``clef-flash`` first and would delete ``clef-candle`` only at the end of the update. The new
   pod waits Pending (``Insufficient nvidia.com/gpu``), the Deployment's await fails after its
   75 s, and both Deployments are left; ``clef-candle`` was never deleted (no delete step ran).
2. Back to the original stack file: the failed copy is deleted, 4 of 4 again.
3. The same rename with ``former_names: [clef-candle]``: the component is aliased to its former
   name, the provider's diff is a replacement (``metadata.name`` changes), and the component's
   ``deleteBeforeReplace`` (worker-1 has no free card) makes the engine delete ``clef-candle``
   before it creates ``clef-flash``. The update succeeds; the new pod is scheduled within one
   cold start of its creation; the Service kept its UID and ClusterIP throughout.

Verified here, not assumed: the provider deletes first on its own only when the name
and namespace stay (``provider.go`` Diff ``deleteBeforeReplace``), so a rename is create-first
(step 1) unless the resource sets ``deleteBeforeReplace`` (step 3). Measured on a run: step 1's
engine steps were ``create clef-flash``, ``update clef-serve`` and no delete; it failed after 78 s
with "'clef-flash' timed out waiting to be Ready"; step 3's were ``delete-replaced clef-candle``,
then ``replace`` / ``create-replacement clef-flash`` with keys ``metadata.name`` and
``spec.selector.matchLabels.app`` (the child inherited the component's alias), 12 s in all.
The real ``pulumi preview --policy-pack`` does not see the peak (the pack judges the new state
only, 4 of 4 here); the real plan read back does: ``pulumi preview --json`` (the CLI's default
document, and its event stream) through ``python3 dev.py plan`` (:mod:`tools.plan`) refuses
step 1's plan at 5 of 4 and passes step 3's at 4 of 4, as the offline preview with ``--base``
does (``tests/tools/offline/test_transition.py``, ``tests/tools/test_plan.py``).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime

import pytest
import yaml

from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tests.real.realpath import CliResult, RealProject, kubectl_json, up_timed, wait_for
from tools import plan
from tools.offline import render, treediff
from tools.offline.manifests import load_stack_file

pytestmark = pytest.mark.real

STACK = "full"
NS = "llm-serving"
COLD_START = 10
AWAIT = 75  # core.rulebook.time_budgets.await_timeout_seconds(10)


def _stack(clef_name: str, former: bool) -> dict:
    prod = load_stack_file(PROD_STACK_FILE)

    def workload(cards: int) -> dict:
        return {"server": "pytorch", "image": "forgejo.riotpiao.com/riotpiao-poimen/clef-serve:latest",
                "node": "worker-1", "cards": cards, "cold_start_seconds": COLD_START,
                "resources": {"requests": {"memory": "4Gi"}, "limits": {"memory": "8Gi"}}}

    clef = workload(1)
    if former:
        clef["former_names"] = ["clef-candle"]
    return {"config": {
        "llm-serving:namespace": NS,
        "llm-serving:cluster": prod["llm-serving:cluster"],
        "llm-serving:workloads": {"big": workload(3), clef_name: clef},
        "llm-serving:services": {"clef-serve": {"selects": clef_name}},
    }}


def _write(project: RealProject, clef_name: str, former: bool = False) -> None:
    (project.dir / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(_stack(clef_name, former), sort_keys=False))


def _deployments(cluster) -> set[str]:
    return {d["metadata"]["name"] for d in kubectl_json(cluster, "get", "deployments", "-n", NS)["items"]}


def _service(cluster) -> tuple[str, str]:
    svc = kubectl_json(cluster, "get", "service", "clef-serve", "-n", NS)
    return svc["metadata"]["uid"], svc["spec"]["clusterIP"]


def _steps(res) -> list[tuple[str, str]]:
    """(op, resource name) of the engine's steps on Deployments, in the order they started."""
    out = []
    for e in res.events:
        pre = e.get("resourcePreEvent")
        if pre and pre["metadata"]["type"] == "kubernetes:apps/v1:Deployment":
            out.append((pre["metadata"]["op"], pre["metadata"]["urn"].rsplit("::", 1)[-1]))
    return out


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


#: The preview's flags ``python3 dev.py plan`` asks for (tools.plan.PREVIEW).
FLAGS = ("--show-sames", "--show-replacement-steps")


def _plan(project: RealProject, tmp_path, streaming: bool, flags: tuple[str, ...] = FLAGS) -> tuple[int, str]:
    """``pulumi preview --json FLAGS`` read back by ``python3 dev.py plan``: (exit code, its output)."""
    res = project.run("preview", "--stack", STACK, *flags, events=True, streaming=streaming)
    assert res.code == 0, res
    path = tmp_path / f"plan-{'stream' if streaming else 'document'}.json"
    path.write_text(res.stdout)
    out = io.StringIO()
    code = plan.main([str(path)], stdout=out, stderr=out)
    return code, out.getvalue()


@dataclass(frozen=True)
class Stranded:
    """What step 1 saw: the protected Service before, each plan read back (streaming?, flags) ->
    (exit code, output), the failed ``up`` and its seconds."""

    service: tuple[str, str]
    plans: dict[tuple[bool, tuple[str, ...]], tuple[int, str]]
    up: CliResult
    elapsed: float


@pytest.fixture(scope="module")
def full_node(project: RealProject, cluster) -> CliResult:
    """Step 0, the module's stack: ``big`` and ``clef-candle`` up on worker-1 (4 of 4)."""
    _write(project, "clef-candle")
    project.stack_init(STACK)
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    return res


@pytest.fixture(scope="module")
def stranded(project: RealProject, cluster, full_node, tmp_path_factory) -> Stranded:
    """Step 1: the plain rename planned (both --json forms, and the document without --show-sames),
    then applied (it fails, leaving both Deployments)."""
    tmp_path = tmp_path_factory.mktemp("plain-rename")
    before = _service(cluster)
    _write(project, "clef-flash")
    plans = {(streaming, flags): _plan(project, tmp_path, streaming, flags)
             for streaming, flags in ((False, FLAGS), (True, FLAGS), (False, ("--show-replacement-steps",)))}
    res, elapsed = up_timed(project, STACK)
    return Stranded(before, plans, res, elapsed)


@pytest.fixture(scope="module")
def restored(project: RealProject, cluster, full_node) -> CliResult:
    """Step 2: back to the original stack file (after step 1, when it ran): 4 of 4 again."""
    _write(project, "clef-candle")
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    return res


def test_the_full_node_runs_4_of_4(full_node, cluster):
    pods = kubectl_json(cluster, "get", "pods", "-n", NS)["items"]
    assert sum(int(c["resources"]["requests"]["nvidia.com/gpu"]) for p in pods for c in p["spec"]["containers"]
               if p["status"].get("phase") == "Running") == 4


def test_a_plain_rename_creates_first_and_the_new_pod_waits_pending(stranded: Stranded, cluster):
    # In review, the real plan read back names the peak and refuses it, in both --json forms.
    for streaming in (False, True):
        code, text = stranded.plans[(streaming, FLAGS)]
        assert code == plan.EXIT_REFUSED, text
        assert "worker-1  5 / 4  OVER by 1" in text, text
        assert "REFUSED: node worker-1: the update needs 5 of 4 cards at its peak (its end state needs 4): " \
               "the old objects (clef-candle)" in text, text
        assert "set former_names: [clef-candle] under llm-serving:workloads.clef-flash" in text, text
    # The CLI's document without --show-sames leaves out `big` (kept, 3 cards): refused as input.
    code, text = stranded.plans[(False, ("--show-replacement-steps",))]
    assert code == plan.EXIT_INPUT, text
    assert f"fix: run `{plan.PREVIEW}`" in text, text
    res = stranded.up
    assert res.code != 0, res
    # The provider's await of the new Deployment failed at its own bound (75 s), not at 10 minutes.
    assert AWAIT - 5 <= stranded.elapsed <= AWAIT + 90, (stranded.elapsed, str(res))
    steps = _steps(res)
    assert ("create", "clef-flash") in steps, steps
    assert not any(op.startswith("delete") for op, _ in steps), steps  # the old one was never deleted
    # Both objects are left; the new pod is Pending for the card the old pod holds.
    assert {"clef-candle", "clef-flash"} <= _deployments(cluster)
    pods = kubectl_json(cluster, "get", "pods", "-n", NS, "-l", "app=clef-flash")["items"]
    assert [p["status"]["phase"] for p in pods] == ["Pending"]
    events = kubectl_json(cluster, "get", "events", "-n", NS, "--field-selector", "reason=FailedScheduling")["items"]
    assert any(e["involvedObject"]["name"] == pods[0]["metadata"]["name"] and "Insufficient nvidia.com/gpu" in e["message"]
               for e in events), events
    assert _service(cluster) == stranded.service  # the protected Service was updated in place


def test_back_to_the_original_names_removes_the_stranded_copy(stranded: Stranded, restored: CliResult, cluster):
    assert stranded.up.code != 0 and "clef-flash" not in _deployments(cluster)
    wait_for(lambda: not kubectl_json(cluster, "get", "pods", "-n", NS, "-l", "app=clef-flash")["items"], 60,
             what="the stranded clef-flash pod to go")


def test_a_rename_with_former_names_deletes_first_and_goes_through(project: RealProject, restored, cluster, tmp_path):
    before = _service(cluster)
    _write(project, "clef-flash", former=True)
    for streaming in (False, True):
        code, text = _plan(project, tmp_path, streaming)
        assert code == plan.EXIT_OK, text
        # The peak table holds the renamed server once (clef-flash), never the old name beside it; the
        # cost lines above it name the server being replaced by its old name.
        peak = text[text.index("cards per node during the update"):]
        assert "worker-1  4 / 4  " in peak and "clef-candle" not in peak, text
    # Without --show-replacement-steps the document hides the order: refused as input.
    code, text = _plan(project, tmp_path, streaming=False, flags=("--show-sames",))
    assert code == plan.EXIT_INPUT and "leaves out its create-replacement and delete-replaced steps" in text, text
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    steps = _steps(res)
    # One resource (aliased), replaced delete-first: the old object goes before the new one is created.
    assert ("delete-replaced", "clef-candle") in steps or ("delete-replaced", "clef-flash") in steps, steps
    ops = [op for op, _ in steps]
    assert ops.index("delete-replaced") < ops.index("create-replacement"), steps
    # The fields the engine says force the replacement are the offline diff's marks.
    keys = {k for e in res.events if (e.get("resourcePreEvent") or {}).get("metadata", {}).get("op") == "replace"
            for k in e["resourcePreEvent"]["metadata"].get("keys") or ()}
    old_tree = {render.render_path(m): m for m in render_manifests(load_stack_config(_stack("clef-candle", False)["config"]))}
    new_tree = {render.render_path(m): m for m in render_manifests(load_stack_config(_stack("clef-flash", True)["config"]))}
    [replaced] = treediff.diff_trees(old_tree, new_tree).replacements
    assert keys == {c.path for c in replaced.changes if c.replace_reason} == {"metadata.name", "spec.selector.matchLabels.app"}
    assert ("create", "clef-flash") not in steps, steps  # not a second copy
    assert _deployments(cluster) == {"big", "clef-flash"}
    pods = wait_for(lambda: [p for p in kubectl_json(cluster, "get", "pods", "-n", NS, "-l", "app=clef-flash")["items"]
                             if p["status"].get("phase") == "Running"] or None, 60, what="clef-flash Running")
    pod = pods[0]
    scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "True"
    # Pending no longer than one cold start.
    assert _ts(scheduled["lastTransitionTime"]) - _ts(pod["metadata"]["creationTimestamp"]) <= COLD_START
    assert _service(cluster) == before
