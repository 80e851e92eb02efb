"""The README's policy table is the pack's metadata (tools/offline/policy_table.py generates it)."""

from __future__ import annotations

from tools.offline import policy_table


def test_the_readme_policy_table_is_generated_from_the_pack():
    readme = policy_table.README.read_text()
    assert policy_table.with_table(readme) == readme, "run: python -m tools.offline.policy_table --write"
    assert readme.count("| `") >= 20
