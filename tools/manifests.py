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
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml

PROJECT = "llm-serving"
#: PyYAML's safe loader, in C (libyaml) where the wheel has it: 7x faster on a large stack file.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
    delete_before_replace: Optional[bool] = None
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


def resources_from_documents(docs: Iterable[dict], stack: str = "manifests") -> list[Resource]:
    """Resources from parsed manifests (``List`` kinds are flattened; empty docs skipped).

    The resource name is ``<namespace>/<name>`` for namespaced objects, so two objects of the
    same kind in different namespaces stay apart.
    """
    out: list[Resource] = []
    for doc in docs:
        if not doc:
            continue
        if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
            out.extend(resources_from_documents(doc.get("items") or [], stack))
            continue
        if "apiVersion" not in doc or "kind" not in doc:
            raise InputError(f"a document has no apiVersion/kind: {json.dumps(doc)[:120]}")
        meta = doc.get("metadata") or {}
        name = str(meta.get("name", ""))
        if meta.get("namespace"):
            name = f"{meta['namespace']}/{name}"
        t = type_token(doc["apiVersion"], doc["kind"])
        out.append(Resource(type=t, name=name, urn=urn(stack, t, name), props=doc))
    return out


def load_manifest_dir(path: Path, stack: str = "manifests") -> list[Resource]:
    """Resources from a directory of manifests or a single YAML file.

    A directory with a ``kustomization.yaml`` (or ``.yml`` / ``Kustomization``) is built with
    ``kubectl kustomize``; otherwise every ``*.yaml`` / ``*.yml`` below it is read, sorted by
    path. Raises :class:`InputError` for a missing path, unparsable YAML or a failed build.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir() and any((path / k).exists() for k in ("kustomization.yaml", "kustomization.yml", "Kustomization")):
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            raise InputError(f"{path} is a kustomize directory and kubectl is not on PATH; install kubectl or pass the built YAML")
        proc = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise InputError(f"kubectl kustomize {path} failed: {proc.stderr.strip()}")
        return _parse(proc.stdout, f"kubectl kustomize {path}", stack)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
    out: list[Resource] = []
    for f in files:
        out.extend(_parse(f.read_text(), str(f), stack))
    return out


def _parse(text: str, where: str, stack: str) -> list[Resource]:
    try:
        docs = list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as err:
        raise InputError(f"{where}: not valid YAML: {err}") from None
    return resources_from_documents(docs, stack)


def load_stack_file(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a stack file, keys as written (``llm-serving:cluster`` ...).

    Raises :class:`InputError` when the file is missing, is not YAML, or has no ``config:`` map.
    """
    path = Path(path)
    try:
        data = yaml.load(path.read_text(), Loader=_LOADER)
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise InputError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise InputError(f"{path}: a stack file needs a top-level config: map")
    return data["config"]


def config_env(config: dict[str, Any]) -> str:
    """``PULUMI_CONFIG`` as the CLI builds it: a JSON object of ``key -> string``, where
    structured values are JSON-encoded (``pulumi.Config.get_object`` decodes them)."""
    out = {}
    for key, value in config.items():
        out[key] = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return json.dumps(out, separators=(",", ":"))
