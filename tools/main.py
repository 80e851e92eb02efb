"""``llm-serving``: the project's commands behind one console script (``pip install .``).

    llm-serving preview [ARGS]     offline preview of a stack (tools.preview)
    llm-serving analyze [ARGS]     the policy pack on a stack or a manifest directory (tools.analyze)
    llm-serving plan PLAN.json     cards per node at the peak of a real `pulumi preview --json` (tools.plan)
    llm-serving adopt-diff [ARGS]  what adopting the live objects changes, field by field (tools.adopt_diff)
    llm-serving rollout [ARGS]     after `pulumi up`: every Deployment rolled out within its await (tools.rollout)
    llm-serving policies           the rules of the registry (core.judging.registry): id, policy, title, source
    llm-serving catalog            the model catalog and the card catalog (core/data/*.yaml)

Each verb's ``--help`` says its arguments. The commands read the stack files and the pack of the
project directory the package is installed from (``pip install -e .``, as ``python3 dev.py`` does);
a plain ``pip install .`` gives the same ``--help`` and the ``policies`` and ``catalog`` listings.

Exit codes: the verb's own (:mod:`tools.cli`); 2 for a missing or unknown verb, with one line
naming the verbs that exist.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import TextIO

from tools import cli

PROG = "llm-serving"
#: The verbs that run a command module's ``main(argv)``: verb -> module.
MODULES = {
    "preview": "tools.preview",
    "analyze": "tools.analyze",
    "plan": "tools.plan",
    "adopt-diff": "tools.adopt_diff",
    "rollout": "tools.rollout",
}


def policies(argv: list[str], stdout: TextIO | None = None) -> int:
    """Print every rule of the registry, one a line: ``id``, the pack policy that judges it (``-``:
    the stack file only) and the title; ``--sources`` adds each rule's source."""
    ap = cli.parser(f"{PROG} policies", "The rules of the registry (core/judging/registry.py, core/rulebook/), one a line.")
    ap.add_argument("--sources", action="store_true", help="also print each rule's source (seeds, public reports)")
    args = ap.parse_args(argv)
    stdout = stdout or sys.stdout
    from core.rulebook import register_all

    rules = register_all()
    width = max(len(r.id) for r in rules.values())
    pwidth = max(len(r.policy or "-") for r in rules.values())
    for rule in sorted(rules.values(), key=lambda r: r.id):
        stdout.write(f"{rule.id:<{width}}  {rule.policy or '-':<{pwidth}}  {rule.title}\n")
        if args.sources:
            stdout.write(f"{'':<{width}}  source: {rule.source}\n")
    return cli.OK


def catalog(argv: list[str], stdout: TextIO | None = None) -> int:
    """Print the model catalog (Hugging Face repository id: parameters, layers, KV heads, head
    dim, context window, quantization) and the card catalog (product: memory, compute capability)."""
    ap = cli.parser(f"{PROG} catalog", "The model catalog and the card catalog (core/data/models.yaml, cards.yaml).")
    ap.add_argument("which", nargs="?", choices=("models", "cards"), help="one catalog only (default: both)")
    args = ap.parse_args(argv)
    stdout = stdout or sys.stdout
    from core.catalog import cards, modelfacts

    if args.which in (None, "models"):
        stdout.write("models (core/data/models.yaml), each usable as `catalog: ID` under llm-serving:models:\n")
        for key, facts in sorted(modelfacts.CATALOG.items()):
            q = facts.quantization
            quant = f"{q.method} {q.bits}-bit" if q else facts.torch_dtype
            stdout.write(f"  {key}: {facts.parameters / 1e9:.2f}B parameters, {facts.num_hidden_layers} layers, "
                         f"{facts.num_key_value_heads} KV heads x {facts.head_dim}, "
                         f"context {facts.max_position_embeddings} tokens, {quant}\n")
    if args.which in (None, "cards"):
        stdout.write("cards (core/data/cards.yaml), matched by a node's nvidia.com/gpu.product:\n")
        for card in cards.CARDS:
            aliases = f" (also {', '.join(card.aliases)})" if card.aliases else ""
            stdout.write(f"  {card.product}{aliases}: {card.memory_mib} MiB, CUDA total {card.cuda_total_gib:.2f} GiB, "
                         f"sm {card.compute_capability}\n")
    return cli.OK


#: The verbs answered here: verb -> function of the remaining arguments.
LOCAL: dict[str, Callable[[list[str]], int]] = {"policies": policies, "catalog": catalog}
VERBS = (*MODULES, *LOCAL)


def main(argv: list[str] | None = None, stderr: TextIO = sys.stderr) -> int:
    """Run ``llm-serving VERB [ARGS]``; see the module docstring."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        (sys.stdout if args else stderr).write((__doc__ or "").split("\n\n")[1].rstrip() + "\n")
        return cli.OK if args else cli.BAD_INPUT
    verb, rest = args[0], args[1:]
    if verb in LOCAL:
        return LOCAL[verb](rest)
    if verb not in MODULES:
        return cli.fail(PROG, f"unknown verb {verb!r}; the verbs are: {', '.join(VERBS)}", stderr)
    module = importlib.import_module(MODULES[verb])
    cli.invoked_as = f"{PROG} {verb}"
    try:
        return int(module.main(rest))
    finally:
        cli.invoked_as = None


def run() -> None:
    """The console script's entry point (``[project.scripts]`` of pyproject.toml)."""
    cli.run(main, PROG)


if __name__ == "__main__":
    run()
