"""quota-admits-servers beyond its fixtures: a LimitRange of the namespace that defaults what the quota
limits satisfies it (as the LimitRanger admission runs before the ResourceQuota one)."""

from __future__ import annotations

from policylib.pack import policies
from tests.paths import ROOT
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_stack_file

POLICY = next(p for p in policies() if p.name == "quota-admits-servers")
CASE = ROOT / "policies" / "fixtures" / "quota-admits-servers" / "disallowed" / "quota-init-container-without-memory.yaml"
DEFAULTS = """---
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: llm-serving}
spec:
  limits:
  - type: Container
    default: {cpu: "1", memory: 1Gi}
    defaultRequest: {cpu: 100m, memory: 256Mi}
"""


def judge(text: str) -> list[str]:
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    return [v.message for v in run_policy(POLICY, manifests(text))]


def test_a_limit_range_default_satisfies_the_quota():
    text = CASE.read_text()
    assert any("container fetch-model does not set" in m for m in judge(text))
    assert judge(text + DEFAULTS) == []


def test_a_limit_range_in_another_namespace_does_not():
    text = CASE.read_text()
    assert any("container fetch-model does not set" in m for m in judge(text + DEFAULTS.replace("llm-serving", "other")))


def test_a_scoped_quota_is_not_judged():
    """A quota scoped to a PriorityClass (or BestEffort pods) does not count the server's pods."""
    text = CASE.read_text().replace("spec:\n  hard:\n", "spec:\n  scopeSelector:\n    matchExpressions:\n"
                                    "    - {scopeName: PriorityClass, operator: In, values: [batch-low]}\n  hard:\n")
    assert "scopeName: PriorityClass" in text and judge(text) == []
