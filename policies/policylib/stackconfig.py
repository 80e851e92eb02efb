"""The stack's inventory and models, as the policy pack receives them.

The Pulumi CLI starts a policy pack with the stack's configuration in ``PULUMI_CONFIG``
(JSON: ``{"llm-serving:cluster": "<json>", ...}``), and pulumi-policy loads it into the
runtime config before every Analyze / AnalyzeStack call. The offline runner
(``tools/analyze.py``) starts the pack the same way. This module reads the two keys the
policies need, ``llm-serving:cluster`` and ``llm-serving:models``, and validates them with the
program's own models (:mod:`core.inventory`, :mod:`core.modelfacts`): one
source of truth.

Parsed values are cached by their raw text, so 10,000 Analyze calls parse the inventory once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

from core import rules
from core.inventory import CLUSTER_CONFIG_KEY, ClusterInventory
from core.modelfacts import MODELS_CONFIG_KEY, ModelEntry, ModelFacts

PROJECT = "llm-serving"
#: Every stack config key the policies read; nothing else of the stack's config affects a verdict.
CONFIG_KEYS = (f"{PROJECT}:{CLUSTER_CONFIG_KEY}", f"{PROJECT}:{MODELS_CONFIG_KEY}")
#: Relative ``config_json`` paths resolve against the project directory (where the stack files
#: are), as the program and the preview resolve them (``core.rules.PROJECT_DIR``); the
#: pack's own working directory is ``policies/``.
PROJECT_DIR = rules.PROJECT_DIR


class StackConfigError(Exception):
    """The stack's inventory or models are missing or invalid (message says which key and why)."""


@dataclass(frozen=True)
class Models:
    """The stack's model entries and their resolved facts, by model key."""

    entries: dict[str, ModelEntry]
    facts: dict[str, ModelFacts]
    _by_arg: dict[str, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for key, entry in self.entries.items():
            for name in (entry.hf_id, entry.weights_path):
                if name:
                    self._by_arg.setdefault(name.rstrip("/"), key)

    def find(self, model_arg: Optional[str]) -> Optional[tuple[str, ModelFacts]]:
        """(key, facts) of the model a server argument (``--model`` / ``--w``) names, or None.

        The first entry (in config order) whose ``hf_id`` or ``weights_path`` equals the argument
        (trailing ``/`` ignored), as :meth:`ModelEntry.matches`; a dict lookup, not a scan."""
        if not model_arg:
            return None
        key = self._by_arg.get(model_arg.rstrip("/"))
        return (key, self.facts[key]) if key is not None else None


_cache: dict[tuple[str, str], object] = {}


def _raw(key: str) -> Optional[str]:
    # Imported here: the offline runner's client reads CONFIG_KEYS without loading pulumi.
    import pulumi.runtime

    return pulumi.runtime.get_config(f"{PROJECT}:{key}")


def inventory() -> ClusterInventory:
    """The validated cluster inventory. Raises :class:`StackConfigError` if absent or invalid."""
    raw = _raw(CLUSTER_CONFIG_KEY)
    if raw is None:
        raise StackConfigError(
            f"the stack config has no {PROJECT}:{CLUSTER_CONFIG_KEY}; the policy pack needs the "
            "cluster inventory (nodes, cards, memory) from the stack file"
        )
    hit = _cache.get((CLUSTER_CONFIG_KEY, raw))
    if hit is None:
        try:
            hit = ClusterInventory.model_validate(json.loads(raw))
        except ValueError as err:
            raise StackConfigError(f"{PROJECT}:{CLUSTER_CONFIG_KEY} is invalid: {err}") from None
        _cache[(CLUSTER_CONFIG_KEY, raw)] = hit
    return hit  # type: ignore[return-value]


def models() -> Models:
    """The stack's models with resolved facts; empty when the stack declares none."""
    raw = _raw(MODELS_CONFIG_KEY) or "{}"
    hit = _cache.get((MODELS_CONFIG_KEY, raw))
    if hit is None:
        try:
            entries = {k: ModelEntry.model_validate(v) for k, v in json.loads(raw).items()}
            hit = Models(entries=entries, facts={k: e.resolve(PROJECT_DIR) for k, e in entries.items()})
        except ValueError as err:
            raise StackConfigError(f"{PROJECT}:{MODELS_CONFIG_KEY} is invalid: {err}") from None
        _cache[(MODELS_CONFIG_KEY, raw)] = hit
    return hit  # type: ignore[return-value]


def house_conventions() -> bool:
    """The inventory's ``house_conventions`` (:class:`core.inventory.ClusterInventory`): the
    team's own conventions are mandatory on this cluster (the user's: true). False when the
    inventory is missing or invalid (the stack policies report that)."""
    try:
        return inventory().house_conventions
    except StackConfigError:
        return False
