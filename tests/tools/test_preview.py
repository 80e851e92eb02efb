"""The offline preview end to end, as a subprocess the way the README runs it.

``python3 dev.py preview`` on Pulumi.prod.yaml must write the eight objects of the spec's
intended prod state in the renderYamlToDirectory layout, print the card table (worker-1 4 / 4:
candle-vllm 2, clef-candle 1, reasoning 1, clef-serve 0 parked) and the model-server table,
and exit 0 (no mandatory policy violated). A bad stack config exits 2 with every problem and
no traceback, and leaves the output directory as it was.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.paths import PROD_STACK_FILE, ROOT

PROD = PROD_STACK_FILE

#: The spec's intended prod state (../shared/spec/prod-stack.md), one file each.
PROD_FILES = {
    "1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml",
    "1-manifest/apps_v1-deployment-llm-serving-clef-candle.yaml",
    "1-manifest/apps_v1-deployment-llm-serving-clef-serve.yaml",
    "1-manifest/serving.kserve.io_v1beta1-inferenceservice-llm-serving-reasoning.yaml",
    "1-manifest/v1-service-llm-serving-coder-predictor.yaml",
    "1-manifest/v1-service-llm-serving-clef-serve.yaml",
    "1-manifest/v1-service-llm-serving-reasoning-long-predictor.yaml",
    "1-manifest/networking.k8s.io_v1-networkpolicy-llm-serving-llm-serving-ingress.yaml",
}


def preview(*args: str, via_dev: bool = False) -> subprocess.CompletedProcess:
    """The preview as a process; without ``--stack-file``, of the frozen prod (where the user's command
    previews the live Pulumi.prod.yaml)."""
    if "--stack-file" not in args:
        args = ("--stack-file", str(PROD_STACK_FILE), *args)
    cmd = [sys.executable, "dev.py", "preview", *args] if via_dev else [sys.executable, "-m", "tools.preview", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


def files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def stack_file(tmp_path: Path, edit) -> Path:
    """A copy of the prod stack file with ``edit(config)`` applied (named Pulumi.test.yaml)."""
    data = yaml.safe_load(PROD.read_text())
    edit(data["config"])
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def prod_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("preview") / "prod"
    return preview("--out", str(out), via_dev=True), out


def test_prod_writes_the_intended_objects_in_the_provider_layout(prod_run):
    proc, out = prod_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(files(out)) == PROD_FILES
    assert sorted(p.name for p in out.iterdir()) == ["0-crd", "1-manifest"]
    parked = yaml.safe_load((out / "1-manifest/apps_v1-deployment-llm-serving-clef-serve.yaml").read_text())
    assert parked["spec"]["replicas"] == 0
    isvc = yaml.safe_load((out / "1-manifest/serving.kserve.io_v1beta1-inferenceservice-llm-serving-reasoning.yaml").read_text())
    assert isvc["kind"] == "InferenceService" and isvc["metadata"]["namespace"] == "llm-serving"
    assert list(isvc) == sorted(isvc)  # keys sorted, as the provider writes them


def test_prod_summary_shows_cards_components_and_servers(prod_run):
    proc, _ = prod_run
    text = proc.stdout
    assert re.search(r"^  worker-1\s+4 / 4\s+candle-vllm 2, clef-candle 1, reasoning 1, clef-serve 0 \(parked\)$", text, re.M), text
    assert "4 / 4 in the cluster" in text
    assert re.search(r"^  CandleDeployment/candle-vllm\s+apps/v1 Deployment llm-serving/candle-vllm$", text, re.M)
    assert re.search(r"^  StablePredictorService/coder-predictor\s+v1 Service llm-serving/coder-predictor\s+protect$", text, re.M)
    assert re.search(r"^  VllmInferenceService/reasoning\s+serving.kserve.io/v1beta1 InferenceService llm-serving/reasoning$", text, re.M)
    servers = re.findall(r"^  (candle-vllm|clef-candle|reasoning)\s+(candle-vllm|vllm)\s+\S+(?: \(provisional facts\))?\s+(\d)\s",
                         text, re.M)
    assert servers == [("candle-vllm", "candle-vllm", "2"), ("clef-candle", "candle-vllm", "1"), ("reasoning", "vllm", "1")]
    assert re.search(r"^  reasoning\s+vllm\s+qwen3-30b-a3b-gptq-int4\s+1\s+[\d.]+\s+[\d.]+\s+[\d,]+\s+65,536\s", text, re.M)
    # candle-vllm's KV figures are upper bounds; clef-flash's facts are placeholders (docs/capacity-model.md).
    assert re.search(r"^  candle-vllm\s+candle-vllm\s+coder-14b-fp16\s+2\s+15\.21\s+<= 13\.17\s+<= 143,872\s+32,768\s+<= 4\.39x\s+yes$",
                     text, re.M), text
    assert re.search(r"^  clef-candle\s+candle-vllm\s+clef-flash \(provisional facts\)\s+1\s", text, re.M), text
    assert "  <= upper bound: candle-vllm's memory beside the weights after load" in text
    assert "  (provisional facts): the model's facts are not yet confirmed from the checkpoint's config.json" in text
    assert "http://coder-predictor.llm-serving.svc.cluster.local:80" in text
    assert f"wrote {len(PROD_FILES)} manifests to" in text
    assert "PASS: no mandatory violation" in text


def test_bad_config_exits_2_with_every_problem_and_leaves_out_untouched(tmp_path):
    out = tmp_path / "out" / "test"
    out.parent.mkdir()
    assert preview("--out", str(out), "--no-policy").returncode == 0
    before = files(out)

    def break_it(config):
        config["llm-serving:workloads"]["candle-vllm"]["cards"] = -2
        config["llm-serving:services"]["clef-serve"]["selects"] = "clef-nothing"
        config["llm-serving:colour"] = "blue"

    proc = preview("--stack-file", str(stack_file(tmp_path, break_it)), "--out", str(out))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    for path, value in (("llm-serving:workloads.candle-vllm.cards", "-2"),
                        ("llm-serving:services.clef-serve.selects", '"clef-nothing"'),
                        ("llm-serving:colour", '"blue"')):
        assert re.search(rf"^{re.escape(path)}\n  value: {re.escape(value)}\n  rule: .+\n  fix: .+", proc.stderr, re.M), proc.stderr
    assert files(out) == before
    assert [p.name for p in out.parent.iterdir()] == ["test"]  # no temporary directory left behind


def test_unreadable_stack_file_exits_2(tmp_path):
    bad = tmp_path / "Pulumi.test.yaml"
    bad.write_text("config: [unclosed\n")
    proc = preview("--stack-file", str(bad), "--out", str(tmp_path / "out"), "--no-policy")
    assert proc.returncode == 2
    assert "not valid YAML" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_diff_against_an_earlier_rendering(tmp_path):
    out = tmp_path / "prod"
    assert preview("--out", str(out), "--no-policy").returncode == 0

    def more_seqs(config):
        config["llm-serving:workloads"]["candle-vllm"]["max_num_seqs"] = 16

    proc = preview("--stack-file", str(stack_file(tmp_path, more_seqs)), "--out", str(out), "--base", str(out), "--no-policy")
    assert proc.returncode == 0, proc.stderr
    # An argument is in the pod template: the server restarts, and the diff says so (never "update in place").
    assert "diff: 1 to update\n~  apps/v1 Deployment llm-serving/candle-vllm (update, RESTARTS candle-vllm)" in proc.stdout
    assert "cost: candle-vllm restarts (2 card(s) on worker-1): down about 300 s" in proc.stdout
    # A changed argv is a list diff, one item a line, not one long line.
    assert re.search(r"^      spec\.template\.spec\.containers\[name=\S+\]\.args: list changed\n"
                     r"            \"--max-num-seqs\"\n          - \"32\"\n          \+ \"16\"\n            \"--kv-fraction\"\n",
                     proc.stdout, re.M), proc.stdout
    assert "REPLACE" not in proc.stdout
    # --base may be --out: the diff was read before the directory was replaced
    assert b"16" in files(out)["1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml"]


def test_moving_the_namespace_marks_every_object_replace(tmp_path):
    base = tmp_path / "base"
    assert preview("--out", str(base), "--no-policy").returncode == 0

    def move(config):
        config["llm-serving:namespace"] = "llm-serving-2"

    proc = preview("--stack-file", str(stack_file(tmp_path, move)), "--out", str(tmp_path / "new"), "--base", str(base), "--no-policy")
    # Replacing the protected Services is refused in review (exit 1), each with its reason.
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.count("REFUSED: v1 Service llm-serving-2/") == 3, proc.stdout
    assert f"diff: {len(PROD_FILES)} to replace" in proc.stdout
    assert ("replace: metadata.namespace changes: the provider deletes Service llm-serving/coder-predictor and creates "
            "llm-serving-2/coder-predictor; the ClusterIP its clients cached is dropped") in proc.stdout


OVERALLOCATING_PROGRAM = (
    "import pulumi_kubernetes as k8s\n"
    "for i in range(3):\n"
    "    k8s.apps.v1.Deployment(f'w{i}', metadata={'name': f'w{i}', 'namespace': 'llm-serving'}, spec={\n"
    "        'selector': {'match_labels': {'app': f'w{i}'}},\n"
    "        'template': {'metadata': {'labels': {'app': f'w{i}'}}, 'spec': {\n"
    "            'node_selector': {'kubernetes.io/hostname': 'worker-1'}, 'runtime_class_name': 'nvidia',\n"
    "            'containers': [{'name': 's', 'image': 'x@sha256:0', 'resources': {'limits': {'nvidia.com/gpu': '1'}}}]}}})\n"
)


def test_a_mandatory_violation_exits_1_and_still_writes(tmp_path):
    """A stand-in program that over-allocates worker-1 (3 Deployments x (1 card + 1 surge))."""
    program = tmp_path / "__main__.py"
    program.write_text(OVERALLOCATING_PROGRAM)
    out = tmp_path / "out"
    proc = preview("--program", str(program), "--out", str(out), "--format", "json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert any(f["policy"] == "gpu-card-allocation" and f["level"] == "mandatory" for f in report["findings"])
    assert re.search(r"worker-1\s+6 / 4  OVER by 2\s+w0 1 \+ 1 surge, w1 1 \+ 1 surge, w2 1 \+ 1 surge", proc.stderr)
    assert len(files(out)) == 3


def test_policy_pack_config_sets_levels_and_a_bad_one_exits_2(tmp_path):
    program = tmp_path / "__main__.py"
    program.write_text(OVERALLOCATING_PROGRAM)
    advisory = tmp_path / "advisory.json"
    advisory.write_text('{"all": "advisory"}')
    proc = preview("--program", str(program), "--out", str(tmp_path / "a"), "--policy-pack-config", str(advisory), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert findings and {f["level"] for f in findings} == {"advisory"}
    typo = tmp_path / "typo.json"
    typo.write_text('{"gpu-card-alocation": "mandatory"}')
    out = tmp_path / "b"
    proc = preview("--program", str(program), "--out", str(out), "--policy-pack-config", str(typo))
    assert proc.returncode == 2
    assert "gpu-card-alocation" in proc.stderr and "fix:" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()


def test_a_crashing_program_exits_3_with_its_traceback_and_writes_nothing(tmp_path):
    program = tmp_path / "__main__.py"
    program.write_text("import pulumi\nvalue = {}['missing']\n")
    out = tmp_path / "out"
    proc = preview("--program", str(program), "--out", str(out), "--no-policy")
    assert proc.returncode == 3
    assert "the program crashed" in proc.stderr and "KeyError: 'missing'" in proc.stderr
    assert not out.exists()


class ClosedAfterFirstLine:
    """stdout of ``preview | head -1``: the first write reaches the reader, then the pipe is gone."""

    def __init__(self):
        self.seen = []

    def write(self, text):
        if self.seen:
            raise BrokenPipeError(32, "Broken pipe")
        self.seen.append(text)
        return len(text)

    def flush(self):
        if len(self.seen) > 1:
            raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_stops_early_does_not_turn_the_verdict_into_a_crash(tmp_path):
    """``python3 dev.py preview | head``: the preview still writes every manifest and returns
    its verdict, not exit 3 with a BrokenPipeError."""
    import io

    from tools import preview as preview_module

    out = tmp_path / "prod"
    stdout, stderr = ClosedAfterFirstLine(), io.StringIO()
    assert preview_module.main(["--stack-file", str(PROD_STACK_FILE), "--out", str(out), "--no-policy"], stdout=stdout, stderr=stderr) == 0, stderr.getvalue()
    assert stdout.seen[0].startswith("llm-serving / prod\n")
    assert "Traceback" not in stderr.getvalue()
    assert set(files(out)) == PROD_FILES


def test_a_stack_file_is_previewed_under_its_own_name_never_over_out_prod():
    """Newcomer finding: `--stack-file tests/stacks/after-001.yaml` used to write out/prod."""
    from pathlib import Path as _P  # noqa: N814

    from tools.preview import _parser, _stack_file_and_name

    args = _parser().parse_args(["--stack-file", "tests/stacks/after-001.yaml"])
    assert _stack_file_and_name(args, ROOT) == (_P("tests/stacks/after-001.yaml"), "after-001")
    args = _parser().parse_args(["--stack-file", "tests/fixtures/prod/Pulumi.prod.yaml"])
    assert _stack_file_and_name(args, ROOT)[1] == "prod"


def test_a_misspelt_config_namespace_exits_2_and_writes_nothing(tmp_path):
    """``llm-servign:workloads`` and ``llm-servign:services``: read as another namespace, the preview
    rendered only the NetworkPolicy and said PASS, and pulumi up would delete every workload."""

    def misspell(config):
        config["llm-servign:workloads"] = config.pop("llm-serving:workloads")
        config["llm-servign:services"] = config.pop("llm-serving:services")

    out = tmp_path / "out"
    proc = preview("--stack-file", str(stack_file(tmp_path, misspell)), "--out", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    for key in ("llm-servign:workloads", "llm-servign:services"):
        fixed = key.replace("servign", "serving")
        assert re.search(rf"^{re.escape(key)}\n  value: .+\n  rule: +{re.escape(key)} is not in the llm-serving: "
                         rf"namespace.+\n  fix: +rename it {re.escape(fixed)}$", proc.stderr, re.M), proc.stderr
    assert not out.exists()
