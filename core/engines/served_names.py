"""vLLM's served model names: each name one argv item, without comma or whitespace, the flag
given once. The stack file's ``served_model_names`` list (:func:`core.engines.config.check_served_name`)
and the pack's vllm-served-model-names judge by these.

Source: seed 002 reasoning.yaml ("This image's parser returns ['reasoning,reasoning-long'] for
the comma form, i.e. a single model whose name contains a comma"; verified against vLLM 0.11.0's
FlexibleArgumentParser); coder.yaml keeps the names as separate items.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.engines.settings import S
from core.judging.registry import MANIFEST, STACK, Breach, declare_policy, only, rule


def served_name_ok(name: str) -> bool:
    """A served model name is one argv item: not empty, no comma, no whitespace (002
    reasoning.yaml: ``--served-model-name reasoning,reasoning-long`` serves ONE model whose
    name contains the comma)."""
    return bool(name) and not any(ch == "," or ch.isspace() for ch in name)


#: The served model names: a list in the stack file, the flag followed by each name in a manifest.
SERVED = S.served_model_names
FLAG = SERVED.manifest
_SOURCE = "seed 002 (reasoning.yaml: one comma-joined served model name)"

_EACH = (only(MANIFEST, f"give {FLAG} once followed by each name as its own argv item")
         + only(STACK, f"list each name as its own item of {SERVED.key}"))


@rule("vllm-served-model-names", "A served model name is one argv item: not empty, no comma, no whitespace.",
      _SOURCE, policy="vllm-served-model-names")
def served_name(name: str, form: str = FLAG) -> Breach | None:
    """``name`` as vLLM receives it (``form``: the flag as written, for an empty name)."""
    if not name.strip():
        return Breach(f"{form} gives an empty served model name", _EACH)
    if served_name_ok(name.strip()):
        return None
    if "," in name:
        parts = ", ".join(p.strip() for p in name.split(",") if p.strip())
        return Breach(f'served model name "{name}" contains a comma: vLLM serves ONE model of that name, not {parts}',
                      _EACH)
    return Breach(f'served model name "{name}" contains a space: one argv item is one name', _EACH)


@rule("served-model-name-once", "vLLM's --served-model-name is given once.", _SOURCE,
      policy="vllm-served-model-names")
def flag_once(found: Sequence[tuple[str, Sequence[str]]]) -> Breach | None:
    """``found``: ``(form, names)`` of each occurrence; argparse keeps the last, dropping the others."""
    if len(found) <= 1:
        return None
    dropped = [n for _, names in found[:-1] for n in names]
    return Breach(f"{FLAG} is given {len(found)} times; vLLM keeps only the last "
                  f"({', '.join(found[-1][1]) or 'empty'}) and drops {', '.join(dropped) or 'the others'}", _EACH)


# --- the pack's policies: one record each ------------------------------------------------------------

declare_policy(
    "vllm-served-model-names",
    "vLLM served model names are separate argv items with no comma or space, given once.",
    (
        "Write the flag once and each name as its own list item: args: [--served-model-name, reasoning, reasoning-long]; never "
        "'reasoning,reasoning-long' or --served-model-name=a,b."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""vllm-served-model-names: each --served-model-name is its own argv item, without comma or space.

Rule, for every vLLM container (recognised by image or command, ``core.k8s.manifests``):
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
""",
)
