"""Per-object waivers: an object (or its pod template) says, by annotation, that a policy's finding
on it is accepted, and why (policy-waivers).

Two forms are read (kube-linter's ``ignore-check.kube-linter.io/<check>: <reason>`` and checkov's
``checkov.io/skip<N>: <check>=<reason>``, the second as the components already write it for checkov):

- ``llm-serving.riotpiao.com/ignore-<policy>: <reason>``;
- ``checkov.io/skip<N>: <policy>=<reason>``, where ``<policy>`` is a pack policy's name (entries
  naming checkov's own checks, ``CKV_K8S_22`` and the like, are checkov's and left to it).

A waiver must name a pack policy and say why: an unknown name or an empty reason waives nothing
and is itself a finding. A waived finding is never dropped: the pack reports it under
policy-waivers in the :data:`WAIVED` form (:func:`waived_message`), which the reports show as waived,
with the reason (:func:`parse_waived`).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.base import facts
from core.judging.registry import POLICIES, Breach, declare_policy, rule

NAME = "policy-waivers"
#: The house form's key prefix: ``llm-serving.riotpiao.com/ignore-<policy>``.
IGNORE_PREFIX = f"{facts.ANNOTATION_PREFIX}ignore-"
_CHECKOV_KEY = re.compile(re.escape(facts.CHECKOV_SKIP_ANNOTATION) + r"\d+")
#: A checkov entry naming a checkov check (``CKV_K8S_22``, ``CKV2_K8S_1``, custom ``CKV_*``): checkov's.
_CHECKOV_CHECK = re.compile(r"CKV\d*_")
SOURCE = ("kube-linter's ignore-check.kube-linter.io/<check> annotation (docs.kubelinter.io, Ignoring violations); "
          "checkov's checkov.io/skip<N>: <check>=<comment> annotation (checkov docs, Suppressing and Skipping Policies)")
#: A waived finding's message, as the pack reports it: the reason as a JSON string, then the finding's own message.
WAIVED = "waived {policy} by {key} {reason}: {message}"
_WAIVED = re.compile(r'waived (?P<policy>[a-z0-9-]+) by (?P<key>\S+) (?P<reason>"(?:[^"\\]|\\.)*"): (?P<message>.*)', re.S)


@dataclass(frozen=True)
class Waiver:
    """One waiver annotation: ``key`` (the annotation, e.g. ``llm-serving.riotpiao.com/ignore-gpu-card-allocation``),
    ``policy`` (the name it waives) and ``reason`` (stripped; may be empty: then it waives nothing)."""

    key: str
    policy: str
    reason: str


def read(annotations: Iterable[Mapping[str, Any]]) -> list[Waiver]:
    """Every waiver in ``annotations`` (the object's, then its pod template's), in that order; a value
    that is not a string reads as an empty reason. Checkov entries naming a checkov check are left out."""
    out: list[Waiver] = []
    for mapping in annotations:
        for key, value in mapping.items():
            text = value.strip() if isinstance(value, str) else ""
            if isinstance(key, str) and key.startswith(IGNORE_PREFIX):
                out.append(Waiver(key, key[len(IGNORE_PREFIX):], text))
            elif isinstance(key, str) and _CHECKOV_KEY.fullmatch(key):
                check, _, reason = text.partition("=")
                if check.strip() and not _CHECKOV_CHECK.match(check.strip()):
                    out.append(Waiver(key, check.strip(), reason.strip()))
    return out


@rule(NAME, "A waiver annotation names a policy of the pack and says why", SOURCE, policy=NAME)
def waiver_is_valid(waiver: Waiver, known: frozenset[str] | None = None) -> Breach | None:
    """A breach when ``waiver`` names no policy of ``known`` (default: every described pack policy),
    names policy-waivers itself, or gives no reason."""
    known = frozenset(POLICIES) if known is None else known
    if waiver.policy == NAME:
        return Breach(f"annotation {waiver.key} waives {NAME}, which cannot be waived: it is what shows the other waivers",
                      f"remove the annotation {waiver.key}")
    if waiver.policy not in known:
        close = difflib.get_close_matches(waiver.policy, sorted(known - {NAME}), n=1)
        hint = f" (did you mean {close[0]}?)" if close else " (docs/policies/index.md lists them)"
        return Breach(f"annotation {waiver.key} names {waiver.policy!r}, which is no policy of the pack, so it waives nothing",
                      f"name one of the pack's policies{hint} or remove the annotation")
    if not waiver.reason:
        return Breach(f"annotation {waiver.key} waives {waiver.policy} without a reason, so it waives nothing",
                      f"write why the finding is accepted as the value, e.g. {waiver.key}: \"<why this object is safe>\"")
    return None


def valid(waivers: Iterable[Waiver], known: frozenset[str] | None = None) -> dict[str, Waiver]:
    """Policy name -> the first waiver of it that :func:`waiver_is_valid` accepts."""
    out: dict[str, Waiver] = {}
    for w in waivers:
        if w.policy not in out and waiver_is_valid(w, known) is None:
            out[w.policy] = w
    return out


def waived_message(waiver: Waiver, message: str) -> str:
    """A waived finding as policy-waivers reports it (:data:`WAIVED`)."""
    return WAIVED.format(policy=waiver.policy, key=waiver.key, reason=json.dumps(waiver.reason), message=message)


def parse_waived(message: str) -> tuple[str, str, str, str] | None:
    """``(policy, annotation key, reason, finding's message)`` of a :func:`waived_message`, else None."""
    m = _WAIVED.fullmatch(message)
    return (m["policy"], m["key"], json.loads(m["reason"]), m["message"]) if m else None


declare_policy(
    NAME,
    "Waiver annotations name a policy of the pack and say why; each finding they waive is shown as waived, with the reason.",
    (
        "Write a waiver as llm-serving.riotpiao.com/ignore-<policy>: <why this object is safe> on the object or its "
        "pod template (or checkov's form, checkov.io/skip<N>: <policy>=<why>). Name a policy of the pack and give "
        "the reason; a waiver that waives nothing any more can be removed."
    ),
    kind="stack",
    level="advisory",
    severity="low",
    doc="""policy-waivers: per-object waivers name a policy of the pack and say why; what they waive is shown.

Rule: an annotation ``llm-serving.riotpiao.com/ignore-<policy>: <reason>`` (or checkov's
``checkov.io/skip<N>: <policy>=<reason>``) on an object or its pod template waives that policy's
findings on the object: the policy does not report them (:mod:`policylib.waivers`, applied to every
policy by :mod:`policylib.declare`), this one does, each as ``waived <policy> by <annotation>:
"<reason>": <finding>``; the reports show them as waived, with the reason. A waiver that
names no policy of the pack, or gives no reason, waives nothing and is reported here.

Advisory: a waived finding is shown, not enforced; a waiver that names no policy or gives no reason
waives nothing, so the finding stays with its own policy at its own level.

Source: kube-linter's ``ignore-check.kube-linter.io/<check>`` and checkov's ``checkov.io/skip<N>``
annotations (a suppression carries its reason).

Does not check: a waiver that waives nothing any more (the policy finds nothing on the object).
A waived policy is run again on the waiving object with its default configuration, so a waived
finding's text is the default configuration's.

""",
)
