"""vllm-parallelism: vLLM's tensor parallel x pipeline parallel size equals the container's cards.

Rule, for every vLLM container: ``--tensor-parallel-size`` (``-tp``, default 1) x
``--pipeline-parallel-size`` (``-pp``, default 1) x ``--data-parallel-size`` (``-dp``,
default 1; one pod runs every local data-parallel rank) equals the container's
``nvidia.com/gpu`` (its limit, else its request). Fewer cards than ranks: vLLM fails at start
("world size ... greater than the number of available GPUs"); more: cards held and idle,
which on a fully allocated node starves another workload (coder.yaml's 2 cards).

Source: coder.yaml (``--tensor-parallel-size=2``, ``--pipeline-parallel-size=1``
with ``nvidia.com/gpu: "2"``), seed 002 reasoning.yaml (TP 1 on 1 card).

Does not check: that TP divides the model's heads (the TP divisibility policy, with model
facts); multi-node pipeline parallelism (Ray clusters, LeaderWorkerSets), which this stack does
not run; a pod on another vendor's accelerator (``amd.com/gpu``, ``google.com/tpu``), whose cards
are not nvidia.com/gpu (the analyze summary lists it as not judged); a container with no card whose
image the image catalog does not know (``core.images.image_user``): it may be a CPU build of vLLM
(tchangkiat/aws-cdk-stacks' Graviton vLLM, tests/heldout/).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import manifests, registry, rulebook, terms
from core.images import image_user
from policylib import declare, views
from policylib import resource_helpers as rh

NAME = "vllm-parallelism"
SOURCE = registry.RULES[NAME].source


def data_parallel(server: manifests.ServerArgs) -> int:
    """``--data-parallel-size`` (``-dp``), default 1."""
    return rh.whole(server.setting("data_parallel_size")) or 1


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or (not w.is_gpu and w.other_accelerator):
        return  # another vendor's accelerator (amd.com/gpu, google.com/tpu): not modelled
    for c, server in w.servers_of("vllm"):
        if c.cards == 0 and image_user(c.image) is None:
            continue  # no card and an image outside the catalog: perhaps a CPU build
        breach = rulebook.parallel_matches_cards(server.tensor_parallel, server.pipeline_parallel, c.cards,
                                                 data_parallel(server))
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
