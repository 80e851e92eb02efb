"""A bad stack config through the real CLI: every problem with its key path, no traceback,
nothing created but the stack's own root resource (README "The stack file": ``__main__.py``
raises the loader's text as ``pulumi.RunError`` before it registers any resource)."""

from __future__ import annotations

import pytest
import yaml

from tests.real.realpath import RealProject, change_summary, kubectl_json

pytestmark = pytest.mark.real

STACK = "bad"


def test_a_bad_stack_config_is_refused_with_its_key_paths_and_no_traceback(project: RealProject, cluster):
    doc = yaml.safe_load((project.dir / "Pulumi.prod.yaml").read_text())
    doc["config"]["llm-serving:workloads"]["candle-vllm"]["cards"] = 3
    doc["config"]["llm-serving:services"]["clef-serve"]["selects"] = "clef-candel"
    (project.dir / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    project.stack_init(STACK)
    res = project.up(STACK)
    assert res.code != 0, res
    out = res.output
    assert "llm-serving:workloads.candle-vllm.cards" in out, res
    assert "llm-serving:services.clef-serve.selects" in out, res
    assert "Traceback" not in out, res
    # Only the stack's own root resource exists; no component, no Kubernetes object.
    created = {e["resOutputsEvent"]["metadata"]["type"] for e in res.events if e.get("resOutputsEvent")}
    assert created <= {"pulumi:pulumi:Stack"}, created
    assert change_summary(res.events).get("create", 0) <= 1, res
    assert kubectl_json(cluster, "get", "deployments", "-n", "llm-serving")["items"] == []
