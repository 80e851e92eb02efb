"""The engine contract regenerated from the releases on PyPI (the real suite: it downloads each
release's sdist, about 80 MB): `python3 dev.py contract --check` finds core/data/vllm_releases.json
byte for byte what the releases give, and names each release it read."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT
from tools.contract import RELEASES_READ_LINE

pytestmark = pytest.mark.real


def test_the_committed_contract_is_what_the_releases_give():
    result = subprocess.run([sys.executable, "dev.py", "contract", "--check"], cwd=ROOT, capture_output=True,
                            text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    for line in RELEASES_READ_LINE:
        assert line in result.stderr
    assert "core/data/vllm_releases.json is current" in result.stderr
