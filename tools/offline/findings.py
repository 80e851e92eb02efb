"""The report's findings from the pack's diagnostics, and where each is written (SARIF's
physical locations): the analyzer protocol's enums by their report names, a finding's object
(``<Kind> <namespace>/<name>``), the stack's root URN a stack policy's finding without a resource
gets (the engine's ``resolveStackPolicyViolationURN``), a waived finding read back, and the file
and line of each finding (a manifest's object, a stack file's key, a container's entry).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from core.base.inputs import InputFileError, read_text
from core.base.stackkeys import PROJECT
from tools.offline import packproc
from tools.offline.manifests import Resource, display_path
from tools.offline.report import ADVISORY, DISABLED, MANDATORY, REMEDIATE, WAIVED, WAIVERS_POLICY, Finding, PolicySummary
from tools.offline.yamlload import container_lines, key_lines

# grpc, protobuf, pulumi's stubs and jsonschema load on first use, after the pack process is
# spawned (tools.analyze_inputs.analyze_manifests), so its start-up overlaps ours.
if TYPE_CHECKING:
    from pulumi.runtime.proto import analyzer_pb2 as pb
else:
    pb = packproc.pb


@functools.cache
def enum_names() -> SimpleNamespace:
    """The analyzer protocol's enums (EnforcementLevel, PolicySeverity, PolicyType) and their
    names in the report; built on first use, when pulumi's stubs are loaded."""
    level_name = {pb.ADVISORY: ADVISORY, pb.MANDATORY: MANDATORY, pb.DISABLED: DISABLED, pb.REMEDIATE: REMEDIATE}
    return SimpleNamespace(
        level_name=level_name,
        level_enum={v: k for k, v in level_name.items()},
        severity={
            pb.POLICY_SEVERITY_UNSPECIFIED: "unspecified", pb.POLICY_SEVERITY_LOW: "low",
            pb.POLICY_SEVERITY_MEDIUM: "medium", pb.POLICY_SEVERITY_HIGH: "high",
            pb.POLICY_SEVERITY_CRITICAL: "critical",
        },
        policy_type={pb.POLICY_TYPE_RESOURCE: "resource", pb.POLICY_TYPE_STACK: "stack"},
    )


def k8s_object(resource_type: str, props: dict[str, Any]) -> str:
    """``<Kind> <namespace>/<name>`` (``<Kind> <name>`` when cluster-scoped) of a Kubernetes
    resource's properties; "" for other resources."""
    if not resource_type.startswith("kubernetes:") or not isinstance(props, dict):
        return ""
    meta = props.get("metadata") or {}
    kind = props.get("kind") or resource_type.rsplit(":", 1)[-1]
    name = meta.get("name", "")
    return f"{kind} {meta['namespace']}/{name}" if meta.get("namespace") else f"{kind} {name}"


def root_stack_urn(stack: str, project: str) -> str:
    """The stack's root resource URN (``resource.DefaultRootStackURN``):
    ``urn:pulumi:<stack>::<project>::pulumi:pulumi:Stack::<project>-<stack>``."""
    return f"urn:pulumi:{stack}::{project}::pulumi:pulumi:Stack::{project}-{stack}"


def strip_description(message: str, description: str) -> str:
    """The policy's own message: pulumi-policy sends ``"<description>\\n<message>"``."""  # noqa: D301
    if description and message.startswith(description + "\n"):
        return message[len(description) + 1:]
    if message == description:
        return ""
    return message


def finding(d: pb.AnalyzeDiagnostic, urn: str, objects: dict[str, Resource], stage: str,
             sources: dict[str, str] | None) -> Finding:
    """The report's finding of diagnostic ``d``; a waived finding (policy-waivers' ``waived ...`` form,
    :mod:`core.rulebook.waivers`) is the waived policy's, at level ``waived``, with the waiver."""
    r = objects.get(urn)
    level = enum_names().level_name.get(d.enforcementLevel, ADVISORY)
    policy, message, waiver = d.policyName, strip_description(d.message, d.description), ""
    if policy == WAIVERS_POLICY:
        from core.rulebook import waivers  # noqa: PLC0415 - only when the pack reports a waiver

        if (parsed := waivers.parse_waived(message)) is not None:
            policy, key, reason, message = parsed
            level, waiver = WAIVED, f"{key}: {reason}"
    return Finding(
        policy=policy,
        level=MANDATORY if level == REMEDIATE else level,
        severity=enum_names().severity.get(d.severity, "unspecified"),
        message=message,
        waiver=waiver,
        urn=urn,
        resource_type=r.type if r else "",
        resource_name=r.name if r else "",
        object=k8s_object(r.type, r.props) if r else "",
        stage=stage,
        source=(sources or {}).get(urn, ""),
    )


def policy_summary(p: pb.PolicyInfo, reconciled: tuple[str, dict[str, Any]]) -> PolicySummary:
    """The report's line of policy ``p`` at its reconciled (level, properties)."""
    level, props = reconciled
    return PolicySummary(
        name=p.name, description=p.description, level=MANDATORY if level == REMEDIATE else level,
        severity=enum_names().severity.get(p.severity, "unspecified"), remediation=p.remediation_steps,
        policy_type=enum_names().policy_type.get(p.policy_type, "unknown"), display_name=p.displayName,
        tags=tuple(p.tags), url=p.url, config=props,
    )


def pack_version(pack_dir: Path) -> str:
    """The version in PulumiPolicy.yaml (the CLI prefers it over the pack's own)."""
    try:
        import yaml

        return str((yaml.safe_load((Path(pack_dir) / "PulumiPolicy.yaml").read_text(encoding="utf-8")) or {}).get("version", ""))
    except (OSError, ValueError):
        return ""



#: A finding's subject naming a container: ``Deployment x, container c:``, ``InferenceService y, predictor
#: init container w:`` (``policylib.resource_helpers.container_label``).
_CONTAINER_SUBJECT = re.compile(r"[^:\n]*?, (?:[a-z]+ )?(?:init |ephemeral )?container ([^\s:,]+)[:,]")


def located(findings: Iterable[Finding], files: dict[str, str], lines: dict[str, int], stack_place: tuple[str, int],
            object_place: tuple[str, int] | None = None) -> tuple[Finding, ...]:
    """``findings`` with a file and line each (SARIF's physical location): an object's at its file
    (``files``, URN -> path) and line (``lines``); a finding on no object of ``files`` at
    ``stack_place`` (the stack file's ``llm-serving:cluster`` key: what a stack policy without a
    resource judged), or at ``object_place`` when it names an object (a kustomize build's object:
    its kustomization file). A finding whose subject names a container (``Deployment x, container c:``)
    is at that container's entry in the document, where the file is YAML."""
    out = []
    containers: dict[str, dict[tuple[int, str], int]] = {}
    for f in findings:
        if f.urn in files:
            f = dataclasses.replace(f, source=files[f.urn], line=lines.get(f.urn, 0))
            named = _CONTAINER_SUBJECT.match(f.message)
            if named and f.source.endswith((".yaml", ".yml")):
                if f.source not in containers:
                    try:
                        containers[f.source] = container_lines(read_text(Path(f.source), "manifest"))
                    except InputFileError:
                        containers[f.source] = {}
                f = dataclasses.replace(f, line=containers[f.source].get((f.line, named[1]), f.line))
        elif f.object and object_place is not None:
            f = dataclasses.replace(f, source=object_place[0], line=object_place[1])
        elif not f.source:
            f = dataclasses.replace(f, source=stack_place[0], line=stack_place[1])
        out.append(f)
    return tuple(out)


def stack_file_places(stack_file: Path, resources: Iterable[Resource]) -> tuple[dict[str, str], dict[str, int], tuple[str, int]]:
    """Where each of the program's ``resources`` is written in ``stack_file``: (URN -> the file, URN ->
    the line of its stack-file key, :func:`core.judging.terms.stack_file_key`; the ``llm-serving:cluster`` key's
    place for the rest). A resource no key made (the stack, a provider) is at the ``config:`` key."""
    from core.judging import terms  # noqa: PLC0415 - the stack file's terms, after the pack has started

    shown = display_path(stack_file)
    keys = key_lines(read_text(stack_file, "stack file"))
    top = keys.get(("config",), 1)
    files: dict[str, str] = {}
    lines: dict[str, int] = {}
    for r in resources:
        meta = r.props.get("metadata") if isinstance(r.props, dict) else None
        key = terms.stack_file_key((meta or {}).get("annotations") or {}) if isinstance(meta, dict) else None
        files[r.urn] = shown
        lines[r.urn] = keys.get(("config", *key.split(".", 1)), top) if key else top
    return files, lines, (shown, keys.get(("config", f"{PROJECT}:cluster"), top))

