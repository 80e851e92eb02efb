"""Every workload, Service and NetworkPolicy of a stack: the view the stack-wide checks (policy
pack, preview summary, plan tools) share."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.k8s.manifests import kserve, pods
from core.k8s.manifests import services as services_
from core.k8s.manifests.read import ISVC_TYPE, LWS_TYPE, NETWORK_POLICY_TYPE, SERVICE_TYPE, WORKLOAD_TYPES, as_map


@dataclass(frozen=True)
class Stack:
    """Every workload, Service and NetworkPolicy of a stack, by kind."""

    workloads: tuple[pods.Workload, ...]
    services: tuple[services_.Service, ...]
    network_policies: tuple[tuple[str, Mapping], ...]  # (urn, props)
    others: tuple[pods.OtherPods, ...] = ()


def stack_view(
    resources: Iterable[Any], workload: Callable[[str, Mapping, str], pods.Workload | None] = pods.workload,
) -> Stack:
    """Build a :class:`Stack` from pulumi-policy ``PolicyResource`` objects (anything with
    ``resource_type``, ``props`` and ``urn``); ``workload`` builds each workload's view (the pack
    passes its per-request memo, :func:`policylib.views.workload`). A LeaderWorkerSet gives two workloads (leaders,
    workers: :func:`core.k8s.manifests.pods.lws_workloads`); an InferenceService in the ``predictor.model``
    form is built with the ServingRuntimes of ``resources`` (:mod:`core.k8s.manifests.kserve`). Other
    resource types are ignored."""
    workloads, services, netpols, others = [], [], [], []
    resources = list(resources)
    runtimes = kserve.runtimes_of(resources)
    for r in resources:
        t = r.resource_type
        if t in WORKLOAD_TYPES:
            model_form = t == ISVC_TYPE and isinstance(as_map(as_map(r.props.get("spec")).get("predictor")).get("model"), Mapping)
            w = pods.workload(t, r.props, r.urn, runtimes) if model_form and runtimes else workload(t, r.props, r.urn)
            if w is not None:
                workloads.append(w)
        elif t == LWS_TYPE:
            workloads.extend(pods.lws_workloads(r.props, r.urn))
        elif t == SERVICE_TYPE:
            s = services_.service(t, r.props, r.urn)
            if s is not None:
                services.append(s)
        elif t == NETWORK_POLICY_TYPE:
            netpols.append((r.urn, r.props))
        else:
            o = pods.other_pods(t, r.props)
            if o is not None:
                others.append(o)
    return Stack(tuple(workloads), tuple(services), tuple(netpols), tuple(others))
