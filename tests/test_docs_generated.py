"""The generated reference pages of docs/ are what ``python3 dev.py docs`` writes (docs/gen.py, from
the schema, the pack, the parsers and the catalogs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs import gen

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pages() -> dict[Path, str]:
    return gen.pages()


def test_every_generated_page_is_what_the_generator_writes(pages):
    assert [str(p.relative_to(ROOT)) for p in gen.stale(pages)] == [], "run: python3 dev.py docs"


def test_the_reference_covers_every_policy_key_and_command(pages):
    from policylib.pack import policies

    index = pages[gen.DOCS / "policies" / "index.md"]
    for policy in policies():
        assert f"[`{policy.name}`]({policy.name}.md)" in index
        assert gen.DOCS / "policies" / f"{policy.name}.md" in pages
    stack_file = pages[gen.DOCS / "stack-file.md"]
    for key in ("`llm-serving:workloads`", "`cold_start_seconds`", "`max_model_len`", "`kv_fraction`", "`former_names`"):
        assert key in stack_file
    assert "| `cold_start_seconds` | integer, > 0 | required |" in stack_file
    assert '| `models_pvc` | name (DNS-1123 subdomain) | `"llm-models"` |' in stack_file
    cli = pages[gen.DOCS / "cli.md"]
    assert "usage: python -m tools.preview" in cli and "130 :data:`INTERRUPTED`" in cli
    catalog = pages[gen.DOCS / "catalog.md"]
    assert "`Qwen/Qwen3-30B-A3B-GPTQ-Int4`" in catalog and "`Tesla-V100-PCIE-32GB`" in catalog
