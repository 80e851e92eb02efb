"""Loading the stack file: :func:`load_stack_config` validates the ``config:`` map with the
schema (:mod:`stackfile.schema`), translates every pydantic error into a
:class:`~core.judging.problems.Problem` (key path, value, rule, fix), runs the cross-checks
(:mod:`stackfile.checks`) and raises :class:`~core.judging.problems.ConfigError` with EVERY problem at
once, in key order.

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    SecretStr,
    TypeAdapter,
    ValidationError,
)

from core.base import inputs
from core.catalog.modelfacts import ModelEntry, ModelFacts
from core.judging.problems import ConfigError, Problem, redacted
from core.k8s.values import REDACTED
from stackfile.checks import cross_checks
from stackfile.schema import (
    _SINGLE_SECTIONS,
    PREFIX,
    PROVIDER_KEYS_REFUSED,
    STRING_KEYS,
    TOP_LEVEL_KEYS,
    WORKLOAD_CLASSES,
    Name,
    ServiceConfig,
    StackConfig,
    misspelt_namespace,
    provider_value_refused,
)

# --- loading --------------------------------------------------------------------------------

_ADAPTERS: dict[Any, TypeAdapter] = {}


def _adapter(tp: Any) -> TypeAdapter:
    hit = _ADAPTERS.get(tp)
    if hit is None:
        hit = _ADAPTERS[tp] = TypeAdapter(tp)
    return hit


def load_stack_config(config: dict[str, Any], base_dir: Path | None = None, source: str = "the stack config") -> StackConfig:
    """Validate a stack file's ``config:`` map (keys as written, ``llm-serving:cluster`` ...).

    Values may be parsed YAML/JSON or JSON text (as ``PULUMI_CONFIG`` carries them).
    ``base_dir`` resolves a model's relative ``config_json``; default (and what the program,
    the pack and the preview use): the project directory, ``rules.PROJECT_DIR``. Raises :class:`ConfigError` with
    every problem found: unknown ``llm-serving:*`` keys, field errors of each item, and the
    cross-field checks of :mod:`stackfile.checks` (node listed, model listed, Service targets
    exist and are not parked, the retire list, objects left alone, and the server rules no pack
    policy judges). The engine, card and capacity rules are the policy pack's, on the rendered
    manifests: a stack file that breaks one loads, and the pack refuses it (exit 1).
    """
    misplaced = misplaced_secrets(config)
    if misplaced:  # stop here: a field's error would show the value
        raise ConfigError(misplaced, source)
    problems: list[Problem] = []
    raw = _known_sections(config, problems)
    parts: dict[str, Any] = {}
    for key, tp in _SINGLE_SECTIONS.items():
        if key in raw:
            value = _validate(tp, raw[key], (key,), problems)
            if value is not _INVALID:
                parts[key] = value
    if "cluster" not in raw:
        problems.append(Problem(PREFIX + "cluster", None, "the cluster inventory is required",
                                "add llm-serving:cluster with nodes (name, cards, card, allocatable_memory_mib)"))
    invalid: set[str] = set()  # models and workloads present but invalid: no cross check names them
    parts["models"] = _validate_map(raw.get("models"), ModelEntry, "models", problems, invalid)
    parts["workloads"] = _validate_workloads(raw.get("workloads"), problems, invalid)
    parts["services"] = _validate_map(raw.get("services"), ServiceConfig, "services", problems, set(), keys_are_names=True)
    model_facts = _resolve_models(parts["models"], base_dir if base_dir is not None else inputs.PROJECT_DIR, problems)
    # The cross checks run even when the cluster is missing or invalid (its problems are
    # reported above): only the node-dependent ones (node listed, one host, the card's
    # capability) need it, the rest (Service targets, model references, vLLM image) are
    # reported at the same time.
    declared = [str(k) for k in raw.get("workloads") or {}] if isinstance(raw.get("workloads"), dict) else []
    problems.extend(cross_checks(parts, model_facts, invalid, declared))
    if problems:
        problems.sort(key=lambda p: _sort_key(p.path))
        raise ConfigError(problems, source)
    stack = StackConfig.model_construct(**parts)
    stack._facts = model_facts
    return stack


_INVALID = object()

#: Where a secret value belongs: ``llm-serving:workloads.<workload>.secret_env.<NAME>``.
SECRET_PATH = f"{PREFIX}workloads.<workload>.secret_env.<NAME>"


def is_secret_value(value: Any) -> bool:
    """A value stored encrypted: ``{secure: <ciphertext>}`` as the stack file holds it, or a
    :class:`pydantic.SecretStr` (the program's wrapping of a value the CLI decrypted)."""
    return isinstance(value, SecretStr) or (
        isinstance(value, dict) and set(value) == {"secure"} and isinstance(value["secure"], str))


def misplaced_secrets(config: dict[str, Any]) -> list[Problem]:
    """One problem per secret value (:func:`is_secret_value`) anywhere but a workload's
    ``secret_env`` (a label, an env value, an argument, a whole key): the program would put it in
    plain text into the object, the rendered manifests and the state's inputs. The value is never
    shown (neither plaintext nor ciphertext)."""
    out: list[Problem] = []

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if is_secret_value(value):
            if not (len(path) == 4 and path[0] == PREFIX + "workloads" and path[2] == "secret_env"):
                dotted = ".".join(path)
                out.append(Problem(
                    dotted, REDACTED,
                    f"a secret value (secure:, set by pulumi config set --secret) is accepted only under {SECRET_PATH}: "
                    "here the program would write it in plain text into the object, the rendered manifests and the "
                    "state",
                    f"move it: pulumi config rm --path '{dotted}', then pulumi config set --secret --path "
                    f"'{SECRET_PATH}' (the workload's container reads it from its Secret); or, if it is not secret, "
                    f"pulumi config set --path '{dotted}' <value> without --secret",
                    "pulumi-kubernetes PR #936 (renderYamlToDirectory writes secret values in plain text); docs/secrets.md"))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(v, path + (str(k),))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, path + (str(i),))

    for key, value in config.items():
        if key.startswith(PREFIX) or misspelt_namespace(key):
            walk(value, (key,))
    return out


def _sort_key(path: str) -> tuple[int, str]:
    section = path[len(PREFIX):].split(".", 1)[0]
    order = TOP_LEVEL_KEYS.index(section) if section in TOP_LEVEL_KEYS else -1
    return order, path


def _known_sections(config: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        if misspelt_namespace(key):
            fixed = PREFIX + key.partition(":")[2]
            problems.append(Problem(key, value, f"{key} is not in the {PREFIX} namespace: Pulumi reads it as another "
                                    "namespace's key, so this stack would render none of it and pulumi up would delete "
                                    "what it holds", f"rename it {fixed}"))
            continue
        if provider_value_refused(key, value):
            refused = PROVIDER_KEYS_REFUSED[key]
            problems.append(Problem(key, value, f"{key} is {redacted(value, key)}: {refused.why}", refused.fix))
            continue
        if not key.startswith(PREFIX):
            continue  # other namespaces (kubernetes:context ...) are not ours
        name = key[len(PREFIX):]
        if name not in TOP_LEVEL_KEYS:
            near = difflib.get_close_matches(name, TOP_LEVEL_KEYS, n=1)
            hint = f"did you mean {PREFIX}{near[0]}? " if near else ""
            problems.append(Problem(key, value, f"{key} is not a key of this program",
                                    f"{hint}remove it or rename it; known keys: {', '.join(PREFIX + k for k in TOP_LEVEL_KEYS)}"))
            continue
        if isinstance(value, str) and name not in STRING_KEYS:
            try:  # noqa: SIM105
                value = json.loads(value)
            except ValueError:
                pass  # the model reports the wrong type
        out[name] = value
    return out


def _validate(tp: Any, value: Any, loc: tuple, problems: list[Problem], model: Any = None) -> Any:
    try:
        return _adapter(tp).validate_python(value)
    except ValidationError as err:
        problems.extend(_from_pydantic(err, loc, model if model is not None else tp))
        return _INVALID


def _validate_map(value: Any, item_type: type, section: str, problems: list[Problem],
                  invalid: set[str], keys_are_names: bool = False) -> dict[str, Any]:
    """Valid entries by name; names of entries with problems go to ``invalid`` (no cross checks)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(Problem(PREFIX + section, value, f"{PREFIX}{section} must be a map of name -> entry",
                                "write one `name:` key per entry, each holding a map"))
        return {}
    out = {}
    for name, item in value.items():
        ok = True
        if keys_are_names:
            ok = _validate(Name, str(name), (section, name), problems) is not _INVALID
        parsed = _validate(item_type, item, (section, name), problems)
        if ok and parsed is not _INVALID:
            out[str(name)] = parsed
        else:
            invalid.add(str(name))
    return out


def _validate_workloads(value: Any, problems: list[Problem], invalid: set[str]) -> dict[str, Any]:
    """Valid workloads by name, each validated by the class its ``server`` names."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(Problem(PREFIX + "workloads", value, f"{PREFIX}workloads must be a map of name -> workload",
                                "write one `name:` key per workload, each with server: candle-vllm | vllm | pytorch"))
        return {}
    out = {}
    for name, item in value.items():
        ok = _validate(Name, str(name), ("workloads", name), problems) is not _INVALID
        server = item.get("server") if isinstance(item, dict) else None
        cls = WORKLOAD_CLASSES.get(server) if isinstance(server, str) else None
        if cls is None:
            problems.append(Problem(f"{PREFIX}workloads.{name}.server", server,
                                    "server must name the kind of workload",
                                    f"set server: to one of {', '.join(WORKLOAD_CLASSES)}"))
            invalid.add(str(name))
            continue
        parsed = _validate(cls, item, ("workloads", name), problems)
        if ok and parsed is not _INVALID:
            out[str(name)] = parsed
        else:
            invalid.add(str(name))
    return out


def _resolve_models(models: dict[str, ModelEntry], base_dir: Path | None, problems: list[Problem]) -> dict[str, ModelFacts]:
    out = {}
    for key, entry in models.items():
        try:
            out[key] = entry.resolve(base_dir)
        except ValueError as err:
            problems.append(Problem(f"{PREFIX}models.{key}.config_json", entry.config_json, str(err),
                                    "point config_json at a readable Hugging Face config.json (a relative path is relative to the project directory, where Pulumi.yaml is)"))
    return out



# --- pydantic errors -> problems ------------------------------------------------------------

_FIXES = {
    "int_type": "give a whole number",
    "int_parsing": "give a whole number",
    "int_from_float": "give a whole number",
    "float_type": "give a number",
    "float_parsing": "give a number",
    "string_type": "give a text value",
    "bool_type": "give true or false",
    "bool_parsing": "give true or false",
    "dict_type": "give a map (key: value lines)",
    "model_type": "give a map (key: value lines)",
    "model_attributes_type": "give a map (key: value lines)",
    "list_type": "give a list",
    "tuple_type": "give a list",
}


_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}


def _from_pydantic(err: ValidationError, loc: tuple, root: Any) -> list[Problem]:
    """One :class:`Problem` per pydantic error; ``loc`` is where ``root`` sits in the config.

    A ``too_short`` error whose location is a prefix of another error's is dropped: pydantic
    checks a tuple's length after validating its items, so one invalid node also reports
    "nodes: ... at least 1 item after validation, not 0", which is not a problem of its own."""
    errors = err.errors(include_url=False)
    locs = [tuple(e["loc"]) for e in errors]
    errors = [e for e in errors if not (e["type"] == "too_short" and any(
        len(other) > len(e["loc"]) and other[:len(e["loc"])] == tuple(e["loc"]) for other in locs))]
    out = []
    for e in errors:
        full = loc + tuple(e["loc"])
        value, rule, fix = _describe(e, tuple(e["loc"]), str(full[-1]) if full else "", root)
        value = REDACTED if "secret_env" in full else _without_secrets(value)  # never show a secret
        out.append(Problem(PREFIX + ".".join(str(p) for p in full), value, rule, fix))
    return out


def _without_secrets(value: Any) -> Any:
    """``value`` (a problem's, e.g. a whole workload) with every ``secret_env`` value redacted."""
    if isinstance(value, dict):
        return {k: ({n: REDACTED for n in v} if k == "secret_env" and isinstance(v, dict) else
                    REDACTED if k == "secret_env" else _without_secrets(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_secrets(v) for v in value]
    return value


def _describe(e: Any, rel: tuple, field: str, root: Any) -> tuple[Any, str, str]:
    """(value, rule, fix) of one pydantic error at ``rel`` (relative to ``root``)."""
    etype, ctx, value = e["type"], e.get("ctx") or {}, e.get("input")
    rule = f"{field}: {e['msg']}"
    if etype == "extra_forbidden":
        fields = _fields_at(root, rel[:-1])
        near = difflib.get_close_matches(field, fields, n=1)
        hint = f"did you mean {near[0]}? " if near else ""
        return value, f"{field} is not a field here", (
            f"{hint}remove or rename it; allowed: {', '.join(fields)}" if fields else f"{hint}remove it")
    if etype == "missing":
        desc = _description_at(root, rel)
        return None, f"{field} is required", f"add {field}: <value>" + (f" ({desc.rstrip('.')})" if desc else "")
    if etype == "llm_serving_rule":
        return (REDACTED if ctx.get("hide") else value), ctx["rule"], ctx["fix"]
    if etype in _BOUNDS:
        words, key = _BOUNDS[etype]
        return value, rule, f"give {field} a value {words} {ctx[key]}"
    if etype == "literal_error":
        return value, rule, f"use one of {ctx.get('expected')}"
    if etype == "too_short":
        return value, rule, f"give at least {ctx.get('min_length')} item(s)"
    if etype == "multiple_of":
        return value, rule, f"give a multiple of {ctx.get('multiple_of')}"
    if etype == "int_type" and isinstance(value, (bool, str, float)):
        # Strict whole numbers (core.k8s.values.Int): lax pydantic read true as 1 and "2" as 2.
        what = {bool: "a boolean", str: "text", float: "a fraction"}[type(value)]
        unquote = " (write it without quotes)" if isinstance(value, str) and value.strip().isdigit() else ""
        return value, f"{field}: {json.dumps(value)} is {what}, not a whole number", f"give a whole number{unquote}"
    if etype in _FIXES:
        return value, rule, _FIXES[etype]
    if etype == "value_error":
        return value, rule.replace("Value error, ", ""), "correct the value as the rule says"
    return value, rule, "correct the value to match the rule"


def _unwrap(tp: Any) -> Any:
    while True:
        origin = get_origin(tp)
        if origin is Annotated:
            tp = get_args(tp)[0]
        elif origin is Union:
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def _type_at(root: Any, loc: tuple) -> Any:
    tp = root
    for part in loc:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(part))
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        elif get_origin(tp) in (list, tuple):
            tp = get_args(tp)[0]
        else:
            return None
    return _unwrap(tp)


def _fields_at(root: Any, loc: tuple) -> list[str]:
    tp = _type_at(root, loc)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return list(tp.model_fields)
    return []


def _description_at(root: Any, loc: tuple) -> str:
    parent = _type_at(root, loc[:-1])
    if isinstance(parent, type) and issubclass(parent, BaseModel):
        field = parent.model_fields.get(str(loc[-1]))
        if field is not None and field.description:
            return field.description
    return ""


