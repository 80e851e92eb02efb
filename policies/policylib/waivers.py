"""The pack's per-object waivers (:mod:`core.rulebook.waivers`), applied once for every policy.

:meth:`policylib.declare.PackPolicy.policy` wraps each
policy's ``validate`` with :func:`guard_resource` / :func:`guard_stack`: a finding on an object that
validly waives the policy is not reported by the policy (so ``pulumi preview --policy-pack`` does
not block on it either) but by policy-waivers (:func:`waived_findings`), which runs the waived
policy again on that object and reports each of its findings as waived, with the reason.

A waiver is read from the object's ``metadata.annotations`` and, for a workload, its pod
template's (``spec.template``; a LeaderWorkerSet's leader and worker templates).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UnknownValueError

from core.k8s.manifests.read import as_map
from core.rulebook import waivers as rules
from policylib import decode_once
from policylib.resource_helpers import object_label

#: Each policy's own ``validate`` (before :func:`guard_resource` / :func:`guard_stack`), by policy
#: name, with ``True`` for a resource policy: what policy-waivers runs again on a waiving object.
VALIDATES: dict[str, tuple[bool, Callable[..., Any]]] = {}


def annotation_maps(props: Mapping) -> list[Mapping]:
    """The annotation maps a waiver is read from: the object's, then its pod templates'."""
    spec = as_map(props.get("spec"))
    lws = as_map(spec.get("leaderWorkerTemplate"))
    job = as_map(as_map(spec.get("jobTemplate")).get("spec"))
    templates = (spec.get("template"), lws.get("leaderTemplate"), lws.get("workerTemplate"), job.get("template"))
    maps = [as_map(props.get("metadata")).get("annotations")]
    maps += [as_map(as_map(t).get("metadata")).get("annotations") for t in templates]
    return [as_map(m) for m in maps if as_map(m)]


def declared(props: Mapping) -> list[rules.Waiver]:
    """Every waiver annotation of the object (:func:`core.rulebook.waivers.read`), valid or not;
    built once per analyzer request (:func:`policylib.decode_once.request_memo`)."""
    memo = decode_once.request_memo()
    key = ("waivers", id(props))
    if memo is not None and (hit := memo.get(key)) is not None and hit[0] is props:
        return hit[1]
    found = rules.read(annotation_maps(props))
    if memo is not None:
        memo[key] = (props, found)
    return found


def valid(props: Mapping) -> dict[str, rules.Waiver]:
    """Policy name -> the object's valid waiver of it."""
    found = declared(props)
    return rules.valid(found) if found else {}


def guard_resource(name: str, validate: Callable[[ResourceValidationArgs, ReportViolation], None]
                   ) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    """``validate`` of resource policy ``name``, silent on an object that waives it (policy-waivers reports it)."""
    VALIDATES[name] = (True, validate)

    def run(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        if name in valid(args.props):
            return None
        return validate(args, report_violation)

    run.__doc__ = validate.__doc__
    return run


def guard_stack(name: str, validate: Callable[[StackValidationArgs, ReportViolation], None]
                ) -> Callable[[StackValidationArgs, ReportViolation], None]:
    """``validate`` of stack policy ``name`` without its findings on objects that waive it."""
    VALIDATES[name] = (False, validate)

    def run(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        waiving = {r.urn for r in args.resources if name in valid(r.props)}
        if not waiving:
            return validate(args, report_violation)

        def kept(message: str, urn: str | None = None) -> None:
            if urn not in waiving:
                report_violation(message, urn)

        return validate(args, kept)

    run.__doc__ = validate.__doc__
    return run


def waived_findings(resources: Iterable[PolicyResource]) -> list[tuple[str, str]]:
    """``(message, urn)`` of every waived finding among ``resources`` (each waived policy run again,
    unguarded, with its default configuration: a resource policy on the waiving object, a stack
    policy on the whole stack, keeping its findings on the waiving objects) and of every waiver that
    waives nothing (:func:`core.rulebook.waivers.waiver_is_valid`), in the resources' order."""
    resources = list(resources)
    out: list[tuple[str, str]] = []
    by_policy: dict[str, dict[str, rules.Waiver]] = {}
    for r in resources:
        for w in declared(r.props):
            breach = rules.waiver_is_valid(w)
            if breach is not None:
                out.append((breach.finding(object_label(r.props, r.resource_type)).render(), r.urn))
        for policy, w in valid(r.props).items():
            by_policy.setdefault(policy, {})[r.urn] = w
    for policy, waiving in sorted(by_policy.items()):
        if policy not in VALIDATES:
            continue
        is_resource, validate = VALIDATES[policy]
        found: list[tuple[str, str | None]] = []

        def collect(message: str, urn: str | None = None, found: list = found) -> None:
            found.append((message, urn))

        if is_resource:
            for r in resources:
                if r.urn in waiving:
                    before = len(found)
                    _quietly(validate, ResourceValidationArgs(r.resource_type, r.props, r.urn, r.name, r.opts, r.provider),
                             collect)
                    found[before:] = [(m, u or r.urn) for m, u in found[before:]]
        else:
            _quietly(validate, StackValidationArgs(resources), collect)
        for message, urn in found:
            if urn in waiving:
                out.append((rules.waived_message(waiving[urn], message), urn))
    return out


def _quietly(validate: Callable[..., Any], args: Any, report: ReportViolation) -> None:
    """``validate(args, report)``; a policy that calls ``args.not_applicable()`` or meets an unknown value
    reports nothing (as pulumi-policy's servicer treats both)."""
    with contextlib.suppress(UnknownValueError, _NotApplicableError):
        validate(args, report)
