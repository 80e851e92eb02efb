"""What an update costs, with the real CLI and provider on the loopback cluster: the restarts
``dev.py plan`` predicts from the real plan are the pods whose UID changed; the InferenceService's
await is bounded by its declared cold start.

Prod's workloads, scaled down: every declared cold start 20 s (so ``pulumi.com/timeoutSeconds`` =
ceil(1.5 x 20) + 60 = 90 s), ``clef-candle`` with an env value and a Secret value it reads. The
KServe stand-in (``testbed/kserve_standin.py``) copies what KServe copies into the predictor's
pod template and reports the InferenceService Ready once its predictor is.

The module's stack (:func:`running`, one per module) is brought up once with the baseline; each test
below starts from the stack as it finds it, so each also passes alone (``-k await``).

1. For each change, in order (each on the stack the previous one left, or on the baseline when run
   alone; every change changes the baseline too): ``pulumi preview --json``
   read back by :func:`tools.plan.costs` names the servers that restart; ``pulumi up``; the pods
   whose UID changed are exactly those servers' pods:

   - an argument (reasoning's ``max_model_len`` 65536 -> 40960): reasoning;
   - an InferenceService annotation (reasoning's ``former_names``, the
     ``llm-serving.riotpiao.com/former-names`` annotation): reasoning;
   - an InferenceService label (reasoning's ``labels``): reasoning;
   - a Service's client port (coder-predictor's client port 8080 -> 80: the Service's clients
     annotation and the NetworkPolicy's ports): none;
   - an env value (clef-candle's ``LOG_STYLE``): clef-candle;
   - a Secret value the pod reads (clef-candle's ``secret_env.HF_TOKEN``): none (the plan says the
     running pod keeps the old value).

2. The InferenceService's ``pulumi.com/waitFor: condition=Ready`` with kwok's pod-ready delay
   standing for the cold start: 45 s (within the 90 s bound) -> ``up`` succeeds and waited for
   reasoning's new predictor; 400 s (past it) -> ``up`` fails after about 90 s naming reasoning
   ("... "llm-serving/reasoning" failed to fully initialize or become live: timed out waiting for
   the condition"; measured: 95 s into the update).

A Secret's new value: pulumi-kubernetes 4.x replaces the Secret (its data is immutable unless
``kubernetes:enableSecretMutable``), and no pod restarts (measured on a run).
"""

from __future__ import annotations

import io
from typing import Any

import pytest
import yaml

from testbed import kserve_standin
from tests.paths import PROD_STACK_FILE
from tests.real.realpath import CliResult, RealProject, diagnostics, kubectl_json, pod_ready_delay, up_timed, wait_for
from tools import plan
from tools.offline.manifests import load_stack_file

pytestmark = pytest.mark.real

STACK = "cost"
NS = "llm-serving"
COLD_START = 20
AWAIT = 90  # core.rulebook.time_budgets.await_timeout_seconds(20)


def _baseline() -> dict[str, Any]:
    prod = load_stack_file(PROD_STACK_FILE)
    for wl in prod["llm-serving:workloads"].values():
        wl["cold_start_seconds"] = COLD_START
    prod["llm-serving:workloads"]["clef-candle"]["env"] = {"LOG_STYLE": "plain"}
    return prod


def _stack_file(project: RealProject):
    return project.dir / f"Pulumi.{STACK}.yaml"


def _edit(project: RealProject, change) -> None:
    """Apply ``change`` to the stack file's config as it is on disk (its secure values kept)."""
    doc = yaml.safe_load(_stack_file(project).read_text())
    change(doc["config"])
    _stack_file(project).write_text(yaml.safe_dump(doc, sort_keys=False))


def _secret(project: RealProject, value: str) -> None:
    res = project.run("config", "set", "--stack", STACK, "--secret", "--path",
                      "llm-serving:workloads.clef-candle.secret_env.HF_TOKEN", value)
    assert res.code == 0, res


def _server_of(pod: dict) -> str:
    labels = pod["metadata"].get("labels") or {}
    return labels.get("serving.kserve.io/inferenceservice") or labels.get("app", "")


def _pods(cluster) -> dict[str, set[str]]:
    """Server -> UIDs of its live pods (not terminating)."""
    out: dict[str, set[str]] = {}
    for p in kubectl_json(cluster, "get", "pods", "-n", NS)["items"]:
        if not p["metadata"].get("deletionTimestamp"):
            out.setdefault(_server_of(p), set()).add(p["metadata"]["uid"])
    return out


def _settled(cluster) -> bool:
    """The stand-in applied reasoning's predictor from the live InferenceService, and every
    Deployment rolled out with its pods Ready and no pod terminating."""
    isvc = kubectl_json(cluster, "get", "inferenceservices.serving.kserve.io", "reasoning", "-n", NS)
    deployments = {d["metadata"]["name"]: d for d in kubectl_json(cluster, "get", "deployments", "-n", NS)["items"]}
    predictor = deployments.get("reasoning-predictor")
    if predictor is None:
        return False
    want = kserve_standin.predictor_deployment(isvc)["spec"]["template"]["metadata"]
    if {k: predictor["spec"]["template"]["metadata"].get(k) or {} for k in ("labels", "annotations")} != want:
        return False
    for d in deployments.values():
        st, replicas = d.get("status") or {}, d["spec"].get("replicas", 1)
        if st.get("observedGeneration") != d["metadata"]["generation"] or st.get("updatedReplicas", 0) != replicas \
                or st.get("readyReplicas", 0) != replicas or st.get("replicas", 0) != replicas:
            return False
    pods = kubectl_json(cluster, "get", "pods", "-n", NS)["items"]
    return not any(p["metadata"].get("deletionTimestamp") for p in pods)


def _predicted(project: RealProject, tmp_path) -> tuple[set[str], str]:
    """(servers the real plan says restart, the plan tool's output)."""
    res = project.run("preview", "--stack", STACK, "--show-sames", "--show-replacement-steps", events=True)
    assert res.code == 0, res
    path = tmp_path / "plan.json"
    path.write_text(res.stdout)
    _, steps = plan.read_plan(res.stdout)
    out = io.StringIO()
    plan.main([str(path)], stdout=out, stderr=out)
    return {s.server for _, _, c in plan.costs(steps) for s in c.servers}, out.getvalue()


def _restarted(before: dict[str, set[str]], after: dict[str, set[str]]) -> set[str]:
    return {name for name in before.keys() | after.keys() if before.get(name, set()) != after.get(name, set())}


@pytest.fixture(scope="module")
def running(project: RealProject, cluster) -> CliResult:
    """The module's stack: the baseline brought up, every server Ready; the ``up``'s result."""
    project.stack_init(STACK)
    _stack_file(project).write_text(yaml.safe_dump({"config": _baseline()}, sort_keys=False))
    _secret(project, "hf-token-one")
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    wait_for(lambda: _settled(cluster), 120, what="every server Ready")
    return res


def test_the_stack_runs(running: CliResult, cluster):
    isvc = kubectl_json(cluster, "get", "inferenceservices.serving.kserve.io", "reasoning", "-n", NS)
    assert isvc["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Ready"
    assert isvc["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    assert set(_pods(cluster)) == {"candle-vllm", "clef-candle", "reasoning"}


def _reasoning(key: str, value: Any):
    return lambda cfg: cfg["llm-serving:workloads"]["reasoning"].__setitem__(key, value)


#: reasoning's two context lengths: the baseline's (prod's) and the other one the tests switch to.
MAX_MODEL_LENS = (65536, 40960)


def _other_max_model_len(cfg: dict) -> None:
    """Switch reasoning's ``max_model_len`` to the other of :data:`MAX_MODEL_LENS` than the config's: a
    change whatever the tests before left."""
    reasoning = cfg["llm-serving:workloads"]["reasoning"]
    assert reasoning["max_model_len"] in MAX_MODEL_LENS, reasoning
    reasoning["max_model_len"] = MAX_MODEL_LENS[1 - MAX_MODEL_LENS.index(reasoning["max_model_len"])]


def _client_port(cfg: dict) -> None:
    cfg["llm-serving:services"]["coder-predictor"]["clients"][0]["port"] = 80


def _env(cfg: dict) -> None:
    cfg["llm-serving:workloads"]["clef-candle"]["env"]["LOG_STYLE"] = "json"


CHANGES = [
    ("an argument", _other_max_model_len, {"reasoning"}),
    ("an InferenceService annotation", _reasoning("former_names", ["reasoning-v0"]), {"reasoning"}),
    ("an InferenceService label", _reasoning("labels", {"app.kubernetes.io/name": "llm-reasoning-2"}), {"reasoning"}),
    ("a Service's client port", _client_port, set()),
    ("an env value", _env, {"clef-candle"}),
    ("a Secret value the pod reads", None, set()),
]


@pytest.mark.parametrize("what, change, restarts", CHANGES, ids=[c[0] for c in CHANGES])
def test_the_predicted_restarts_are_the_pods_whose_uid_changed(project: RealProject, running, cluster, tmp_path, what, change,
                                                               restarts):
    if change is None:
        _secret(project, "hf-token-two")
    else:
        _edit(project, change)
    predicted, text = _predicted(project, tmp_path)
    assert predicted == restarts, text
    if change is None:
        assert "a Secret's new value reaches no running pod" in text, text
    before = _pods(cluster)
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    wait_for(lambda: _settled(cluster), 120, what="every server Ready")
    assert _restarted(before, _pods(cluster)) == predicted, (what, before, _pods(cluster))


def test_the_inference_service_await_holds_until_ready_within_its_bound(project: RealProject, running, cluster, tmp_path):
    pod_ready_delay(cluster, 45)
    _edit(project, _other_max_model_len)
    predicted, text = _predicted(project, tmp_path)
    assert predicted == {"reasoning"} and "down about 20 s" in text, text
    res, elapsed = up_timed(project, STACK)
    assert res.code == 0, res
    assert elapsed >= 45, res  # the InferenceService's await held the update until its predictor was Ready
    isvc = kubectl_json(cluster, "get", "inferenceservices.serving.kserve.io", "reasoning", "-n", NS)
    assert isvc["status"]["conditions"] == [{"type": "Ready", "status": "True"}]


def test_the_inference_service_await_fails_past_its_bound_naming_it(project: RealProject, running, cluster):
    pod_ready_delay(cluster, 400)
    _edit(project, _other_max_model_len)
    res, elapsed = up_timed(project, STACK)
    # Failed at the InferenceService's own bound (90 s), naming it, far from the provider's 10 minutes.
    assert (res.code != 0, AWAIT - 5 <= elapsed <= AWAIT + 90) == (True, True), (elapsed, str(res))
    errors = "\n".join(diagnostics(res.events))
    # The provider's message for a custom resource's await (measured: 95 s into the update).
    assert ('"llm-serving/reasoning" failed to fully initialize or become live: timed out waiting for the condition'
            in errors), errors
