"""The workflows' own commands: ``python3 dev.py review-comment`` (:mod:`tools.review_comment`) and
``python3 dev.py deploy-guard`` (:mod:`tools.deploy_guard`). The real suite runs them inside the
workflows' jobs (tests/real/test_real_ci_workflows.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.paths import PROD_STACK_FILE, ROOT
from tools import deploy_guard, review_comment


def _review(tmp_path: Path, **codes: int) -> Path:
    d = tmp_path / "review"
    d.mkdir()
    for stem, code in codes.items():
        (d / f"{stem}.code").write_text(f"{code}\n")
        (d / f"{stem}{'.md' if stem == 'verdicts' else '.txt'}").write_text(f"{stem} output\n")
    return d


def _comment(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return review_comment.main(args, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_the_comment_has_one_section_per_output_headed_by_its_verdict(tmp_path):
    d = _review(tmp_path, preview=1, verdicts=0)
    code, text, _ = _comment([str(d)])
    assert code == 0
    assert text.splitlines()[0] == "## llm-serving: what this pull request changes on prod"
    assert "### Offline preview against main: diff, restarts, update peak, capacity: REFUSED\n\n```\npreview output\n```" in text
    assert "### Policy verdicts: PASS\n\nverdicts output\n" in text
    assert "### Real `pulumi preview --refresh` against the cluster: skipped\n\nKUBECONFIG_DATA is not set" in text
    assert "dev.py plan" not in text


@pytest.mark.parametrize("codes, want", [
    ({"preview": 0, "verdicts": 0, "real": 0, "plan": 0}, 0),
    ({"preview": 0, "verdicts": 1}, 1),
    ({"preview": 0, "verdicts": 0, "real": 255, "plan": 1}, 1),
    ({"preview": 2, "verdicts": 1}, 2),
    ({"preview": 0, "verdicts": 3}, 3),  # a crash of our own command stays a crash, not a verdict
    ({"preview": 3, "verdicts": 2}, 3),
])
def test_check_exits_with_the_worst_verdict(tmp_path, codes, want):
    assert _comment([str(_review(tmp_path, **codes)), "--check"])[:2] == (want, "")


def test_a_review_without_the_offline_preview_is_bad_input(tmp_path):
    code, out, err = _comment([str(_review(tmp_path, verdicts=0))])
    assert (code, out) == (2, "")
    assert err.startswith("review-comment: ") and "has no preview.code or verdicts.code" in err


def _guard(tmp_path: Path, state: dict, *extra: str, stack: str = "tests/fixtures/prod/Pulumi.prod.yaml") -> tuple[int, str]:
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    out = io.StringIO()
    return deploy_guard.main([str(path), "--stack-file", str(ROOT / stack), *extra], stdout=out, stderr=out), out.getvalue()


APPLIED = {"deployment": {"resources": [{"type": "pulumi:pulumi:Stack"}, {"type": "pulumi:providers:kubernetes"},
                                        {"type": "kubernetes:apps/v1:Deployment"}]}}


def test_a_first_up_nobody_reviewed_is_refused(tmp_path):
    code, text = _guard(tmp_path, {}, "--commit", "abc123")
    assert code == 1
    assert text.startswith("deploy-guard: refused: the stack's state holds no Kubernetes object yet, so this first pulumi "
                           "up takes over every live object ArgoCD applied, and no one reviewed it for commit abc123.")
    assert "python3 dev.py adopt-diff --stack prod" in text and "adopt_commit = abc123" in text
    assert _guard(tmp_path, {"deployment": {"resources": [{"type": "pulumi:pulumi:Stack"}]}}, "--commit", "abc123")[0] == 1
    assert _guard(tmp_path, {}, "--commit", "abc123", "--adopt-commit", "other")[0] == 1


def test_a_reviewed_first_up_and_a_later_merge_go_on(tmp_path):
    code, text = _guard(tmp_path, {}, "--commit", "abc123", "--adopt-commit", "abc123")
    assert (code, text) == (0, "deploy-guard: the state holds 0 Kubernetes object(s), adoption reviewed for abc123: go on\n")
    assert deploy_guard.managed_objects(APPLIED) == 1
    assert _guard(tmp_path, APPLIED, "--commit", "abc123") == (0, "deploy-guard: the state holds 1 Kubernetes object(s): go on\n")


@pytest.mark.parametrize("value", ['"yes"', "True", '"on"', "1"])
def test_adopt_written_any_way_the_loader_reads_as_true_needs_a_review(tmp_path, value):
    """The guard reads llm-serving:adopt as the program does (pydantic's bool), so "yes" cannot slip by."""
    text = PROD_STACK_FILE.read_text().replace("config:\n", f"config:\n  llm-serving:adopt: {value}\n", 1)
    (tmp_path / "Pulumi.adopt.yaml").write_text(text)
    code, out = _guard(tmp_path, APPLIED, "--commit", "abc", stack=str(tmp_path / "Pulumi.adopt.yaml"))
    assert code == 1 and "llm-serving:adopt" in out


def test_adopt_in_the_stack_file_needs_a_review_on_every_up(tmp_path):
    text = PROD_STACK_FILE.read_text().replace("config:\n", "config:\n  llm-serving:adopt: true\n", 1)
    (tmp_path / "Pulumi.adopt.yaml").write_text(text)
    code, out = _guard(tmp_path, APPLIED, "--commit", "abc", stack=str(tmp_path / "Pulumi.adopt.yaml"))
    assert code == 1 and "the stack file sets llm-serving:adopt: true" in out
