"""The live ``Pulumi.prod.yaml``: what a pull request that changes it must pass, and nothing more.

The user's daily workflow is a pull request to ``Pulumi.prod.yaml`` (add a workload, park one,
change ``max_model_len``), and its ``test`` job runs the fast suite. So the live file gets only the
checks CI should refuse a pull request for: it loads (stackfile/), it renders, the policy pack finds
no mandatory violation, and the update's peak from prod as the tests know it fits every node (the
offline preview's exit code 0 says all three). Every test that asserts prod's exact values reads
the frozen copy ``tests/fixtures/prod/Pulumi.prod.yaml`` (``tests.paths.PROD_STACK_FILE``).

Both halves are proved here: the generic checks pass on the live file and on a changed prod (the
change of docs/adding-a-model.md's worked example: a model not in the catalog, with inline facts,
on the card clef-candle frees), and no other test module reads the live file. The change is applied
to the frozen prod, the state the worked example is written against, so that a pull request that
renames or removes clef-candle does not fail this test either.
"""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
import yaml

from stackfile import load_stack_config
from tests.paths import LIVE_STACK_FILE, PROD_STACK_FILE, ROOT
from tools import preview
from tools.offline.manifests import load_stack_file

#: The test modules allowed to read the live stack file: this one (generic checks only).
READS_LIVE = {"tests/project/test_live_prod.py", "tests/paths.py"}

#: Qwen2.5-7B-Instruct's config.json (its Hugging Face page, "Files"), inline as ``facts``; the
#: parameter count is the model card's 7.61B.
QWEN7B_FACTS = {
    "architecture": "Qwen2ForCausalLM", "num_hidden_layers": 28, "num_attention_heads": 28,
    "num_key_value_heads": 4, "head_dim": 128, "hidden_size": 3584, "intermediate_size": 18944,
    "vocab_size": 152064, "max_position_embeddings": 32768, "parameters": 7.61e9, "torch_dtype": "bfloat16",
}


def a_pull_request(config: dict) -> None:
    """docs/adding-a-model.md's worked example, applied to ``config`` in place: qwen7b (vLLM, one
    card, a model not in the catalog given inline) on the card clef-candle frees; clef-candle and
    the clef-serve Service in front of it parked."""
    config["llm-serving:models"]["qwen2.5-7b-instruct"] = {"hf_id": "Qwen/Qwen2.5-7B-Instruct", "facts": QWEN7B_FACTS}
    workloads = config["llm-serving:workloads"]
    workloads["clef-candle"]["parked"] = {"reason": "frees a card for qwen7b (a trial)"}
    workloads["qwen7b"] = {
        "server": "vllm", "model": "qwen2.5-7b-instruct", "served_model_names": ["qwen7b"], "node": "worker-1",
        "cards": 1, "max_model_len": 32768, "cold_start_seconds": 300,
        "resources": {"requests": {"cpu": "4", "memory": "12Gi"}, "limits": {"cpu": "8", "memory": "32Gi"}},
    }
    config["llm-serving:services"]["clef-serve"]["parked"] = {
        "reason": "its workload clef-candle is parked for the qwen7b trial"}


@pytest.fixture(params=["live", "changed"])
def stack_file(request, tmp_path) -> Path:
    """The live prod stack file, or a copy of the frozen prod (named Pulumi.prod.yaml: stack prod)
    with :func:`a_pull_request` applied."""
    if request.param == "live":
        return LIVE_STACK_FILE
    doc = yaml.safe_load(PROD_STACK_FILE.read_text())
    a_pull_request(doc["config"])
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_it_loads(stack_file):
    stack = load_stack_config(load_stack_file(stack_file), base_dir=ROOT, source=stack_file.name)
    assert stack.workloads and all(row["used"] <= row["cards"] for row in stack.card_table().values())


def test_it_renders_the_pack_passes_and_the_update_peak_fits(stack_file, prod_base, tmp_path):
    """Exit 0 of ``preview --base``: rendered, no mandatory violation, the peak from prod fits."""
    out = io.StringIO()
    code = preview.main(["--stack-file", str(stack_file), "--out", str(tmp_path / "out"), "--base", str(prod_base)],
                        stdout=out, stderr=out)
    text = out.getvalue()
    assert code == 0, text
    assert "PASS: no mandatory violation" in text and "peak / capacity" in text
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["0-crd", "1-manifest"]


def test_the_change_is_the_worked_example():
    """The changed copy really changes prod: one workload more, of a model not in the catalog."""
    doc = yaml.safe_load(PROD_STACK_FILE.read_text())
    before = set(doc["config"]["llm-serving:workloads"])
    a_pull_request(doc["config"])
    assert set(doc["config"]["llm-serving:workloads"]) - before == {"qwen7b"}
    assert "qwen2.5-7b-instruct" not in {m.get("catalog") for m in doc["config"]["llm-serving:models"].values()}


def _live_reads(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that name the live prod stack file: ``LIVE_STACK_FILE``; the string
    ``"Pulumi.prod.yaml"`` joined to the project root or used bare (a path relative to the working
    directory, the project root); ``--stack prod`` and ``("prod", ROOT)`` (read ``<root>/Pulumi.prod.yaml``;
    a test of ``analyze --context-stack prod`` points ``analyze.ROOT`` at the frozen prod). ``<a copy of the project> / "Pulumi.prod.yaml"`` is the copy's
    (tests/real/realpath.py writes the frozen one there)."""
    joined_to_copy: set[int] = set()
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            left = ast.unparse(node.left)
            if "ROOT" not in left and "__file__" not in left:
                joined_to_copy |= {id(n) for n in ast.walk(node.right)}
        if isinstance(node, ast.Name | ast.Attribute) and (getattr(node, "id", None) or getattr(node, "attr", None)) == "LIVE_STACK_FILE":
            lines.append(node.lineno)
        if isinstance(node, ast.List | ast.Tuple):
            values = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if any(a == "--stack" and b == "prod" for a, b in zip(values, values[1:], strict=False)):
                lines.append(node.lineno)
        if isinstance(node, ast.Call) and any(isinstance(a, ast.Constant) and a.value == "prod" for a in node.args) \
                and any(isinstance(a, ast.Name) and a.id == "ROOT" for a in node.args):
            lines.append(node.lineno)  # tools.context.from_stack("prod", ROOT, ...)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value == "Pulumi.prod.yaml" and id(node) not in joined_to_copy:
            lines.append(node.lineno)
    return sorted(set(lines))


def test_no_other_test_module_reads_the_live_prod_stack():
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel not in READS_LIVE and (lines := _live_reads(ast.parse(path.read_text()))):
            found[rel] = lines
    assert found == {}, ("these read the live Pulumi.prod.yaml, which a pull request changes; read "
                         f"tests.paths.PROD_STACK_FILE (the frozen prod) instead: {found}")


def test_the_guard_finds_each_form():
    text = '\n'.join([
        'a = ROOT / "Pulumi.prod.yaml"', 'b = ["Pulumi.prod.yaml"]', 'c = LIVE_STACK_FILE',
        'd = main(["--stack", "prod"])', 'e = from_stack("prod", ROOT, render)',
        'f = project.dir / "Pulumi.prod.yaml"', 'g = "see Pulumi.prod.yaml"', 'h = from_stack("prod", PROD.parent, render)'])
    assert _live_reads(ast.parse(text)) == [1, 2, 3, 4, 5]
