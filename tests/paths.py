"""Where the tests find the user's reference manifests and the prod stack they pin.

``tests/reference/`` is an unchanged copy of ``../shared/reference/k8s/apps/llm-serving/``
(the five manifests that appear whole in the seed commits), so a fresh clone runs every
test without ``../shared`` beside it; ``tests/project/test_reference_copy.py`` pins the copy by
sha256 and compares it byte for byte with ``../shared`` wherever that is beside the clone.

``tests/fixtures/prod/Pulumi.prod.yaml`` is a frozen copy of ``Pulumi.prod.yaml``: the user changes
the live file in pull requests, so tests that assert prod's exact values read the copy, and the
live file gets only the checks a pull request must pass (``tests/project/test_live_prod.py``).
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "reference"
SHARED_REFERENCE = ROOT.parent / "shared" / "reference" / "k8s" / "apps" / "llm-serving"

#: The prod stack the tests assert exact values of: a frozen copy of ``Pulumi.prod.yaml`` (no
#: ``config_json`` paths, so nothing else to copy), updated deliberately, never by a prod change.
PROD_STACK_FILE = ROOT / "tests" / "fixtures" / "prod" / "Pulumi.prod.yaml"
#: The live prod stack, the user's to change in a pull request: only generic checks read it
#: (tests/project/test_live_prod.py: it loads, renders, the pack passes, the update's peak fits).
LIVE_STACK_FILE = ROOT / "Pulumi.prod.yaml"
