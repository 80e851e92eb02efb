"""Every rule of the policy pack and the stack file's cross-checks, registered once.

Shaped like kube-score's ``RegisterAllChecks``: one typed record a rule (:class:`Rule`: its id,
title, source and judge), filed in one table by :func:`core.rulebook.register_all`, which imports each
rule family (:mod:`core.rulebook`). A judge is a predicate over plain values (it calls
:mod:`core.rulebook`) that returns None or a :class:`Breach`: what is wrong and the fix, worded
ONCE with :class:`Setting` references, and rendered in the user's own terms by
:meth:`Breach.render`: the stack file's key (``max_model_len``) for a stack, the server flag or
manifest field (``--max-model-len``) for hand-written YAML.

Each pack policy is a record here too (:class:`PolicyRecord`, filed by :func:`declare_policy`
beside the rules it judges by, in :data:`POLICIES`): its name, texts, kind, level, severity,
configuration and account; the pack joins each with the code that reads the manifests
(``policies/policylib/declare.py``).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

from core.judging.problems import Finding, Problem

#: Whose terms a message is in: the stack file's (``Pulumi.<stack>.yaml``) or a manifest's.
Audience = Literal["stack", "manifest"]
STACK: Audience = "stack"
MANIFEST: Audience = "manifest"

#: A setting reference inside a wording: ``\x1f<id>\x1f`` or, with a value, ``\x1f<id>=<json>\x1f``;
#: text for one audience only: ``\x1f@<audience>=<json text>\x1f``.
_REF = re.compile("\x1f([^\x1f=]+)(?:=([^\x1f]*))?\x1f")


def only(audience: Audience, text: str) -> str:
    """``text`` in a wording that only ``audience`` reads (a stack-file default the manifest has no
    counterpart of: ``, or leave it unset for 3 x cold_start_seconds``). ValueError: ``audience`` is
    neither :data:`STACK` nor :data:`MANIFEST` (the text would render for nobody)."""
    if audience not in (STACK, MANIFEST):
        raise ValueError(f"only({audience!r}, ...): the audience is {STACK!r} or {MANIFEST!r}")
    return f"\x1f@{audience}={json.dumps(text)}\x1f"


@dataclass(frozen=True)
class Setting:
    """One setting as each audience names it: ``key``, the stack-file key under the workload
    (``max_model_len``; ``None``: the stack file has no such key, its component writes it);
    ``manifest``, the server flag (``--max-model-len``), manifest field (``resources.limits.memory``)
    or annotation; ``flag``: ``manifest`` is a command-line flag (``--f=v``, a bare ``--f`` for
    ``true``); ``wrap``: the flag takes the value as this key of a JSON object
    (``--hf-overrides={"rope_scaling": ...}``). In an f-string it stands as a reference :meth:`Breach.render` resolves;
    :meth:`to` references the setting with a value (``dtype: f16`` / ``--dtype=f16``)."""

    id: str
    key: str | None
    manifest: str
    flag: bool = False
    wrap: str | None = None

    def __post_init__(self) -> None:
        if not _ID.fullmatch(self.id) or not self.manifest:
            raise ValueError(f"setting {self.id!r}: the id is a lowercase identifier and the manifest name is given "
                             f"(a reference renders by id)")
        known = SETTINGS.setdefault(self.id, self)
        if known != self:  # a reference renders by id: two different settings under one id would mix
            raise ValueError(f"setting {self.id} is declared twice, differently: {known} and {self}")

    def __str__(self) -> str:
        return f"\x1f{self.id}\x1f"

    def __format__(self, spec: str) -> str:
        """``f"{S}"`` gives the reference; a format spec (``f"{S:>9}"``) would be lost, so it is an error."""
        if spec:
            raise ValueError(f"setting {self.id} formatted with spec {spec!r}: a reference renders as a name, "
                             f"write f\"{{S}}\" (or S.to(value) for a value)")
        return str(self)

    def to(self, value: Any) -> str:
        """A reference to this setting set to ``value`` (JSON-encodable)."""
        return f"\x1f{self.id}={json.dumps(value, separators=(',', ':'))}\x1f"

    def name(self, audience: Audience) -> str:
        """The setting's name for ``audience`` (the manifest's when the stack file has no key)."""
        if audience == STACK and self.key:
            return self.key
        return f"{self.manifest} {self.wrap}" if self.wrap else self.manifest

    def assignment(self, value: Any, audience: Audience) -> str:
        """``key: value`` (stack file, YAML flow style) or ``--flag=value`` / ``field: value``."""
        if audience == STACK and self.key:
            return f"{self.key}: {_flow(value)}"
        if self.wrap:
            value = {self.wrap: value}
        if self.flag:
            if value is True:
                return self.manifest
            return f"{self.manifest}={value if isinstance(value, str) else json.dumps(value, separators=(',', ':'))}"
        return f"{self.manifest}: {_flow(value)}"


#: Every setting by id (filled as :class:`Setting` objects are made).
SETTINGS: dict[str, Setting] = {}
#: A setting id: what a reference names.
_ID = re.compile(r"[a-z][a-z0-9_]*")


def _flow(value: Any) -> str:
    """``value`` as YAML flow style writes it: ``{rope_type: yarn, factor: 2.0}``, ``f16``, ``true``."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_text(text: str, audience: Audience) -> str:
    """``text`` with every setting reference resolved for ``audience``."""

    def one(m: re.Match[str]) -> str:
        if m.group(1).startswith("@"):
            return render_text(json.loads(m.group(2)), audience) if m.group(1)[1:] == audience else ""
        setting = SETTINGS.get(m.group(1))
        if setting is None:
            raise ValueError(f"a wording names setting {m.group(1)!r}, which no Setting declares")
        if m.group(2) is None:
            return setting.name(audience)
        return setting.assignment(json.loads(m.group(2)), audience)

    return _REF.sub(one, text)


@dataclass(frozen=True)
class Breach:
    """A judge's verdict: ``wrong`` (what is wrong, stating the values found) and ``fix``, each
    worded once with :class:`Setting` references; ``source``: where the rule comes from."""

    wrong: str
    fix: str
    source: str = ""

    def render(self, audience: Audience) -> tuple[str, str]:
        """``(wrong, fix)`` in ``audience``'s terms."""
        return render_text(self.wrong, audience), render_text(self.fix, audience)

    def finding(self, subject: str) -> Finding:
        """The pack's :class:`~core.judging.problems.Finding` about ``subject`` (an object): what is wrong and
        the fix in manifest terms, the stack-file fix under the object's key (``{key}``, appended
        unless the wording places it itself)."""
        wrong, fix = self.render(MANIFEST)
        stack_fix = render_text(self.fix, STACK)
        return Finding(subject, wrong, fix, self.source,
                       stack_fix=stack_fix if "{key}" in stack_fix else stack_fix + " under {key}")

    def _at(self, where: str) -> tuple[str, str]:
        """``(wrong, fix)`` in stack-file terms, said at ``where`` (a key path or a workload):
        the fix's ``{key}`` is ``where``, and " under {key}" goes (it would say where it is said)."""
        wrong, fix = self.render(STACK)
        return wrong, fix.replace(" under {key}", "").replace("{key}", where)

    def problem(self, path: str, value: Any) -> Problem:
        """The stack file's :class:`~core.judging.problems.Problem` at key ``path`` (value ``value``)."""
        wrong, fix = self._at(path)
        return Problem(path, value, wrong, fix, self.source)


@dataclass(frozen=True)
class Rule:
    """One rule: ``id`` (the pack's policy name where a policy judges it, else the rule's own name),
    ``title`` (one line), ``source`` (seeds, public reports), ``judge`` (plain values ->
    :class:`Breach` or None) and ``policy`` (the pack policy that judges manifests by it; None:
    the stack file only)."""

    id: str
    title: str
    source: str
    judge: Callable[..., Breach | None]
    policy: str | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Breach | None:
        breach = self.judge(*args, **kwargs)
        if breach is not None and not breach.source:
            breach = Breach(breach.wrong, breach.fix, self.source)
        return breach


#: Every registered rule by id, in registration order.
RULES: dict[str, Rule] = {}


#: Where a pack policy runs: ``resource`` on each object, ``stack`` once on the whole stack.
PolicyKind = Literal["resource", "stack"]
#: A policy's enforcement level (pulumi-policy's ``EnforcementLevel`` values it uses).
Level = Literal["advisory", "mandatory"]
#: A policy's severity (pulumi-policy's ``Severity`` values).
SeverityName = Literal["low", "medium", "high", "critical"]

#: A policy name: lowercase words joined by ``-`` (its fixtures' folder and its page's name).
_POLICY_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: The account's sentences on what the policy leaves alone (``Does not check: ...`` or
#: ``Not judged: ...``, to the end of their paragraph).
_DOES_NOT_CHECK = re.compile(r"\b(?:Does not check|Not judged):\s*(.+?)(?:\n\s*\n|\Z)", re.I | re.S)

#: A workload check: ``(workload, manifest, config) -> Breach | breaches | None``: the
#: :class:`core.k8s.manifests.pods.Workload` being judged, its object as written (plain mapping)
#: and the policy's configuration (``--policy-pack-config``, ``{}`` when none).
Check = Callable[[Any, Any, Any], "Breach | Iterable[Breach] | None"]


@dataclass(frozen=True)
class PolicyRecord:
    """One pack policy, declared once beside its rules (:func:`declare_policy`): ``name``;
    ``description`` (one line: what it holds the manifests to) and ``remediation`` (what to change);
    ``kind``; ``level``; ``severity``; ``doc`` (its account: what it judges, its source, what it does
    not check); ``config`` (the JSON Schema properties of its ``--policy-pack-config`` entry, ``{}``:
    none); ``check`` (a workload check the pack runs on each Deployment, StatefulSet and
    InferenceService, or None: the pack's module of the family reads the manifests,
    ``policies/<family>.py``); ``module`` (the module that declared it)."""

    name: str
    description: str
    remediation: str
    kind: PolicyKind
    level: Level
    severity: SeverityName
    doc: str
    config: Mapping[str, Any] = field(default_factory=dict)
    check: Check | None = None
    module: str = ""

    @property
    def family(self) -> str:
        """The rule family that declared it (``pods``: ``core/rulebook/pods.py``)."""
        return self.module.rsplit(".", 1)[-1]

    @property
    def rules(self) -> list[Rule]:
        """The registered rules that name this policy, in registration order."""
        return [r for r in RULES.values() if r.policy == self.name]

    @property
    def does_not_check(self) -> str:
        """What the policy leaves alone: the account's ``Does not check:`` / ``Not judged:`` text ("" if none)."""
        return " ".join(" ".join(m.group(1).split()) for m in _DOES_NOT_CHECK.finditer(self.doc))


#: Every pack policy by name (filled as the rule families are imported).
POLICIES: dict[str, PolicyRecord] = {}


def declare_policy(name: str, description: str, remediation: str, *, kind: PolicyKind, level: Level,
                   severity: SeverityName, doc: str, config: Mapping[str, Any] | None = None,
                   check: Check | None = None) -> PolicyRecord:
    """File pack policy ``name``, beside the rules it judges by; called at a rule family's top level
    (the calling module is the record's ``module``). ValueError, at import: a name that
    is not lowercase words joined by ``-``, an empty description, remediation or ``doc``, an unknown
    kind, level or severity, a configuration property without a type and a description, a ``check``
    on a stack policy, or a name declared twice with another record."""
    module = str(sys._getframe(1).f_globals.get("__name__", ""))  # noqa: SLF001 - the declaring family
    if not _POLICY_NAME.fullmatch(name):
        raise ValueError(f"policy name {name!r}: use lowercase words joined by '-' (e.g. gpu-card-allocation)")
    for what, text in (("description", description), ("remediation", remediation), ("doc", doc)):
        if not text.strip():
            raise ValueError(f"policy {name}: {what} is empty; "
                             + ("say what it judges, its source and what it does not check" if what == "doc" else f"write its {what}"))
    for what, value, allowed in (("kind", kind, get_args(PolicyKind)), ("level", level, get_args(Level)),
                                 ("severity", severity, get_args(SeverityName))):
        if value not in allowed:
            raise ValueError(f"policy {name}: {what} {value!r} is not one of {', '.join(allowed)}")
    for prop, spec in (config or {}).items():
        if not spec.get("type") or not spec.get("description"):
            raise ValueError(f"policy {name}: configuration property {prop} needs a type and a description")
    if check is not None and kind != "resource":
        raise ValueError(f"policy {name}: a check runs on each workload; declare it kind='resource', "
                         "or read the whole stack in policies/<family>.py")
    record = PolicyRecord(name, description, remediation, kind, level, severity, doc, dict(config or {}), check, module)
    known = POLICIES.get(name)
    if known is not None and _comparable(known) != _comparable(record):
        raise ValueError(f"policy {name} is declared twice ({known.module} and {module})")
    POLICIES[name] = record
    return record


def _comparable(record: PolicyRecord) -> tuple:
    """A record as compared for a second declaration: a module imported again declares the same
    record (its check a new function of the same name), which is no conflict."""
    check = record.check
    return (replace(record, check=None), None if check is None else (check.__module__, check.__qualname__))


def register(rule: Rule) -> Rule:
    """File ``rule`` under its id; an id registered twice is a programming error."""
    if rule.id in RULES and RULES[rule.id] is not rule:
        raise ValueError(f"rule {rule.id} is registered twice")
    RULES[rule.id] = rule
    return rule


def rule(id_: str, title: str, source: str, policy: str | None = None) -> Callable[[Callable[..., Breach | None]], Rule]:
    """Decorator: register the judge below it as :class:`Rule` ``id_``."""

    def wrap(judge: Callable[..., Breach | None]) -> Rule:
        return register(Rule(id_, title, source, judge, policy))

    return wrap
