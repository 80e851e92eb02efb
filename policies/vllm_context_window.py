"""vllm-context-window: vLLM's --max-model-len fits the model's window, or the manifest carries what stretches it.

Rule: for each vLLM container whose model is in the stack's models (``llm-serving:models``),
an explicit ``--max-model-len`` is at most the window vLLM derives
(:func:`core.rules.derived_max_model_len`: the model's ``max_position_embeddings``, scaled by a
``rope_scaling`` given as ``--hf-overrides '{"rope_scaling": {...}}'`` or the deprecated
``--rope-scaling '{...}'``; YaRN counts from ``original_max_position_embeddings``), unless the
container sets ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` (``1`` or ``true``). Otherwise vLLM v0.11.0
refuses to start ("User-specified max_model_len ... is greater than the derived max_model_len").
The stack file and the component args judge by the same rule and wording,
:func:`core.rulebook.context_window` (:func:`core.rules.max_model_len_ok`).

Source: Prod's ``reasoning`` asks 65,536 of Qwen3-30B-A3B (config.json: 40,960), which
the user measured serving 64k: the Qwen3 model card's YaRN setting (``rope_type: yarn``,
``original_max_position_embeddings: 32768``, factor 2.0 for about 65,536 tokens, 4.0 for 131,072)
makes it start; coder.yaml ("Native window is 262144 and rope_scaling is null, so 256K needs no YaRN").

The checkpoint's own ``rope_scaling`` (the model facts' ``rope_scaling``, read from config.json)
counts when the manifest gives none: linear and dynamic multiply ``max_position_embeddings`` by the
factor, YaRN counts from ``original_max_position_embeddings``, llama3 / longrope / su leave it, and
Gemma 3's window is already scaled (vLLM v0.11.0 ``_get_and_verify_max_len``); a manifest's
rope_scaling replaces the checkpoint's whole (``--hf-overrides`` sets the config key).

Does not check: ``--hf-overrides`` in dotted form, servers without ``--max-model-len`` (vLLM then uses the derived
window itself), models not in the stack's models (kv-cache-fits-max-model-len reports those).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import capacity_view as cv
from core import manifests, registry, rulebook, rules, terms
from core.engines import VllmConfig
from policylib import capacity_helpers as ch
from policylib import declare

NAME = "vllm-context-window"
SOURCE = registry.RULES[NAME].source
ALLOW_LONG = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def rope_scaling_of(s: manifests.ServerArgs) -> Mapping[str, Any] | None:
    """The rope_scaling a vLLM argv gives: ``--hf-overrides`` JSON's ``rope_scaling``, else
    ``--rope-scaling`` JSON; None when absent or not JSON of that shape."""
    for flag, key in ((VllmConfig.FLAGS["hf_overrides"], "rope_scaling"), ("--rope-scaling", None)):
        raw = s.get(flag)
        if not raw:
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if key and isinstance(value, Mapping):
            value = value.get(key)
        if isinstance(value, Mapping):
            return value
    return None


def message(sc: cv.ServerCapacity, _cards: int) -> str | None:
    if sc.server.engine != "vllm" or sc.facts is None or sc.settings.max_model_len is None:
        return None
    override = rope_scaling_of(sc.server)
    rope = sc.facts.window_rope_scaling(override)
    breach = rulebook.context_window(sc.model_key, sc.facts.max_position_embeddings, sc.settings.max_model_len,
                                     rope, rules.env_flag_on(sc.container.env.get(ALLOW_LONG)),
                                     from_checkpoint=override is None and rope is not None)
    if breach is None:
        return None
    subject = f"{sc.workload.kind} {sc.workload.name}, container {sc.container.name}"
    return terms.message(sc.workload.annotations, breach.finding(subject))


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    ch.validate_servers(args, report_violation, NAME, "the context window", message)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
