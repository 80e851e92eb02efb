"""The capacity table says what its figures are worth: candle-vllm's KV figures are upper
bounds (docs/capacity-model.md: the memory beside the weights after load is not modelled), and a
model whose facts are placeholders (``provisional: true``, clef-flash) is marked as such."""

from __future__ import annotations

import copy
import re
from types import SimpleNamespace

import pytest

from core.catalog.modelfacts import ModelEntry
from core.k8s import manifests
from core.rulebook import capacity_view as ch
from tests.paths import PROD_STACK_FILE, ROOT
from tests.policy_harness import FIXTURES
from tools.offline.manifests import load_manifest_dir, load_stack_file
from tools.offline.summary import PROVISIONAL_NOTE, UNKNOWN_MARK, UPPER_BOUND_NOTE, capacity_section, inventory_of

ALLOWED = FIXTURES / "kv-cache-fits-max-model-len" / "allowed"
CANDLE_14B, CLEF, REASONING = (ALLOWED / n for n in ("candle-vllm-14b-tp2.yaml", "clef-candle.yaml", "reasoning-64k.yaml"))
STACK_FILES = [
    PROD_STACK_FILE,
    FIXTURES / "Pulumi.fixture.yaml",
    FIXTURES / "weights-fit-card" / "Pulumi.fixture.yaml",
    ROOT / "tests" / "stacks" / "after-003.yaml",
]


@pytest.fixture
def config():
    """Prod's stack file without its measured figures: the marks are the estimate's (the measured
    lines under the table are tests/core/test_capacity_measured.py's)."""
    loaded = copy.deepcopy(load_stack_file(PROD_STACK_FILE))
    for workload in loaded["llm-serving:workloads"].values():
        workload.pop("measured", None)
    return loaded


def section(config, *paths, image: str | None = None):
    resources = [r for p in paths for r in load_manifest_dir(p)]
    if image is not None:
        for r in resources:
            _set_image(r.props, image)
    return capacity_section(resources, config, inventory_of(config), ROOT)


def _set_image(node, image: str) -> None:
    """Every container's ``image`` under ``node`` (a Deployment's template, an InferenceService's predictor)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image" and isinstance(value, str):
                node[key] = image
            else:
                _set_image(value, image)
    elif isinstance(node, list):
        for item in node:
            _set_image(item, image)


def row_of(lines, server):
    (line,) = [x for x in lines if x.startswith(f"  {server} ")]
    return line


def test_model_entry_provisional_defaults_to_false_and_is_described():
    entry = ModelEntry.model_validate({"weights_path": "/mnt/models/x", "catalog": "Qwen/Qwen2.5-Coder-14B-Instruct"})
    assert entry.provisional is False
    description = ModelEntry.model_fields["provisional"].description
    assert "not yet confirmed from the checkpoint's config.json" in description and "indicative" in description


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda p: p.name if p.parent.name != "weights-fit-card" else "weights-fit-card")
def test_every_stack_file_with_clef_flash_marks_its_facts_provisional(path):
    models = load_stack_file(path)["llm-serving:models"]
    assert ModelEntry.model_validate(models["clef-flash"]).provisional is True
    assert not any(ModelEntry.model_validate(v).provisional for k, v in models.items() if k != "clef-flash")


def test_rows_expose_provisional_and_upper_bound(config):
    from policylib import stackconfig  # noqa: PLC0415
    from tests.policy_harness import use_stack_config  # noqa: PLC0415

    use_stack_config(config)
    resources = [r for p in (CANDLE_14B, CLEF, REASONING) for r in load_manifest_dir(p)]
    view = manifests.stack_view(SimpleNamespace(resource_type=r.type, props=r.props, urn=r.urn) for r in resources)
    rows = {r.server: r for r in ch.capacity_rows(view, stackconfig.inventory(), stackconfig.models())}
    assert {k: (r.provisional, r.kv_upper_bound) for k, r in rows.items()} == {
        "candle-vllm": (False, True), "clef-candle": (True, True), "reasoning": (False, False),
    }
    assert any("not modelled" in n and "upper bound" in n for n in rows["candle-vllm"].notes)


def test_candle_vllm_kv_pool_tokens_and_concurrency_are_shown_as_upper_bounds(config):
    lines = section(config, CANDLE_14B, REASONING)
    assert re.search(r"coder-14b-fp16\s+2\s+15\.21\s+<= 13\.17\s+<= 143,872\s+32,768\s+<= 4\.39x\s+yes$",
                     row_of(lines, "candle-vllm"))
    assert "<=" not in row_of(lines, "reasoning")
    assert lines[-1] == f"  {UPPER_BOUND_NOTE}"
    # The runtime memory is now modelled from public figures; 21.5% -> 15.9% high.
    assert "15.9%" in UPPER_BOUND_NOTE and "not modelled" in UPPER_BOUND_NOTE
    assert not any("provisional" in x for x in lines)


def test_vllm_only_table_has_no_bound_and_no_footnote(config):
    lines = section(config, REASONING)
    assert not any("<=" in x for x in lines)
    assert len(lines) == 3  # title, header, one row


def test_provisional_model_is_named_so_with_a_footnote(config):
    lines = section(config, CLEF)
    assert re.search(r"^  clef-candle\s+candle-vllm\s+clef-flash \(provisional facts\)\s+1\s", row_of(lines, "clef-candle"))
    assert lines[-2:] == [f"  {UPPER_BOUND_NOTE}", f"  {PROVISIONAL_NOTE}"]
    assert "config.json" in PROVISIONAL_NOTE and "indicative" in PROVISIONAL_NOTE


def test_confirmed_facts_drop_the_mark(config):
    config["llm-serving:models"]["clef-flash"]["provisional"] = False
    lines = section(config, CLEF)
    assert "(provisional facts)" not in row_of(lines, "clef-candle")
    assert not any(PROVISIONAL_NOTE in x for x in lines)


def test_a_release_the_estimate_does_not_model_is_marked_not_given_a_false_precision(config):
    """core.capacity.estimator.Estimate.unknowns: a vLLM release newer than any the estimate was checked on
    (v0.19.0) is estimated as the newest, its KV tokens shown ``~N`` and the reason printed under
    the table; the release the seed names (v0.11.0) is not marked."""
    plain = section(config, REASONING)
    assert UNKNOWN_MARK + "1" not in row_of(plain, "reasoning") and not any("cannot know" in x for x in plain)
    lines = section(config, REASONING, image="vllm/vllm-openai:v0.25.0")
    assert re.search(r"\s~[\d,]+\s", row_of(lines, "reasoning"))
    (why,) = [x for x in lines if "cannot know" in x]
    assert why.startswith(f"  {UNKNOWN_MARK} reasoning: the estimate cannot know: vLLM v0.25.0 is newer than")
    moving = section(config, REASONING, image="vllm/vllm-openai:latest")
    assert any("the image tag names no vLLM release" in x for x in moving)
