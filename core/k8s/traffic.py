"""Who reaches the servers: a Service's declared clients and the namespace's ingress rules, the
models the stack file's ``llm-serving:services.<name>.clients`` and ``llm-serving:network_policy``
hold and the components (``components.service``, ``components.network``) take as args.
Plain pydantic.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from core.k8s.placement import StrictModel
from core.k8s.values import Int, ServiceName


class ServiceClient(StrictModel):
    """A declared client of a Service (written to the clients annotation for the policy pack)."""

    name: str = Field(min_length=1, description="Client name as messages show it, e.g. poimen-memory.")
    namespace: ServiceName = Field(description="Client's namespace, e.g. poimen.")
    port: Literal[80, 8080] = Field(description="The Service port it calls: 80 or 8080 (coder-service.yaml).")


class IngressRule(StrictModel):
    """Admit a namespace on some ports (seed 002's poimen rule)."""

    namespace: ServiceName = Field(description="Source namespace (kubernetes.io/metadata.name).")
    ports: list[Annotated[Int, Field(ge=1, le=65535)]] = Field(min_length=1, description="TCP ports of the pods admitted.")


class NetworkPolicyConfig(StrictModel):
    """The namespace's ingress NetworkPolicy (002 networkpolicy.yaml)."""

    name: ServiceName = Field(default="llm-serving-ingress", description="NetworkPolicy name (002).")
    gateway: IngressRule | None = Field(default=None, description="The gateway's namespace and ports (002: 80, 8000).")
    clients: list[IngressRule] = Field(default_factory=list, description="Client namespaces and their ports (002: poimen 8080).")
    same_namespace: bool = Field(default=True, description="Admit pods of the same namespace (002).")
