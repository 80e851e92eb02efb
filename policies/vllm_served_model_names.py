"""vllm-served-model-names: each --served-model-name is its own argv item, without comma or space.

Rule, for every vLLM container (recognised by image or command, ``core.manifests``):
  - no served model name contains a comma (``--served-model-name reasoning,reasoning-long``
    and ``--served-model-name=reasoning,reasoning-long`` both make ONE model whose name
    contains a comma) or whitespace (``"reasoning reasoning-long"`` as one argv item);
  - no name is empty (the flag with no value);
  - the flag is given once: argparse keeps the last occurrence, so the names of an earlier
    one are silently dropped.

Source: seed 002 reasoning.yaml ("This image's parser returns ['reasoning,reasoning-long']
for the comma form, i.e. a single model whose name contains a comma ... Verified against
vLLM 0.11.0: FlexibleArgumentParser().parse_args([... '--served-model-name', 'a', 'b']) ->
['a', 'b']"); coder.yaml keeps the names as separate items.

Does not check: that a name is unique across servers (served-model-name-unique); candle-vllm,
which has no --served-model-name (it serves the basename of --w).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import rules
from core.problems import Finding
from core.engines import VllmConfig
from policylib import resource_helpers as rh
from policylib import views
from policylib import terms

NAME = "vllm-served-model-names"
FLAG = VllmConfig.FLAGS["served_model_names"]


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


def argv_problems(argv: tuple[str, ...]) -> list[str]:
    """One text per problem of the served model names in ``argv``; ``[]`` when they are fine."""
    found = occurrences(argv)
    problems = []
    for form, names in found:
        if not names or any(not n.strip() for n in names):
            problems.append(f"{form} gives an empty served model name")
        for n in names:
            if not n.strip() or rules.served_name_ok(n.strip()):
                continue  # core.rules.served_name_ok: the predicate the stack file's check calls
            if "," in n:
                parts = ", ".join(p.strip() for p in n.split(",") if p.strip())
                problems.append(
                    f'served model name "{n}" contains a comma: vLLM serves ONE model of that name, '
                    f"not {parts}; give {FLAG} followed by each name as its own argv item"
                )
            elif any(ch.isspace() for ch in n.strip()):
                problems.append(
                    f'served model name "{n}" contains a space: one argv item is one name; '
                    "split it into separate argv items"
                )
    if len(found) > 1:
        dropped = [n for _, names in found[:-1] for n in names]
        problems.append(
            f"{FLAG} is given {len(found)} times; vLLM keeps only the last "
            f"({', '.join(found[-1][1]) or 'empty'}) and drops {', '.join(dropped) or 'the others'}; "
            f"give {FLAG} once followed by every name"
        )
    return problems


def validate(args, report_violation) -> None:
    w = views.of(args)
    if w is None:
        return
    for c, server in w.servers_of("vllm"):
        for problem in argv_problems(server.raw):
            wrong, _, fix = problem.rpartition("; ")
            report_violation(terms.message(w.annotations, Finding(
                f"{rh.workload_label(w)}, container {c.name}", wrong or problem,
                fix if wrong else f"give {FLAG} once followed by each name as its own argv item",
                "seed 002 (reasoning.yaml: one comma-joined served model name)",
                stack_fix="list each name as its own item of served_model_names under {key}",
            )), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="vLLM served model names are separate argv items with no comma or space, given once.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Write the flag once and each name as its own list item: args: [--served-model-name, "
        "reasoning, reasoning-long]; never 'reasoning,reasoning-long' or --served-model-name=a,b."
    ),
)
