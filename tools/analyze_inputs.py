"""What ``analyze`` judges, read and checked before the pack's verdicts: a directory of plain
manifests with a stack-format inventory (:func:`analyze_manifests`), or the program run under the
mock runtime for a stack file (:func:`analyze_program`). Each starts the pack first, so its
start-up overlaps the reading, and returns the report with each finding located in the files.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.base.inputs import read_text
from core.base.stackkeys import PROJECT
from tools import cli
from tools import context as running
from tools.offline import packproc
from tools.offline.findings import located, stack_file_places
from tools.offline.manifests import Resource, display_path, load_stack_file, read_manifests
from tools.offline.packrun import PACK_DIR, not_judged, start_pack
from tools.offline.policyconfig import AnalyzeError
from tools.offline.report import Report
from tools.offline.yamlload import key_lines

#: The stack config key of the namespace (plain manifests without one are judged in it).
NAMESPACE_KEY = f"{PROJECT}:namespace"


def stack_name_of(stack_file: Path, default: str = "manifests") -> str:
    """``prod`` for ``Pulumi.prod.yaml``; ``default`` for another file name. Raises
    :class:`AnalyzeError` when the name it gives is no stack name the Pulumi CLI takes (empty, a
    newline, ``$(id)``: it names URNs, a directory under ``out/`` and shell commands in fixes)."""
    parts = Path(stack_file).name.split(".")
    name = parts[1] if len(parts) == 3 and parts[0] == "Pulumi" and parts[2] in ("yaml", "yml") else default
    try:
        return cli.stack_name(name)
    except argparse.ArgumentTypeError:
        raise AnalyzeError(f"{cli.one_line(str(stack_file))}: the file's name gives the stack name "
                           f"{cli.one_line(repr(name))}, which is not a stack name (letters, digits, '-', '_' and '.', "
                           "1 to 100 of them, as `pulumi stack init` takes); fix: rename the file "
                           "Pulumi.<stack>.yaml, e.g. Pulumi.try.yaml") from None


def manifest_resources(directory: Path, stack: str, namespace: str | None = None) -> tuple[list[Resource], dict[str, str]]:
    """(resources, URN -> source file) of a plain-manifest directory or file
    (:func:`tools.offline.manifests.read_manifests`; a kustomize directory is built as one unit, with
    no per-file sources)."""
    found = read_manifests(directory, stack, namespace)
    return found.resources, found.sources


def load_inventory(path: Path) -> dict[str, Any]:
    """The config of the stack-format file ``path`` that ``--manifests`` is judged with. Its
    ``llm-serving:cluster`` (required) and ``llm-serving:models`` are validated by the
    program's own loader first, so a missing or invalid inventory is one error with its key
    path (exit 2), not a violation repeated by every policy. Raises :class:`AnalyzeError` or
    :class:`tools.offline.manifests.InputError`."""
    config = load_stack_file(path, "inventory")
    check_inventory(config, path)
    return config


def check_inventory(config: dict[str, Any], path: Path) -> None:
    """Validate the stack config ``config`` read from ``path`` as :func:`load_inventory` does.
    Raises :class:`AnalyzeError`."""
    from core.base.stackkeys import CONFIG_KEYS
    from stackfile import ConfigError, load_stack_config

    read = {k: config[k] for k in (*CONFIG_KEYS, NAMESPACE_KEY) if k in config}
    try:
        load_stack_config(read, source=f"the inventory {path}")
    except ConfigError as err:
        raise AnalyzeError(err.render()) from None


def analyze_manifests(directory: Path, inventory: Path, policy_pack_config: dict[str, Any] | None = None,
                      pack_dir: Path = PACK_DIR, workers: int = 1,
                      context: Callable[[], list[Resource]] | None = None, context_name: str = "") -> Report:
    """Judge a directory of plain manifests with the config of the stack-format file
    ``inventory`` (its ``llm-serving:cluster`` and ``llm-serving:models``, :func:`load_inventory`).
    Objects without a namespace are judged in the inventory's ``llm-serving:namespace``
    (default llm-serving); that, and an object found twice, are the report's notes.

    The pack is spawned as soon as the stack file is read: the inventory's validation and the
    manifests' reading run while it starts (an error there stops it; same message, same exit).
    ``context`` gives what already runs (:mod:`tools.context`, named ``context_name``): the
    manifests are judged beside it, and only findings about them (and the stack) are reported."""
    config = load_stack_file(inventory, "inventory")
    stack = stack_name_of(inventory)

    def read_input() -> Any:
        check_inventory(config, inventory)
        found = read_manifests(directory, stack, str(config.get(NAMESPACE_KEY) or "llm-serving"))
        if not found.resources:
            raise AnalyzeError(f"cannot check {directory}: it holds no Kubernetes objects; "
                               "fix: pass a directory of *.yaml / *.json manifests or a kustomize directory")
        return found

    try:
        pack = start_pack(config, stack=stack, pack_dir=pack_dir, workers=workers)
    except packproc.PackStartError:
        read_input()  # an input error is reported before a pack that cannot start, as ever
        raise
    with pack:
        found = read_input()
        resources, beside = running.merge(found.resources, context() if context else [])
        _check_measured_servers(config, inventory, resources)
        report = pack.analyze(resources, policy_pack_config, found.sources)
    notes = (f"judged beside {len(beside)} object(s) of {context_name}; their own findings are left out",) if context else ()
    # What was not judged: of the file's objects only, as for the findings (the context's are its own).
    unjudged = tuple(not_judged(found.resources, config)) if context else report.not_judged
    shown = display_path(inventory)
    cluster = (shown, key_lines(read_text(inventory, "inventory")).get(("config", f"{PROJECT}:cluster"), 1))
    kustomization = next((display_path(p) for p in sorted(Path(directory).glob("[kK]ustomization*"))), "")
    findings = located(running.keep_file_findings(report.findings, beside), found.sources, found.lines, cluster,
                       (kustomization, 1) if kustomization else None)
    return dataclasses.replace(report, findings=findings,
                               resources=len(found.resources), notes=(*report.notes, *found.notes, *notes),
                               not_judged=unjudged)


#: The kinds whose object is a model server a measurement may name (the read model's workloads).
SERVER_KINDS = frozenset({"Deployment", "StatefulSet", "InferenceService", "LeaderWorkerSet"})


def _check_measured_servers(config: dict[str, Any], inventory: Path, resources: list[Resource]) -> None:
    """Each server the inventory's ``llm-serving:cluster`` ``measured:`` names is among the objects
    judged: a measurement for a server that does not exist measures nothing (a misspelt name would
    leave the real server judged on the estimate, unsaid). Raises :class:`AnalyzeError`."""
    cluster = config.get("llm-serving:cluster")
    measured = cluster.get("measured") if isinstance(cluster, dict) else None
    if not isinstance(measured, dict):
        return
    servers = {str((r.props.get("metadata") or {}).get("name")) for r in resources
               if isinstance(r.props, dict) and r.props.get("kind") in SERVER_KINDS}
    ghosts = sorted(str(n) for n in measured if str(n) not in servers)
    if ghosts:
        raise AnalyzeError(f"{inventory}: llm-serving:cluster.measured.{cli.one_line(ghosts[0])} names a server no "
                           f"manifest holds (servers: {', '.join(sorted(servers)) or 'none'}), so it measures nothing; "
                           "fix: name the Deployment or InferenceService it was measured on, or remove it")



def analyze_program(stack_file: Path, policy_pack_config: dict[str, Any] | None = None,
                    pack_dir: Path = PACK_DIR, program: Path | None = None, workers: int = 1,
                    stack: str | None = None) -> Report:
    """Run the program (``__main__.py``) under the mock runtime for ``stack_file`` and judge
    every resource it registers. The pack starts first, so its start-up overlaps the program.
    ``stack`` names the stack (its URNs); default: ``<stack>`` of ``Pulumi.<stack>.yaml``, else prod."""
    config = load_stack_file(stack_file)
    stack = stack or stack_name_of(stack_file, default="prod")
    with start_pack(config, stack=stack, pack_dir=pack_dir, workers=workers) as pack:
        resources = program_resources(config, stack, program)
        report = pack.analyze(resources, policy_pack_config)
    files, lines, cluster = stack_file_places(stack_file, resources)
    return dataclasses.replace(report, findings=located(report.findings, files, lines, cluster))


def program_resources(config: dict[str, Any], stack: str, program: Path | None = None) -> list[Resource]:
    """The program's resources from ``tools.offline.mockrun.run_program``. Raises :class:`AnalyzeError`
    when the mock runner is missing or the program reports a config error (its message, no
    traceback); a crash of the program (a bug) propagates with its traceback."""
    try:
        from tools.offline import mockrun
    except ImportError as err:
        raise AnalyzeError(f"cannot run the program: tools.offline.mockrun is not importable ({err}); "
                           "fix: check with --manifests DIR --inventory STACKFILE instead") from None
    kwargs: dict[str, Any] = {"stack": stack, "project": PROJECT}
    if program is not None:
        kwargs["program"] = program
    try:
        run = mockrun.run_program(config, **kwargs)
    except mockrun.ProgramError as err:
        raise AnalyzeError(f"cannot run the program for stack {stack}: {err}") from None
    return list(run.resources)

