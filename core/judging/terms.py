"""The fix in the user's own terms (the policy pack's messages, the plan tool's transitions): a
stack-file key for an object the program made from a stack file, the manifest field or
annotation for hand-written YAML.

An object the program rendered carries ``facts.COMPONENT_ANNOTATION`` (``<Class>/<name>``, set by
every component), in the program's run and in the YAML the preview writes alike, so both modes
still get the same verdict (``tests/policies/test_program_and_yaml_same_verdicts.py``). Its user edits ``Pulumi.<stack>.yaml``,
where parking is ``parked: {reason: ...}`` on the workload or Service, not the annotation it
renders to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from core.base import facts
from core.base.stackkeys import PREFIX
from core.judging.problems import Finding


def stack_file_key(annotations: Mapping[str, str]) -> str | None:
    """``llm-serving:workloads.candle-vllm`` for an object the program made (from its component
    annotation), else None (hand-written YAML)."""
    component = annotations.get(facts.COMPONENT_ANNOTATION)
    if not component or "/" not in component:
        return None
    cls, name = component.split("/", 1)
    section = facts.COMPONENT_SECTIONS.get(cls)
    if section is None:
        return None
    return f"{PREFIX}{section}" if section == "network_policy" else f"{PREFIX}{section}.{name}"


def stack_file_keys(annotation_maps: Iterable[Mapping[str, str]]) -> str | None:
    """The stack-file keys of several objects, comma-joined in the order given (``llm-serving:
    workloads.candle-vllm, llm-serving:workloads.coder``), for a finding that names them all;
    None when none was made from a stack file."""
    keys = [k for k in (stack_file_key(a) for a in annotation_maps) if k]
    return ", ".join(keys) or None


def message(annotations: Mapping[str, str], finding: Finding) -> str:
    """``finding`` rendered in the user's own terms: with the stack-file key when the object was
    made from a stack file (its component annotation), the manifest fix otherwise."""
    return finding.render(stack_key=stack_file_key(annotations))
