"""The llm-serving policy pack: assembles the PolicyPack from the policy registry.

Each policy is a record beside its rules, in its rule family ``core/rulebook/<family>.py``
(:func:`core.judging.registry.declare_policy`); each module in this directory (not starting with
"_", not ``policylib``) binds the validates of its family's policies that read the manifests
(:mod:`policylib.declare`); a policy's fixtures are under ``fixtures/<policy-name>/``. The Pulumi
CLI runs this file (``pulumi preview --policy-pack policies``); so does the offline runner
(``python -m tools.analyze``), as its own process over the analyzer gRPC protocol.
"""

# This directory is the working directory and sys.path[0] (``python -m pulumi.policy`` here);
# the shared ``core`` package is installed in the pack's environment (requirements.txt).
from policylib import decode_once
from policylib.pack import build_pack

# pulumi-policy decodes a resource's properties once per policy; decode once per request
# (policylib/decode_once.py: same findings). Kept because it wins far more than 2x at 1,000
# resources (docs/benchmarks.md); tests/policies/policylib/test_decode_once.py fails when
# pulumi-policy's servicer changes the shape it patches. The collector is left as Python sets
# it: freezing it by hand did not win 2x at 1,000 resources (docs/benchmarks.md).
decode_once.install()

build_pack()
