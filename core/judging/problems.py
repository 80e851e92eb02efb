"""One message form for every stack-file and policy problem: the subject (the config key path or
the object), the value, the rule broken and the fix, in the user's own terms.

:class:`Problem` is what the stack-file loader reports (``stackfile/loader.py``) and
:class:`ConfigError` carries all of them at once; a rule's verdict before it has a key path or an
object is a :class:`core.judging.registry.Breach`.

Plain Python.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the stack config.

    ``path`` is the config key path (``llm-serving:workloads.candle-vllm.cards``), ``value`` the
    value found there (``None`` when missing), ``rule`` what it breaks, ``fix`` what to change,
    ``source`` where the rule comes from (the same parts as a policy's :class:`Finding`).
    """

    path: str
    value: Any
    rule: str
    fix: str
    source: str = ""

    def render(self) -> str:
        """Four lines: the path, then value, rule and fix indented beneath it; a fifth, the
        source of the rule (a seed, an incident), when known."""
        text = f"{self.path}\n  value: {shown(self.value, self.path)}\n  rule:  {self.rule}\n  fix:   {self.fix}"
        return text + (f"\n  source: {self.source}" if self.source else "")


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


#: Pulumi's mark of a secret value in a resource's inputs or a plan (``resource.SecretSig``,
#: sdk/go/common/resource/sig): ``{<key>: <value>, "plaintext": ...}``.
SECRET_SIG = ("4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270")
#: What stands for a value no message may quote (a secret's, or one under a key that holds secrets).
HIDDEN = "[secret]"
#: Keys whose values are secrets wherever they appear (any case): a workload's ``secret_env``, a Secret's
#: ``stringData``, a ``secure:`` value as the stack file stores it; a manifest's top-level ``data`` too
#: (a Secret's, base64 is no encryption).
SECRET_KEYS = frozenset({"secret_env", "stringdata", "secure"})


def is_secret(value: Any) -> bool:
    """A value stored encrypted: ``{secure: <ciphertext>}`` as the stack file holds it (a one-key map),
    Pulumi's secret object (:data:`SECRET_SIG`), or anything the program wrapped as secret (pydantic's ``SecretStr``, by its type's name)."""
    if type(value).__name__ in ("SecretStr", "SecretBytes"):
        return True
    return isinstance(value, dict) and (set(value) == {"secure"} or value.get(SECRET_SIG[0]) == SECRET_SIG[1])


def redacted(value: Any, path: str = "") -> Any:
    """``value`` as a message may show it: :data:`HIDDEN` when it is a secret (:func:`is_secret`) or
    ``path`` (a dotted key path) passes through a key of :data:`SECRET_KEYS`; inside maps and lists
    each such value hidden the same way, keys kept. The one redaction every message and report uses."""
    parts = [p.split("[", 1)[0].lower() for p in str(path).replace(":", ".").split(".")]
    if is_secret(value) or any(p in SECRET_KEYS for p in parts) or parts[0] == "data":
        return HIDDEN
    if isinstance(value, dict):
        return {k: (HIDDEN if str(k).lower() in SECRET_KEYS else redacted(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v) for v in value]
    return value


class Unquoted(str):
    """A description standing for a value no message quotes (``text, 18 characters``), shown as is."""

    __slots__ = ()


def described(value: Any) -> Unquoted:
    """What ``value`` is, never what it holds: ``(text, 18 characters)``, ``(a map of 2 keys)``,
    ``(a list of 3 items)``, ``(a number)``; for a refusal that must not quote a value it cannot
    tell is not a secret (a mistyped field's)."""
    if isinstance(value, str):
        return Unquoted(f"(text, {len(value):,} characters)")
    if isinstance(value, dict):
        return Unquoted(f"(a map of {len(value):,} keys)")
    if isinstance(value, (list, tuple)):
        return Unquoted(f"(a list of {len(value):,} items)")
    if isinstance(value, bool) or value is None:
        return Unquoted(f"({json.dumps(value)})")
    return Unquoted("(a number)") if isinstance(value, (int, float)) else Unquoted(f"(a {type(value).__name__})")


def shown(value: Any, path: str = "") -> str:
    """:func:`redacted` ``value`` as one short text (JSON, cut at 200 characters)."""
    return _show(redacted(value, path))


def _show(value: Any) -> str:
    if value is None:
        return "(missing)"
    if isinstance(value, Unquoted):
        return str(value)
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


@dataclass(frozen=True)
class Finding:
    """One policy finding, in the pack's one message form.

    ``subject`` names the object (``Deployment candle-vllm``, ``node worker-1``, ``Deployment x,
    container c``); ``wrong`` says what is wrong with which value, stating the value the object
    has (``pods ask 2 cards, 6 of 4 on worker-1``); ``fix`` is the change for hand-written YAML
    (the manifest field); ``stack_fix`` is the same change in stack-file terms, with ``{key}``
    standing for the stack-file key of the object (``llm-serving:workloads.coder``), used when
    the object was made from a stack file; ``source`` is where the rule comes from (a seed, an
    incident, an upstream issue or document).

    :meth:`render` gives one line: ``<subject>: <wrong>. Fix: <fix>. Source: <source>.``
    """

    subject: str
    wrong: str
    fix: str
    source: str
    stack_fix: str | None = None

    def render(self, stack_key: str | None = None) -> str:
        """The message. With ``stack_key`` (the object came from a stack file) and a
        ``stack_fix``, the fix names the stack-file key; otherwise the manifest fix."""
        fix = self.fix
        if stack_key and self.stack_fix:
            fix = self.stack_fix.replace("{key}", stack_key)
        return f"{self.subject}: {_sentence(self.wrong)} Fix: {_sentence(fix)} Source: {_sentence(self.source)}"


#: A rendered :class:`Finding`, for tests and the docs: subject, what is wrong, fix, source.
FINDING_FORM = r"^(?P<subject>[^\n]+?): (?P<wrong>.+?) Fix: (?P<fix>.+?) Source: (?P<source>[^\n]+)\.$"


def _sentence(text: str) -> str:
    text = text.strip()
    if text and text[-1] not in ".!?":
        text += "."
    return text
