"""The coder InferenceService that prod no longer manages is left alone, and
the preview says so (spec: "No longer managed: the coder InferenceService"; history row "after
000: coder ISVC unmanaged").

``llm-serving:left_alone`` lists live objects the stack does not manage, each with ``why``. The
loader refuses an entry the stack renders itself (Pulumi would manage it after all), one listed
twice, and malformed entries, each as a stack-file problem (key path, value, rule, fix; exit 2,
nothing written). The program logs each object left alone as an info diagnostic and exports it
(stack output ``left_alone``); the offline preview prints the same line from that output. The
real ``pulumi preview`` / ``up`` on a seeded cluster: ``tests/real/test_real_left_alone.py``.
"""

from __future__ import annotations

import copy
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from stackfile import ConfigError, load_stack_config
from stackfile.build import render_manifests
from stackfile.objects import left_alone_outputs, left_alone_text, managed_objects
from tests.paths import PROD_STACK_FILE, ROOT
from tools.offline import mockrun, summary

PROD = yaml.safe_load(PROD_STACK_FILE.read_text())["config"]
KEY = "llm-serving:left_alone"

#: The spec's reason, as prod's stack file gives it (seed 000).
CODER = {
    "kind": "InferenceService", "namespace": "llm-serving", "name": "coder",
    "why": ("prod no longer manages it (seed 000): coder.yaml's vLLM TP=2 predictor requested 2 cards and never "
            "became Ready, holding half of worker-1's pool; candle-vllm serves the coder model on those two cards. "
            "ArgoCD (prune off) left the live object, to be deleted by hand."),
}
CODER_LINE = (
    "left alone: InferenceService llm-serving/coder, not managed by this stack (Pulumi neither changes nor deletes "
    "it): prod no longer manages it (seed 000): coder.yaml's vLLM TP=2 predictor requested 2 cards and never became "
    "Ready, holding half of worker-1's pool; candle-vllm serves the coder model on those two cards. ArgoCD (prune "
    "off) left the live object, to be deleted by hand."
)


def prod_with(*entries: dict, **edits) -> dict:
    config = copy.deepcopy(PROD)
    config[KEY] = [*config[KEY], *entries]
    config.update(edits)
    return config


def problems(config: dict) -> dict[str, object]:
    with pytest.raises(ConfigError) as err:
        load_stack_config(config)
    return {p.path: p for p in err.value.problems}


# --- the stack-file key ------------------------------------------------------------------------

def test_prod_leaves_the_coder_inference_service_alone_with_the_users_reason():
    config = load_stack_config(PROD)
    assert left_alone_outputs(config) == [CODER]
    assert left_alone_text(**CODER) == CODER_LINE


def test_an_entry_in_another_namespace_or_of_another_kind_is_accepted():
    """Only the same kind, namespace and name is the stack's own object: KServe's Deployment
    coder-predictor is not the Service coder-predictor, nor is a Service of another namespace."""
    config = load_stack_config(prod_with(
        {"kind": "Deployment", "name": "coder-predictor", "why": "KServe's predictor of the coder InferenceService"},
        {"kind": "Service", "name": "coder-predictor", "namespace": "poimen", "why": "another team's"},
    ))
    assert [(o["kind"], o["namespace"], o["name"]) for o in left_alone_outputs(config)] == [
        ("InferenceService", "llm-serving", "coder"), ("Deployment", "llm-serving", "coder-predictor"),
        ("Service", "poimen", "coder-predictor")]


def test_no_entry_is_an_empty_list():
    config = copy.deepcopy(PROD)
    del config[KEY]
    assert left_alone_outputs(load_stack_config(config)) == []


@pytest.mark.parametrize("kind, name, what", [
    ("Service", "coder-predictor", "Service llm-serving/coder-predictor"),
    ("InferenceService", "reasoning", "InferenceService llm-serving/reasoning"),
    ("Deployment", "clef-serve", "Deployment llm-serving/clef-serve"),  # parked, still rendered
    ("NetworkPolicy", "llm-serving-ingress", "NetworkPolicy llm-serving/llm-serving-ingress"),
])
def test_an_object_the_stack_renders_cannot_be_left_alone(kind, name, what):
    entry = {"kind": kind, "name": name, "why": "x"}
    found = problems(prod_with(entry))
    assert list(found) == [f"{KEY}.1"]
    p = found[f"{KEY}.1"]
    assert p.value == entry
    assert p.rule == f"{what} is rendered by this stack, so Pulumi manages it: it cannot also be left alone"
    assert p.fix == (f"remove this entry to have the stack manage {what}, or remove {name} from the stack's "
                     "workloads, services or network_policy to leave the live object alone")


def test_a_workloads_former_name_cannot_be_left_alone():
    """The alias replaces the object under its former name: Pulumi would delete that live object."""
    config = copy.deepcopy(PROD)
    config["llm-serving:workloads"]["clef-candle"]["former_names"] = ["clef-old"]
    config[KEY] = [{"kind": "Deployment", "name": "clef-old", "why": "x"}]
    found = problems(config)
    assert list(found) == [f"{KEY}.0"]
    assert found[f"{KEY}.0"].rule == ("Deployment llm-serving/clef-old is a former name of workload clef-candle "
                                      "(former_names), so Pulumi replaces it, deleting the live object: it cannot also be left alone")
    assert found[f"{KEY}.0"].fix.startswith("remove clef-old from llm-serving:workloads.clef-candle.former_names")
    # Another kind under that name is another object.
    config[KEY] = [{"kind": "Service", "name": "clef-old", "why": "x"}]
    load_stack_config(config)


def test_the_stack_namespace_is_the_default_of_both_sides():
    """With llm-serving:namespace moved, an entry without namespace is judged in the new one."""
    found = problems(prod_with({"kind": "Service", "name": "clef-serve", "why": "x"}, **{"llm-serving:namespace": "serving"}))
    assert "Service serving/clef-serve is rendered by this stack" in found[f"{KEY}.1"].rule
    # ... and an entry naming the old namespace is another object.
    load_stack_config(prod_with({"kind": "Service", "name": "clef-serve", "namespace": "llm-serving", "why": "x"},
                                **{"llm-serving:namespace": "serving"}))


def test_a_workloads_secret_is_rendered_too():
    config = copy.deepcopy(PROD)
    config["llm-serving:workloads"]["candle-vllm"]["secret_env"] = {"HF_TOKEN": SecretStr("decrypted")}
    config[KEY] = [{"kind": "Secret", "name": "candle-vllm-env", "why": "x"}]
    found = problems(config)
    assert "Secret llm-serving/candle-vllm-env is rendered by this stack" in found[f"{KEY}.0"].rule


def test_an_object_listed_twice_is_refused():
    found = problems(prod_with({"kind": "InferenceService", "name": "coder", "namespace": "llm-serving", "why": "again"}))
    assert list(found) == [f"{KEY}.1"]
    assert found[f"{KEY}.1"].rule == f"InferenceService llm-serving/coder is already listed at {KEY}.0"
    assert found[f"{KEY}.1"].fix == "keep one entry per object"


@pytest.mark.parametrize("entry, path, rule, fix", [
    ({"kind": "InferenceService", "name": "coder"}, f"{KEY}.1.why", "why is required", "add why: <value> (Why the stack"),
    ({"kind": "InferenceService", "name": "coder", "why": " "}, f"{KEY}.1.why",
     "why is empty: an object left alone says why the stack does not manage it", "write the reason"),
    ({"kind": "InferenceService", "name": "coder", "reason": "x"}, f"{KEY}.1.reason", "reason is not a field here",
     "remove or rename it; allowed: kind, name, namespace, why"),
    ({"kind": "inferenceservice", "name": "coder", "why": "x"}, f"{KEY}.1.kind",
     "kind 'inferenceservice' is not a Kubernetes kind as the API names it (CamelCase, a letter first)",
     "write the kind as `kubectl get <resource> -o yaml` shows it"),
    ({"kind": "InferenceService", "name": "Coder", "why": "x"}, f"{KEY}.1.name",
     "name 'Coder' is refused by Kubernetes", "rename it, e.g. 'coder'"),
])
def test_a_malformed_entry_is_refused_at_its_key(entry, path, rule, fix):
    found = problems(prod_with(entry))
    assert path in found and all(k.startswith(f"{KEY}.1.") for k in found), found  # (reason: why is missing too)
    assert found[path].rule.startswith(rule), found[path].rule
    assert fix in found[path].fix, found[path].fix


def test_not_a_list_is_refused():
    found = problems({**PROD, KEY: {"kind": "InferenceService", "name": "coder", "why": "x"}})
    assert list(found) == [KEY]
    assert found[KEY].fix == "give a list"


def _stacks() -> list[Path]:
    return [PROD_STACK_FILE, *sorted((ROOT / "tests" / "stacks").glob("*.yaml"))]


@pytest.mark.parametrize("path", _stacks(), ids=lambda p: p.stem)
def test_what_the_check_calls_rendered_is_what_the_stack_renders(path):
    """The objects the check compares against (kind, namespace, name) are exactly the
    manifests the program renders, for prod and every history stack."""
    config = load_stack_config(yaml.safe_load(path.read_text())["config"])
    rendered = {(m["kind"], m["metadata"]["namespace"], m["metadata"]["name"]) for m in render_manifests(config)}
    assert {tuple(ref) for ref in managed_objects(config)} == rendered


def test_with_a_secret_the_rendered_objects_agree_too():
    config = copy.deepcopy(PROD)
    config["llm-serving:workloads"]["candle-vllm"]["secret_env"] = {"HF_TOKEN": SecretStr("decrypted")}
    loaded = load_stack_config(config)
    rendered = {(m["kind"], m["metadata"]["namespace"], m["metadata"]["name"]) for m in render_manifests(loaded)}
    assert ("Secret", "llm-serving", "candle-vllm-env") in rendered
    assert {tuple(ref) for ref in managed_objects(loaded)} == rendered


# --- what the program reports, and the offline preview's section ----------------------------------

def test_the_program_logs_and_exports_each_object_left_alone_and_registers_nothing_for_it(caplog):
    with caplog.at_level(logging.INFO, logger=mockrun.PROGRAM_LOG.name):
        run = mockrun.run_program(PROD, stack="prod")
    infos = [r.getMessage() for r in caplog.records if r.name == mockrun.PROGRAM_LOG.name and r.levelno == logging.INFO]
    assert infos == [CODER_LINE]
    assert run.outputs["left_alone"] == [CODER]
    names = {(r.props.get("kind"), (r.props.get("metadata") or {}).get("name")) for r in summary.k8s_objects(run.resources)}
    assert ("InferenceService", "coder") not in names
    # The offline preview's section: the same line, from the stack output.
    text = summary.summary(run.resources, PROD, "prod", run.outputs)
    assert f"\n\n{CODER_LINE}\n" in text
    assert text.count("left alone:") == 1


def test_a_stack_without_the_key_prints_no_left_alone_section():
    config = copy.deepcopy(PROD)
    del config[KEY]
    run = mockrun.run_program(config, stack="prod")
    assert run.outputs["left_alone"] == []
    assert "left alone" not in summary.summary(run.resources, config, "prod", run.outputs)


def test_the_preview_refuses_a_left_alone_object_the_stack_renders_with_exit_2_and_writes_nothing(tmp_path):
    data = yaml.safe_load(PROD_STACK_FILE.read_text())
    data["config"][KEY].append({"kind": "Service", "name": "coder-predictor", "why": "ArgoCD keeps it"})
    stack = tmp_path / "Pulumi.test.yaml"
    stack.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "tools.preview", "--stack-file", str(stack), "--out", str(out), "--no-policy"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert (f"{KEY}.1\n"
            '  value: {"kind": "Service", "name": "coder-predictor", "why": "ArgoCD keeps it"}\n'
            "  rule:  Service llm-serving/coder-predictor is rendered by this stack, so Pulumi manages it: "
            "it cannot also be left alone\n"
            "  fix:   remove this entry to have the stack manage Service llm-serving/coder-predictor") in proc.stderr, proc.stderr
    assert not out.exists()
