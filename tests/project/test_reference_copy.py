"""The in-repo reference manifests are the user's, unchanged.

Pinned by content hash, so the check runs everywhere (a fresh clone has no ``../shared``);
where ``../shared`` is beside the clone, the copy is also compared byte for byte.
"""

import hashlib

import pytest

from tests.paths import REFERENCE, SHARED_REFERENCE

#: sha256 of the five manifests as they appear in ../shared/reference/k8s/apps/llm-serving/.
SHA256 = {
    "clef-candle.yaml": "f1381f1f67d620193a3e077c7e75fa4be65a16b96af69d8b7123db6aeebaedec",
    "coder-14b-fp16.yaml": "72ef96d3cb03fe1d5415f9facc6f1efe1969ac60e292a7126475e9f2747a6350",
    "coder-service.yaml": "3223777aec5da41d4340e7a8316737099ef12a009d2972b4c358ce955e32da06",
    "coder.yaml": "0c376461dad23f8972fb2baf99b87f1a0d4748068d008761ce9ea2ff0dc702c3",
    "reasoning-long-service.yaml": "83fe6b1e727c83fea4818fa8466f5901a0922d8bf52010b74c3c9feb4d2debe8",
}


def test_reference_copy_is_the_users_files_unchanged():
    ours = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in REFERENCE.glob("*.yaml")}
    assert ours == SHA256


def test_reference_copy_is_byte_identical_to_shared():
    if not SHARED_REFERENCE.is_dir():
        pytest.skip(f"{SHARED_REFERENCE} is not beside this clone; the hashes above still pin the copy")
    for name in SHA256:
        assert (REFERENCE / name).read_bytes() == (SHARED_REFERENCE / name).read_bytes(), name
