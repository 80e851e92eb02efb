"""The llm-serving policy pack: assembles the PolicyPack from the policy registry.

Each module in this directory (not starting with "_", not ``policylib``) is a rule family
(``allocation.py`` mirrors ``core/rulebook/allocation.py``) that declares its policies, one record
each (:mod:`policylib.declare`); a policy's fixtures are under ``fixtures/<policy-name>/``. The Pulumi CLI runs this
file (``pulumi preview --policy-pack policies``); so does the offline runner
(``python -m tools.analyze``), as its own process over the analyzer gRPC protocol.
"""

import gc

# The cyclic collector waits while the policy modules load: importing them builds hundreds of
# pydantic models and dataclasses (containers the collector would rescan many times over a
# growing heap); no cycle among them is garbage. The pack answers its first request sooner
# (docs/benchmarks.md); the collector is back on, with the thresholds below, before it serves.
gc.disable()

# This directory is the working directory and sys.path[0] (``python -m pulumi.policy`` here);
# the shared ``core`` package is installed in the pack's environment (requirements.txt).
from policylib import decode_once  # noqa: E402 - after gc.disable(), above
from policylib.pack import build_pack, policies  # noqa: E402

# The pack process lives for one preview. pulumi-policy decodes every resource's properties
# again for each policy, which allocates millions of short-lived objects on a large stack;
# with the default thresholds the cyclic collector rescans the same long-lived modules and
# policy objects each time. Freezing what exists after import and collecting less often
# halved AnalyzeStack at 10,000 resources (bench/pack_bench.py), with the same findings.
# pulumi-policy decodes a resource's properties once per policy; decode once per request
# (policylib/decode_once.py: same findings, most of the pack's time at 33 policies).
decode_once.install()
policies()  # import every policy module before freezing
gc.freeze()
gc.set_threshold(200_000, 50, 1000)
gc.enable()

build_pack()
