"""The in-repo reference manifests are the user's, unchanged."""

import pytest

from tests.paths import REFERENCE, SHARED_REFERENCE


def test_reference_copy_is_byte_identical_to_shared():
    if not SHARED_REFERENCE.is_dir():
        pytest.skip(f"{SHARED_REFERENCE} is not beside this clone (CI and the dev machines have it)")
    ours = sorted(p.name for p in REFERENCE.glob("*.yaml"))
    theirs = sorted(p.name for p in SHARED_REFERENCE.glob("*.yaml"))
    assert ours == theirs == [
        "clef-candle.yaml", "coder-14b-fp16.yaml", "coder-service.yaml", "coder.yaml", "reasoning-long-service.yaml",
    ]
    for name in ours:
        assert (REFERENCE / name).read_bytes() == (SHARED_REFERENCE / name).read_bytes(), name
