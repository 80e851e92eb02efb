"""The offline runner end to end: a real pack process driven over the analyzer gRPC protocol.

These tests use the stand-in pack in tests/manifests/standin-pack/ (one resource policy, two
stack policies, one with a config schema), started exactly as policies/ is, so they do not
depend on the real policies. tests/tools/test_analyze_plain_manifests.py runs the real pack.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.paths import ROOT
from tools.analyze import PolicyConfigError, run_pack, start_pack
from tools.offline import packproc
from tools.offline.manifests import Resource, load_stack_file, resources_from_documents

STANDIN = ROOT / "tests" / "manifests" / "standin-pack"
FIXTURE_STACK = ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"
CONFIG = load_stack_file(FIXTURE_STACK)


def deployment(name: str, replicas: int, image: str) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "llm-serving"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": image}]}}},
    }


def resources(*docs: dict) -> list[Resource]:
    return resources_from_documents(docs, stack="prod")


def run(res, policy_pack_config=None):
    return run_pack(res, CONFIG, pack_dir=STANDIN, policy_pack_config=policy_pack_config)


def test_resource_and_stack_findings_come_back_with_level_severity_urn_and_plain_message():
    res = resources(deployment("a", 2, "x:latest"), deployment("b", 3, "x:1.0"))
    report = run(res)

    latest = [f for f in report.findings if f.policy == "no-latest-tag"]
    assert len(latest) == 1
    f = latest[0]
    assert (f.level, f.severity, f.stage) == ("mandatory", "high", "resource")
    # pulumi-policy sends "<description>\n<message>"; the report keeps the message only.
    assert f.message == "a: image x:latest uses the moving tag :latest"
    assert f.urn == "urn:pulumi:prod::llm-serving::kubernetes:apps/v1:Deployment::llm-serving/a"
    assert f.object == "Deployment llm-serving/a"

    budget = [f for f in report.findings if f.policy == "replica-budget"]
    assert [(b.level, b.stage, b.object) for b in budget] == [("advisory", "stack", "Deployment llm-serving/b")]
    # Numbers cross the protocol as doubles (google.protobuf.Struct), as the CLI sends them.
    assert budget[0].message == "5 replicas requested, at most 3.0: a 2, b 3"

    assert report.exit_code() == 1
    assert report.counts()["mandatory"] == 1
    assert [p.name for p in report.policies] == ["no-latest-tag", "replica-budget", "stack-echo"]
    assert {p.name: (p.level, p.policy_type) for p in report.policies} == {
        "no-latest-tag": ("mandatory", "resource"),
        "replica-budget": ("advisory", "stack"),
        "stack-echo": ("advisory", "stack"),
    }
    assert report.pack == "standin-pack" and report.pack_version == "0.0.7"


def test_no_mandatory_finding_exits_zero():
    report = run(resources(deployment("a", 1, "x:1.0")))
    assert report.mandatory == ()
    assert report.exit_code() == 0


def test_the_pack_receives_stack_identity_config_and_resource_options_as_the_cli_sends_them():
    a, b = resources(deployment("a", 1, "x:1"), deployment("b", 1, "x:1"))
    b.parent = a.urn
    b.dependencies = [a.urn]
    b.protect = True
    report = run([a, b])
    echo = {f.message for f in report.findings if f.policy == "stack-echo"}
    # PULUMI_STACK / PULUMI_PROJECT / PULUMI_ORGANIZATION / PULUMI_DRY_RUN and PULUMI_CONFIG.
    assert "stack=prod project=llm-serving org=organization dry_run=True nodes=worker-1" in echo
    assert f"llm-serving/b: parent={a.urn} deps=['{a.urn}'] protect=True replicas_type=float" in echo
    assert "llm-serving/a: parent= deps=[] protect=False replicas_type=float" in echo


def test_policy_pack_config_sets_levels_and_properties_like_the_cli():
    res = resources(deployment("a", 2, "x:latest"), deployment("b", 3, "x:1.0"))

    raised = run(res, {"replica-budget": {"maxReplicas": 10}})
    assert not [f for f in raised.findings if f.policy == "replica-budget"]
    assert next(p for p in raised.policies if p.name == "replica-budget").config == {"maxReplicas": 10}

    advisory = run(res, {"no-latest-tag": "advisory"})
    assert [f.level for f in advisory.findings if f.policy == "no-latest-tag"] == ["advisory"]
    assert advisory.exit_code() == 0

    # A config that disables every policy is refused, not reported as PASS.
    with pytest.raises(PolicyConfigError, match="every one of the 3 policies is disabled"):
        run(res, {"all": "disabled"})

    # A policy's own entry wins over "all", as in the CLI's applyConfig.
    mixed = run(res, {"all": "disabled", "no-latest-tag": "mandatory"})
    assert {f.policy for f in mixed.findings} == {"no-latest-tag"}


def test_remediate_level_runs_the_remediation_pass_before_analyze():
    """The engine's first pass: Remediate, then Analyze on the remediated properties."""
    res = resources(deployment("a", 1, "x:latest"))
    report = run(res, {"no-latest-tag": "remediate"})
    assert [f for f in report.findings if f.policy == "no-latest-tag"] == []
    assert report.notes == (f"no-latest-tag remediated {res[0].urn}",)
    # Without the remediation level the same resource is a mandatory finding.
    assert [f.level for f in run(res).findings if f.policy == "no-latest-tag"] == ["mandatory"]


def test_a_bad_enforcement_level_is_refused_with_path_value_rule_and_fix():
    with pytest.raises(PolicyConfigError) as err:
        run(resources(deployment("a", 1, "x:1")), {"no-latest-tag": {"enforcementLevel": "mandatoryy"}})
    text = str(err.value)
    assert "no-latest-tag.enforcementLevel" in text
    assert '"mandatoryy"' in text
    assert "fix: use one of advisory, mandatory, remediate, disabled" in text


def test_every_policy_config_problem_is_reported_at_once():
    bad = {
        "replica-budget": {"maxReplicas": 0, "maxReplica": 4},
        "no-such-policy": "mandatory",
        "stack-echo": 3,
    }
    with pytest.raises(PolicyConfigError) as err:
        run(resources(deployment("a", 1, "x:1")), bad)
    problems = err.value.problems
    assert len(problems) == 4, problems
    joined = "\n".join(problems)
    assert "replica-budget.maxReplicas = 0: 0 is less than the minimum of 1" in joined
    assert "replica-budget.maxReplica:" in joined and "use one of enforcementLevel, maxReplicas" in joined
    assert "no-such-policy: no policy of pack standin-pack has this name" in joined
    assert "stack-echo = 3: a policy's config is a level string or an object" in joined


def test_results_do_not_depend_on_resource_order():
    docs = [deployment(f"d{i}", i % 3, "x:latest" if i % 4 == 0 else "x:1") for i in range(40)]
    base = run(resources(*docs)).to_dict()
    assert base["counts"]["mandatory"] == 10
    for seed in (1, 2):
        shuffled = docs[:]
        random.Random(seed).shuffle(shuffled)
        assert run(resources(*shuffled)).to_dict() == base


def test_several_workers_give_the_same_report():
    """workers=2: the second process judges AnalyzeStack (replica-budget, stack-echo) while the first
    takes every Analyze call; the report is the one of a single process."""
    docs = [deployment(f"d{i}", i % 3, "x:latest" if i % 4 == 0 else "x:1") for i in range(30)]
    single = run(resources(*docs))
    double = run_pack(resources(*docs), CONFIG, pack_dir=STANDIN, workers=2)
    assert double.to_dict() == single.to_dict()
    assert {f.policy for f in double.findings} == {"no-latest-tag", "replica-budget", "stack-echo"}
    # A policy disabled by the config stays disabled on every worker.
    off = run_pack(resources(*docs), CONFIG, pack_dir=STANDIN, workers=2, policy_pack_config={"stack-echo": "disabled"})
    assert "stack-echo" not in {f.policy for f in off.findings}


def test_with_several_workers_the_last_judges_the_stack_while_the_others_take_the_analyze_calls(monkeypatch):
    """workers=3: Analyze split between the first two processes, AnalyzeStack sent to the third
    before the Analyze calls end (beside them, not after); the report is the one of a single process."""
    calls: list[tuple[int, str, str]] = []
    pipelined, analyze_stack = packproc.PackConnection.pipelined, packproc.PackConnection.analyze_stack
    stack_sent = threading.Event()

    def recorded(self, method, requests, *args, **kwargs):
        assert stack_sent.wait(timeout=30), "the Analyze calls waited for AnalyzeStack: it is sent after them"
        out = pipelined(self, method, requests, *args, **kwargs)
        calls.append((id(self), method, "end"))
        return out

    def stack(self, resources):
        calls.append((id(self), "AnalyzeStack", "sent"))
        stack_sent.set()
        return analyze_stack(self, resources)

    monkeypatch.setattr(packproc.PackConnection, "pipelined", recorded)
    monkeypatch.setattr(packproc.PackConnection, "analyze_stack", stack)
    docs = [deployment(f"d{i}", i % 3, "x:latest" if i % 4 == 0 else "x:1") for i in range(30)]
    with start_pack(CONFIG, pack_dir=STANDIN, workers=3) as pack:
        report = pack.analyze(resources(*docs))
        first, second, last = (id(c) for c in pack.conns)
    assert sorted(c for c in calls if c[1] == "Analyze") == sorted([(first, "Analyze", "end"), (second, "Analyze", "end")])
    assert [c for c in calls if c[1] == "AnalyzeStack"] == [(last, "AnalyzeStack", "sent")]
    assert calls[0] == (last, "AnalyzeStack", "sent")
    monkeypatch.undo()
    assert report.to_dict() == run(resources(*docs)).to_dict()


def test_many_resources_are_pipelined_and_every_response_is_kept():
    n = packproc.PIPELINE_WINDOW * 3 + 5
    docs = [deployment(f"d{i:04d}", 0, "x:latest" if i % 7 == 0 else "x:1") for i in range(n)]
    report = run(resources(*docs))
    flagged = sorted(f.object for f in report.findings if f.policy == "no-latest-tag")
    assert flagged == [f"Deployment llm-serving/d{i:04d}" for i in range(0, n, 7)]


def test_pipelined_takes_requests_from_an_iterator_as_it_sends_them():
    n = packproc.PIPELINE_WINDOW * 2 + 3
    res = resources(*[deployment(f"d{i:04d}", 0, "x:latest" if i % 5 == 0 else "x:1") for i in range(n)])
    taken: list[int] = []
    events: list[tuple[str, int]] = []

    def requests():
        for i, r in enumerate(res):
            taken.append(i)
            events.append(("take", i))
            yield packproc.analyze_request(r, packproc.to_struct(r.props))

    class Sent:
        """The stub's Analyze, logging each call as it is sent."""

        def __init__(self, rpc):
            self.rpc = rpc

        def future(self, req):
            events.append(("send", len([e for e in events if e[0] == "send"])))
            return self.rpc.future(req)

    with start_pack(CONFIG, pack_dir=STANDIN) as pack:
        pack.info()
        real_rpc = pack.conn.stub.Analyze
        pack.conn.stub.Analyze = Sent(real_rpc)
        lazily = pack.conn.pipelined("Analyze", requests())
        pack.conn.stub.Analyze = real_rpc
        listed = pack.conn.pipelined("Analyze", [packproc.analyze_request(r, packproc.to_struct(r.props)) for r in res])
        assert taken == list(range(n))
        # Request k is taken only after call k-1 was sent (not all built first, then sent).
        assert all(events.index(("send", k - 1)) < events.index(("take", k)) for k in range(1, n)), events[:8]
        assert [list(r.diagnostics) for r in lazily] == [list(r.diagnostics) for r in listed]
        assert [i for i, r in enumerate(lazily) if r.diagnostics] == list(range(0, n, 5))

        def broken():
            yield packproc.analyze_request(res[0], packproc.to_struct(res[0].props))
            raise ValueError("no Struct for this value")

        with pytest.raises(ValueError, match="no Struct for this value"):
            pack.conn.pipelined("Analyze", broken())


def test_the_pack_process_is_stopped_after_a_run_and_after_an_error():
    pack = start_pack(CONFIG, pack_dir=STANDIN)
    with pack:
        pack.analyze(resources(deployment("a", 1, "x:1")))
        proc = pack.conn.proc
    assert proc.poll() is not None

    with pytest.raises(PolicyConfigError), start_pack(CONFIG, pack_dir=STANDIN) as pack:  # noqa: PT012
        proc = pack.conn.proc
        pack.analyze(resources(deployment("a", 1, "x:1")), {"no-latest-tag": "loud"})
    assert proc.poll() is not None


def test_a_pack_that_fails_to_start_shows_its_stderr(tmp_path):
    (tmp_path / "PulumiPolicy.yaml").write_text("name: broken\nruntime: python\n")
    (tmp_path / "__main__.py").write_text("raise RuntimeError('policy module exploded at import')\n")
    with pytest.raises(packproc.PackStartError) as err, start_pack(CONFIG, pack_dir=tmp_path) as pack:  # noqa: PT012
        proc = pack.conn.proc
        pack.analyze(resources(deployment("a", 1, "x:1")))
    assert "policy module exploded at import" in str(err.value)
    assert "exited with code 1 before printing its port" in str(err.value)
    assert proc.poll() is not None


def test_a_directory_without_a_pack_is_refused(tmp_path):
    with pytest.raises(packproc.PackStartError, match="has no PulumiPolicy.yaml"):
        start_pack(CONFIG, pack_dir=tmp_path)


def test_a_stack_config_too_large_for_the_environment_is_a_clear_error():
    huge = {**CONFIG, "llm-serving:notes": "x" * packproc.MAX_ENV_VALUE_BYTES}
    with pytest.raises(packproc.PackStartError) as err:
        start_pack(huge, pack_dir=STANDIN)
    assert "PULUMI_CONFIG is" in str(err.value) and "MAX_ARG_STRLEN" in str(err.value)


def test_a_policy_that_raises_fails_the_run_with_the_pack_stderr(tmp_path):
    (tmp_path / "PulumiPolicy.yaml").write_text("name: raising\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(
        "from pulumi_policy import PolicyPack, ResourceValidationPolicy\n"
        "def v(args, report):\n    raise ValueError('policy bug: ' + args.name)\n"
        "PolicyPack(name='raising', policies=[ResourceValidationPolicy(name='boom', description='d', validate=v)])\n"
    )
    with pytest.raises(packproc.PackCallError) as err:
        run_pack(resources(deployment("a", 1, "x:1")), CONFIG, pack_dir=tmp_path)
    assert "Analyze failed" in str(err.value)
    assert "policy bug: llm-serving/a" in str(err.value)


# --- the CLI ------------------------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.analyze", *args], cwd=ROOT, capture_output=True, text=True)


def write_manifests(tmp_path: Path) -> Path:
    d = tmp_path / "manifests"
    d.mkdir()
    (d / "a.yaml").write_text(json.dumps(deployment("a", 2, "x:latest")))
    (d / "b.yaml").write_text(json.dumps(deployment("b", 1, "x:1")))
    return d


def test_cli_checks_plain_manifests_and_writes_every_format(tmp_path):
    d = write_manifests(tmp_path)
    out = tmp_path / "out"
    proc = cli("--manifests", str(d), "--inventory", str(FIXTURE_STACK), "--pack-dir", str(STANDIN),
               "--format", "json", "--output", str(out / "report.json"),
               "--also", f"sarif={out / 'report.sarif'}", "--also", f"markdown={out / 'report.md'}",
               "--also", f"junit={out / 'report.xml'}", "--force")
    assert proc.returncode == 1, proc.stderr
    assert "FAIL: 1 mandatory violation" in proc.stderr
    data = json.loads((out / "report.json").read_text())
    assert data["exit_code"] == 1
    latest = [f for f in data["findings"] if f["policy"] == "no-latest-tag"]
    assert [f["source"] for f in latest] == [(d / "a.yaml").resolve().as_posix()]
    sarif = json.loads((out / "report.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["ruleId"] == "no-latest-tag"
    assert "no-latest-tag" in (out / "report.md").read_text()
    assert "<testcase" in (out / "report.xml").read_text()


def test_cli_bad_policy_config_exits_2_with_a_message_and_no_traceback(tmp_path):
    d = write_manifests(tmp_path)
    cfg = tmp_path / "ppc.json"
    cfg.write_text(json.dumps({"no-latest-tag": "mandatoryy"}))
    proc = cli("--manifests", str(d), "--inventory", str(FIXTURE_STACK), "--pack-dir", str(STANDIN),
               "--policy-pack-config", str(cfg))
    assert proc.returncode == 2
    assert "cannot configure the policy pack" in proc.stderr
    assert 'no-latest-tag.enforcementLevel = "mandatoryy"' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_cli_needs_an_inventory_with_manifests(tmp_path):
    proc = cli("--manifests", str(write_manifests(tmp_path)), "--pack-dir", str(STANDIN))
    assert proc.returncode == 2
    assert "--manifests needs --inventory STACKFILE" in proc.stderr


def test_cli_missing_manifest_directory_exits_2(tmp_path):
    proc = cli("--manifests", str(tmp_path / "nope"), "--inventory", str(FIXTURE_STACK), "--pack-dir", str(STANDIN))
    assert proc.returncode == 2
    assert "no such file or directory" in proc.stderr


def test_a_pack_closed_before_its_port_is_read_raises_no_exception_in_the_reading_thread(monkeypatch):
    """A pack stopped while its port is awaited (its stdout closed under the reader): the start
    fails with its message, and the reading thread ends quietly instead of raising
    ``ValueError: readline of closed file`` on its own."""
    seen: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_value))
    proc = subprocess.Popen([sys.executable, "-c", "pass"], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()
    with pytest.raises(packproc.PackStartError, match="exited with code 0 before printing its port"):
        packproc._read_port(proc, timeout=10)
    assert seen == []
