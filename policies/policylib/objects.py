"""The shared reading of the stack policies that judge objects acting on model servers
(:mod:`core.k8s.manifests.objects`): the running server workloads an object reaches, where each server
listens, and reporting a breach about an object (not a workload) in the pack's message form."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from core.k8s.manifests.pods import Workload


def report(subject: str, breach: Breach | None, annotations: Mapping[str, str] | None = None) -> str | None:
    """``breach`` about ``subject`` (``HorizontalPodAutoscaler x``) as the pack's message; None for no breach."""
    return None if breach is None else terms.message(annotations or {}, breach.finding(subject))


def listening(workloads: Iterable[Workload]) -> list[tuple[Workload, manifests.Container, manifests.Endpoint]]:
    """``(workload, container, endpoint)`` of every running vLLM / candle-vllm server among ``workloads``
    whose endpoint can be known (:func:`core.k8s.manifests.endpoint`)."""
    out = []
    for w in workloads:
        if not w.running:
            continue
        for c, server in w.servers:
            ep = manifests.endpoint(server)
            if ep is not None:
                out.append((w, c, ep))
    return out


def service_named(services: Iterable[manifests.Service], namespace: str, name: str) -> manifests.Service | None:
    """The Service ``name`` in ``namespace`` among the manifests, or None (it is elsewhere: not judged)."""
    return next((s for s in services if s.namespace == namespace and s.name == name), None)
