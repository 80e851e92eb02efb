"""The documentation: the generated reference pages of docs/ are what ``python3 dev.py docs`` writes
(docs/gen.py, from the schema, the pack, the parsers and the catalogs), the README stays one page,
and every relative link of the README and docs/ reaches a file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs import gen
from tests.paths import ROOT

#: Pages other branches of this session add (linked here before they land); a missing one is not
#: a broken link until it exists on main. Drop an entry once its page is in the tree.
PAGES_ADDED_ELSEWHERE: set[str] = set()
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


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
    assert "usage: python -m tools.preview" in cli and "130  INTERRUPTED" in cli and "143  TERMINATED" in cli
    catalog = pages[gen.DOCS / "catalog.md"]
    assert "`Qwen/Qwen3-30B-A3B-GPTQ-Int4`" in catalog and "`Tesla-V100-PCIE-32GB`" in catalog


def test_the_readme_is_one_page_and_keeps_the_sections_messages_name():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 15 * 1024
    assert "python3 dev.py preview" in readme and "python3 dev.py test" in readme
    # The preview's footnote and the capacity rules' source say README "Capacity".
    assert "\n### Capacity\n" in readme


@pytest.mark.parametrize("page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))])
def test_relative_links_reach_a_file(page):
    path = ROOT / page
    missing = []
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue
        resolved = (path.parent / target).resolve()
        rel = resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else str(resolved)
        if not resolved.exists() and rel not in PAGES_ADDED_ELSEWHERE:
            missing.append(target)
    assert missing == []


#: Repository paths the pages cite that are not files of the tree on purpose: examples of a name
#: (docs/testing.md), the pack's virtualenv (made by the Pulumi CLI's first run), a module path of
#: pulumi_kubernetes.
CITED_NOT_IN_TREE = {"policies/x_y.py", "tests/policies/test_x_y.py", "tests/test_x.py", "policies/venv", "core/v1"}
CITED_PATH = re.compile(r"`((?:core|stackfile|components|policies|tools|testbed|tests|bench|docs|\.ci|\.github|\.gitea)"
                        r"/[A-Za-z0-9_./-]+?)(?:::[^`]*)?`")


def test_every_repository_path_the_pages_cite_exists():
    """A path in backticks in the README or docs/ (``tests/core/test_engines.py``) names a file or
    folder of the tree: a moved or renamed file leaves no stale citation behind."""
    missing = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        cited = {m.group(1).rstrip(".") for m in CITED_PATH.finditer(page.read_text(encoding="utf-8"))}
        gone = sorted(p for p in cited - CITED_NOT_IN_TREE if not any(c in p for c in "*<>{") and not (ROOT / p).exists())
        if gone:
            missing[str(page.relative_to(ROOT))] = gone
    assert missing == {}


def test_the_policy_count_in_sample_output_is_the_packs():
    """A verdict line quoted in the README or docs/ (``..., 17 resources, 43 policies)``) counts the
    pack's policies as it stands, so adding a policy shows where the pages quote the old count."""
    from policylib.pack import policies

    count = len(policies())
    stale = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for quoted in re.findall(r"resources, (\d+) policies\)", page.read_text(encoding="utf-8")):
            if int(quoted) != count:
                stale.append(f"{page.relative_to(ROOT)}: {quoted}")
    assert stale == [], f"the pack has {count} policies"


def test_the_generator_sets_the_quoted_policy_count_to_the_packs():
    """``python3 dev.py docs`` writes the pack's count into every quoted verdict line, so a new policy
    edits no page by hand; pages already right are left out."""
    readme = ROOT / "README.md"
    assert gen.policy_counts(len(gen._policies()), {}) == {}
    rewritten = gen.policy_counts(1000, {})
    assert readme in rewritten and "17 resources, 1000 policies)" in rewritten[readme]
    assert readme not in gen.policy_counts(1000, {readme: ""})
