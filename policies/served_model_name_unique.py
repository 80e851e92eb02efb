"""served-model-name-unique: one served model name is answered by one running server only.

Rule: across the stack, each served model name (the ``model`` a client sends) is answered by
the containers of at most one running workload. Served names come from the server's
arguments (:attr:`core.manifests.servers.ServerArgs.served_model_names`): vLLM's
``--served-model-name`` values (else ``--model``), candle-vllm's basename of ``--w``
(else ``--m``), which is what its /v1/models reports (seed 001: ``coder-14b-fp16``).

Source: seed 002 reasoning.yaml: "coder-predictor also serves `reasoning`; that ambiguity is
known" -- coder.yaml kept ``reasoning`` as a served name while the ``reasoning``
InferenceService served it too, so a client sending model=reasoning got a different model
depending on which host it called.

Message: ``served model name reasoning is answered by 2 running servers: coder
(InferenceService), reasoning (InferenceService); ...``: servers sorted by name, then kind;
one violation per name, reported on the first server's URN.

Advisory, not mandatory: nothing fails to start and each Service still reaches one server;
the harm is a client getting a different model depending on the host it calls, which the
user accepted knowingly in seed 002 while moving clients ("resolve it by moving the client
host"). It is judgement, so it warns; set it mandatory with --policy-pack-config once no
migration is in flight.

Parked workloads (replicas 0) answer nothing and are not counted. Two containers of one
workload serving the same name count once.

Does NOT check: servers other than vLLM and candle-vllm (their names are not parsed); the
components' ``served-model-names`` annotation (the arguments are the truth the server acts
on); LoRA adapter names (``--lora-modules``); names across stacks or namespaces outside the stack.

The rule is judged and worded once, in :mod:`core.rulebook.services`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from collections import defaultdict

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import manifests, registry, terms
from core.rulebook import services
from policylib import declare, views

NAME = "served-model-name-unique"
SOURCE = registry.RULES[NAME].source


def servers_by_name(all_workloads) -> dict[str, list[manifests.Workload]]:
    """Served model name -> the running workloads answering it (each once, in input order)."""
    out: dict[str, list[manifests.Workload]] = defaultdict(list)
    for w in all_workloads:
        if not w.running:
            continue
        for name in w.served_model_names:
            out[name].append(w)
    return out


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    stack = views.stack_view(args.resources)
    for name, answering in sorted(servers_by_name(stack.workloads).items()):
        ordered = sorted(answering, key=lambda w: (w.name, w.kind))
        breach = services.served_name_unique(name, [f"{w.name} ({w.kind})" for w in ordered])
        if breach is not None:
            keys = terms.stack_file_keys(w.annotations for w in ordered)
            report_violation(breach.finding(f"served model name {name}").render(stack_key=keys), ordered[0].urn)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
