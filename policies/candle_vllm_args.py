"""candle-vllm-args: candle-vllm gets ``--dtype f16`` on sm_70 and one ``--d`` device per card.

Rule, for every candle-vllm container (recognised by image or command, ``core.manifests``):
  - ``--d`` lists the devices as one comma-separated item of distinct ordinals ``0..n-1``
    (inside the container the device plugin's cards are numbered from 0, so ``--d 1`` on a
    one-card pod names a device that does not exist), and n equals the container's
    ``nvidia.com/gpu``; no ``--d`` means device 0 only;
  - on a card below sm_75 (worker-1's V100: sm_70; the node from the inventory, unpinned pods
    judged against every node with enough cards, as vllm-volta does): ``--dtype f16``. bf16
    has no tensor-core path on Volta, and without ``--dtype`` candle-vllm takes the
    checkpoint's dtype (bfloat16 for the Qwen checkpoints).

Source: seed 001 coder-14b-fp16.yaml (``--d 0,1`` for TP=2 on 2 cards, ``--dtype f16``:
"the V100 has FP16 tensor cores"), seed 003 clef-candle.yaml (``--d "0"``, ``--dtype f16``
on one card), candle-vllm README (``--d``: device ids; "number of GPUs (--d) used must be
aligned to 2^n").

Does not check: that TP divides the model's heads (TP divisibility policy); ``--mem`` /
``--kv-fraction`` sizes (kv-cache policies); the README's "aligned to 2^n" device counts
(on 4 cards only 1, 2 and 4 fit anyway; 3 would fail TP divisibility of the Qwen heads).
"""

from __future__ import annotations

from typing import Optional

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import facts, rules
from core.problems import Finding
from core import manifests
from core.engines import CandleConfig
from policylib import resource_helpers as rh
from policylib import views
from policylib import terms

NAME = "candle-vllm-args"
VOLTA_DTYPE = rules.half_dtype("candle-vllm")


def device_problems(server: manifests.ServerArgs, cards: int) -> list[tuple[str, str]]:
    """``(what is wrong, fix)`` of ``--d`` against the container's ``cards``; ``[]`` when it lists
    0..cards-1."""
    values = server.values(CandleConfig.FLAGS["devices"])
    if len(values) > 1:
        return [(f"--d is followed by {len(values)} items ({' '.join(values)}); candle-vllm takes one "
                 "comma-separated list", f"--d {','.join(values)}")]
    written = values[0] if values else None
    items = [d.strip() for d in (written or "0").split(",") if d.strip()]
    shown = f"--d {written}" if written is not None else "no --d (device 0 only)"
    if not all(d.isdigit() for d in items):
        return [(f"{shown} has a device that is not a number",
                 f"give ordinals 0..{max(cards, 1) - 1}")]
    ordinals = [int(d) for d in items]
    problems = []
    if len(ordinals) != cards:
        want = ",".join(str(i) for i in range(max(cards, 1)))
        problems.append((
            f"{shown} names {len(ordinals)} device(s) but the container holds {cards} "
            f"{facts.GPU_RESOURCE}; the tensor-parallel ranks must equal the cards",
            f"--d {want}, or {len(ordinals)} {facts.GPU_RESOURCE}",
        ))
    if len(set(ordinals)) != len(ordinals) or sorted(ordinals) != list(range(len(ordinals))):
        want = ",".join(str(i) for i in range(max(len(set(ordinals)), 1)))
        problems.append((
            f"{shown} is not distinct devices 0..n-1: the pod's cards are numbered from 0 "
            "inside the container",
            f"--d {want}",
        ))
    return problems


def dtype_problem(server: manifests.ServerArgs, sm: int = rules.SM_VOLTA) -> Optional[str]:
    """What is wrong with ``--dtype`` on compute capability ``sm`` (:func:`core.rules.dtype_runs_on`,
    the predicate the stack file's ``dtype`` check calls), or None."""
    dtype = server.get(CandleConfig.FLAGS["dtype"])
    if rules.dtype_runs_on("candle-vllm", dtype, sm):
        return None
    shown = f"--dtype {dtype}" if dtype else "no --dtype (candle-vllm then takes the checkpoint's dtype, bf16 for the Qwen models)"
    return f"{shown}: bf16 has no tensor-core path on sm_{sm} (it needs sm_80)"


def validate(args, report_violation) -> None:
    w = views.of(args)
    if w is None:
        return
    candle = w.servers_of("candle-vllm")
    if not candle:
        return
    label = rh.workload_label(w)
    for c, server in candle:
        for wrong, fix in device_problems(server, c.cards):
            report_violation(terms.message(w.annotations, Finding(
                f"{label}, container {c.name}", wrong, f"set the container's args to {fix}",
                "seeds 001 and 003 (candle-vllm.yaml, clef-candle.yaml: --d lists the pod's cards)",
                stack_fix="set cards under {key} to the tensor-parallel size; the component writes --d",
            )), args.urn)
    inv = rh.with_inventory(NAME, report_violation, args.urn)
    if inv is None:
        return
    nodes, pinned = rh.candidate_nodes(w, inv)
    volta = rh.pre_turing(nodes)
    if not volta:
        return
    where = rh.describe_nodes(volta, pinned)
    sm = rules.lowest_sm([n.card.sm for n in volta if n.card])
    for c, server in candle:
        dtype = dtype_problem(server, sm)
        if dtype:
            report_violation(terms.message(w.annotations, Finding(
                f"{label}, container {c.name} ({where})", dtype, f"--dtype {VOLTA_DTYPE}",
                "seed 001 (candle-vllm.yaml: bf16 on sm_70)",
                stack_fix=f"set dtype: {VOLTA_DTYPE} under {{key}}",
            )), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="candle-vllm runs --dtype f16 on sm_70 and lists one --d device per card, 0..n-1.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Pass --dtype f16 on V100 nodes and --d 0,1,...,n-1 with n = the container's "
        "nvidia.com/gpu (--d 0 for one card, --d 0,1 for TP=2); CandleDeployment derives --d from cards."
    ),
)
