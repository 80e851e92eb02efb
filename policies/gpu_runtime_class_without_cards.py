"""gpu-runtime-class-without-cards: a pod under the GPU RuntimeClass that requests no card does not see them all.

Rule: a Deployment, StatefulSet or InferenceService whose pods name the cluster's GPU RuntimeClass
(the inventory's ``gpu_runtime_class``, else ``nvidia``) but request no ``nvidia.com/gpu`` sets
``NVIDIA_VISIBLE_DEVICES=void`` in every container. Otherwise the nvidia runtime exposes every card
of the node (CUDA images set ``NVIDIA_VISIBLE_DEVICES=all``), beside the servers that hold them.

Advisory: the pod itself starts; what it does with the cards decides the harm.
Source: NVIDIA/k8s-device-plugin #61, #87. Judged and worded once, in :mod:`core.rulebook.pods`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from core.rulebook import pods as rules
from policylib import containers, declare, stackconfig, views

NAME = "gpu-runtime-class-without-cards"
SOURCE = registry.RULES[NAME].source
#: The class judged when the inventory names none (the NVIDIA GPU Operator's).
DEFAULT_CLASS = "nvidia"


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or w.is_gpu or not w.running:
        return
    try:
        gpu_class = stackconfig.inventory().gpu_runtime_class or DEFAULT_CLASS
    except stackconfig.StackConfigError:
        gpu_class = DEFAULT_CLASS
    if w.runtime_class != gpu_class:
        return
    for c in w.containers:
        containers.report(args, report_violation, w, rules.runtime_class_without_cards(gpu_class, c.env.get("NVIDIA_VISIBLE_DEVICES")), c)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
