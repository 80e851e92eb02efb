"""Careless and hostile stack files, manifests, inventories, pack configs and
output paths. Each kind of bad input gets exit 2 with the file, the key path (or document) and a
fix, never a traceback, never exit 1 (a policy verdict), nothing written, and no hang.

The preview and the runner are called in-process (their ``main``): every case here fails before
the policy pack starts.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import time
from pathlib import Path

import pytest
import yaml

from policylib.pack import policy
from tests.paths import PROD_STACK_FILE, ROOT
from tools import analyze, preview
from tools.offline.manifests import InputError, read_manifests

PROD_TEXT = PROD_STACK_FILE.read_text()
INVENTORY = ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"
REFERENCE = ROOT / "tests" / "reference"

BOMB = "".join(f"{a}: &{a} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['lol'] * 9)}]\n"
               for p, a in zip(["", *"abcdefgh"], "abcdefghi", strict=True))


def run_preview(tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "out"
    code = preview.main([*args, "--out", str(target), "--no-policy"], stdout=out, stderr=err)
    return code, out.getvalue() + err.getvalue(), target


def run_analyze(capsys, *args: str) -> tuple[int, str]:
    code = analyze.main(list(args))
    got = capsys.readouterr()
    return code, got.out + got.err


def assert_input_error(code: int, text: str, *expected: str) -> None:
    assert code == 2, text
    assert "Traceback" not in text
    for e in expected:
        assert e in text, (e, text)


def prod_with(tmp_path: Path, old: str, new: str, name: str = "Pulumi.try.yaml") -> Path:
    assert old in PROD_TEXT
    path = tmp_path / name
    path.write_text(PROD_TEXT.replace(old, new, 1))
    return path


# --- stack files ---------------------------------------------------------------------------------

def test_a_workload_copied_under_the_same_name_is_refused_with_both_lines(tmp_path):
    """The worst case: "Adding a workload" followed by a copy of candle-vllm left under
    its name replaced prod's workload, and the preview said PASS."""
    copy = ("  llm-serving:services:",
            "    candle-vllm:\n      server: pytorch\n      image: x:1\n      node: worker-1\n      cards: 1\n"
            "      cold_start_seconds: 60\n\n  llm-serving:services:")
    path = prod_with(tmp_path, *copy)
    first = PROD_TEXT.splitlines().index("    candle-vllm:") + 1
    second = path.read_text().splitlines().index("    candle-vllm:", first) + 1
    code, text, out = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "llm-serving:workloads.candle-vllm", f"lines {first} and {second}")
    assert not out.exists()


@pytest.mark.parametrize("value, words", [
    ("2024-01-01", "a date/time"),
    ("!!binary aGVsbG8=", "binary data"),
    ("!!set {a, b}", "a set (!!set)"),
    ("!!omap [a: 1]", "an ordered map"),
    ("!custom thing", "the tag !custom"),
    (".inf", "not a finite number"),
    (".NaN", "not a finite number"),
    ("1.0e+400", "not a finite number"),  # too large for a float: read as infinity (review finding)
])
def test_yaml_beyond_plain_data_is_refused_with_the_key_path(tmp_path, value, words):
    path = prod_with(tmp_path, "cold_start_seconds: 180", f"cold_start_seconds: {value}")
    code, text, out = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "llm-serving:workloads.clef-candle.cold_start_seconds", words)
    assert not out.exists()


def test_a_billion_laughs_stack_file_ends_in_under_a_second(tmp_path):
    path = tmp_path / "Pulumi.bomb.yaml"
    path.write_text("config:\n  llm-serving:namespace: llm-serving\n" + "".join(
        "  " + line + "\n" for line in BOMB.splitlines()))
    started = time.perf_counter()
    code, text, out = run_preview(tmp_path, "--stack-file", str(path))
    assert time.perf_counter() - started < 1.0
    assert_input_error(code, text, "billion laughs", "nodes from 32 written")
    assert not out.exists()


def test_a_config_key_without_a_value_is_refused(tmp_path):
    """Found by the fuzz test: `llm-serving:namespace: null` reached the program as the text
    "null", a valid namespace, and the preview rendered every object into namespace null."""
    path = prod_with(tmp_path, "llm-serving:namespace: llm-serving", "llm-serving:namespace:")
    code, text, out = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "llm-serving:namespace\n", "has no value (null)")
    assert not out.exists()


def test_a_recursive_alias_is_refused(tmp_path):
    path = tmp_path / "Pulumi.rec.yaml"
    path.write_text("config:\n  llm-serving:workloads: &w\n    a: *w\n")
    code, text, _ = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "recursive alias")


def test_a_fifo_stack_file_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "Pulumi.fifo.yaml"
    os.mkfifo(fifo)
    started = time.perf_counter()
    code, text, _ = run_preview(tmp_path, "--stack-file", str(fifo))
    assert time.perf_counter() - started < 5
    assert_input_error(code, text, "FIFO", "not a regular file")


def test_dev_zero_is_refused(tmp_path):
    code, text, _ = run_preview(tmp_path, "--stack-file", "/dev/zero")
    assert_input_error(code, text, "/dev/zero", "character device")


def test_a_2gb_sparse_stack_file_is_refused_before_reading(tmp_path):
    big = tmp_path / "Pulumi.big.yaml"
    with open(big, "wb") as f:  # noqa: PTH123
        f.truncate(2 * 1024 ** 3)
    code, text, _ = run_preview(tmp_path, "--stack-file", str(big))
    assert_input_error(code, text, "2,147,483,648 bytes", "limit")


def test_a_stack_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "Pulumi.latin1.yaml"
    path.write_bytes(PROD_TEXT.replace("# The prod stack", "# caf\xe9").encode("latin-1"))
    code, text, _ = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "not UTF-8")


@pytest.mark.parametrize("content, words", [
    ("[1, 2]", "the top level is a JSON array"),
    ('"text"', "the top level is a JSON string"),
    ('{"num_attention_heads": 8, "num_attention_heads": 16}', "given twice"),
    ('{"text_config": [1]}', "wrong type"),
    ('{"num_attention_heads": NaN}', "NaN is not JSON"),
    (None, "FIFO"),
])
def test_a_config_json_that_is_not_one_object_is_exit_2_with_its_key(tmp_path, content, words):
    cfg = tmp_path / "config.json"
    if content is None:
        os.mkfifo(cfg)
    else:
        cfg.write_text(content)
    path = prod_with(tmp_path, "catalog: Qwen/Qwen2.5-Coder-14B-Instruct", f"config_json: {cfg}")
    code, text, _ = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "llm-serving:models.coder-14b-fp16.config_json", words)


# --- manifests -----------------------------------------------------------------------------------

SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "llm-serving"},
           "spec": {"selector": {"app": "candle-vllm"}, "ports": [{"port": 80, "targetPort": 8080}]}}


@pytest.mark.parametrize("text, words", [
    ("- a\n- b\n", "it is a list, not a map"),
    ("apiVersion: v1\nkind: 5\nmetadata: {name: x}\n", "kind is 5"),
    ('apiVersion: v1\nkind: Service\nmetadata: "x"\n', 'metadata is "x", not a map'),
    ("apiVersion: v1\nkind: List\nitems: [1, 2]\n", "List item, document 1: not a Kubernetes object"),
    ("apiVersion: v1\nkind: List\nitems: {a: 1}\n", "List.items is not a list"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: x, name: y}\n", "given twice"),
    (BOMB, "billion laughs"),
    ("---\napiVersion: v1\nkind: Service\nmetadata: {name: ok}\n---\nkind: [x]\n", "document 2"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: 7}\n", "metadata.namespace is 7"),
])
def test_a_malformed_manifest_is_exit_2_naming_file_and_document(tmp_path, capsys, text, words):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "bad.yaml").write_text(text)
    code, out = run_analyze(capsys, "--manifests", str(tmp_path / "m"), "--inventory", str(INVENTORY))
    assert_input_error(code, out, "bad.yaml", "document", words)


def test_a_manifest_that_is_not_utf8_is_exit_2(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "bad.yaml").write_bytes(b"apiVersion: v1\nkind: Service\nmetadata: {name: caf\xe9}\n")
    code, out = run_analyze(capsys, "--manifests", str(tmp_path / "m"), "--inventory", str(INVENTORY))
    assert_input_error(code, out, "bad.yaml", "not UTF-8", "byte 49")


def test_an_inventory_without_the_cluster_is_one_error_with_its_key_path(tmp_path, capsys):
    inv = tmp_path / "Pulumi.inv.yaml"
    inv.write_text("config:\n  llm-serving:models: {}\n")
    code, out = run_analyze(capsys, "--manifests", str(REFERENCE), "--inventory", str(inv))
    assert_input_error(code, out, "llm-serving:cluster\n", "the cluster inventory is required")
    assert out.count("llm-serving:cluster") == 2  # the path and the fix, once: not per policy


def test_the_inventorys_error_comes_first_whether_the_manifests_are_good_or_bad(tmp_path, capsys):
    """The inventory is validated while the pack judges the manifests: its error still wins, and
    no report is printed with it (as when it was validated before the manifests were read)."""
    inv = tmp_path / "Pulumi.inv.yaml"
    inv.write_text("config:\n  llm-serving:models: {}\n")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "bad.yaml").write_text("apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: 7}\n")
    for manifests in (REFERENCE, tmp_path / "m"):
        code, out = run_analyze(capsys, "--manifests", str(manifests), "--inventory", str(inv))
        assert_input_error(code, out, "llm-serving:cluster\n", "the cluster inventory is required")
        assert "bad.yaml" not in out and "PASS" not in out and "FAIL" not in out


def test_a_manifest_without_namespace_is_judged_in_the_inventorys_namespace_and_said(tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**SERVICE, "metadata": {"name": "s"}}))
    found = read_manifests(tmp_path, "t", "llm-serving")
    assert [r.name for r in found.resources] == ["llm-serving/s"]
    assert found.resources[0].props["metadata"]["namespace"] == "llm-serving"
    assert len(found.notes) == 1 and "Service s" in found.notes[0] and "no metadata.namespace" in found.notes[0]


def test_a_json_manifest_is_read(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(SERVICE, indent="\t"))
    found = read_manifests(tmp_path, "t", "llm-serving")
    assert [(r.type, r.name) for r in found.resources] == [("kubernetes:core/v1:Service", "llm-serving/s")]
    assert found.notes == []


def test_the_same_object_twice_is_judged_once_and_said_or_refused_when_the_copies_differ(tmp_path):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "s.yaml").write_text(yaml.safe_dump(SERVICE))
    found = read_manifests(tmp_path, "t", "llm-serving")
    assert [r.name for r in found.resources] == ["llm-serving/s"]
    assert len(found.notes) == 1
    assert re.fullmatch(r"Service llm-serving/s is in \S*a/s\.yaml and again in \S*b/s\.yaml \(identical\); judged once",
                        found.notes[0]), found.notes
    changed = {**SERVICE, "spec": {**SERVICE["spec"], "selector": {"app": "other"}}}
    (tmp_path / "b" / "s.yaml").write_text(yaml.safe_dump(changed))
    with pytest.raises(InputError, match="also in .*with different content"):
        read_manifests(tmp_path, "t", "llm-serving")


# --- outputs and the pack config -----------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--output", "--also"])
def test_report_paths_never_overwrite_a_tracked_file_or_write_outside_out(tmp_path, capsys, flag):
    readme = ROOT / "README.md"
    before = readme.read_bytes()
    for target in (readme, tmp_path / "report.md"):
        spec = str(target) if flag == "--output" else f"markdown={target}"
        code, out = run_analyze(capsys, "--manifests", str(REFERENCE), "--inventory", str(INVENTORY), flag, spec)
        assert_input_error(code, out, "cannot write the report", "--force")
        assert not (tmp_path / "report.md").exists()
    assert readme.read_bytes() == before
    assert not re.search(r"FAIL|PASS", out)  # refused before the pack ran


def test_a_tracked_file_inside_out_is_refused_too(tmp_path, monkeypatch):
    monkeypatch.setattr(analyze, "OUTPUT_DIR", ROOT)
    with pytest.raises(analyze.AnalyzeError, match="git tracks that file"):
        analyze.check_output_path(ROOT / "README.md")
    analyze.check_output_path(ROOT / "README.md", force=True)
    analyze.check_output_path(ROOT / "not-tracked-yet.md")


def test_a_pack_config_that_disables_every_policy_says_so_instead_of_pass():
    from tests.tools.test_analyze_policy_config import info

    with pytest.raises(analyze.PolicyConfigError, match="every one of the 2 policies is disabled"):
        analyze.reconcile_policy_config(info(), {"all": "disabled"})
    with pytest.raises(analyze.PolicyConfigError, match="every one of the 2 policies is disabled"):
        analyze.reconcile_policy_config(info(), {"cards": "disabled", "probe": "disabled"})
    assert analyze.reconcile_policy_config(info(), {"cards": "disabled"})["probe"][0] == "advisory"


@pytest.mark.parametrize("make, words", [
    (lambda p: os.mkfifo(p), "FIFO"),
    (lambda p: p.write_text('{"multi-gpu-shm": "advisory", "multi-gpu-shm": "disabled"}'), "given twice"),
])
def test_a_policy_pack_config_that_is_a_fifo_or_repeats_a_key_is_exit_2(tmp_path, capsys, make, words):
    ppc = tmp_path / "ppc.json"
    make(ppc)
    code, out = run_analyze(capsys, "--manifests", str(REFERENCE), "--inventory", str(INVENTORY),
                            "--policy-pack-config", str(ppc))
    assert_input_error(code, out, "ppc.json", words)


def test_a_network_policy_port_that_is_no_port_is_judged_without_a_crash():
    """Found by the fuzz test: network-ingress-for-clients compared a list with a port number."""
    from stackfile import load_stack_config
    from stackfile.build import render_manifests
    from tests.policy_harness import run_policy, use_stack_config
    from tools.offline.manifests import load_stack_file, resources_from_documents

    config = load_stack_file(PROD_STACK_FILE)
    docs = render_manifests(load_stack_config(config))
    netpol = next(d for d in docs if d["kind"] == "NetworkPolicy")
    for rule in netpol["spec"]["ingress"]:
        rule["ports"] = [{"port": [8080]}, {"port": {"a": 1}}, {"port": 0.5}]
    use_stack_config(config)
    found = run_policy(policy("network-ingress-for-clients"), resources_from_documents(docs))
    assert found and all("poimen-memory" in v.message or "gateway" in v.message or "qwen-finetune" in v.message
                         for v in found)


def test_an_infinite_rope_factor_in_a_server_argv_is_judged_without_a_crash(tmp_path, capsys):
    """--hf-overrides '{"rope_scaling": {"factor": 1e400}}' (JSON reads it as infinity) crashed
    vllm-context-window, and analyze printed "Analyze failed (UNKNOWN)" naming no object. The
    factor is unusable, so the window stays the model's own and 200,000 tokens are refused."""
    manifests = tmp_path / "m"
    manifests.mkdir()
    (manifests / "a.yaml").write_text("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: llama, namespace: default}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: llama}}
  template:
    metadata: {labels: {app: llama}}
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.11.0
        args: ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "200000",
               "--hf-overrides", '{"rope_scaling":{"rope_type":"yarn","factor":1e400}}']
        resources: {limits: {nvidia.com/gpu: 1, memory: 40Gi}, requests: {memory: 40Gi}}
""")
    code, text = run_analyze(capsys, "--manifests", str(manifests), "--inventory",
                             str(ROOT / "policies" / "fixtures" / "Pulumi.public.yaml"))
    assert "Traceback" not in text and "UNKNOWN" not in text and "Exception calling application" not in text, text
    assert code == 1, text
    assert "vllm-context-window" in text


# --- values a server cannot start with ----------------------------------------------------------------


@pytest.mark.parametrize("value", ['"0"', "0Gi", '"-1"'])
def test_a_zero_or_negative_memory_or_cpu_is_refused(tmp_path, value):
    stack = prod_with(tmp_path, 'limits: {cpu: "8", memory: 36Gi}', f'limits: {{cpu: "8", memory: {value}}}')
    code, text, out = run_preview(tmp_path, "--stack-file", str(stack))
    assert_input_error(code, text, "resources.limits.memory", "above zero", "omit the key")
    assert not out.exists()


def test_a_nul_in_an_env_value_is_refused(tmp_path):
    stack = prod_with(tmp_path, 'limits: {cpu: "8", memory: 36Gi}',
                      'limits: {cpu: "8", memory: 36Gi}\n      env: {HF_HUB_OFFLINE: "1\\0"}')
    code, text, out = run_preview(tmp_path, "--stack-file", str(stack))
    assert_input_error(code, text, "env.HF_HUB_OFFLINE", "NUL", "remove the NUL")
    assert not out.exists()


@pytest.mark.parametrize("old, new, words", [
    ("      catalog: Qwen/Qwen2.5-Coder-14B-Instruct\n", "",
     ("llm-serving:models.coder-14b-fp16", "given: none", "config_json: <path to the checkpoint's config.json>")),
    ("      catalog: Qwen/Qwen2.5-Coder-14B-Instruct\n", "      catalog: Qwen/Qwen2.5-Coder-14B\n",
     ("'Qwen/Qwen2.5-Coder-14B' is not in the catalog", "use one of", "replace catalog with config_json or facts")),
    ("      weights_path: /mnt/models/coder-14b-fp16\n", "",
     ("neither hf_id nor weights_path", "add hf_id: <org/name>")),
])
def test_a_model_entry_says_how_to_give_its_facts(tmp_path, old, new, words):
    """A model entry without its facts, with an unknown catalog id or without a name a server's
    arguments can match: the fix says what to write, not "correct the value"."""
    code, text, out = run_preview(tmp_path, "--stack-file", str(prod_with(tmp_path, old, new)))
    assert_input_error(code, text, *words)
    assert "correct the value" not in text and not out.exists()


# --- figures bounded by what they measure -------------------------------------------------------

#: reasoning at 655,360 tokens of context (rope factor 20 lets vLLM accept the length): the KV pool
#: of one V100 holds about 137,000 tokens, so the loader refuses it on the estimate.
LONG_CONTEXT = ("max_model_len: 65536", "max_model_len: 655360")
LONG_ROPE = ("factor: 2.0, original_max_position_embeddings: 32768", "factor: 20.0, original_max_position_embeddings: 32768")


def _reasoning(tmp_path: Path, measured: str) -> Path:
    text = PROD_TEXT.replace(*LONG_CONTEXT).replace(*LONG_ROPE)
    old = "        weights_gib: 15.55\n        kv_tokens: 137000\n"
    assert old in text
    path = tmp_path / "Pulumi.try.yaml"
    path.write_text(text.replace(old, measured))
    return path


def test_a_long_context_is_refused_on_the_estimate(tmp_path):
    """Judged once, by the pack's kv-cache-fits-max-model-len on the rendered manifests: a mandatory
    finding (exit 1) worded in the stack file's keys, where the loader refused it as bad input (exit 2)."""
    out, err = io.StringIO(), io.StringIO()
    stack = _reasoning(tmp_path, "        kv_tokens: 137000\n")
    code = preview.main(["--stack-file", str(stack), "--out", str(tmp_path / "out")], stdout=out, stderr=err)
    text = out.getvalue() + err.getvalue()
    assert code == 1, text
    assert "Traceback" not in text
    assert "kv-cache-fits-max-model-len" in text and "--max-model-len 655,360 needs 655,360 tokens of KV cache" in text
    assert "Fix: lower max_model_len to at most 137,000" in text and "under llm-serving:workloads.reasoning" in text


@pytest.mark.parametrize("measured, key, words", [
    ("        kv_tokens: 1000000000000\n", "measured.kv_tokens", ("1,000,000,000,000", "at most", "tokens")),
    ("        kv_gib: 900\n", "measured.kv_gib", ("900", "at most", "GiB a rank", "Tesla-V100-PCIE-32GB")),
    ("        weights_gib: 15.55\n        kv_gib: 30\n", "measured.kv_gib", ("less 15.55 GiB of weights a card (measured)",)),
    ("        weights_gib: 900\n        kv_tokens: 137000\n", "measured.weights_gib", ("at most the",)),
])
def test_a_measurement_no_card_can_hold_does_not_turn_a_refusal_into_a_pass(tmp_path, measured, key, words):
    """A KV pool of 900 GiB on a 32 GiB card, or 10^12 KV tokens, made a 655,360-token context
    the loader refuses pass: the policies judged the measurement."""
    code, text, out = run_preview(tmp_path, "--stack-file", str(_reasoning(tmp_path, measured)))
    assert_input_error(code, text, f"llm-serving:workloads.reasoning.{key}", "beyond what the card can hold", *words)
    assert not out.exists()


def test_an_impossible_measurement_leaves_the_estimate_to_the_policies():
    """The pack's side (``--manifests`` with an inventory's ``measured``): the figure is left out
    and the estimate judged, so it cannot turn a refusal into a pass either."""
    from core.capacity import comparison as capacity_measured
    from core.capacity import estimator as capacity
    from core.capacity.measured import Measured
    from stackfile import load_stack_config
    from tools.offline.manifests import load_stack_file

    cfg = load_stack_config(load_stack_file(PROD_STACK_FILE))
    wl = cfg.workloads["reasoning"]
    node = cfg.cluster.nodes[0]
    est = capacity.estimate(cfg._facts[wl.model], node.card, dataclasses.replace(wl.settings(tp=wl.tp), max_model_len=655360))
    assert not est.fits_kv
    huge = Measured(kv_tokens=10**12, source="made up")
    assert [f for f, _, _ in capacity_measured.impossible(huge, est)] == ["kv_tokens"]
    assert capacity_measured.judged(est, huge).fits_kv is False
    assert capacity_measured.judged(est, Measured(kv_tokens=137000, source="seed 002")).kv_tokens == 137000


@pytest.mark.parametrize("old, new, key, words", [
    ('source: "seed 002', 'date: "2026-13-45"\n        source: "seed 002', "workloads.reasoning.measured.date", "no day of the calendar"),
    ('source: "seed 002', 'date: "2026-02-30"\n        source: "seed 002', "workloads.reasoning.measured.date", "no day of the calendar"),
    ("hbm_bandwidth_gb_s: 900", "hbm_bandwidth_gb_s: 900\n          cuda_total_mib: 9000000",
     "cluster.nodes.0.card.cuda_total_mib", "cuda_total_mib 9e+06 is not a total CUDA reports"),
    ("hbm_bandwidth_gb_s: 900", "hbm_bandwidth_gb_s: 900\n          cuda_total_mib: 1024",
     "cluster.nodes.0.card.cuda_total_mib", "29,491 to 32,768 MiB"),
    ("house_conventions: true", "house_conventions: true\n    measured:\n      ghost: {kv_tokens: 5, source: log}",
     "cluster.measured.ghost", "not in llm-serving:workloads"),
    ("factor: 2.0, original", "factor: 1.0e300, original", "workloads.reasoning.rope_scaling", "beyond 2,147,483,647 tokens"),
])
def test_a_figure_beyond_what_it_measures_is_refused_with_its_bound(tmp_path, old, new, key, words):
    code, text, out = run_preview(tmp_path, "--stack-file", str(prod_with(tmp_path, old, new)))
    assert_input_error(code, text, f"llm-serving:{key}", words)
    assert not out.exists()


@pytest.mark.parametrize("rope, words", [
    ("{rope_type: yarn, factor: 1.0e300, original_max_position_embeddings: 32768}", "beyond 2,147,483,647 tokens"),
    ("{rope_type: warp, factor: 4.0}", "not one vLLM's get_rope builds"),
    ("{rope_type: linear, factor: 0.5}", "greater than or equal to 1"),
])
def test_a_models_rope_facts_are_bounded(tmp_path, rope, words):
    path = prod_with(tmp_path, "        torch_dtype: bfloat16\n", f"        torch_dtype: bfloat16\n        rope_scaling: {rope}\n")
    code, text, out = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "llm-serving:models.clef-flash", words)
    assert not out.exists()


# --- no secret in any message ----------------------------------------------------------------------

TOKEN = "hf_PLANTEDt0ken9f3a"
CIPHER = "v1:AAAAPLANTEDciphertext"


def _no_secret(text: str) -> None:
    assert "Traceback" not in text
    assert TOKEN not in text and CIPHER not in text, text


@pytest.mark.parametrize("doc", [
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "llm-serving"},
     "stringdata": {"HF_TOKEN": TOKEN}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "llm-serving"},
     "stringData": {"HF_TOKEN": 12}, "type": ["Opaque"]},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "llm-serving"},
     "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
         "containers": [{"name": "c", "image": "x:1", "env": [{"name": "HF_TOKEN", "valeu": TOKEN}]}]}}}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "llm-serving"},
     "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
         "containers": [{"name": "c", "image": "x:1", "env": [{"name": "HF_TOKEN", "value": [TOKEN]}]}]}}}},
])
def test_a_schema_refusal_names_the_key_and_the_rule_never_the_value(tmp_path, capsys, doc):
    """The API-schema refusal quoted the value of a mistyped field (a token under ``valeu:`` or
    ``stringdata:``)."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "bad.yaml").write_text(yaml.safe_dump(doc))
    code, out = run_analyze(capsys, "--manifests", str(tmp_path / "m"), "--inventory", str(INVENTORY))
    assert_input_error(code, out, "bad.yaml", "schema")
    _no_secret(out)


@pytest.mark.parametrize("value", [f"!!binary {TOKEN}", f"!vault {TOKEN}", "0777", f"{{secure: {CIPHER}, x: 1}}",
                                   f"[{TOKEN}]"])
def test_a_secret_env_value_in_any_wrong_form_is_never_shown(tmp_path, value):
    """A YAML tag on a ``secret_env`` value printed it twice (the value and the fix's quote)."""
    path = prod_with(tmp_path, '      limits: {cpu: "8", memory: 36Gi}',
                     f'      limits: {{cpu: "8", memory: 36Gi}}\n      secret_env: {{HF_TOKEN: {value}}}')
    code, text, out = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "llm-serving:workloads.candle-vllm.secret_env.HF_TOKEN")
    _no_secret(text)
    assert "0777" not in text


def test_deploy_guard_never_prints_a_secure_value(tmp_path):
    """deploy-guard printed ``{'secure': 'v1:...'}`` for a secret ``llm-serving:adopt``."""
    from tools import deploy_guard

    stack = tmp_path / "Pulumi.prod.yaml"
    stack.write_text(PROD_TEXT.replace("  llm-serving:namespace: llm-serving",
                                       f"  llm-serving:namespace: llm-serving\n  llm-serving:adopt: {{secure: {CIPHER}}}"))
    state = tmp_path / "state.json"
    state.write_text("{}")
    out, err = io.StringIO(), io.StringIO()
    code = deploy_guard.main([str(state), "--stack-file", str(stack)], stdout=out, stderr=err)
    assert code == 2, err.getvalue()
    assert 'llm-serving:adopt is "[secret]"' in err.getvalue()
    _no_secret(out.getvalue() + err.getvalue())


def test_review_comment_follows_no_symlink_out_of_its_folder(tmp_path):
    """review-comment followed a symlink in its input folder and posted the target's content."""
    from tools import review_comment

    outside = tmp_path / "shadow"
    outside.write_text(f"root:{TOKEN}:19000:0:99999:7:::\n")
    review = tmp_path / "review"
    review.mkdir()
    for stem in ("preview", "verdicts"):
        (review / f"{stem}.code").write_text("0\n")
    (review / "verdicts.md").write_text("PASS\n")
    (review / "preview.txt").symlink_to(outside)
    out, err = io.StringIO(), io.StringIO()
    code = review_comment.main([str(review)], stdout=out, stderr=err)
    assert code == 2, (out.getvalue(), err.getvalue())
    assert "symbolic link" in err.getvalue() and "preview.txt" in err.getvalue()
    _no_secret(out.getvalue() + err.getvalue())


# --- guards read the value as the consumer will --------------------------------------------------------


@pytest.mark.parametrize("value", [f"{{secure: {CIPHER}}}", "F", "'0'", "FALSE"])
def test_server_side_apply_off_in_any_spelling_or_through_a_secret_is_refused(tmp_path, value):
    path = prod_with(tmp_path, "  llm-serving:namespace: llm-serving",
                     f"  llm-serving:namespace: llm-serving\n  kubernetes:enableServerSideApply: {value}")
    code, text, out = run_preview(tmp_path, "--stack-file", str(path))
    assert_input_error(code, text, "kubernetes:enableServerSideApply\n", "needs server-side apply")
    _no_secret(text)
    assert not out.exists()


def test_the_program_reads_a_decrypted_server_side_apply_setting_by_its_value():
    from pydantic import SecretStr

    from stackfile.schema import go_false

    assert go_false(SecretStr("false")) and go_false(SecretStr("0")) and not go_false(SecretStr("true"))
    assert go_false({"secure": CIPHER}) and go_false("[secret]") and not go_false(True) and not go_false("true")


# --- values the kernel or the API server refuses ------------------------------------------------------


@pytest.mark.parametrize("old, new, key, words", [
    ('limits: {cpu: "8", memory: 36Gi}', 'limits: {cpu: "8", memory: 36Gi}\n      env: {BIG: "' + "x" * 3_000_000 + '"}',
     "llm-serving:workloads.candle-vllm", ("env BIG is 3,000,005 bytes", "131,072 bytes", "E2BIG")),
    ('limits: {cpu: "8", memory: 36Gi}', 'limits: {cpu: "8", memory: 36Gi}\n      run_as_user: ' + str(2**40),
     "llm-serving:workloads.candle-vllm.run_as_user", ("2147483647",)),
    ("      cold_start_seconds: 240\n", "      cold_start_seconds: 240\n      args: [\"" + "y" * 200_000 + "\"]\n",
     "llm-serving:workloads.clef-serve.args.0", ("200,001 bytes", "MAX_ARG_STRLEN")),
])
def test_a_value_the_kernel_or_the_api_server_refuses_is_refused_before_rendering(tmp_path, old, new, key, words):
    code, text, out = run_preview(tmp_path, "--stack-file", str(prod_with(tmp_path, old, new)))
    assert_input_error(code, text, key, *words)
    assert len(text) < 20_000  # the value is cut, not printed whole
    assert not out.exists()


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "llm-serving"},
              "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
                                                                                "spec": {"containers": [{"name": "c", "image": "x:1"}]}}}}


def _container(**fields) -> dict:
    doc = json.loads(json.dumps(DEPLOYMENT))
    doc["spec"]["template"]["spec"]["containers"][0].update(fields)
    return doc


@pytest.mark.parametrize("doc, words", [
    (_container(env=[{"name": "BIG", "value": "x" * 3_000_000}]), ("env[0]", "(text, 3,000,004 characters)", "E2BIG")),
    (_container(securityContext={"runAsUser": 2**40}), ("securityContext.runAsUser", "between 0 and 2,147,483,647")),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "llm-serving"},
      "data": {"HF_TOKEN": TOKEN}}, ("data.HF_TOKEN", "must be base64")),
    ({**DEPLOYMENT, "kind": "../../passwd"}, ('kind is "../../passwd", not a Kubernetes kind',)),
    (_container(image="vllm/vllm-openai:v0.11.0", args=["--model", "m", "--max-model-len=0"]),
     ("containers[0].args", "--max-model-len=0", "greater than 0")),
])
def test_a_manifest_the_kernel_or_the_api_server_refuses_is_bad_input(tmp_path, capsys, doc, words):
    """A 3 MB env value, a runAsUser of 2^40, Secret data that is not base64, a kind with path
    characters, --max-model-len=0 where the engine comes from the image's entrypoint: each was judged."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "bad.yaml").write_text(yaml.safe_dump(doc))
    code, out = run_analyze(capsys, "--manifests", str(tmp_path / "m"), "--inventory", str(INVENTORY))
    assert_input_error(code, out, "bad.yaml", *words)
    _no_secret(out)
    assert len(out) < 20_000


def test_a_kind_with_path_characters_never_names_a_file():
    from tools.offline import render

    with pytest.raises(render.RenderError, match="path characters"):
        render.render_path({**DEPLOYMENT, "kind": "../../passwd"})
    with pytest.raises(render.RenderError, match="its name holds path characters"):
        render.render_path({**DEPLOYMENT, "metadata": {"name": "a/../../b"}})


def test_an_inventory_measurement_for_a_server_no_manifest_holds_is_refused(tmp_path, capsys):
    inv = tmp_path / "Pulumi.inv.yaml"
    inv.write_text(INVENTORY.read_text().replace("llm-serving:cluster:\n", "llm-serving:cluster:\n"
                                                 "    measured: {ghost: {kv_tokens: 5000, source: a log}}\n", 1))
    assert "ghost" in inv.read_text()
    code, out = run_analyze(capsys, "--manifests", str(REFERENCE), "--inventory", str(inv))
    assert_input_error(code, out, "llm-serving:cluster.measured.ghost names a server no manifest holds")
    inv.write_text(inv.read_text().replace("ghost:", "clef-candle:"))  # a server the manifests hold: judged
    code, out = run_analyze(capsys, "--manifests", str(REFERENCE), "--inventory", str(inv))
    assert code in (0, 1) and "Traceback" not in out, out
