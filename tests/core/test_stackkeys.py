"""core.base.stackkeys: the stack config keys the policy pack reads, named once and read without
loading the models (the offline preview hands the pack those keys before it loads anything)."""

from __future__ import annotations

import subprocess
import sys

from core.base import stackkeys
from core.capacity.inventory import CLUSTER_CONFIG_KEY
from core.catalog.modelfacts import MODELS_CONFIG_KEY
from tools.preview import pack_config


def test_the_keys_the_pack_reads():
    assert stackkeys.CONFIG_KEYS == ("llm-serving:cluster", "llm-serving:models", "llm-serving:workloads")
    assert (CLUSTER_CONFIG_KEY, MODELS_CONFIG_KEY) == ("cluster", "models")


def test_pack_config_keeps_those_keys_and_only_measured_figures():
    config = {"llm-serving:cluster": {"nodes": []}, "llm-serving:namespace": "x", "kubernetes:context": "c",
              "llm-serving:models": {"m": {}},
              "llm-serving:workloads": {"a": {"env": {"K": "v"}, "measured": {"kv": 1}}, "b": {"env": {}}}}
    assert pack_config(config) == {"llm-serving:cluster": {"nodes": []}, "llm-serving:models": {"m": {}},
                                   "llm-serving:workloads": {"a": {"measured": {"kv": 1}}}}


def test_the_commands_start_the_pack_before_loading_models_or_schemas():
    """What tools.preview and tools.analyze import before they spawn the pack: no pydantic, no
    stack-file loader, no jsonschema (those load while the pack starts)."""
    code = ("import sys; import tools.preview, tools.analyze; "
            "print(sorted(m for m in ('pydantic', 'stackfile', 'policylib', 'jsonschema', 'pulumi') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
