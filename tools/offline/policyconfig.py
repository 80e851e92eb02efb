"""The policy pack config, as the Pulumi CLI handles ``--policy-pack-config``: read the file,
reconcile it with the policies' defaults and the pack's initial config, validate each policy's
entry with jsonschema against its ``configSchema`` plus the ``enforcementLevel`` enum the CLI
injects (``ReconcilePolicyPackConfig``; ``analyzer.GetAnalyzerInfo``), and build the ``Configure``
request's map.

Stricter than the CLI in two ways, both to catch typos: a key that names no policy of the pack,
and a property the policy's ``configSchema`` does not declare, are errors (the CLI ignores both).
Errors: :class:`PolicyConfigError` (every problem at once: key path, value, rule, fix), a kind of
:class:`AnalyzeError` (an error before any verdict: exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.base.inputs import InputFileError, json_object, read_text
from tools.offline import packproc
from tools.offline.findings import enum_names
from tools.offline.report import DISABLED

# grpc, protobuf, pulumi's stubs and jsonschema load on first use, after the pack process is
# spawned (tools.analyze_inputs.analyze_manifests), so its start-up overlaps ours.
if TYPE_CHECKING:
    import jsonschema
    from google.protobuf import json_format, struct_pb2
    from pulumi.runtime.proto import analyzer_pb2 as pb
else:
    jsonschema = packproc.LazyModule("jsonschema")
    json_format = packproc.LazyModule("google.protobuf.json_format")
    struct_pb2 = packproc.struct_pb2
    pb = packproc.pb

#: The enforcement levels the CLI accepts (apitype.EnforcementLevel; injected into each
#: policy's config schema by analyzer.GetAnalyzerInfo).
LEVELS = ("advisory", "mandatory", "remediate", "disabled")


class AnalyzeError(Exception):
    """An error before any verdict (exit code 2); the message states the action, the subject,
    the reason and the fix."""


class PolicyConfigError(AnalyzeError):
    """The policy pack config is invalid. ``problems`` lists each one (key path, value, rule, fix)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("cannot configure the policy pack:\n" + "\n".join(f"  - {p}" for p in problems))


def load_policy_pack_config(path: Path) -> dict[str, Any]:
    """The JSON object of a ``--policy-pack-config`` file (empty file: ``{}``), read with
    :mod:`core.base.inputs` (a regular file of at most 16 MiB, UTF-8, each key once). Raises
    :class:`PolicyConfigError` when it is unreadable, not JSON or not a JSON object."""
    path = Path(path)
    try:
        text = read_text(path, "policy pack config")
    except InputFileError as err:
        hint = (" (inline JSON is not accepted: like `pulumi preview --policy-pack-config`, this option takes a file path)"
                if str(path).lstrip().startswith("{") else "")
        raise PolicyConfigError([f"{err}{hint}"]) from None
    if not text.strip():
        return {}
    try:
        return json_object(text, str(path))
    except InputFileError as err:
        raise PolicyConfigError([f"{err}; a policy pack config is a JSON object "
                                 '{"<policy>": "mandatory" | {"enforcementLevel": ..., <properties>}}']) from None


def policy_schema(info: pb.PolicyInfo) -> dict[str, Any]:
    """The JSON schema a policy's config must meet: its ``configSchema`` properties and
    required keys, plus ``enforcementLevel`` (the CLI's injected enum), no other keys."""
    props = json_format.MessageToDict(info.configSchema.properties) if info.HasField("configSchema") else {}
    props["enforcementLevel"] = {"type": "string", "enum": list(LEVELS)}
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if info.HasField("configSchema") and info.configSchema.required:
        schema["required"] = list(info.configSchema.required)
    return schema


def reconcile_policy_config(info: pb.AnalyzerInfo, given: dict[str, Any] | None) -> dict[str, tuple[str, dict[str, Any]]]:
    """Policy name -> (enforcement level, properties) for every policy, as the CLI's
    ``ReconcilePolicyPackConfig``: schema defaults, then the pack's initial config, then
    ``given`` (``"all"`` sets every policy's level). Each policy's result is validated with
    jsonschema. Raises :class:`PolicyConfigError` listing every problem at once, also when the
    config disables every policy (a PASS that checked nothing)."""
    given = dict(given or {})
    schemas = {p.name: policy_schema(p) for p in info.policies}
    result: dict[str, dict[str, Any]] = {}
    for p in info.policies:
        defaults = {k: v["default"] for k, v in schemas[p.name]["properties"].items() if isinstance(v, dict) and "default" in v}
        result[p.name] = {"enforcementLevel": enum_names().level_name[p.enforcementLevel], **defaults}
    for name, cfg in info.initialConfig.items():
        if name in result:
            _apply(result[name], {"enforcementLevel": enum_names().level_name[cfg.enforcementLevel], **json_format.MessageToDict(cfg.properties)})
    problems: list[str] = []
    normalised = {k: _normalise_entry(k, v, problems) for k, v in given.items()}
    if "all" in normalised and normalised["all"] is not None:
        extra = sorted(set(normalised["all"]) - {"enforcementLevel"})
        if extra:
            problems.append(f"all.{extra[0]} = {json.dumps(normalised['all'][extra[0]])}: \"all\" takes only enforcementLevel; "
                            "fix: set properties under the policy's own name")
        level = normalised["all"].get("enforcementLevel")
        if level is not None:
            _check_level("all", level, problems)
            for defaults in result.values():
                defaults["enforcementLevel"] = level if level in LEVELS else defaults["enforcementLevel"]
    for name, given_entry in normalised.items():
        if name == "all" or given_entry is None:
            continue
        if name not in result:
            problems.append(f"{name}: no policy of pack {info.name} has this name; "
                            f"fix: use one of {', '.join(sorted(result))} (or \"all\")")
            continue
        _apply(result[name], given_entry)
    for name, entry in result.items():
        problems.extend(_validate(name, entry, schemas[name]))
    if result and not problems and all(e["enforcementLevel"] == DISABLED for e in result.values()):
        problems.append(f"every one of the {len(result)} policies is disabled, so nothing would be checked and "
                        "the verdict would read PASS; fix: enable the policies to check (or leave the policy pack "
                        "config out)")
    if problems:
        raise PolicyConfigError(problems)
    return {name: (e.pop("enforcementLevel"), e) for name, e in ((n, dict(e)) for n, e in result.items())}


def _apply(target: dict[str, Any], entry: dict[str, Any]) -> None:
    target.update({k: v for k, v in entry.items() if not (k == "enforcementLevel" and v in (None, ""))})


def _normalise_entry(name: str, value: Any, problems: list[str]) -> dict[str, Any] | None:
    if isinstance(value, str):
        return {"enforcementLevel": value}
    if isinstance(value, dict):
        return dict(value)
    problems.append(f"{name} = {json.dumps(value)}: a policy's config is a level string or an object; "
                    f'fix: write "{name}": "mandatory" or "{name}": {{"enforcementLevel": "advisory", ...}}')
    return None


def _check_level(path: str, level: Any, problems: list[str]) -> None:
    if level not in LEVELS:
        problems.append(f"{path}.enforcementLevel = {json.dumps(level)}: not an enforcement level; "
                        f"fix: use one of {', '.join(LEVELS)}")


def _validate(name: str, entry: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    out = []
    for err in sorted(validator_cls(schema).iter_errors(entry), key=lambda e: (list(e.absolute_path), e.message)):
        out.append(_describe(name, err, schema))
    return out


def _describe(name: str, err: jsonschema.ValidationError, schema: dict[str, Any]) -> str:
    path = ".".join([name, *(str(p) for p in err.absolute_path)])
    known = ", ".join(sorted(schema["properties"]))
    if err.validator == "required":
        missing = err.message.split("'")[1] if "'" in err.message else "?"
        return f"{path}.{missing}: missing ({err.message}); fix: set it in the policy pack config"
    if err.validator == "additionalProperties":
        extra = sorted(set(err.instance) - set(schema["properties"]))
        return (f"{path}.{extra[0] if extra else '?'}: {err.message} (the policy's configSchema declares no such key); "
                f"fix: remove it or use one of {known}")
    if err.validator == "enum":
        return f"{path} = {json.dumps(err.instance)}: {err.message}; fix: use one of {', '.join(map(str, err.validator_value))}"
    return f"{path} = {json.dumps(err.instance)}: {err.message} (rule {err.validator}: {json.dumps(err.validator_value)}); " \
           "fix: change the value to meet the policy's configSchema"


def policy_configs(reconciled: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, pb.PolicyConfig]:
    """The ``Configure`` request's map (every policy, as the CLI sends it)."""
    out = {}
    for name, (level, props) in reconciled.items():
        s = struct_pb2.Struct()
        s.update(props)
        out[name] = pb.PolicyConfig(enforcementLevel=enum_names().level_enum[level], properties=s)
    return out

