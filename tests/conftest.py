"""Test set-up. Nothing to put on ``sys.path``: pytest puts the project root there (``tests`` is a
package), and the project's .venv has ``core`` and the pack's modules installed editable
(requirements.txt), as the pack process finds them in its own directory.
"""

import io
from pathlib import Path

import pytest


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "real: the real path: the Pulumi CLI, the real policy pack and a loopback cluster "
        "(python3 dev.py test --real; needs the toolchain: python3 dev.py toolchain)",
    )


@pytest.fixture(scope="module")
def prod_base(tmp_path_factory) -> Path:
    """Prod (the frozen tests/fixtures/prod/) rendered by the offline preview (no policy) into a fresh
    directory: a ``--base``."""
    from tests.paths import PROD_STACK_FILE
    from tools import preview

    base = tmp_path_factory.mktemp("base") / "prod"
    out = io.StringIO()
    code = preview.main(["--stack-file", str(PROD_STACK_FILE), "--out", str(base), "--no-policy"], stdout=out, stderr=out)
    assert code == 0, out.getvalue()
    return base
