"""Where the tests find the user's reference manifests.

``tests/reference/`` is an unchanged copy of ``../shared/reference/k8s/apps/llm-serving/``
(the five manifests that appear whole in the seed commits), so a fresh clone runs every
test without ``../shared`` beside it; ``tests/test_reference_copy.py`` pins the copy by
sha256 and compares it byte for byte with ``../shared`` wherever that is beside the clone.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "reference"
SHARED_REFERENCE = ROOT.parent / "shared" / "reference" / "k8s" / "apps" / "llm-serving"
