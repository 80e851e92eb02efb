"""One message form for every stack-file and policy problem: the subject (the config key path or
the object), the value, the rule broken and the fix, in the user's own terms.

:class:`Problem` is what the stack-file loader reports (``components/loader.py``) and
:class:`ConfigError` carries all of them at once; :class:`RuleBreach` is a rule function's
verdict (the rule and the fix) before it has a key path.

Plain Python.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack config.

    ``path`` is the config key path (``llm-serving:workloads.candle-vllm.cards``), ``value`` the
    value found there (``None`` when missing), ``rule`` what it breaks, ``fix`` what to change.
    """

    path: str
    value: Any
    rule: str
    fix: str

    def render(self) -> str:
        """Four lines: the path, then value, rule and fix indented beneath it."""
        return f"{self.path}\n  value: {_show(self.value)}\n  rule:  {self.rule}\n  fix:   {self.fix}"


class ConfigError(Exception):
    """The stack config is invalid; ``problems`` lists every problem found, in key order."""

    def __init__(self, problems: list[Problem], source: str = "the stack config"):
        self.problems = list(problems)
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        """Human text, one block per problem, no traceback."""
        n = len(self.problems)
        head = (
            f"Cannot load {self.source}: {n} problem{'s' if n != 1 else ''}. "
            "Nothing was previewed or written; fix each one below and run again."
        )
        return "\n\n".join([head, *(p.render() for p in self.problems)])


class RuleBreach(NamedTuple):
    """A rule function's verdict: the rule broken and the fix."""

    rule: str
    fix: str


def _show(value: Any) -> str:
    if value is None:
        return "(missing)"
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
