"""The API server's own schema for every manifest the tools read or render: the Kubernetes OpenAPI
schema of the cluster's version, strict on unknown fields, and the checks the API server makes
beyond it that a hostile manifest reached the pack with.

- **The schema**: kubernetes-validate's JSON schemas (generated from Kubernetes' OpenAPI
  document), the ``-strict`` set (``additionalProperties: false``), for :data:`KUBERNETES_MINOR`,
  the minor version of the toolchain's ``kube-apiserver`` (``testbed/toolchain/versions.json``;
  ``tests/tools/offline/test_apischema.py`` keeps them equal). A selector given as a list, ports as a string,
  a NetworkPolicy ``from`` as a map, a string ``strategy`` or a numeric annotation are refused
  here; an unknown field (``readonly``) is refused with the nearest known one ("did you mean
  readOnly").
- **Beyond the schema** (``k8s.io/kubernetes/pkg/apis/core/validation``): ``metadata.name`` a
  DNS-1123 subdomain (a Service's a DNS-1035 label), so a zero-width space, an RTL override or
  254 characters are refused (:mod:`core.k8s.kube`); a pod template with no container; a negative
  resource quantity.
- **KServe's InferenceService**: no CRD schema ships with the test bed (its CRD is a schema-less
  stand-in), so each predictor container is checked against the Kubernetes ``Container`` schema,
  which KServe's v1beta1 ``PredictorSpec`` embeds.

:func:`object_problems` gives every problem of one object as :class:`core.judging.problems.Problem`
(key path, value, rule, fix). Kinds without a schema (other custom resources) get the name check only.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import re
from collections.abc import Iterable
from functools import cache, lru_cache
from typing import Annotated, Any

import importlib_resources
import jsonschema
from pydantic import TypeAdapter, ValidationError
from referencing import Registry, Resource

from core.engines.config import CandleConfig, VllmConfig, human_int, number
from core.judging.problems import HIDDEN, Problem, described, shown
from core.k8s import kube, quantity
from core.k8s.manifests import pods as manifests_pods
from core.k8s.manifests.servers import parse_args

#: The Kubernetes minor version the schema is of: the toolchain's kube-apiserver (k8s.io/kubernetes v1.34.2).
KUBERNETES_MINOR = "1.34"
_SCHEMA_DIR = f"kubernetes-json-schema/v{KUBERNETES_MINOR}.0-local-strict"
#: Kinds whose name the API server checks as a DNS-1035 label (a Service's name is a DNS name).
_DNS1035_KINDS = frozenset({"Service"})
#: Kinds whose name is a DNS-1123 label (a namespace's name is a DNS label).
_DNS1123_LABEL_KINDS = frozenset({"Namespace"})
#: Where a kind keeps its pod template's containers.
_POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",), "Deployment": ("spec", "template", "spec"), "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"), "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
}


def _schema_file(name: str) -> dict[str, Any] | None:
    ref = importlib_resources.files("kubernetes_validate").joinpath(f"{_SCHEMA_DIR}/{name}")
    try:
        return json.loads(ref.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


@lru_cache(maxsize=1)
def _registry() -> Registry:
    definitions = _schema_file("_definitions.json")
    assert definitions is not None, f"kubernetes-validate has no {_SCHEMA_DIR}"
    return Resource.from_contents(definitions) @ Registry()


@cache
def _validator(kind: str, api_version: str) -> jsonschema.protocols.Validator | None:
    """The strict validator of ``kind`` in ``api_version``, None when the schema has no such kind
    (a custom resource). The file name is kubernetes-validate's: ``<kind>-<group>-<version>.json``."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,62}", kind) or not re.fullmatch(r"([a-z0-9.-]{1,253}/)?v[0-9a-z]{1,20}",
                                                                                 api_version):
        return None  # no such kind in any schema (the name check still runs)
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = _schema_file(f"{kind.lower()}-{group_version}.json")
    if schema is None:
        return None
    return jsonschema.Draft202012Validator(schema, registry=_registry())


@lru_cache(maxsize=1)
def _container_validator() -> jsonschema.protocols.Validator:
    schema = {"$ref": "https://kubernetes.io/api/_definitions.json#/$defs/io.k8s.api.core.v1.Container"}
    return jsonschema.Draft202012Validator(schema, registry=_registry())


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(object)"


def _schema_problem(err: jsonschema.ValidationError, prefix: tuple[Any, ...] = ()) -> Problem:
    """One schema error as key path, value, rule and fix; an unknown field names the nearest
    known one."""
    path = _path((*prefix, *err.absolute_path))
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = sorted((err.schema.get("properties") or {}) if isinstance(err.schema, dict) else {})
        unknown = [k for k in err.instance if k not in known]
        near = {k: difflib.get_close_matches(k, known, n=1, cutoff=0.6) for k in unknown}
        where = f"{path}." if path != "(object)" else ""
        field = unknown[0] if unknown else "?"
        hint = f"did you mean {near[field][0]}?" if near.get(field) else f"the known fields are {', '.join(known[:12])}"
        return Problem(f"{where}{field}", described(err.instance.get(field)),
                       f"unknown field (the Kubernetes {KUBERNETES_MINOR} schema has no {field} here; the API "
                       "server refuses it under strict field validation, and drops it otherwise)",
                       f"{hint} Rename or delete the field")
    if err.validator == "required" and isinstance(err.validator_value, list) and isinstance(err.instance, dict):
        missing = next((k for k in err.validator_value if k not in err.instance), "?")
        where = f"{path}.{missing}" if path != "(object)" else missing
        return Problem(where, None, f"required by the API server's schema (Kubernetes {KUBERNETES_MINOR})",
                       f"add {where} (kubectl explain {where.split('[')[0]} shows its form)")
    expected = err.schema.get("type") if isinstance(err.schema, dict) else None
    words: dict[str, str] = {"object": "a map", "array": "a list", "string": "text", "integer": "a whole number",
             "number": "a number", "boolean": "true or false"}
    if err.validator == "type" and expected:
        kinds = [words.get(str(t), str(t)) for t in (expected if isinstance(expected, list) else [expected]) if t != "null"]
        return Problem(path, described(err.instance), f"the API server's schema wants {' or '.join(kinds)} here",
                       f"write {' or '.join(kinds)} (see kubectl explain {path.split('[')[0]})")
    return Problem(path, described(err.instance), f"the API server's schema refuses it ({err.validator} "
                   f"{json.dumps(err.validator_value, default=str)[:80]})",
                   "correct the value (kubectl explain shows the field's type)")


def _name_problems(obj: dict[str, Any]) -> list[Problem]:
    name = obj["metadata"]["name"]
    kind = obj.get("kind")
    if kind in _DNS1035_KINDS:
        found, rule = kube.dns1035_label_problems(name), "a DNS-1035 label"
    elif kind in _DNS1123_LABEL_KINDS:
        found, rule = kube.dns1123_label_problems(name), "a DNS-1123 label"
    else:
        found, rule = kube.dns1123_subdomain_problems(name), "a DNS-1123 subdomain"
    return [Problem("metadata.name", name, f"a {kind}'s name must be {rule}: {p}",
                    "name it with lower case letters, digits and '-' only (no invisible or direction characters)")
            for p in found[:1]]


def _pod_problems(spec: Any, at: tuple[Any, ...]) -> list[Problem]:
    if not isinstance(spec, dict):
        return []
    out = []
    if spec.get("containers") == []:
        out.append(Problem(_path((*at, "containers")), [], "a pod needs at least one container (the API server "
                           "refuses spec.containers: [])", "give the pod its container, or delete the workload"))
    out += _user_problems(spec.get("securityContext"), (*at, "securityContext"))
    for field in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(field) or [] if isinstance(spec.get(field), list) else []):
            if isinstance(c, dict):
                out += _quantity_problems(c.get("resources"), (*at, field, i, "resources"))
                out += _engine_problems(c, (*at, field, i))
                out += _user_problems(c.get("securityContext"), (*at, field, i, "securityContext"))
                out += _exec_problems(c, (*at, field, i))
    return out


def _user_problems(context: Any, at: tuple[Any, ...]) -> list[Problem]:
    """A runAsUser / runAsGroup the API server refuses (apimachinery ``IsValidUserID`` /
    ``IsValidGroupID``: 0 to 2,147,483,647; the schema's type is int64)."""
    out = []
    for key in ("runAsUser", "runAsGroup"):
        value = context.get(key) if isinstance(context, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= kube.INT32_MAX:
            out.append(Problem(_path((*at, key)), value, f"{key} must be between 0 and {kube.INT32_MAX:,} (the API "
                               "server's IsValidUserID; Linux ids are 32-bit)", f"give {key} a uid within the range"))
    return out


def _exec_problems(container: dict[str, Any], at: tuple[Any, ...]) -> list[Problem]:
    """A command, argument or ``NAME=value`` longer than execve(2) takes (:data:`core.k8s.kube.MAX_ARG_STRLEN`):
    the container would fail to start with E2BIG. Values are never quoted (an env value may be a secret)."""
    out = []
    strings = [(key, i, a) for key in ("command", "args") if isinstance(container.get(key), list)
               for i, a in enumerate(container[key]) if isinstance(a, str)]
    strings += [("env", i, f"{e.get('name')}={e['value']}") for i, e in enumerate(container.get("env") or [])
                if isinstance(container.get("env"), list) and isinstance(e, dict) and isinstance(e.get("value"), str)]
    for key, i, text in strings:
        size = len(text.encode()) + 1
        if size > kube.MAX_ARG_STRLEN:
            out.append(Problem(_path((*at, key, i)), described(text), f"{size:,} bytes, above the {kube.MAX_ARG_STRLEN:,} "
                               "bytes execve takes per string (MAX_ARG_STRLEN): the container never starts (E2BIG)",
                               "put the value in a file (a ConfigMap mounted as a volume) and pass its path"))
    return out


def _secret_data_problems(obj: dict[str, Any]) -> list[Problem]:
    """A Secret's ``data`` value that is not base64 (the API server decodes it as ``[]byte``: "illegal
    base64 data"). The value is never shown."""
    data = obj.get("data")
    out = []
    for key, value in data.items() if isinstance(data, dict) else ():
        if not isinstance(value, str):
            continue
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            out.append(Problem(f"data.{key}", HIDDEN, "a Secret's data value must be base64 (the API server refuses "
                               "illegal base64 data)", f"encode it (base64 -w0), or move it to stringData.{key}"))
    return out


#: The engine settings whose flag takes a number with bounds (core.engines.config' field constraints).
_BOUNDED = ("gt", "ge", "lt", "le")


def _engine_problems(container: dict[str, Any], at: tuple[Any, ...]) -> list[Problem]:
    """A model server's numeric flags judged by the engine's own argument rules, the constraints of
    :class:`core.engines.config.VllmConfig` / :class:`core.engines.config.CandleConfig` the stack file is held
    to (``--max-model-len=0``: "must be greater than 0"); a flag the engine would not parse as
    a number is one problem too. The argv is the one the kubelet starts
    (:attr:`core.k8s.manifests.Container.argv`: ``--tensor-parallel-size=$(TP)`` with ``TP=8`` is 8);
    one that cannot be known (a value from a Secret or ConfigMap) is not judged here."""
    read = manifests_pods.container(container)
    call = read.call  # the argv as the kubelet runs it: $(VAR) expanded from the env, sh -c split
    engines: dict[str, type[VllmConfig] | type[CandleConfig]] = {"vllm": VllmConfig, "candle-vllm": CandleConfig}
    model = engines.get(call.engine if call else "")
    if call is None or model is None:
        return []
    parsed = parse_args(call.engine, call.args)
    out = []
    for name, flag in model.FLAGS.items():
        field = model.model_fields.get(name)
        text = parsed.get(flag)
        if field is None or text is None or not any(hasattr(m, b) for m in field.metadata for b in _BOUNDED):
            continue
        value: float | None = human_int(text) if "int" in str(field.annotation) else number(text)
        if value is None:
            out.append(Problem(_path((*at, "args")), f"{flag}={text}", f"{call.engine} cannot read {text!r} as the "
                               f"number {flag} takes", f"give {flag} a number"))
            continue
        try:
            TypeAdapter(Annotated[float, *field.metadata]).validate_python(value)
        except ValidationError as err:
            out.append(Problem(_path((*at, "args")), f"{flag}={text}",
                               f"{call.engine}'s {flag} {err.errors()[0]['msg'].replace('Input should be', 'must be')} (core/engines/config.py: "
                               f"{field.description or name})", f"give {flag} a value within its bounds"))
    return out


def _quantity_problems(resources: Any, at: tuple[Any, ...]) -> list[Problem]:
    out = []
    for part in ("requests", "limits"):
        given = resources.get(part) if isinstance(resources, dict) else None
        for name, value in given.items() if isinstance(given, dict) else ():  # another shape: the schema's refusal
            try:
                negative = quantity.parse(value) < 0
            except quantity.QuantityError as err:
                out.append(Problem(_path((*at, part, name)), value, err.rule, err.fix))
                continue
            if negative:
                out.append(Problem(_path((*at, part, name)), value, "a resource quantity must not be negative "
                                   "(the API server refuses it)", "give the amount without the minus sign"))
    return out


def _dig(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def object_problems(obj: dict[str, Any]) -> list[Problem]:
    """Every problem the API server would find in ``obj`` (a map with apiVersion, kind and
    metadata.name: :func:`tools.offline.manifests.object_problem` first), [] when none."""
    kind, api_version = obj["kind"], obj["apiVersion"]
    out = _name_problems(obj)
    validator = _validator(kind, api_version)
    if validator is not None:
        errors = sorted(validator.iter_errors(obj), key=lambda e: list(map(str, e.absolute_path)))
        out += [_schema_problem(e) for e in errors]
    if kind in _POD_SPEC_PATHS:
        out += _pod_problems(_dig(obj, _POD_SPEC_PATHS[kind]), _POD_SPEC_PATHS[kind])
    if kind == "Secret":
        out += _secret_data_problems(obj)
    if kind == "InferenceService":
        predictor = _dig(obj, ("spec", "predictor"))
        for i, c in enumerate((predictor or {}).get("containers") or [] if isinstance(predictor, dict) else []):
            prefix = ("spec", "predictor", "containers", i)
            out += [_schema_problem(e, prefix) for e in _container_validator().iter_errors(c)]
        out += _pod_problems(predictor, ("spec", "predictor"))
    return out


def render(obj: dict[str, Any], problems: list[Problem], where: str) -> str:
    """The problems of one object, one per line: ``<where>: <Kind> <name>: <path> = <value>: <rule>; fix: <fix>``."""
    head = f"{where}: {obj['kind']} {obj['metadata']['name']!r}"
    return "\n".join(f"{head}: {p.path} = {shown(p.value, p.path)[:80]}: {p.rule}; fix: {p.fix}"
                     for p in problems)


def refusals(objects: Iterable[tuple[str, dict[str, Any]]]) -> list[str]:
    """:func:`render` of every object of ``objects`` (where, object) that has a problem."""
    out = []
    for where, obj in objects:
        problems = object_problems(obj)
        if problems:
            out.append(render(obj, problems, where))
    return out
