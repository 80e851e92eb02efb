"""A stable client-facing Service in front of a workload: :class:`StablePredictorService`.

coder-service.yaml and reasoning-long-service.yaml: a ClusterIP Service with ports 80 (name
``http``, for base URLs that carry no port) and 8080 (name ``http-8080``, the container port),
both TCP to targetPort 8080, labelled part-of and ``app: <service name>``. Clients address the
Service, never a pod or an InferenceService, so a hand-off between servers is a change of
``selects`` and nothing else.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pydantic import ConfigDict, Field

from components.workload import ComponentArgs, WorkloadComponent
from core.base import facts
from core.k8s.traffic import ServiceClient
from core.rulebook import time_budgets


class StablePredictorServiceArgs(ComponentArgs):
    """What the Service needs: the workload component it selects (a typed reference: the
    selector is that component's ``selector_labels``, never a hand-copied label map), its
    declared clients, and a parked reason when it is meant to have no endpoints."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    namespace: str = Field(description="Namespace (llm-serving).")
    selects: WorkloadComponent = Field(description="The workload component (CandleDeployment, VllmInferenceService, ...).")
    clients: list[ServiceClient] = Field(default_factory=list, description="Declared clients (name, namespace, port).")
    parked_reason: str | None = Field(default=None, description="Set when it is meant to have no endpoints.")


def service_urls(name: str, namespace: str) -> dict[str, str]:
    """In-cluster URLs by port name: ``{"http": "http://<svc>.<ns>.svc.cluster.local:80", "http-8080": ...:8080}``."""
    return {port_name: f"http://{name}.{namespace}.svc.cluster.local:{port}" for port, port_name in facts.SERVICE_PORTS}


def service_await(parked_reason: str | None, workload_parked_reason: str | None,
                  workload_cold_start_seconds: int) -> dict[str, str]:
    """The await annotation of a Service: ``{"pulumi.com/skipAwait": "true"}`` when the Service
    or the workload it selects is parked (no endpoints, on purpose: nothing to wait for), else
    ``{"pulumi.com/timeoutSeconds": str(n)}`` with ``n`` the selected workload's own await
    (:func:`core.rulebook.time_budgets.await_timeout_seconds` of its cold start).

    Why the Service needs one (pulumi-kubernetes at f47bc2d6f199, ``provider/pkg/await/service.go``):
    a Service with a selector succeeds only once its Endpoints settled with no not-ready address,
    and it is created beside its workload, so it waits for the pods' cold start too (10 minutes by
    default: reasoning's 600 s would fail it). Behind a parked workload the Endpoints stay empty;
    the provider then succeeds after a 10 s settle, or waits out its timeout if no Endpoints event
    comes; skipAwait makes that explicit (tests/real/test_real_awaits.py).
    """
    if parked_reason or workload_parked_reason:
        return {facts.SKIP_AWAIT_ANNOTATION: "true"}
    return {facts.AWAIT_TIMEOUT_ANNOTATION: str(time_budgets.await_timeout_seconds(workload_cold_start_seconds))}


def service_manifest(name: str, namespace: str, selector: dict[str, str], target_port: int,
                     clients: list[ServiceClient], parked_reason: str | None, component: str,
                     awaits: dict[str, str] | None = None) -> dict[str, Any]:
    """The Service as a manifest dict (v1). Annotations: the component, the clients as JSON
    (``[{"name", "namespace", "port"}]``), when parked the reason, and ``awaits``
    (:func:`service_await`)."""
    annotations = {
        facts.COMPONENT_ANNOTATION: component,
        facts.CLIENTS_ANNOTATION: json.dumps([c.model_dump() for c in clients]),
    }
    if parked_reason:
        annotations[facts.PARKED_ANNOTATION] = parked_reason
    annotations.update(awaits or {})
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {facts.PART_OF_LABEL: facts.PART_OF_VALUE, "app": name},
            "annotations": annotations,
        },
        "spec": {
            "type": "ClusterIP",
            "selector": dict(selector),
            "ports": [{"name": port_name, "protocol": "TCP", "port": port, "targetPort": target_port}
                      for port, port_name in facts.SERVICE_PORTS],
        },
    }


class StablePredictorService(pulumi.ComponentResource):
    """A ClusterIP Service that must keep its ClusterIP: one child ``kubernetes:core/v1:Service``
    named like the component, created with ``protect=True``.

    Type token ``llm-serving:index:StablePredictorService``. Args: :class:`StablePredictorServiceArgs`.

    Never deleted and re-created: a delete drops the ClusterIP, and a client that cached the
    name during the gap fails until it re-resolves (coder-service.yaml). The kubernetes
    provider replaces a Service (delete, then create) when ``metadata.name`` or
    ``metadata.namespace`` changes (any kind) or ``spec.clusterIP`` changes: the provider's
    forceNew table (pulumi-kubernetes ``provider/pkg/provider/diff.go``) lists only
    ``.spec.clusterIP`` for Service (``tools/offline/treediff.py`` ``FORCE_NEW`` agrees). ``spec.type``
    is not in that table: the provider updates it in place, but a change to or from
    ``ExternalName`` makes Kubernetes release the ClusterIP, so clients lose it all the same;
    that is our own addition (``tools/offline/treediff.py`` ``replace_reason``), not the provider's. This
    component therefore takes the name and namespace from the config key, never sets
    ``spec.clusterIP`` and always writes ``spec.type: ClusterIP``; with ``protect`` a change
    that would replace it fails the preview instead of running. To point clients at another server, change ``selects`` (an in-place
    update of ``spec.selector``); to retire the Service, park it (``parked: {reason}``), or
    ``pulumi state unprotect`` it deliberately first.

    Attributes: ``service`` (the child), ``urls`` (in-cluster URLs by port name).
    """

    TYPE = "llm-serving:index:StablePredictorService"

    def __init__(self, name: str, args: StablePredictorServiceArgs, opts: pulumi.ResourceOptions | None = None):
        from pulumi_kubernetes.core.v1 import Service

        super().__init__(self.TYPE, name, None, opts)
        target = args.selects
        manifest = service_manifest(name, args.namespace, target.selector_labels, target.port, args.clients,
                                    args.parked_reason, f"{type(self).__name__}/{name}",
                                    service_await(args.parked_reason, target.parked_reason, target.cold_start_seconds))
        self.urls = service_urls(name, args.namespace)
        self.service = Service(
            name,
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(parent=self, protect=type(self).__name__ in facts.PROTECTED_COMPONENTS),
        )
        self.register_outputs({"urls": self.urls, "selects": target.workload_name, "clusterIp": self.service.spec.cluster_ip})
