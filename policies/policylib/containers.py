"""The walk the per-container policies share: each container of the workload a resource policy
judges (:func:`policylib.views.of`), and reporting a breach about it in the pack's message form
(:func:`core.judging.terms.message`: the stack-file fix for objects the program made)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from policylib import views


def each(args: Any) -> Iterator[tuple[manifests.Workload, manifests.Container]]:
    """``(workload, container)`` for every container of the Deployment, StatefulSet or
    InferenceService predictor ``args`` is about (nothing for other objects)."""
    w = views.of(args)
    if w is None:
        return
    for c in w.containers:
        yield w, c


def report(args: Any, report_violation: Callable[..., None], w: manifests.Workload, breach: Breach | None,
           container: manifests.Container | None = None, stack: bool = False) -> None:
    """Report ``breach`` (if any) about ``w`` (and ``container``: ``Deployment x, container c``), on
    the resource ``args`` judges, or on ``w``'s own URN from a ``stack`` policy."""
    if breach is None:
        return
    subject = f"{w.kind} {w.name}" + (f", container {container.name}" if container is not None else "")
    report_violation(terms.message(w.annotations, breach.finding(subject)), w.urn if stack else args.urn)
