"""Resources as the analyzer sees them, from plain manifests or a stack file.

One shape for every source: :class:`Resource` (type token, name, URN, properties, parent,
options). The offline preview produces them from the program under the mock runtime; this
module produces them from a directory of plain manifests (a folder of YAML files, or a
kustomize directory built with ``kubectl kustomize``), so a team can check its hand-written
YAML with the same policy pack before migrating.

Also reads a stack file (``Pulumi.<stack>.yaml``): its ``config:`` map is what the CLI hands
the policy pack in ``PULUMI_CONFIG``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.base.inputs import InputFileError, json_object, read_text
from core.base.stackkeys import PROJECT
from core.judging.problems import ConfigError, Problem
from tools.offline.yamlload import YAMLError, load_documents


class InputError(Exception):
    """A manifest directory or stack file cannot be read; the message says which file and why."""


@dataclass
class Resource:
    """One resource as the analyzer protocol carries it (``AnalyzerResource``)."""

    type: str
    name: str
    urn: str
    props: dict[str, Any]
    parent: str = ""
    custom: bool = True
    protect: bool = False
    dependencies: list[str] = field(default_factory=list)
    ignore_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool | None = None
    provider: str = ""


def type_token(api_version: str, kind: str) -> str:
    """The kubernetes provider's type token: ``v1``/``Service`` -> ``kubernetes:core/v1:Service``."""
    if "/" not in api_version:
        api_version = "core/" + api_version
    return f"kubernetes:{api_version}:{kind}"


def urn(stack: str, type_: str, name: str, parent_type: str = "") -> str:
    """A Pulumi URN (``urn:pulumi:<stack>::llm-serving::[<parent type>$]<type>::<name>``)."""
    qualified = f"{parent_type}${type_}" if parent_type else type_
    return f"urn:pulumi:{stack}::{PROJECT}::{qualified}::{name}"


#: Kinds without a namespace (the API server ignores metadata.namespace on them).
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
    "CustomResourceDefinition", "PriorityClass", "RuntimeClass", "IngressClass", "CSIDriver", "CSINode",
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "VolumeSnapshotClass",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
})


#: A Kubernetes kind (``Deployment``) and apiVersion (``apps/v1``, ``v1``), as the API server serves them.
KIND = re.compile(r"[A-Za-z][A-Za-z0-9]{0,62}")
API_VERSION = re.compile(r"([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?v[0-9][a-z0-9]{0,20}")


def object_problem(doc: Any) -> str | None:
    """Why ``doc`` is not a Kubernetes object (the rule and the fix), or None."""
    if not isinstance(doc, dict):
        return f"it is a {type(doc).__name__}, not a map with apiVersion, kind and metadata; fix: write one object per document"
    for key in ("apiVersion", "kind"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            return f"{key} is {json.dumps(doc.get(key), default=str)}, not a non-empty string; fix: set {key}"
    if not KIND.fullmatch(doc["kind"]) or not API_VERSION.fullmatch(doc["apiVersion"]):
        key = "kind" if not KIND.fullmatch(doc["kind"]) else "apiVersion"
        return (f"{key} is {json.dumps(doc[key])[:60]}, not a Kubernetes {key} (a kind is letters and digits from a "
                "letter; an apiVersion [group/]version in lower case): no API server serves it, and it would name a "
                f"file outside the rendering; fix: correct {key}")
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return f"metadata is {json.dumps(meta, default=str)[:60]}, not a map; fix: give metadata: {{name: ..., namespace: ...}}"
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        return f"metadata.name is {json.dumps(meta.get('name'), default=str)[:60]}, not a non-empty string; fix: name the object"
    if "namespace" in meta and not isinstance(meta["namespace"], str):
        return f"metadata.namespace is {json.dumps(meta['namespace'], default=str)[:60]}, not a string; fix: give the namespace's name"
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is not None and (not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items())):
            return (f"metadata.{key} is {json.dumps(value, default=str)[:60]}, not a map of text to text (the API "
                    f"server's type is map[string]string); fix: quote each value, e.g. \"5\" rather than 5")
    return None


def _is_list(doc: Any) -> bool:
    kind = doc.get("kind") if isinstance(doc, dict) else None
    return isinstance(kind, str) and (kind == "List" or (kind.endswith("List") and "items" in doc))


def resources_from_documents(docs: Iterable[Any], stack: str = "manifests", where: str = "a document") -> list[Resource]:
    """Resources from parsed manifests (``List`` kinds are flattened; empty docs skipped).

    The resource name is ``<namespace>/<name>`` for namespaced objects, so two objects of the
    same kind in different namespaces stay apart. Raises :class:`InputError` naming ``where``
    and the document (1-based) for a document that is not a Kubernetes object (not a map,
    ``kind: 5``, ``metadata: "x"``, a List whose items are not objects).
    """
    out: list[Resource] = []
    for i, doc in enumerate(docs, 1):
        if doc is None:
            continue
        at = f"{where}, document {i}"
        if _is_list(doc):
            items = doc.get("items")
            if not isinstance(items, list):
                raise InputError(f"{at}: {doc['kind']}.items is not a list; fix: list the objects under items:")
            out.extend(resources_from_documents(items, stack, f"{at}, {doc['kind']} item"))
            continue
        problem = object_problem(doc)
        if problem is not None:
            raise InputError(f"{at}: not a Kubernetes object: {problem}")
        meta = doc["metadata"]
        name = meta["name"]
        if meta.get("namespace"):
            name = f"{meta['namespace']}/{name}"
        t = type_token(doc["apiVersion"], doc["kind"])
        out.append(Resource(type=t, name=name, urn=urn(stack, t, name), props=doc))
    return out


def is_kustomize_dir(path: Path) -> bool:
    """A directory holding ``kustomization.yaml`` (or ``.yml``, ``Kustomization``)."""
    return path.is_dir() and any((path / k).exists() for k in ("kustomization.yaml", "kustomization.yml", "Kustomization"))


#: Manifest files read from a directory: YAML, and JSON (kubectl apply -f reads both).
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass
class ManifestSet:
    """The objects of a manifest path: ``resources``, ``sources`` (URN -> file; none for a
    kustomize build), ``notes`` (what was assumed or merged, for the report) and ``lines`` (URN ->
    the 1-based first line of the object's document in its file; a List's items: the List's)."""

    resources: list[Resource]
    sources: dict[str, str]
    notes: list[str]
    lines: dict[str, int] = field(default_factory=dict)


def read_manifests(path: Path, stack: str = "manifests", namespace: str | None = None) -> ManifestSet:
    """The objects of a directory of manifests (``*.yaml``, ``*.yml``, ``*.json`` below it, by
    path), a kustomize directory (built with ``kubectl kustomize``) or one file.

    An object without ``metadata.namespace`` (of a namespaced kind) is judged in ``namespace``
    (the inventory's ``llm-serving:namespace``, where ``kubectl apply -n`` would put it) and a
    note says so; when ``namespace`` is None it is left as written. The same object (API
    group, kind, namespace, name) found twice is judged once with a note when both copies are
    equal (the same directory given twice), and refused when they differ (which one applies
    depends on the order). Raises :class:`InputError` naming the file and document.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    # The API schema (jsonschema, kubernetes-validate) loads here, not at import: the analyzer
    # reads the stack file and spawns the policy pack first, so the two start-ups overlap.
    from tools.offline import apischema

    if is_kustomize_dir(path):
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise InputError(f"{path} is a kustomize directory and kubectl is not on PATH; fix: install kubectl, or pass the "
                             "built YAML")
        proc = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise InputError(f"kubectl kustomize {path} failed: {' '.join(proc.stderr.split())[:300]}; fix: correct "
                             f"{path}/kustomization.yaml (run `kubectl kustomize {path}` to see the error in full), or "
                             "pass the built YAML")
        parsed = [(f"kubectl kustomize {path}", "", _documents(proc.stdout, f"kubectl kustomize {path}", ".yaml"))]
    else:
        files = [path] if not path.is_dir() else sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES)
        parsed = []
        for f in files:
            shown = display_path(f)
            parsed.append((shown, shown, _documents(read_input(f, "manifest"), shown, f.suffix)))
    out = ManifestSet([], {}, [])
    seen: dict[tuple[str, str, str, str], tuple[str, dict]] = {}
    refused: list[str] = []
    for shown, source, (docs, lines) in parsed:
        line_of = _document_lines(docs, lines)
        for r in resources_from_documents(docs, stack, shown):
            line = line_of.get(id(r.props), 0)
            problems = apischema.refusals([(shown, r.props)])
            if problems:
                refused += problems
                continue
            meta = r.props["metadata"]
            kind = r.props["kind"]
            if namespace and not meta.get("namespace") and kind not in CLUSTER_SCOPED:
                r = _in_namespace(r, namespace, stack)
                out.notes.append(f"{kind} {meta['name']} ({shown}) has no metadata.namespace; judged in namespace "
                                 f"{namespace} (the inventory's llm-serving:namespace), where kubectl apply -n {namespace} puts it")
            ident = (r.props["apiVersion"].rpartition("/")[0], kind, r.props["metadata"].get("namespace", ""), meta["name"])
            if ident in seen:
                first, props = seen[ident]
                if props != r.props:
                    raise InputError(f"{shown}: {kind} {r.name} is also in {first}, with different content; which one "
                                     "applies depends on the order; fix: keep one copy")
                out.notes.append(f"{kind} {r.name} is in {first} and again in {shown} (identical); judged once")
                continue
            seen[ident] = (shown, r.props)
            out.resources.append(r)
            if source:
                out.sources[r.urn] = source
                out.lines[r.urn] = line
    if refused:
        raise InputError("the API server would refuse these objects (nothing was judged):\n" + "\n".join(refused))
    return out


def _in_namespace(r: Resource, namespace: str, stack: str) -> Resource:
    props = {**r.props, "metadata": {**r.props["metadata"], "namespace": namespace}}
    name = f"{namespace}/{props['metadata']['name']}"
    return Resource(type=r.type, name=name, urn=urn(stack, r.type, name), props=props)


def display_path(p: Path) -> str:
    """``p`` relative to the working directory when it is below it (as reports name files), else absolute."""
    p = p.resolve()
    try:
        return p.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return p.as_posix()


def load_manifest_dir(path: Path, stack: str = "manifests") -> list[Resource]:
    """The objects of :func:`read_manifests` (namespaces as written)."""
    return read_manifests(path, stack).resources


def _document_lines(docs: list[Any], lines: list[int]) -> dict[int, int]:
    """``id`` of each document (and of each item of a List) -> the document's first line."""
    out: dict[int, int] = {}
    for doc, line in zip(docs, lines, strict=False):
        out[id(doc)] = line
        if _is_list(doc) and isinstance(doc.get("items"), list):
            out.update((id(item), line) for item in doc["items"])
    return out


def _documents(text: str, where: str, suffix: str) -> tuple[list[Any], list[int]]:
    """The documents of a manifest file: JSON (one object, at line 1) or YAML, with the one loader,
    its scalars read as ``kubectl`` reads them (``defaultMode: 0700`` is 448: :mod:`core.k8s.yaml11`);
    and each document's first line."""
    try:
        if suffix == ".json":
            return [json_object(text, where)], [1]
        lines: list[int] = []
        return load_documents(text, where, kubectl=True, lines=lines), lines
    except ConfigError as err:
        raise InputError(err.render()) from None
    except InputFileError as err:
        raise InputError(str(err)) from None
    except YAMLError as err:
        raise InputError(f"{where}: not valid YAML: {err}") from None


def read_input(path: Path, what: str) -> str:
    """:func:`core.base.inputs.read_text`, its error as :class:`InputError`."""
    try:
        return read_text(path, what)
    except InputFileError as err:
        raise InputError(str(err)) from None


def load_stack_file(path: Path, what: str = "stack file") -> dict[str, Any]:
    """The ``config:`` map of a stack file, keys as written (``llm-serving:cluster`` ...).

    Raises :class:`InputError` when the file is missing, not a regular file of at most
    :data:`core.base.inputs.MAX_INPUT_BYTES`, not YAML, not plain data (a repeated key, a date, a
    tag, aliases beyond the budget: :mod:`tools.offline.yamlload`, with the config key path), has
    no ``config:`` map, or a config key without a value (``null``: the program would get the
    text "null", a valid namespace name). ``what`` names the file in errors (``inventory`` for
    ``analyze --inventory``).
    """
    path = Path(path)
    text = read_input(path, what)
    try:
        docs = load_documents(text, str(path), strip=("config",), numbered=False)
    except ConfigError as err:
        raise InputError(err.render()) from None
    except YAMLError as err:
        raise InputError(f"{path}: not valid YAML: {err}") from None
    data = docs[0] if len(docs) == 1 else None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise InputError(f"{path}: a {what} needs a top-level config: map")
    empty = [Problem(str(k), None, f"{k} has no value (null); the program would receive the text \"null\"",
                     f"give {k} a value, or delete the key") for k, v in data["config"].items() if v is None]
    if empty:
        raise InputError(ConfigError(empty, str(path)).render())
    return data["config"]


def config_env(config: dict[str, Any]) -> str:
    """``PULUMI_CONFIG`` as the CLI builds it: a JSON object of ``key -> string``, where
    structured values are JSON-encoded (``pulumi.Config.get_object`` decodes them)."""
    out = {}
    for key, value in config.items():
        out[key] = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return json.dumps(out, separators=(",", ":"))
