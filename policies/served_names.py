"""How the pack reads the manifests for the policies :mod:`core.engines.served_names` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core.engines import served_names
from core.judging import terms
from core.judging.registry import Breach
from policylib import declare, views
from policylib import resource_helpers as rh

# --- vllm-served-model-names: each --served-model-name is its own argv item, without comma or space.

FLAG = served_names.FLAG


def occurrences(argv: tuple[str, ...]) -> list[tuple[str, tuple[str, ...]]]:
    """``(form, names)`` for each ``--served-model-name`` in ``argv`` (``--served_model_name``
    too, as vLLM's FlexibleArgumentParser accepts it); ``form`` is the item as written."""
    out: list[tuple[str, list[str]]] = []
    current = None
    for token in argv:
        head, eq, value = token.partition("=")
        if token.startswith("-") and head.replace("_", "-") == FLAG:
            out.append((token, [value] if eq else []))
            current = None if eq else out[-1][1]
        elif token.startswith("-") and len(token) > 1:
            current = None
        elif current is not None:
            current.append(token)
    return [(form, tuple(names)) for form, names in out]


def argv_breaches(argv: tuple[str, ...]) -> list[Breach]:
    """One breach per problem of the served model names in ``argv`` (:mod:`core.engines.served_names`);
    ``[]`` when they are fine. A flag with no value is one empty name."""
    found = occurrences(argv)
    out = [served_names.served_name(n, form) for form, names in found for n in (names or ("",))]
    out.append(served_names.flag_once(found))
    return [b for b in out if b]


def vllm_served_model_names(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    for c, server in w.servers_of("vllm"):
        for breach in argv_breaches(server.raw):
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


declare.validate("vllm-served-model-names", vllm_served_model_names)
