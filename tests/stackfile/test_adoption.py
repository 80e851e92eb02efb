"""The stack file's adoption mode, offline: ``llm-serving:adopt: true`` puts
``pulumi.com/patchForce: "true"`` on every object but the InferenceService (KServe copies its
annotations into the predictor's pod template: the annotation would roll it), in the program (a
transformation of every Kubernetes resource) and in the pure rendering alike; off by default, so
prod is unchanged.
What the provider does with it over ArgoCD's live objects is ``tests/real/test_real_adoption.py``."""

from __future__ import annotations

import copy

from core.base import facts
from stackfile import ConfigError, load_stack_config
from stackfile.build import render_manifests
from tests.paths import PROD_STACK_FILE
from tools import analyze
from tools.offline.manifests import load_stack_file

PROD = load_stack_file(PROD_STACK_FILE)


def _adopting() -> dict:
    cfg = copy.deepcopy(PROD)
    cfg["llm-serving:adopt"] = True
    return cfg


def test_adopt_forces_every_object_in_the_program_and_the_rendering():
    registered = {(r.props["kind"], r.props["metadata"]["name"]): r.props["metadata"]["annotations"]
                  for r in analyze.program_resources(_adopting(), "prod")
                  if r.type.startswith("kubernetes:") and "metadata" in r.props}
    rendered = {(m["kind"], m["metadata"]["name"]): m["metadata"]["annotations"]
                for m in render_manifests(load_stack_config(_adopting()))}
    assert set(registered) == set(rendered) and len(rendered) == 8
    for key in rendered:
        if key[0] == "InferenceService":
            continue
        assert registered[key][facts.PATCH_FORCE_ANNOTATION] == rendered[key][facts.PATCH_FORCE_ANNOTATION] == "true", key
    # reasoning's predictor does not roll on adoption: its InferenceService is not annotated.
    assert facts.PATCH_FORCE_ANNOTATION not in registered[("InferenceService", "reasoning")]
    assert facts.PATCH_FORCE_ANNOTATION not in rendered[("InferenceService", "reasoning")]


def test_adoption_restarts_no_server_in_the_diff_against_the_plain_rendering():
    """The --base diff from prod to prod adopting: every object but the InferenceService gains the
    annotation, and no model server restarts (a Deployment's own annotations reach no pod)."""
    from tools.offline import render, treediff

    plain = {render.render_path(m): m for m in render_manifests(load_stack_config(PROD))}
    adopting = {render.render_path(m): m for m in render_manifests(load_stack_config(_adopting()))}
    diff = treediff.diff_trees(plain, adopting)
    assert len(diff.objects) == 7 and all(o.action == "update" and not o.cost.restarts for o in diff.objects)
    assert "update cost: no model server restarts" in diff.render()


def test_without_adopt_no_object_is_forced():
    assert not any(facts.PATCH_FORCE_ANNOTATION in (m["metadata"].get("annotations") or {})
                   for m in render_manifests(load_stack_config(PROD)))


def test_adopt_must_be_a_boolean():
    cfg = copy.deepcopy(PROD)
    cfg["llm-serving:adopt"] = "sometimes"
    try:
        load_stack_config(cfg)
    except ConfigError as err:
        assert [p.path for p in err.problems] == ["llm-serving:adopt"]  # noqa: PT017
    else:
        raise AssertionError("adopt: sometimes was accepted")
