"""Retiring a workload behind a protected Service, with the real CLI and provider on the loopback
cluster: what review says is what ``pulumi up`` does.

Scaled down: worker-1 runs ``clef-candle`` (1 card) behind ``clef-serve`` (a StablePredictorService,
protected; its client ``gateway``) and ``keep`` (1 card) behind ``keep-predictor``. The change
retires ``clef-candle`` and ``clef-serve``: both leave the stack file and
``llm-serving:retire`` lists them.

1. Review, offline: ``dev.py preview --base`` (the first stack's rendering) shows the Service's
   removal as ``remove, PROTECTED``, the OUTAGE of its client, and BEFORE THE DEPLOY the state
   command with the Service's URN; review, real plan: ``pulumi preview --json`` read back by
   ``dev.py plan`` refuses the delete while the state marks it protected, with the same command.
2. ``pulumi up`` does what review said: it refuses to delete the protected Service (the Service
   keeps its UID and ClusterIP); what it did before stays done (the retired Deployment may be
   gone already, as the message warns).
3. The command review printed, run as printed, clears the flag; the real plan then passes (the
   OUTAGE line still names the client), and ``pulumi up`` deletes the Service and the Deployment;
   ``keep`` and its Service are untouched.
"""

from __future__ import annotations

import io
import re
import shlex

import pytest
import yaml

from tests.paths import PROD_STACK_FILE
from tests.real.realpath import RealProject, kubectl_json
from tools import plan, preview
from tools.offline.manifests import load_stack_file

pytestmark = pytest.mark.real

STACK = "retire"
NS = "llm-serving"
OUTAGE = ("OUTAGE: model server clef-candle is deleted: Service llm-serving/clef-serve is deleted: clients that lose it: "
          "gateway (namespace gateway, port 80)")
URN = ("urn:pulumi:retire::llm-serving::llm-serving:index:StablePredictorService$kubernetes:core/v1:Service::clef-serve")


def _stack(retired: bool) -> dict:
    prod = load_stack_file(PROD_STACK_FILE)

    def workload() -> dict:
        return {"server": "pytorch", "image": "forgejo.riotpiao.com/riotpiao-poimen/clef-serve:latest",
                "node": "worker-1", "cards": 1, "cold_start_seconds": 10,
                "resources": {"requests": {"memory": "4Gi"}, "limits": {"memory": "8Gi"}}}

    workloads = {"keep": workload()}
    services = {"keep-predictor": {"selects": "keep"}}
    config = {"llm-serving:namespace": NS, "llm-serving:cluster": prod["llm-serving:cluster"]}
    if retired:
        config["llm-serving:retire"] = {"workloads": ["clef-candle"], "services": ["clef-serve"]}
    else:
        workloads["clef-candle"] = workload()
        services["clef-serve"] = {"selects": "clef-candle", "clients": [{"name": "gateway", "namespace": "gateway", "port": 80}]}
    return {"config": {**config, "llm-serving:workloads": workloads, "llm-serving:services": services}}


def _write(project: RealProject, retired: bool) -> None:
    (project.dir / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(_stack(retired), sort_keys=False))


def _real_plan(project: RealProject, tmp_path, name: str) -> tuple[int, str]:
    """The review job's real plan: ``pulumi preview --json --show-sames --show-replacement-steps``
    (the CLI's document) read back by ``dev.py plan``."""
    res = project.run("preview", "--stack", STACK, "--show-sames", "--show-replacement-steps", events=True, streaming=False)
    path = tmp_path / f"{name}.json"
    path.write_text(res.stdout)
    out = io.StringIO()
    code = plan.main([str(path)], stdout=out, stderr=out)
    return code, out.getvalue() + f"\n(pulumi preview exit {res.code}: {res.stderr[-2000:]})"


def _service(cluster) -> tuple[str, str] | None:
    items = kubectl_json(cluster, "get", "services", "-n", NS)["items"]
    return next(((s["metadata"]["uid"], s["spec"]["clusterIP"]) for s in items if s["metadata"]["name"] == "clef-serve"), None)


def test_review_and_pulumi_up_agree_on_retiring_a_protected_service(project: RealProject, cluster, tmp_path):
    _write(project, retired=False)
    project.stack_init(STACK)
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    before = _service(cluster)
    assert before is not None
    base = tmp_path / "base"
    out = io.StringIO()
    assert preview.main(["--stack-file", str(project.dir / f"Pulumi.{STACK}.yaml"), "--out", str(base), "--no-policy"],
                        stdout=out, stderr=out) == 0, out.getvalue()

    # 1. Review: the offline diff and the real plan name the same state command.
    _write(project, retired=True)
    out = io.StringIO()
    code = preview.main(["--stack-file", str(project.dir / f"Pulumi.{STACK}.yaml"), "--base", str(base),
                         "--out", str(tmp_path / "new"), "--no-policy"], stdout=out, stderr=out)
    offline = out.getvalue()
    assert code == 0, offline
    assert "-  v1 Service llm-serving/clef-serve (remove, PROTECTED)" in offline
    assert OUTAGE in offline
    [command] = re.findall(r"BEFORE THE DEPLOY: .*?`(pulumi state unprotect [^`]+)`", offline)
    assert command == f"pulumi state unprotect --stack {STACK} --yes '{URN}'"

    code, text = _real_plan(project, tmp_path, "protected")
    assert code == plan.EXIT_REFUSED, text
    assert "REFUSED: Service llm-serving/clef-serve: pulumi up refuses to delete it while the stack's state marks it protected" in text
    assert f"`{command}`" in text  # the real state's URN is the one the offline diff computed

    # 2. pulumi up does what review said: the protected Service is not deleted.
    res = project.up(STACK, policy_pack=False)
    assert res.code != 0, res
    assert "protected" in res.output, res
    assert _service(cluster) == before
    # What the failed update did before the refused delete stays done (the message says so): the
    # retired Deployment may already be gone (on a run here it was), its server down with it.
    deployment_left = "clef-candle" in {d["metadata"]["name"] for d in kubectl_json(cluster, "get", "deployments", "-n", NS)["items"]}

    # 3. The command as review printed it, then the plan passes and pulumi up deletes the Service.
    words = shlex.split(command)
    assert words[0] == "pulumi"
    res = project.run(*words[1:])
    assert res.code == 0, res
    code, text = _real_plan(project, tmp_path, "unprotected")
    assert code == plan.EXIT_OK, text
    if deployment_left:
        assert OUTAGE in text
    else:  # the server went with the failed update: the Service has no backend left to lose
        assert "OUTAGE" not in text and "v1 Service llm-serving/clef-serve (remove)" in text, text
    assert text.split("\n(pulumi preview exit")[0].rstrip().rsplit("\n", 1)[-1].startswith("PASS: "), text
    res = project.up(STACK, policy_pack=False)
    assert res.code == 0, res
    assert _service(cluster) is None
    names = {d["metadata"]["name"] for d in kubectl_json(cluster, "get", "deployments", "-n", NS)["items"]}
    assert names == {"keep"}
    assert {s["metadata"]["name"] for s in kubectl_json(cluster, "get", "services", "-n", NS)["items"]} >= {"keep-predictor"}
