"""The stack config keys the policy pack reads, as plain names (standard library only).

A stack file's ``config:`` map is keyed ``llm-serving:<key>``. The pack's verdicts depend on
three of those keys (``policylib.stackconfig`` reads them): ``cluster`` (the inventory,
:mod:`core.capacity.inventory`), ``models`` (:mod:`core.catalog.modelfacts`) and ``workloads`` (only each
workload's ``measured`` figures, :mod:`core.capacity.measured`). The offline preview hands the pack those
keys alone, before it loads any model of them, so the pack starts first (``tools.preview``).
"""

from __future__ import annotations

#: The project's name (Pulumi.yaml), the namespace of its config keys.
PROJECT = "llm-serving"
#: The prefix of this project's config keys (``llm-serving:workloads``).
PREFIX = PROJECT + ":"
#: The config key (within the ``llm-serving`` namespace) that holds the inventory.
CLUSTER_CONFIG_KEY = "cluster"
#: The config key (within the ``llm-serving`` namespace) that holds the model entries.
MODELS_CONFIG_KEY = "models"
#: The stack file's workloads: the pack reads only their ``measured`` figures (core.capacity.measured).
WORKLOADS_CONFIG_KEY = "workloads"
#: Every stack config key the policies read; nothing else of the stack's config affects a verdict.
CONFIG_KEYS = tuple(PREFIX + key for key in (CLUSTER_CONFIG_KEY, MODELS_CONFIG_KEY, WORKLOADS_CONFIG_KEY))
#: The stack file's workloads, as a whole config key.
WORKLOADS_KEY = PREFIX + WORKLOADS_CONFIG_KEY
