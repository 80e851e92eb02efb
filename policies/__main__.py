"""The llm-serving policy pack: assembles the PolicyPack from the policy modules beside it.

Each module in this directory (not starting with "_", not ``policylib``) defines one policy
as ``POLICY``; its fixtures are under ``fixtures/<policy-name>/``. The Pulumi CLI runs this
file (``pulumi preview --policy-pack policies``); so does the offline runner
(``python -m tools.analyze``), as its own process over the analyzer gRPC protocol.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The inventory and model facts are the program's own pydantic models (one source of truth).
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from policylib.pack import build_pack  # noqa: E402

build_pack()
