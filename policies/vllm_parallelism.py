"""vllm-parallelism: vLLM's tensor parallel x pipeline parallel size equals the container's cards.

Rule, for every vLLM container: ``--tensor-parallel-size`` (``-tp``, default 1) x
``--pipeline-parallel-size`` (``-pp``, default 1) x ``--data-parallel-size`` (``-dp``,
default 1; one pod runs every local data-parallel rank) equals the container's
``nvidia.com/gpu`` (its limit, else its request). Fewer cards than ranks: vLLM fails at start
("world size ... greater than the number of available GPUs"); more: cards held and idle,
which on a fully allocated node starves another workload (coder.yaml's 2 cards).

Source: issue 3 item 3; coder.yaml (``--tensor-parallel-size=2``, ``--pipeline-parallel-size=1``
with ``nvidia.com/gpu: "2"``), seed 002 reasoning.yaml (TP 1 on 1 card).

Does not check: that TP divides the model's heads (the TP divisibility policy, with model
facts); multi-node pipeline parallelism (Ray clusters, LeaderWorkerSets), which this stack does
not run; a pod on another vendor's accelerator (``amd.com/gpu``, ``google.com/tpu``), whose cards
are not nvidia.com/gpu (the analyze summary lists it as not judged).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import facts, rules
from core.problems import Finding
from core import manifests
from core.engines import VllmConfig
from policylib import resource_helpers as rh
from policylib import views
from policylib import terms

NAME = "vllm-parallelism"


def data_parallel(server: manifests.ServerArgs) -> int:
    """``--data-parallel-size`` (``-dp``), default 1."""
    return rh.whole(server.get(VllmConfig.FLAGS["data_parallel_size"]) or server.get("-dp")) or 1


def validate(args, report_violation) -> None:
    w = views.of(args)
    if w is None or (not w.is_gpu and w.other_accelerator):
        return  # another vendor's accelerator (amd.com/gpu, google.com/tpu): not modelled
    for c, server in w.servers_of("vllm"):
        tp, pp, dp = server.tensor_parallel, server.pipeline_parallel, data_parallel(server)
        ranks = tp * pp * dp
        if rules.parallel_matches_cards(tp, pp, c.cards, dp):
            continue
        formula = f"TP {tp} x PP {pp}" + (f" x DP {dp}" if dp != 1 else "")
        effect = (
            "vLLM fails at start for want of cards" if ranks > c.cards
            else f"{c.cards - ranks} card(s) are held and idle"
        )
        report_violation(terms.message(w.annotations, Finding(
            f"{rh.workload_label(w)}, container {c.name}",
            f"{formula} = {ranks} GPU ranks but the container holds {c.cards} {facts.GPU_RESOURCE}; {effect}",
            f"make --tensor-parallel-size x --pipeline-parallel-size equal the container's {facts.GPU_RESOURCE}",
            "seed 001 (candle-vllm 2 ranks on 2 cards; an idle card is a card another server waits for)",
            stack_fix="set cards under {key} to tensor_parallel_size x pipeline_parallel_size (or drop tensor_parallel_size)",
        )), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="vLLM tensor parallel x pipeline parallel size equals the container's nvidia.com/gpu cards.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Set resources.limits and requests nvidia.com/gpu to --tensor-parallel-size x "
        "--pipeline-parallel-size (x --data-parallel-size), or change the sizes to the cards you have."
    ),
)
