"""The pack on the public corpus (tests/corpus/, read by tests/policies/corpus.py): every finding
is annotated, every annotation still happens, and no correct manifest gets a mandatory finding but
the kinds listed in :data:`FIXED_ELSEWHERE`.

The counts docs/failure-kinds.md publishes come from ``.venv/bin/python -m tests.policies.corpus``;
:func:`test_the_published_counts_are_the_corpus_counts` holds the page to them.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.paths import ROOT
from tests.policies import corpus

#: False mandatory findings of kinds being fixed beside this corpus, by the kind's owner, as
#: ``(case, object, policy)``. Strict both ways: a false mandatory finding not listed fails, and so
#: does a listed one that no longer happens. Empty: the read model's three kinds (defaultMode 0700,
#: controller-added pod labels, Service side ports) and the Service's metrics scrape port and CUDA's
#: binary compatibility (an sm_80 build on an sm_86 card) were fixed as kinds.
FIXED_ELSEWHERE: frozenset[tuple[str, str, str]] = frozenset()


@cache
def _found() -> tuple[corpus.Finding, ...]:
    return tuple(corpus.all_findings())


def test_the_corpus_is_public_manifests_from_many_repositories():
    assert len(corpus.CASES) >= 100
    repos = {corpus.repository(p) for p in corpus.CASES}
    assert len(repos) >= 30, sorted(repos)


@pytest.mark.parametrize("path", corpus.CASES, ids=lambda p: p.stem)
def test_each_case_names_its_source_commit_licence_and_inventory(path):
    head = corpus.header(path)
    assert set(head) == set(corpus.HEADER_KEYS), head
    assert re.fullmatch(r"https://github\.com/[^/]+/[^/]+/(blob|tree)/[0-9a-f]{40}/\S+", head["Source"]), head["Source"]
    assert head["Commit"] in head["Source"]
    assert (corpus.INVENTORIES / f"{head['Inventory']}.yaml").is_file(), head["Inventory"]


def test_every_finding_is_annotated():
    notes = corpus.annotations()
    missing = sorted({f.key: f.message[:200] for f in _found() if f.key not in notes}.items())
    assert missing == [], "annotate in tests/corpus/findings.yaml: " + "\n".join(f"{k}: {m}" for k, m in missing)


def test_every_annotation_still_happens():
    found = {f.key for f in _found()}
    stale = sorted(k for k in corpus.annotations() if k not in found)
    assert stale == [], f"no longer found; remove from tests/corpus/findings.yaml: {stale}"


def test_each_annotation_has_a_verdict_and_a_reason():
    for key, row in corpus.annotations().items():
        assert isinstance(row["verdict"], bool), key
        assert len(str(row.get("why", "")).split()) >= 6, key


def test_no_false_mandatory_finding_but_the_kinds_fixed_elsewhere():
    notes = corpus.annotations()
    false = {f.key for f in _found() if f.mandatory and notes.get(f.key, {}).get("verdict") is False}
    assert sorted(false - FIXED_ELSEWHERE) == [], "a correct public manifest is refused"
    assert sorted(FIXED_ELSEWHERE - false) == [], "fixed: remove these from FIXED_ELSEWHERE"


def test_the_published_counts_are_the_corpus_counts():
    c = corpus.counts(list(_found()), corpus.annotations())
    page = (ROOT / "docs" / "failure-kinds.md").read_text()
    section = page[page.index("## The public corpus"):]
    assert f"{c.cases} manifests from {c.repositories} public repositories" in section
    assert f"false mandatory findings: **{c.false_mandatory}**" in section
    assert f"real problems caught: **{c.true_caught}**" in section


def test_the_corpus_page_tables_are_current():
    page = (ROOT / "docs" / "corpus.md").read_text()
    begin, end = "<!-- corpus:begin -->\n", "<!-- corpus:end -->"
    tables = page[page.index(begin) + len(begin):page.index(end)]
    assert tables == corpus.markdown(list(_found()), corpus.annotations()), (
        "docs/corpus.md is out of date: paste the output of `.venv/bin/python -m tests.policies.corpus --markdown` "
        "between its corpus:begin and corpus:end marks")


def _surge_findings(strip_autoscaling: bool) -> list[str]:
    """gpu-rollout-recreate's and gpu-card-allocation's findings on every case written for a cluster whose pools
    autoscale, with the inventory as written or with each pool fixed at one node."""
    import json

    from policylib.pack import policy
    from tests.policy_harness import run_policy, use_stack_config
    from tools.offline.manifests import InputError, load_manifest_dir

    out = []
    for path in corpus.CASES:
        config = json.loads(corpus._config(corpus.header(path)["Inventory"]))
        cluster = config["llm-serving:cluster"]
        if not any("autoscaling" in n for n in cluster["nodes"]):
            continue
        if strip_autoscaling:
            cluster = {**cluster, "nodes": [{k: v for k, v in n.items() if k != "autoscaling"} for n in cluster["nodes"]]}
        use_stack_config({**config, "llm-serving:cluster": cluster})
        try:
            resources = load_manifest_dir(path, stack="corpus")
        except InputError:
            continue
        out += [v.message for p in (policy("gpu-rollout-recreate"), policy("gpu-card-allocation")) for v in run_policy(p, resources)]
    return out


def test_a_surge_card_on_an_autoscaled_pool_is_no_finding_and_on_a_fixed_node_it_is():
    assert _surge_findings(strip_autoscaling=False) == []
    fixed = _surge_findings(strip_autoscaling=True)
    assert fixed and all("surge" in m for m in fixed), fixed
