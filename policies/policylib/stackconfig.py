"""The stack's inventory and models, as the policy pack receives them.

The Pulumi CLI starts a policy pack with the stack's configuration in ``PULUMI_CONFIG``
(JSON: ``{"llm-serving:cluster": "<json>", ...}``), and pulumi-policy loads it into the
runtime config before every Analyze / AnalyzeStack call. The offline runner
(``tools/analyze.py``) starts the pack the same way. This module reads the two keys the
policies need, ``llm-serving:cluster`` and ``llm-serving:models`` (and the ``measured`` figures of
``llm-serving:workloads``, merged into the inventory), and validates them with the
program's own models (:mod:`core.capacity.inventory`, :mod:`core.catalog.modelfacts`): one
source of truth.

Parsed values are cached by their raw text, so 10,000 Analyze calls parse the inventory once.
"""

from __future__ import annotations

import functools
import json
import os

from core.base import inputs
from core.base.stackkeys import CLUSTER_CONFIG_KEY, MODELS_CONFIG_KEY, PREFIX, PROJECT, WORKLOADS_CONFIG_KEY
from core.capacity.inventory import ClusterInventory
from core.catalog.modelfacts import ModelEntry, Models

#: Relative ``config_json`` paths resolve against the project directory (where the stack files
#: are), as the program and the preview resolve them (``core.base.inputs.PROJECT_DIR``); the
#: pack's own working directory is ``policies/``.
PROJECT_DIR = inputs.PROJECT_DIR


class StackConfigError(Exception):
    """The stack's inventory or models are missing or invalid (message says which key and why)."""


_cache: dict[tuple[str, str], object] = {}

#: A key the runtime config lacks: ``name -> (PULUMI_CONFIG, PULUMI_CONFIG_<KEY>, value)`` as
#: ``pulumi.runtime.get_config`` last answered it from the environment (see :func:`_raw`).
_absent: dict[str, tuple[str | None, str | None, str | None]] = {}


@functools.cache
def _env_key(name: str) -> str:
    """``PULUMI_CONFIG_<KEY>``: the variable pulumi reads first for ``name`` (``get_config_env_key``)."""
    from pulumi.runtime import config as runtime_config

    return runtime_config.get_config_env_key(name)


def _raw(key: str) -> str | None:
    """``pulumi.runtime.get_config`` of ``llm-serving:<key>``. A key the runtime config lacks (a
    stack without workloads, plain manifests) pulumi answers from the environment by parsing the
    whole ``PULUMI_CONFIG`` again on every call (pulumi 3.x ``runtime/config.py``); that answer
    is kept while the two variables it reads stay the same (at 10,000 resources it was 43,000
    parses of the inventory)."""
    # Imported here: the offline runner's client reads CONFIG_KEYS without loading pulumi.
    from pulumi.runtime import config as runtime_config

    name = PREFIX + key
    explicit = runtime_config.CONFIG.get()
    if name in explicit:
        return explicit[name]
    env = (os.environ.get("PULUMI_CONFIG"), os.environ.get(_env_key(name)))
    hit = _absent.get(name)
    if hit is not None and hit[:2] == env:
        return hit[2]
    value = runtime_config.get_config(name)
    if name not in runtime_config.CONFIG.get():
        _absent[name] = (*env, value)
    return value


def inventory() -> ClusterInventory:
    """The validated cluster inventory. Raises :class:`StackConfigError` if absent or invalid."""
    raw = _raw(CLUSTER_CONFIG_KEY)
    if raw is None:
        raise StackConfigError(
            f"the stack config has no {PROJECT}:{CLUSTER_CONFIG_KEY}; the policy pack needs the "
            "cluster inventory (nodes, cards, memory) from the stack file"
        )
    workloads = _raw(WORKLOADS_CONFIG_KEY) or "{}"
    hit = _cache.get((CLUSTER_CONFIG_KEY, raw + workloads))
    if hit is None:
        try:
            hit = ClusterInventory.model_validate(json.loads(raw))
        except ValueError as err:
            raise StackConfigError(f"{PROJECT}:{CLUSTER_CONFIG_KEY} is invalid: {err}") from None
        try:
            loaded = json.loads(workloads)
            hit = hit.with_workloads_measured(loaded if isinstance(loaded, dict) else {})
        except ValueError as err:
            raise StackConfigError(f"{PROJECT}:{WORKLOADS_CONFIG_KEY} has an invalid measured: {err}") from None
        _cache[(CLUSTER_CONFIG_KEY, raw + workloads)] = hit
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
    """The inventory's ``house_conventions`` (:class:`core.capacity.inventory.ClusterInventory`): the
    team's own conventions are mandatory on this cluster (the user's: true). False when the
    inventory is missing or invalid (the stack policies report that)."""
    try:
        return inventory().house_conventions
    except StackConfigError:
        return False
