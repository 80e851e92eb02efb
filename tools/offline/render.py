"""The objects the kubernetes provider would apply, as the files of a rendering.

Layout: the provider's ``renderYamlToDirectory`` mode (pulumi/pulumi-kubernetes,
``provider/pkg/provider/provider.go``, functions ``renderYaml`` and ``renderPathForResource``):

* ``<dir>/0-crd/`` holds CustomResourceDefinitions (kind ``CustomResourceDefinition`` of a
  built-in ``apiextensions.k8s.io`` version), ``<dir>/1-manifest/`` everything else; the
  provider creates both directories, so does :func:`tools.offline.outdir.write_tree`;
* the file name is ``<apiVersion>-<kind>-<namespace>-<name>.yaml`` where ``/`` and ``:`` in the
  apiVersion become ``_``, the kind is LOWER-CASED (``strings.ToLower(resource.GetKind())``),
  and the namespace is ``default`` when the object has none: ``apps/v1`` Deployment
  ``llm-serving/candle-vllm`` -> ``1-manifest/apps_v1-deployment-llm-serving-candle-vllm.yaml``;
* the YAML is the object's JSON through ``sigs.k8s.io/yaml.JSONToYAML``: map keys sorted (Go's
  JSON and go-yaml both sort them). :func:`dump` sorts keys the same way (PyYAML
  ``safe_dump(sort_keys=True)``), block style, no line wrapping; scalar quoting may differ from
  go-yaml, the parsed objects are equal, read by PyYAML or by kubectl (a string yaml.v2 would read as
  another value, ``y`` or ``08``, is quoted).

The output directory is written by :mod:`tools.offline.outdir`, read back by
:mod:`tools.offline.rendering`, and two renderings compared by :mod:`tools.offline.treediff`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from core.k8s import yaml11
from tools.offline.manifests import Resource

CRD_DIR = "0-crd"
MANIFEST_DIR = "1-manifest"
#: apiextensions versions the provider treats as built-in (``kinds.KnownGroupVersions``).
CRD_API_VERSIONS = ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1")
_BASE_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BASE_DUMPER):
    """The safe dumper, quoting a string kubectl would read as something else (``y`` is a boolean
    and ``08`` a number to yaml.v2, :func:`core.k8s.yaml11.plain_is_text`), so ``kubectl apply -f`` of
    a rendering reads what the program made; other strings are quoted as PyYAML quotes them."""


def _represent_str(dumper: Any, data: str) -> Any:
    style = None if yaml11.plain_is_text(data) else "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)
_DUMPER = _Dumper


class RenderError(Exception):
    """An object cannot be rendered, or the output directory cannot be replaced; the message
    names the object or directory, the reason and the fix."""


# --- objects and file names --------------------------------------------------------------------

#: Objects never rendered: a workload's Secret stays with Pulumi (applied by ``pulumi up``,
#: encrypted in the state), and the rendered objects reference it by name (docs/secrets.md).
KEPT_BY_PULUMI = frozenset({"kubernetes:core/v1:Secret"})


def manifests(resources: Iterable[Resource]) -> list[dict[str, Any]]:
    """The Kubernetes objects among ``resources`` that a rendering holds: custom resources of the
    kubernetes provider whose inputs carry ``apiVersion`` and ``kind`` (providers and components
    are skipped, and so are Secrets: :data:`KEPT_BY_PULUMI`)."""
    out = []
    for r in resources:
        if r.custom and r.type.startswith("kubernetes:") and "apiVersion" in r.props and "kind" in r.props \
                and r.type not in KEPT_BY_PULUMI:
            out.append(r.props)
    return out


def kept_by_pulumi(resources: Iterable[Resource]) -> list[str]:
    """``Secret <namespace>/<name>`` of each object :func:`manifests` leaves out of a rendering."""
    return [f"{r.props.get('kind')} {(r.props.get('metadata') or {}).get('namespace')}/"
            f"{(r.props.get('metadata') or {}).get('name')}" for r in resources if r.custom and r.type in KEPT_BY_PULUMI]


def printable_of(obj: dict[str, Any]) -> str:
    """``apiVersion kind name`` of ``obj`` for a message, control characters escaped."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return repr(f"{obj.get('apiVersion')} {obj.get('kind')} {meta.get('name')}")[1:-1][:120]


def render_path(obj: dict[str, Any]) -> str:
    """The file ``renderPathForResource`` gives ``obj``, relative to the render directory.

    ``{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "clef-serve", "namespace":
    "llm-serving"}}`` -> ``"1-manifest/v1-service-llm-serving-clef-serve.yaml"``. Raises
    :class:`RenderError` when ``metadata.name`` is empty (the provider asserts a name; it would
    auto-name the object with a random suffix the preview cannot know).
    """
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    if not name:
        raise RenderError(
            f"cannot render {obj.get('apiVersion')} {obj.get('kind')}: it has no metadata.name, so the provider "
            "would auto-name it with a random suffix; fix: give the object an explicit metadata.name"
        )
    api_version = str(obj["apiVersion"]).replace("/", "_").replace(":", "_")
    namespace = str(meta.get("namespace") or "default")
    for what, part in (("apiVersion", api_version), ("kind", str(obj["kind"])), ("namespace", namespace), ("name", name)):
        if "/" in part or "\\" in part or not part.isprintable():
            raise RenderError(f"cannot render {printable_of(obj)}: its {what} holds path characters ('/', '\\', or a "
                              f"control character), so its file would land outside the rendering; fix: correct {what}")
    file_name = f"{api_version}-{str(obj['kind']).lower()}-{namespace}-{name}.yaml"
    is_crd = obj["kind"] == "CustomResourceDefinition" and obj["apiVersion"] in CRD_API_VERSIONS
    return f"{CRD_DIR if is_crd else MANIFEST_DIR}/{file_name}"


def dump(obj: dict[str, Any]) -> str:
    """``obj`` as YAML: keys sorted (as the provider writes them), block style, no wrapping."""
    return yaml.dump(obj, Dumper=_DUMPER, sort_keys=True, default_flow_style=False, allow_unicode=True, width=1 << 30)


def render(objects: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Relative path -> YAML text for every object. Raises :class:`RenderError` for an object
    without a name, or two objects that would write the same file."""
    out: dict[str, str] = {}
    for obj in objects:
        path = render_path(obj)
        if path in out:
            raise RenderError(
                f"cannot render {path}: two objects have the same apiVersion, kind, namespace and name; "
                "fix: give each object its own metadata.name"
            )
        out[path] = dump(obj)
    return out

