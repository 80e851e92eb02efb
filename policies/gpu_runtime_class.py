"""gpu-runtime-class: on a cluster whose GPU pods need a RuntimeClass, every GPU pod names it.

Rule: when the inventory says GPU pods need a RuntimeClass (``llm-serving:cluster``
``gpu_runtime_class``, :class:`core.inventory.ClusterInventory`; the user's cluster:
``nvidia``), a Deployment, StatefulSet or InferenceService predictor whose pods hold cards
(nvidia.com/gpu above 0 in any container) sets the pod's ``runtimeClassName`` to it. The
policy parameter ``runtimeClassName``, when given, names the class instead (and asks for it
even on an inventory that says nothing).

Not run when neither says it: whether the NVIDIA runtime is the node's default is a fact of
the cluster, not of the manifest. The GPU Operator makes it the default by default, and GKE
refuses a runtimeClassName it does not have, so asking every GPU pod for ``nvidia`` there
would be a wrong mandatory finding; the analyze summary lists the policy as not judged.

Source: seed 001 (the candle-vllm Deployment ran under runc: libcuda.so was never injected
and candle-vllm panicked in cudarc, "Unable to dynamically load the cuda shared library"),
seed 003 (clef-candle.yaml carries the same comment), spec "GPU runtime" row. On clusters whose default runtime
is nvidia (the GPU Operator, GKE) a rule without the inventory fact flagged 9 of the 10 public-shaped
workloads of tests/policies/test_public_manifests.py.

Does not check: that the RuntimeClass object exists on the cluster; pods that reach a GPU
without requesting nvidia.com/gpu (NVIDIA_VISIBLE_DEVICES=all); parked workloads are judged
too (unparking is one replicas change).

The rule is judged and worded once, in :mod:`core.rulebook.pods`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
)

from core import registry, terms
from core.rulebook import pods as rules
from policylib import declare, stackconfig, views
from policylib import resource_helpers as rh

NAME = "gpu-runtime-class"
SOURCE = registry.RULES[NAME].source


def required_class(config: Mapping[str, Any] | None) -> str | None:
    """The RuntimeClass GPU pods must name: the ``runtimeClassName`` parameter, else the
    inventory's ``gpu_runtime_class``; None when neither says (or the inventory is unreadable,
    which the stack policies report): the policy does not run."""
    given = (config or {}).get("runtimeClassName")
    if given:
        return str(given)
    try:
        return stackconfig.inventory().gpu_runtime_class
    except stackconfig.StackConfigError:
        return None


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not w.is_gpu:
        return
    breach = rules.runtime_class(w.cards_per_pod, w.runtime_class or None, required_class(args.get_config()))
    if breach is not None:
        report_violation(terms.message(w.annotations, breach.finding(rh.workload_label(w))), args.urn)


POLICY = declare.resource_policy(
    NAME,
    validate,
    EnforcementLevel.MANDATORY,
    Severity.HIGH,
    config_schema=PolicyConfigSchema(
        properties={
            "runtimeClassName": {
                "type": "string",
                "description": (
                    "The RuntimeClass that injects the NVIDIA driver libraries; overrides the inventory's "
                    "gpu_runtime_class (seed 001). Default: the inventory's."
                ),
            }
        }
    ),
)
