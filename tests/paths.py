"""Where the tests find the user's reference manifests.

``tests/reference/`` is an unchanged copy of ``../shared/reference/k8s/apps/llm-serving/``
(the five manifests that appear whole in the seed commits), so a fresh clone runs every
test without ``../shared`` beside it; ``tests/test_reference_copy.py`` checks the copy is
still byte-identical wherever ``../shared`` is present (CI has it).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "reference"
SHARED_REFERENCE = ROOT.parent / "shared" / "reference" / "k8s" / "apps" / "llm-serving"
