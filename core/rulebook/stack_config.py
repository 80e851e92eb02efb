"""The stack's own config as the rules need it: the pack can read the inventory and models it was
given, and a server's model is one the stack lists (its facts are what the capacity, tensor
parallel and context-window rules judge). Each worded once (:mod:`core.judging.registry`); the stack
file's loader, the capacity view and the policies report these breaches.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.judging.registry import MANIFEST, STACK, Breach, only, rule

#: The stack file's model map, as both audiences name it.
MODELS_KEY = "llm-serving:models"


@rule("stack-config-readable", "The pack can read the stack's inventory and models it was given.",
      "the pack's inventory (the stack config)")
def config_readable(error: str | None, cannot: str, who: str = "") -> Breach | None:
    """``error``: why the pack cannot read ``llm-serving:cluster`` or ``llm-serving:models``
    (None: it can); ``cannot``: what it therefore cannot do (``judge this resource``, ``judge
    the stack``, ``check its KV cache``); ``who``: the policy, when the subject is the object."""
    if error is None:
        return None
    return Breach(
        f"{who + ' ' if who else ''}cannot {cannot}: {error}",
        "give the stack file's config the llm-serving:cluster inventory (nodes, cards, allocatable_memory_mib) and "
        f"{MODELS_KEY} in the format of Pulumi.prod.yaml; the pack receives it in PULUMI_CONFIG",
    )


@rule("model-in-models", "A server's model is one the stack's models list.",
      "spec: the stack file's llm-serving:models (each model's facts: catalog, facts or config_json)")
def model_listed(model: str | None, known: Sequence[str], flag: str = "--model", key: str = "hf_id") -> Breach | None:
    """``model``: the stack file's model key, or the server's model argument (``--model``,
    candle-vllm ``--w``: ``flag``; None: it names none); ``known``: the model keys the stack lists
    (the stack file; for a manifest the server is looked up by ``hf_id`` or ``weights_path``,
    ``key``, before this is asked)."""
    if model is not None and model in known:
        return None
    if not model:
        return Breach(f"the server names no model ({flag}), so its facts cannot be looked up",
                      f"add the model to {MODELS_KEY}")
    return Breach(
        f"model {model}" + only(MANIFEST, f" ({flag})") + " is not in "
        + only(STACK, MODELS_KEY) + only(MANIFEST, f"the stack's models ({MODELS_KEY})"),
        only(STACK, f"use one of {', '.join(known) or '(none declared)'}, or add it under {MODELS_KEY}")
        + only(MANIFEST, f"add an entry with {key}: {model} and its facts (catalog: <a model of docs/catalog.md, "
               "from core/data/models.yaml>, facts: {...} or config_json: <path to its config.json>)"),
    )
