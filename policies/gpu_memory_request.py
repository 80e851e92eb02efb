"""gpu-memory-request: a container holding cards declares its host memory request and limit.

Rule: each container with ``nvidia.com/gpu`` above 0 of a Deployment, StatefulSet or
InferenceService predictor has a memory limit, and a memory request or the limit Kubernetes
copies into it (:func:`core.rulebook.memory_declared`, the rule the stack file's
``resources`` check judges by too). Parked workloads are judged too (unparking is one replicas change).

Why: node-memory-allocation, like the scheduler, counts a pod by its memory requests; a GPU
server without one counts as 0 MiB and passes beside pods that already fill the node's 63,495
MiB, then is OOM-killed or starves them; without a limit nothing bounds what a server takes
while it loads its weights through host memory. coder.yaml: 12Gi request, 40Gi limit.

Source: spec "Memory requests must fit" row; coder.yaml (worker-1 exposes 63,495 MiB; "two vLLM workers
keep the weights on the GPU and need little host RAM, so the request stays small and the limit
allows burst").

Where: a convention of this cluster, which counts host memory per node
(``llm-serving:cluster`` ``house_conventions: true``, the user's inventory); on an inventory
without it the policy does not run: public manifests commonly leave host memory to the node,
and such house rules must not block other teams' YAML. Does not check: CPU, containers without cards, the figures themselves
(node-memory-allocation sums them).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry, rulebook, terms
from policylib import declare, stackconfig, views
from policylib import resource_helpers as rh

NAME = "gpu-memory-request"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not stackconfig.house_conventions():
        return  # a convention of this cluster's inventory (house_conventions), not a fact of every cluster
    for c in rh.gpu_containers(w):
        breach = rulebook.memory_declared(c.memory_request_mib, c.memory_limit_mib, c.cards)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
