"""Test set-up: the project root and the policy pack directory are importable.

The pack's modules import ``policylib`` and ``components`` the way the pack process does
(``policies/__main__.py`` puts the same two directories on ``sys.path``).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "policies"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "real: the real path: the Pulumi CLI, the real policy pack and a loopback cluster "
        "(python3 dev.py test --real; needs the toolchain: python3 dev.py toolchain)",
    )
