"""The manifest read model: Kubernetes objects (plain manifests, the program's rendering, or the
policy pack's properties) read into frozen views, cut by job:

- :mod:`core.k8s.manifests.read`: type tokens and tolerant readers of Mapping / Sequence values;
- :mod:`core.k8s.manifests.env`: a container's environment as the kubelet builds it (``valueFrom``, ``envFrom``);
- :mod:`core.k8s.manifests.argv`: the argv a container will run (``$(VAR)``, ``sh -c``, entrypoints);
- :mod:`core.k8s.manifests.servers`: the model server that argv starts, its flags and endpoint;
- :mod:`core.k8s.manifests.pods`: workloads (Deployment, StatefulSet, InferenceService predictor,
  LeaderWorkerSet), their pods and containers;
- :mod:`core.k8s.manifests.kserve`: an InferenceService's predictor as KServe builds it from a ServingRuntime;
- :mod:`core.k8s.manifests.services`: Services and label selectors;
- :mod:`core.k8s.manifests.network_policies`: NetworkPolicies that isolate ingress;
- :mod:`core.k8s.manifests.stack`: every workload, Service and NetworkPolicy of a stack.

The names below are the ones the policy pack, the preview summary and the plan tools use.
"""

from core.k8s.manifests import kserve
from core.k8s.manifests.env import Environment, EnvVar, environment
from core.k8s.manifests.network_policies import IngressPolicy, admitting_any_source, parse_policy, ports_text
from core.k8s.manifests.pods import (
    CONTROLLER_LABELS,
    KSERVE_MODEL_CONTAINER,
    LWS_NAME_LABEL,
    LWS_WORKER_INDEX_LABEL,
    Container,
    OtherPods,
    Workload,
    controller_labels,
    lws_workloads,
    other_pods,
    workload,
)
from core.k8s.manifests.read import (
    DEPLOYMENT_TYPES,
    ISVC_TYPE,
    LWS_TYPE,
    NETWORK_POLICY_TYPE,
    SERVICE_TYPE,
    WORKLOAD_TYPES,
    as_map,
    as_seq,
    mib,
    plain,
    quantity,
    type_token,
    whole,
    whole_number,
)
from core.k8s.manifests.servers import (
    MODELLED_ENGINES,
    PORT_FLAGS,
    VLLM_MULTI_VALUE_FLAGS,
    Endpoint,
    ServerArgs,
    endpoint,
    parse_args,
)
from core.k8s.manifests.services import Client, Service, ServicePort, label_selector_matches, selector_matches, service
from core.k8s.manifests.stack import Stack, stack_view

__all__ = [
    "CONTROLLER_LABELS", "EnvVar", "Environment", "controller_labels", "environment", "kserve",
    "DEPLOYMENT_TYPES", "ISVC_TYPE", "KSERVE_MODEL_CONTAINER", "LWS_NAME_LABEL", "LWS_TYPE", "LWS_WORKER_INDEX_LABEL",
    "MODELLED_ENGINES", "NETWORK_POLICY_TYPE", "PORT_FLAGS", "SERVICE_TYPE", "VLLM_MULTI_VALUE_FLAGS", "WORKLOAD_TYPES",
    "Client", "Container", "Endpoint", "IngressPolicy", "OtherPods", "ServerArgs", "Service", "ServicePort", "Stack",
    "Workload", "admitting_any_source", "as_map", "as_seq", "endpoint", "label_selector_matches", "lws_workloads", "mib",
    "other_pods", "parse_args", "parse_policy", "plain", "ports_text", "quantity", "selector_matches", "service",
    "stack_view", "type_token", "whole", "whole_number", "workload",
]
