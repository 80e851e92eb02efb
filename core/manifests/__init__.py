"""The manifest read model: Kubernetes objects (plain manifests, the program's rendering, or the
policy pack's properties) read into frozen views, cut by job:

- :mod:`core.manifests.read`: type tokens and tolerant readers of Mapping / Sequence values;
- :mod:`core.manifests.env`: a container's environment as the kubelet builds it (``valueFrom``, ``envFrom``);
- :mod:`core.manifests.argv`: the argv a container will run (``$(VAR)``, ``sh -c``, entrypoints);
- :mod:`core.manifests.servers`: the model server that argv starts, its flags and endpoint;
- :mod:`core.manifests.pods`: workloads (Deployment, StatefulSet, InferenceService predictor,
  LeaderWorkerSet), their pods and containers;
- :mod:`core.manifests.kserve`: an InferenceService's predictor as KServe builds it from a ServingRuntime;
- :mod:`core.manifests.services`: Services and label selectors;
- :mod:`core.manifests.network_policies`: NetworkPolicies that isolate ingress;
- :mod:`core.manifests.stack`: every workload, Service and NetworkPolicy of a stack.

The names below are the ones the policy pack, the preview summary and the plan tools use.
"""

from core.manifests import kserve
from core.manifests.env import Environment, EnvVar, environment
from core.manifests.network_policies import IngressPolicy, admitting_any_source, parse_policy, ports_text
from core.manifests.pods import (
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
from core.manifests.read import (
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
from core.manifests.servers import (
    MODELLED_ENGINES,
    PORT_FLAGS,
    VLLM_MULTI_VALUE_FLAGS,
    Endpoint,
    ServerArgs,
    endpoint,
    parse_args,
)
from core.manifests.services import Client, Service, ServicePort, label_selector_matches, selector_matches, service
from core.manifests.stack import Stack, stack_view

__all__ = [
    "CONTROLLER_LABELS", "EnvVar", "Environment", "controller_labels", "environment", "kserve",
    "DEPLOYMENT_TYPES", "ISVC_TYPE", "KSERVE_MODEL_CONTAINER", "LWS_NAME_LABEL", "LWS_TYPE", "LWS_WORKER_INDEX_LABEL",
    "MODELLED_ENGINES", "NETWORK_POLICY_TYPE", "PORT_FLAGS", "SERVICE_TYPE", "VLLM_MULTI_VALUE_FLAGS", "WORKLOAD_TYPES",
    "Client", "Container", "Endpoint", "IngressPolicy", "OtherPods", "ServerArgs", "Service", "ServicePort", "Stack",
    "Workload", "admitting_any_source", "as_map", "as_seq", "endpoint", "label_selector_matches", "lws_workloads", "mib",
    "other_pods", "parse_args", "parse_policy", "plain", "ports_text", "quantity", "selector_matches", "service",
    "stack_view", "type_token", "whole", "whole_number", "workload",
]
