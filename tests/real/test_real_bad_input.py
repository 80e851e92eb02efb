"""A bad stack config through the real CLI: every problem with its key path, no traceback,
nothing created but the stack's own root resource (README "The stack file": ``__main__.py``
raises the loader's text as ``pulumi.RunError`` before it registers any resource). A stack file
that breaks an engine or card rule loads instead, and the real pack refuses it in ``pulumi
preview`` with the finding in the stack file's keys, before anything is applied: the rule is
judged once, by the pack (docs/architecture.md)."""

from __future__ import annotations

import pytest
import yaml

from tests.real.realpath import RealProject, change_summary, kubectl_json, policy_messages, policy_verdicts

pytestmark = pytest.mark.real

STACK = "bad"


def test_a_bad_stack_config_is_refused_with_its_key_paths_and_no_traceback(project: RealProject, cluster):
    doc = yaml.safe_load((project.dir / "Pulumi.prod.yaml").read_text())
    doc["config"]["llm-serving:workloads"]["candle-vllm"]["model"] = "coder-15b"
    doc["config"]["llm-serving:services"]["clef-serve"]["selects"] = "clef-candel"
    (project.dir / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    project.stack_init(STACK)
    res = project.up(STACK)
    assert res.code != 0, res
    out = res.output
    assert "llm-serving:workloads.candle-vllm.model" in out, res
    assert "llm-serving:services.clef-serve.selects" in out, res
    assert "Traceback" not in out, res
    # Only the stack's own root resource exists; no component, no Kubernetes object.
    created = {e["resOutputsEvent"]["metadata"]["type"] for e in res.events if e.get("resOutputsEvent")}
    assert created <= {"pulumi:pulumi:Stack"}, created
    assert change_summary(res.events).get("create", 0) <= 1, res
    assert kubectl_json(cluster, "get", "deployments", "-n", "llm-serving")["items"] == []


def test_a_card_rule_is_the_packs_finding_in_pulumi_preview(project: RealProject, cluster):
    """TP 3 on the 14B's 40 heads: the loader used to refuse it as bad input; the stack file now
    loads and the real pack refuses the rendered Deployment, naming the stack file's key."""
    stack = "tp3"
    doc = yaml.safe_load((project.dir / "Pulumi.prod.yaml").read_text())
    doc["config"]["llm-serving:workloads"]["candle-vllm"]["cards"] = 3
    (project.dir / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    project.stack_init(stack)
    res = project.preview(stack)
    assert res.code != 0, res
    assert "Traceback" not in res.output, res
    verdicts = policy_verdicts(res.events)
    assert any(p == "tensor-parallel-divisibility" and lvl == "mandatory" for p, _, lvl in verdicts), res
    (message,) = [m for m in policy_messages(res.events) if "tensor parallel 3 does not divide model coder-14b-fp16" in m]
    assert "set cards to a tensor parallel size that divides them: 1, 2, 4, 8 under llm-serving:workloads.candle-vllm" in message
    assert kubectl_json(cluster, "get", "deployments", "-n", "llm-serving")["items"] == []
