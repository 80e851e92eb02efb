"""analyze lists what it did not judge in every output format: the servers the pack does not model
(Ollama's and Triton's public Kubernetes examples, tests/heldout/unmodelled-servers.yaml)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.paths import ROOT
from tools import analyze

CASE = ROOT / "tests" / "heldout" / "unmodelled-servers.yaml"
INVENTORY = ROOT / "policies" / "fixtures" / "Pulumi.public.yaml"
EXPECTED = ("Deployment ollama, container ollama: image ollama/ollama:latest runs Ollama, which the pack does not model",
            "container triton-inference-server: image nvcr.io/nvidia/tritonserver:24.08-py3 runs Triton Inference Server, "
            "which the pack does not model")


def _lines(fmt: str, text: str) -> list[str]:
    if fmt == "table":
        return [line.removeprefix("not judged: ") for line in text.splitlines() if line.startswith("not judged: ")]
    if fmt == "json":
        return json.loads(text)["not_judged"]
    if fmt == "sarif":
        return [n["message"]["text"] for n in json.loads(text)["runs"][0]["invocations"][0]["toolExecutionNotifications"]]
    suite = ET.fromstring(text).find("testsuite")
    return [p.get("value") for p in suite.find("properties") if p.get("name") == "not-judged"]


@pytest.mark.parametrize("fmt", ["table", "json", "sarif", "junit"])
def test_unmodelled_servers_are_listed_as_not_judged(fmt, capsys):
    assert analyze.main(["--manifests", str(CASE), "--inventory", str(INVENTORY), "--format", fmt]) == 0
    lines = _lines(fmt, capsys.readouterr().out)
    for expected in EXPECTED:
        assert any(expected in line for line in lines), (expected, lines)


def test_an_inferenceservice_without_a_mode_on_an_inventory_without_one_names_kserves_shipped_default(tmp_path, capsys):
    text = (ROOT / "tests" / "heldout" / "odh-vllm-runtime-isvc.yaml").read_text()
    path = tmp_path / "isvc.yaml"
    path.write_text(text.replace("    serving.kserve.io/deploymentMode: RawDeployment\n", ""))
    assert analyze.main(["--manifests", str(path), "--inventory", str(INVENTORY), "--format", "json"]) == 0
    lines = json.loads(capsys.readouterr().out)["not_judged"]
    assert any(line.startswith("InferenceService granite: no serving.kserve.io/deploymentMode annotation and the "
                               "inventory does not record kserve_deployment_mode") and "KServe ships Serverless" in line
               for line in lines), lines
    assert analyze.main(["--manifests", str(ROOT / "tests" / "heldout" / "odh-vllm-runtime-isvc.yaml"),
                         "--inventory", str(INVENTORY), "--format", "json"]) == 0
    assert not any("KServe ships" in line for line in json.loads(capsys.readouterr().out)["not_judged"])
