"""The pack's entry to the manifest read model (:mod:`core.k8s.manifests`): each workload's view built
once per analyzer request.

Within one request every policy reads the same properties object (:mod:`policylib.decode_once`),
so :func:`workload` keeps the frozen :class:`core.k8s.manifests.pods.Workload` it built for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from core.k8s.manifests import objects as _objects
from core.k8s.manifests import pods
from core.k8s.manifests import stack as _stack
from core.k8s.manifests.read import WORKLOAD_TYPES
from policylib import decode_once


def workload(resource_type: str, props: Mapping, urn: str = "") -> pods.Workload | None:
    """:func:`core.k8s.manifests.pods.workload`, built once per analyzer request
    (:func:`policylib.decode_once.request_memo`, keyed with ``id`` of the properties and holding them)."""
    memo = decode_once.request_memo()
    if memo is None or resource_type not in WORKLOAD_TYPES:
        return pods.workload(resource_type, props, urn)
    key = ("workload", resource_type, id(props), urn)
    hit = memo.get(key)
    if hit is not None and hit[0] is props:
        return hit[1]
    view = pods.workload(resource_type, props, urn)
    memo[key] = (props, view)
    return view


def of(args: Any) -> pods.Workload | None:
    """The :class:`~core.k8s.manifests.pods.Workload` a resource policy is judging
    (``ResourceValidationArgs``), or None when the resource is not a Deployment, StatefulSet or
    InferenceService."""
    return workload(args.resource_type, args.props, args.urn)


def stack_view(resources: Iterable[Any]) -> _stack.Stack:
    """:func:`core.k8s.manifests.stack.stack_view` with :func:`workload`'s per-request memo, built once
    per ``AnalyzeStack`` request: every stack policy of the request gets its own list of
    ``PolicyResource`` objects, but over the same properties objects (:mod:`policylib.decode_once`),
    so the view is keyed with the type, URN and ``id`` of each resource's properties, and holds them."""
    memo = decode_once.request_memo()
    if memo is None:
        return _stack.stack_view(resources, workload)
    resources = list(resources)
    key = ("stack", tuple((r.resource_type, r.urn, id(r.props)) for r in resources))
    hit = memo.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], (r.props for r in resources), strict=True)):
        return hit[1]
    view = _stack.stack_view(resources, workload)
    memo[key] = ([r.props for r in resources], view)
    return view


def objects_view(resources: Iterable[Any]) -> _objects.Objects:
    """:func:`core.k8s.manifests.objects.objects_view` of a stack policy's resources (the HPAs, budgets,
    quotas, LimitRanges, routes and pools), built once per ``AnalyzeStack`` request like :func:`stack_view`."""
    memo = decode_once.request_memo()
    resources = list(resources)
    if memo is None:
        return _objects.objects_view(resources)
    key = ("objects", tuple((r.resource_type, r.urn, id(r.props)) for r in resources))
    hit = memo.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], (r.props for r in resources), strict=True)):
        return hit[1]
    view = _objects.objects_view(resources)
    memo[key] = ([r.props for r in resources], view)
    return view
