"""The namespace's ingress NetworkPolicy from typed rules: :class:`NamespaceNetworkPolicy`.

Seed 002 (networkpolicy.yaml): pods labelled ``app.kubernetes.io/part-of: llm-serving`` accept
ingress from the gateway on its ports, from each client namespace on its ports (the poimen
rule: ``namespaceSelector`` on ``kubernetes.io/metadata.name``, ``ports`` of ``protocol: TCP``),
and from pods of the same namespace (``podSelector: {}``). A missing rule looks like a hung
engine: the client sees a bare timeout and the server log stays empty (002, 34 days).
A NetworkPolicy matches the pod's port, i.e. the Service's targetPort (8080), not the port
the client calls.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pydantic import Field

from components.workload import ComponentArgs
from core.base import facts
from core.k8s.traffic import IngressRule, NetworkPolicyConfig

#: The label every namespace carries with its own name (Kubernetes 1.22+).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


class NamespaceNetworkPolicyArgs(ComponentArgs):
    """The policy's namespace and its rules (the config model ``llm-serving:network_policy``)."""

    namespace: str = Field(description="Namespace of the policy and of the pods it selects.")
    policy: NetworkPolicyConfig = Field(description="Name, gateway rule, client rules, same-namespace flag.")


def namespace_rule(rule: IngressRule) -> dict[str, Any]:
    """One ingress rule admitting ``rule.namespace`` on ``rule.ports`` (seed 002's poimen form)."""
    return {
        "from": [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: rule.namespace}}}],
        "ports": [{"protocol": "TCP", "port": port} for port in rule.ports],
    }


def network_policy_manifest(args: NamespaceNetworkPolicyArgs, component: str) -> dict[str, Any]:
    """The NetworkPolicy as a manifest dict (networking.k8s.io/v1): the gateway rule first, then
    each client namespace, then same-namespace pods."""
    policy = args.policy
    ingress = [namespace_rule(r) for r in ([policy.gateway] if policy.gateway else []) + list(policy.clients)]
    if policy.same_namespace:
        ingress.append({"from": [{"podSelector": {}}]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": policy.name,
            "namespace": args.namespace,
            "labels": {facts.PART_OF_LABEL: facts.PART_OF_VALUE},
            "annotations": {facts.COMPONENT_ANNOTATION: component},
        },
        "spec": {
            "podSelector": {"matchLabels": {facts.PART_OF_LABEL: facts.PART_OF_VALUE}},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }


class NamespaceNetworkPolicy(pulumi.ComponentResource):
    """The namespace ingress policy; one child ``kubernetes:networking.k8s.io/v1:NetworkPolicy``
    named like the component.

    Type token ``llm-serving:index:NamespaceNetworkPolicy``. Args: :class:`NamespaceNetworkPolicyArgs`.
    """

    TYPE = "llm-serving:index:NamespaceNetworkPolicy"

    def __init__(self, name: str, args: NamespaceNetworkPolicyArgs, opts: pulumi.ResourceOptions | None = None):
        from pulumi_kubernetes.networking.v1 import NetworkPolicy

        super().__init__(self.TYPE, name, None, opts)
        manifest = network_policy_manifest(args, f"{type(self).__name__}/{name}")
        self.network_policy = NetworkPolicy(
            name,
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"name": args.policy.name})
