"""The offline policy runner: the real policy pack, as its own process, over the analyzer gRPC
protocol, in the order the Pulumi CLI uses, so its verdicts match
``pulumi preview --policy-pack policies``.

The CLI's order (``pkg/engine`` ``installAndLoadPolicyPlugins``, ``NewPolicyAnalyzer`` in
``sdk/go/common/resource/plugin/analyzer_plugin.go``, the step generator and the deployment
executor), which :class:`PackProcess` follows:

1. start the pack (:func:`tools.offline.packproc.spawn`), ``Handshake`` (UNIMPLEMENTED tolerated),
   ``ConfigureStack`` (stack, project, organization, config, dry run);
2. ``GetAnalyzerInfo``, ``GetPluginInfo``;
3. reconcile the policy pack config with the policies' defaults and validate it with
   jsonschema against each policy's ``configSchema`` plus the ``enforcementLevel`` enum the CLI
   injects (:func:`reconcile_policy_config`), then ``Configure`` with every policy;
4. per resource: ``Remediate`` (only when a policy is at level ``remediate``: with none,
   pulumi-policy's Remediate returns nothing, so skipping it changes no result) and
   ``Analyze`` -- pipelined, up to :data:`tools.offline.packproc.PIPELINE_WINDOW` calls in flight;
5. ``AnalyzeStack`` with every resource (parent, dependencies, options).

Findings are sorted (:class:`tools.offline.report.Report`), so the order of the resources does not
change the report. A finding from ``Analyze`` carries the analysed resource's URN, as the
engine reports it; one from ``AnalyzeStack`` carries the URN the policy gave when that resource
is in the stack, else the stack's root URN (the engine's ``resolveStackPolicyViolationURN``:
the real CLI reports a stack policy's violation without a resource on the Stack).

Public API: :func:`run_pack`, :func:`start_pack` / :class:`PackProcess` (the preview starts
the pack before running the program, to overlap the pack's start-up), :func:`analyze_manifests`
and :func:`analyze_program` (what the CLI runs; a test can compare their verdicts).

CLI (exit 0: no mandatory violation; 1: a mandatory policy is violated; 2: an error before any
verdict -- bad input, bad policy pack config, the pack failed; the message says what to fix)::

    python -m tools.analyze (--stack prod | --stack-file F | --manifests DIR --inventory STACKFILE)
        [--context-stack STACK | --context-namespace NS [--kubeconfig F]]
        [--policy-pack-config F] [--format table|json|sarif|junit|markdown] [--output F]
        [--also FORMAT=PATH ...] [--force] [--pack-dir DIR] [--workers N]

``--output`` and ``--also`` write under ``out/`` only and never over a file git tracks,
unless ``--force`` is given (:func:`check_output_path`).

Policy pack config is stricter than the CLI in two ways, both to catch typos: a key that
names no policy of the pack, and a property the policy's ``configSchema`` does not declare,
are errors (the CLI ignores both).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import queue
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from core.inputs import InputFileError, json_object, read_text
from core.stackkeys import PROJECT
from tools import cli
from tools import context as running
from tools.offline import packproc
from tools.offline.manifests import InputError, Resource, config_env, display_path, load_stack_file, read_manifests
from tools.offline.report import (
    ADVISORY,
    DISABLED,
    FORMATS,
    MANDATORY,
    REMEDIATE,
    WAIVED,
    WAIVERS_POLICY,
    Finding,
    PolicySummary,
    Report,
)
from tools.offline.yamlload import container_lines, key_lines

# grpc, protobuf, pulumi's stubs, jsonschema and pydantic's models load on first use, after the
# pack process is spawned (``--manifests``: :func:`analyze_manifests`), so its start-up overlaps ours.
if TYPE_CHECKING:
    import jsonschema
    from google.protobuf import json_format, struct_pb2
    from pulumi.runtime.proto import analyzer_pb2 as pb
else:
    jsonschema = packproc.LazyModule("jsonschema")
    json_format = packproc.LazyModule("google.protobuf.json_format")
    struct_pb2 = packproc.struct_pb2
    pb = packproc.pb

ROOT = Path(__file__).resolve().parent.parent
#: Where an installed package keeps the policy pack (``[tool.setuptools.data-files]`` of
#: pyproject.toml), under the environment's data directory.
INSTALLED_PACK = Path("share") / "llm-serving" / "policies"


def default_pack_dir() -> Path:
    """The policy pack: the checkout's ``policies/`` (``pip install -e .``, ``python3 dev.py``),
    else the one ``pip install .`` put under the environment's data directory (the venv's prefix;
    the user base for ``pip install --user``), else ``policies/`` beside the package (reported as
    missing when it is used)."""
    import site
    import sysconfig

    here = ROOT / "policies"
    if (here / "PulumiPolicy.yaml").is_file():
        return here
    for base in (sysconfig.get_path("data"), site.getuserbase()):
        if (Path(base) / INSTALLED_PACK / "PulumiPolicy.yaml").is_file():
            return Path(base) / INSTALLED_PACK
    return here


PACK_DIR = default_pack_dir()
#: The stack config key of the namespace (plain manifests without one are judged in it).
NAMESPACE_KEY = f"{PROJECT}:namespace"
#: The enforcement levels the CLI accepts (apitype.EnforcementLevel; injected into each
#: policy's config schema by analyzer.GetAnalyzerInfo).
LEVELS = ("advisory", "mandatory", "remediate", "disabled")


@functools.cache
def _enum_names() -> SimpleNamespace:
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


class AnalyzeError(Exception):
    """An error before any verdict (exit code 2); the message states the action, the subject,
    the reason and the fix."""


class PolicyConfigError(AnalyzeError):
    """The policy pack config is invalid. ``problems`` lists each one (key path, value, rule, fix)."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("cannot configure the policy pack:\n" + "\n".join(f"  - {p}" for p in problems))


# --- policy pack config --------------------------------------------------------------------------

def load_policy_pack_config(path: Path) -> dict[str, Any]:
    """The JSON object of a ``--policy-pack-config`` file (empty file: ``{}``), read with
    :mod:`core.inputs` (a regular file of at most 16 MiB, UTF-8, each key once). Raises
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
        result[p.name] = {"enforcementLevel": _enum_names().level_name[p.enforcementLevel], **defaults}
    for name, cfg in info.initialConfig.items():
        if name in result:
            _apply(result[name], {"enforcementLevel": _enum_names().level_name[cfg.enforcementLevel], **json_format.MessageToDict(cfg.properties)})
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
        out[name] = pb.PolicyConfig(enforcementLevel=_enum_names().level_enum[level], properties=s)
    return out


# --- the pack process ----------------------------------------------------------------------------

class PackProcess:
    """A started policy pack (see :func:`start_pack`). :meth:`analyze` may be called more than
    once; :meth:`close` (or ``with``) stops the process(es), also after an error.

    With ``workers`` > 1 (opt-in; the CLI runs one process) the same pack runs as that many
    processes: the last one judges AnalyzeStack while the others take the Analyze calls, split
    between them by resource. The stack request is sent first, once every ``Struct`` is built, so
    the stack policies (a quarter of the pack's time at 10,000 resources) run beside the resource
    policies instead of after them. Every policy still sees exactly the arguments it would see in
    one process, so the report is the same; it only uses another core.
    """

    def __init__(self, conns: Sequence[packproc.PackConnection], env: packproc.PackEnv, config: dict[str, Any]):
        self.conns = list(conns)
        self.env = env
        self._config = config
        self._info: pb.AnalyzerInfo | None = None
        self._plugin_version = ""
        #: Wall seconds of the last :meth:`analyze`, by phase (bench/pack_bench.py prints them).
        self.timings: dict[str, float] = {}

    @property
    def conn(self) -> packproc.PackConnection:
        """The first (with one worker: the only) pack process."""
        return self.conns[0]

    def __enter__(self) -> PackProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for conn in self.conns:
            conn.close()

    def info(self) -> pb.AnalyzerInfo:
        """Wait for the pack, then Handshake, ConfigureStack, GetAnalyzerInfo, GetPluginInfo (once)."""
        if self._info is None:
            strings = {k: v if isinstance(v, str) else json.dumps(v) for k, v in self._config.items()}
            for conn in self.conns:
                conn.handshake()
                conn.configure_stack(self.env, strings)
            self._info = self.conn.analyzer_info()
            self._plugin_version = self.conn.plugin_version()
        return self._info

    def analyze(self, resources: Sequence[Resource], policy_pack_config: dict[str, Any] | None = None,
                sources: dict[str, str] | None = None) -> Report:
        """Configure the pack with ``policy_pack_config`` and judge ``resources``.

        ``sources`` maps a URN to the manifest file it came from (SARIF locations). Raises
        :class:`PolicyConfigError`, :class:`tools.offline.packproc.PackStartError` or
        :class:`tools.offline.packproc.PackCallError`.
        """
        clock = _Clock()
        return self._judge(list(resources), self._configure(policy_pack_config, clock), sources, clock)

    def stream(self, policy_pack_config: dict[str, Any] | None = None,
               sources: dict[str, str] | None = None) -> PackStream:
        """A :class:`PackStream`: hand it each resource as the program registers it, then
        :meth:`PackStream.finish` with every resource; the same report as :meth:`analyze`."""
        return PackStream(self, policy_pack_config, sources)

    def _configure(self, policy_pack_config: dict[str, Any] | None, clock: _Clock) -> _Setup:
        """Handshake and the rest (:meth:`info`), then ``Configure`` with the reconciled policy pack config."""
        info = self.info()
        clock.lap("start")
        reconciled = reconcile_policy_config(info, policy_pack_config)
        configs = policy_configs(reconciled)
        _each(self.conns, lambda conn: conn.configure(configs))
        clock.lap("configure")
        return _Setup(info, reconciled, any(level == REMEDIATE for level, _ in reconciled.values()))

    def _judge(self, resources: list[Resource], setup: _Setup, sources: dict[str, str] | None, clock: _Clock,
               streamed: dict[int, tuple[struct_pb2.Struct, pb.AnalyzeResponse]] | None = None) -> Report:
        """Analyze (unless ``streamed`` holds each resource's Struct and response, by ``id``),
        AnalyzeStack, and the report, on a configured pack."""
        info, reconciled, remediating = setup.info, setup.reconciled, setup.remediating
        structs = [packproc.to_struct(r.props) for r in resources] if remediating else []
        if streamed is not None:
            structs = [streamed[id(r)][0] for r in resources]
        findings: list[Finding] = []
        notes: list[str] = []
        if remediating:
            self._remediate(resources, structs, findings, notes)
            clock.lap("remediate")

        def requests() -> Iterator[pb.AnalyzeRequest]:
            # Each Struct built as its request is sent, so building them overlaps the pack's
            # Analyze calls already in flight (this thread waits for the pack most of the time).
            for i, r in enumerate(resources):
                if i == len(structs):
                    structs.append(packproc.to_struct(r.props))
                yield packproc.analyze_request(r, structs[i])

        def stack() -> list[pb.AnalyzeDiagnostic]:
            resources_of_stack = [packproc.analyzer_resource(r, s) for r, s in zip(resources, structs, strict=True)]
            return list(self.conns[-1].analyze_stack(resources_of_stack).diagnostics)

        objects = {r.urn: r for r in resources}
        root = root_stack_urn(self.env.stack, self.env.project)
        # What the pack does not judge is the client's own work: done while the pack works (the
        # threads waiting for it are in gRPC, without the GIL): with one process during
        # AnalyzeStack, its longest single call; with several during the Analyze calls, as
        # AnalyzeStack (in the last process) then is.
        with ThreadPoolExecutor(max_workers=2) as pool:
            stack_call = unjudged = None
            if len(self.conns) > 1:
                structs += [packproc.to_struct(r.props) for r in resources[len(structs):]]
                stack_call = pool.submit(stack)
                unjudged = pool.submit(not_judged, resources, self._config)
            responses = ([streamed[id(r)][1] for r in resources] if streamed is not None
                         else self._sharded("Analyze", requests(), self.conns[:-1] or self.conns))
            for r, resp in zip(resources, responses, strict=True):
                findings.extend(_finding(d, r.urn, objects, "resource", sources) for d in resp.diagnostics)
            clock.lap("analyze")
            if unjudged is None:
                unjudged = pool.submit(not_judged, resources, self._config)
            for d in (stack_call or pool.submit(stack)).result():
                findings.append(_finding(d, d.urn if d.urn in objects else root, objects, "stack", sources))
            clock.lap("analyze_stack")
            notes_not_judged = tuple(unjudged.result())
        self.timings = clock.laps
        return Report(
            pack=info.name, pack_version=_pack_version(self.conn.pack_dir) or info.version,
            project=self.env.project, stack=self.env.stack, resources=len(resources),
            policies=tuple(_summary(p, reconciled[p.name]) for p in info.policies),
            findings=tuple(findings), plugin_version=self._plugin_version, notes=tuple(notes),
            not_judged=notes_not_judged,
        )

    def _sharded(self, method: str, requests: Iterable[Any],
                 conns: Sequence[packproc.PackConnection] | None = None) -> list[Any]:
        """``method`` for every request, split round-robin between ``conns`` (default: every
        process); in order. One process takes ``requests`` as they come (an iterator is consumed
        while the calls run)."""
        conns = list(conns or self.conns)
        k = len(conns)
        if k == 1:
            return conns[0].pipelined(method, requests)
        every = list(requests)
        parts = _each(conns, lambda conn, i: conn.pipelined(method, every[i::k]), indexed=True)
        out: list[Any] = [None] * len(every)
        for i, part in enumerate(parts):
            out[i::k] = part
        return out

    def _remediate(self, resources: list[Resource], structs: list[struct_pb2.Struct],
                   findings: list[Finding], notes: list[str]) -> None:
        """The engine's first pass: apply each remediation's properties before Analyze."""
        responses = self._sharded("Remediate", [packproc.analyze_request(r, s) for r, s in zip(resources, structs, strict=True)])
        for i, (r, resp) in enumerate(zip(resources, responses, strict=True)):
            for rem in resp.remediations:
                if rem.diagnostic:
                    findings.append(Finding(policy=rem.policyName, level=ADVISORY, severity="unspecified",
                                            message=rem.diagnostic, urn=r.urn, resource_type=r.type,
                                            resource_name=r.name, object=k8s_object(r.type, r.props)))
                elif rem.HasField("properties"):
                    structs[i] = rem.properties
                    notes.append(f"{rem.policyName} remediated {r.urn}")


@dataclasses.dataclass(frozen=True)
class _Setup:
    """A configured pack: its info, the reconciled policy pack config, whether a policy remediates."""

    info: pb.AnalyzerInfo
    reconciled: dict[str, tuple[str, dict[str, Any]]]
    remediating: bool


class PackStream:
    """The pack judging while the program runs (:meth:`PackProcess.stream`; the preview).

    A thread configures the pack (as :meth:`PackProcess.analyze` does, once the pack has
    started) and sends an ``Analyze`` call for each resource :meth:`put` hands it, in the order
    they come, pipelined on the pack's one connection, while the caller goes on (the program
    registering the next ones). :meth:`finish`, once the program has ended, takes every resource
    in the report's order (``tools.offline.mockrun``: the root Stack first, then by URN), sends
    ``AnalyzeStack`` and builds the report exactly as :meth:`PackProcess.analyze` would from
    that list: each response is matched to its resource, not to its arrival, so the order of
    registration changes nothing. With a policy at level ``remediate`` (Remediate comes first,
    for every resource) or several pack processes, nothing is sent early and :meth:`finish`
    judges as :meth:`PackProcess.analyze`.

    Errors of the pack (:class:`PolicyConfigError`, ``PackStartError``, ``PackCallError``) are
    held by the thread: :meth:`ready` raises those of the configuration, :meth:`finish` any.
    :meth:`stop` ends the thread (after an error of the caller, an interrupt); close the pack
    after it, so a call still in flight fails at once.
    """

    _END = object()

    def __init__(self, pack: PackProcess, policy_pack_config: dict[str, Any] | None, sources: dict[str, str] | None):
        self._pack = pack
        self._policy_pack_config = policy_pack_config
        self._sources = sources
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._clock = _Clock()
        self._setup: _Setup | None = None
        self._streamed: dict[int, tuple[struct_pb2.Struct, pb.AnalyzeResponse]] | None = None
        self._error: BaseException | None = None
        self._configured = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pack-stream", daemon=True)
        self._thread.start()

    def put(self, resource: Resource) -> None:
        """Judge ``resource`` (its ``props`` no longer change); thread-safe, returns at once."""
        self._queue.put(resource)

    def ready(self) -> None:
        """Wait until the pack is configured; raise what the configuration raised."""
        self._configured.wait()
        if self._setup is None and self._error is not None:
            raise self._error

    def finish(self, resources: Sequence[Resource]) -> Report:
        """The report over ``resources`` (every resource :meth:`put` was given, in the report's
        order), as :meth:`PackProcess.analyze` builds it. Raises what the pack raised."""
        self._queue.put(self._END)
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._setup is not None
        return self._pack._judge(list(resources), self._setup, self._sources, self._clock, self._streamed)

    def stop(self) -> None:
        """End the thread without a report (idempotent); a call in flight ends when the pack is closed."""
        self._queue.put(self._END)

    def join(self) -> None:
        """Wait for the thread to end (after :meth:`stop` and the pack's close)."""
        self._thread.join()

    def _run(self) -> None:
        try:
            self._setup = self._pack._configure(self._policy_pack_config, self._clock)
        except BaseException as err:  # noqa: BLE001 - raised by ready() and finish()
            self._error = err
        finally:
            self._configured.set()
        if self._setup is None or self._setup.remediating or len(self._pack.conns) > 1:
            return
        taken: list[tuple[Resource, struct_pb2.Struct]] = []

        def requests() -> Iterator[pb.AnalyzeRequest]:
            while (r := self._queue.get()) is not self._END:
                taken.append((r, packproc.to_struct(r.props)))
                yield packproc.analyze_request(r, taken[-1][1])

        try:
            responses = self._pack.conn.pipelined("Analyze", requests())
        except BaseException as err:  # noqa: BLE001 - raised by finish()
            self._error = err
            return
        self._streamed = {id(r): (s, resp) for (r, s), resp in zip(taken, responses, strict=True)}
        self._clock.lap("analyze (streamed)")


def _each(conns: list[packproc.PackConnection], fn: Any, indexed: bool = False) -> list[Any]:
    """``fn(conn)`` (or ``fn(conn, i)``) for every connection, on threads when there are
    several; results in connection order; the first exception is re-raised."""
    call = (lambda c, i: fn(c, i)) if indexed else (lambda c, i: fn(c))
    if len(conns) == 1:
        return [call(conns[0], 0)]
    results: list[Any] = [None] * len(conns)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = call(conns[i], i)
        except BaseException as err:  # noqa: BLE001 - re-raised below on the caller's thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(conns))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


class _Clock:
    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = now - self._t
        self._t = now


def not_judged(resources: Sequence[Resource], config: dict[str, Any]) -> list[str]:
    """What the pack did not judge in ``resources`` (``policylib.coverage``), with the inventory of
    the stack ``config`` (None when it has none or it is invalid: the policies report that)."""
    from core.inventory import CLUSTER_CONFIG_KEY, ClusterInventory
    from core.modelfacts import MODELS_CONFIG_KEY, ModelEntry
    from policylib import coverage

    raw = config.get(f"{PROJECT}:{CLUSTER_CONFIG_KEY}")
    try:
        inventory = ClusterInventory.model_validate(json.loads(raw) if isinstance(raw, str) else raw) if raw else None
    except ValueError:
        inventory = None
    views = [SimpleNamespace(resource_type=r.type, props=r.props, urn=r.urn) for r in resources]
    raw_models = config.get(f"{PROJECT}:{MODELS_CONFIG_KEY}") or {}
    try:
        models = json.loads(raw_models) if isinstance(raw_models, str) else raw_models
        entries = [ModelEntry.model_validate(e) for e in (models or {}).values()]
    except ValueError:
        entries = []
    return coverage.not_judged(views, inventory, models_declared=bool(entries),
                               model_known=lambda arg: arg is not None and any(e.matches(arg) for e in entries))


def start_pack(config: dict[str, Any], *, stack: str = "prod", project: str = PROJECT,
               organization: str = "organization", pack_dir: Path = PACK_DIR,
               python: str | None = None, dry_run: bool = True, workers: int = 1) -> PackProcess:
    """Start the pack process now and return at once; it imports its policies while the
    caller does other work (the preview runs the program). ``config`` is the stack file's
    ``config:`` map (``tools.offline.manifests.load_stack_file``). ``workers`` > 1 starts that many
    processes (see :class:`PackProcess`). Raises :class:`tools.offline.packproc.PackStartError` if
    ``pack_dir`` is no policy pack."""
    env = packproc.PackEnv(config_json=config_env(config), project=project, stack=stack,
                           organization=organization, dry_run=dry_run)
    conns: list[packproc.PackConnection] = []
    try:
        for _ in range(max(1, workers)):
            conns.append(packproc.spawn(pack_dir, env, python))
    except BaseException:
        for conn in conns:
            conn.close()
        raise
    return PackProcess(conns, env, config)


def run_pack(resources: list[Resource], config: dict[str, Any], *, stack: str = "prod", project: str = PROJECT,
             policy_pack_config: dict[str, Any] | None = None, pack_dir: Path = PACK_DIR,
             sources: dict[str, str] | None = None, python: str | None = None, workers: int = 1) -> Report:
    """Start the pack, judge ``resources`` with the stack ``config``, stop the pack.
    Errors as :meth:`PackProcess.analyze`; the process is stopped in every case."""
    with start_pack(config, stack=stack, project=project, pack_dir=pack_dir, python=python, workers=workers) as pack:
        return pack.analyze(resources, policy_pack_config, sources)


# --- findings -------------------------------------------------------------------------------------

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


def _finding(d: pb.AnalyzeDiagnostic, urn: str, objects: dict[str, Resource], stage: str,
             sources: dict[str, str] | None) -> Finding:
    """The report's finding of diagnostic ``d``; a waived finding (policy-waivers' ``waived ...`` form,
    :mod:`core.rulebook.waivers`) is the waived policy's, at level ``waived``, with the waiver."""
    r = objects.get(urn)
    level = _enum_names().level_name.get(d.enforcementLevel, ADVISORY)
    policy, message, waiver = d.policyName, strip_description(d.message, d.description), ""
    if policy == WAIVERS_POLICY:
        from core.rulebook import waivers  # noqa: PLC0415 - only when the pack reports a waiver

        if (parsed := waivers.parse_waived(message)) is not None:
            policy, key, reason, message = parsed
            level, waiver = WAIVED, f"{key}: {reason}"
    return Finding(
        policy=policy,
        level=MANDATORY if level == REMEDIATE else level,
        severity=_enum_names().severity.get(d.severity, "unspecified"),
        message=message,
        waiver=waiver,
        urn=urn,
        resource_type=r.type if r else "",
        resource_name=r.name if r else "",
        object=k8s_object(r.type, r.props) if r else "",
        stage=stage,
        source=(sources or {}).get(urn, ""),
    )


def _summary(p: pb.PolicyInfo, reconciled: tuple[str, dict[str, Any]]) -> PolicySummary:
    level, props = reconciled
    return PolicySummary(
        name=p.name, description=p.description, level=MANDATORY if level == REMEDIATE else level,
        severity=_enum_names().severity.get(p.severity, "unspecified"), remediation=p.remediation_steps,
        policy_type=_enum_names().policy_type.get(p.policy_type, "unknown"), display_name=p.displayName,
        tags=tuple(p.tags), url=p.url, config=props,
    )


def _pack_version(pack_dir: Path) -> str:
    """The version in PulumiPolicy.yaml (the CLI prefers it over the pack's own)."""
    try:
        import yaml

        return str((yaml.safe_load((Path(pack_dir) / "PulumiPolicy.yaml").read_text(encoding="utf-8")) or {}).get("version", ""))
    except (OSError, ValueError):
        return ""


# --- inputs ---------------------------------------------------------------------------------------

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
    from core.stackkeys import CONFIG_KEYS
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
    the line of its stack-file key, :func:`core.terms.stack_file_key`; the ``llm-serving:cluster`` key's
    place for the rest). A resource no key made (the stack, a provider) is at the ``config:`` key."""
    from core import terms  # noqa: PLC0415 - the stack file's terms, after the pack has started

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


# --- CLI ------------------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    ap = cli.parser("python -m tools.analyze", __doc__)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--stack", type=cli.stack_name, help="the program under the mock runtime with Pulumi.<STACK>.yaml")
    src.add_argument("--stack-file", type=Path, help="the program under the mock runtime with this stack file")
    src.add_argument("--manifests", type=Path, help="a directory of plain manifests (or a kustomize directory)")
    ap.add_argument("--inventory", type=Path, help="with --manifests: a stack-format file holding llm-serving:cluster/models")
    ctx = ap.add_mutually_exclusive_group()
    ctx.add_argument("--context-stack", metavar="STACK",
                     help="with --manifests: judge them beside the stack's offline rendering (default inventory: Pulumi.STACK.yaml)")
    ctx.add_argument("--context-namespace", metavar="NS",
                     help="with --manifests: judge them beside the live objects of namespace NS (kubectl)")
    ap.add_argument("--kubeconfig", type=Path, help="with --context-namespace: kubectl's kubeconfig (default: kubectl's own)")
    ap.add_argument("--policy-pack-config", type=Path, help="JSON, as `pulumi preview --policy-pack-config`")
    ap.add_argument("--format", choices=FORMATS, default="table")
    ap.add_argument("--output", help="write the report here (default: stdout; a directory ending in /: its policy.<ext>)")
    ap.add_argument("--also", action="append", default=[], metavar="FORMAT=PATH",
                    help="also write the report in FORMAT to PATH (repeatable), e.g. sarif=out/policy.sarif")
    ap.add_argument("--force", action="store_true",
                    help="let --output / --also write outside out/ or over a file git tracks")
    ap.add_argument("--pack-dir", type=Path, default=PACK_DIR,
                    help="the policy pack directory (default: the checkout's policies/, or the installed package's pack)")
    cli.add_project(ap)
    ap.add_argument("--workers", type=_workers, default=1,
                    help=f"pack processes, 1 to {MAX_WORKERS} (default 1, as the CLI); with more, the last judges the "
                         "stack while the others take the resources; same report")
    return ap


#: The most pack processes ``--workers`` starts: each is a Python process of about 100 MB, and more
#: than the machine's cores only queue (argparse refuses 0, negatives and more, exit 2).
MAX_WORKERS = 16


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; fix: give 1 to {MAX_WORKERS}") from None
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"{n} is outside 1 to {MAX_WORKERS}; fix: give 1 to {MAX_WORKERS} (at most "
                                         f"this machine's {os.cpu_count() or 1} cores helps)")
    return n


def _extra_outputs(specs: Iterable[str]) -> list[tuple[str, Path]]:
    out = []
    for spec in specs:
        fmt, _, path = spec.partition("=")
        if fmt not in FORMATS or not path:
            raise AnalyzeError(f"--also {spec}: not FORMAT=PATH with FORMAT one of {', '.join(FORMATS)}; "
                               "fix: e.g. --also sarif=out/policy.sarif")
        out.append((fmt, report_path(path, fmt)))
    return out


#: The file a report gets in a directory named with a trailing ``/`` (``--also sarif=out/ci/``).
REPORT_NAMES = {"table": "policy.txt", "json": "policy.json", "sarif": "policy.sarif", "junit": "policy.xml",
                "markdown": "policy.md"}


def report_path(text: str, fmt: str) -> Path:
    """The file a report path names: ``text`` itself, or, for a directory (a trailing ``/``, or an
    existing directory), :data:`REPORT_NAMES`'s file in it (``sarif=out/ci/`` -> ``out/ci/policy.sarif``;
    it wrote a file named ``ci``)."""
    path = Path(text)
    return path / REPORT_NAMES[fmt] if text.endswith(("/", os.sep)) or path.is_dir() else path


#: Where report files may be written without --force (the preview's out/ as well).
OUTPUT_DIR = ROOT / "out"


def check_output_path(path: Path, force: bool = False, out_dir: Path | None = None) -> None:
    """Refuse a report path (``--output``, ``--also``) that is not a regular file or a new
    path, and, unless ``force``, one outside ``out_dir`` (default :data:`OUTPUT_DIR`; the
    command passes its project's ``out/``) or tracked by git (a typo such
    as ``--output README.md`` would replace the project's file). Raises :class:`AnalyzeError`
    before anything is run or written."""
    target = Path(path).absolute()
    if target.exists() and not target.is_file():
        raise AnalyzeError(f"cannot write the report to {path}: it is not a regular file; fix: name a file path")
    if force:
        return
    out_dir = (out_dir or OUTPUT_DIR).resolve()
    if not target.resolve().is_relative_to(out_dir):
        raise AnalyzeError(f"cannot write the report to {path}: it is outside the output folder {out_dir}; "
                           f"fix: write under {out_dir} (e.g. out/policy.sarif), or pass --force to write there")
    if target.exists() and _git_tracked(target):
        raise AnalyzeError(f"cannot write the report to {path}: git tracks that file, which would be overwritten; "
                           "fix: name a new file, or pass --force")


def _git_tracked(path: Path) -> bool:
    """Whether git tracks ``path`` (False without git or outside a repository)."""
    import subprocess

    try:
        proc = subprocess.run(["git", "-C", str(path.parent), "ls-files", "--error-unmatch", "--", path.name],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _context(args: argparse.Namespace, project: Path) -> tuple[Callable[[], list[Resource]] | None, str]:
    """The ``--context-stack`` / ``--context-namespace`` source (None: none) and its name."""
    if args.context_stack:
        return (lambda: running.from_stack(args.context_stack, project, program_resources)), f"stack {args.context_stack}"
    if args.context_namespace:
        return (lambda: running.from_namespace(args.context_namespace, args.kubeconfig)), \
            f"namespace {args.context_namespace} (live)"
    return None, ""


def main(argv: list[str] | None = None) -> int:
    """The command line (the module docstring); returns the exit code. The cyclic collector is
    off while it runs, as in the preview (:func:`tools.cli.collector_off`): the schemas, the
    stack-file models and the gRPC stubs load inside it."""
    args = _parser().parse_args(argv)
    if args.output is not None:
        args.output = report_path(args.output, args.format)
    with contextlib.ExitStack() as scope:
        try:
            project = scope.enter_context(cli.project(args.project))
        except ValueError as err:  # not a project directory
            return cli.fail("analyze", err)
        with cli.collector_off():
            return _main(args, project)


def _main(args: argparse.Namespace, project: Path) -> int:
    try:
        extra = _extra_outputs(args.also)
        targets = [path.absolute() for _, path in [(args.format, args.output), *extra] if path is not None]
        twice = sorted({str(p) for p in targets if targets.count(p) > 1})
        if twice:
            raise AnalyzeError(f"two reports would be written to {twice[0]} (--output and --also, or two --also); the "
                               "second would replace the first; fix: give each report its own path")
        for _, path in [(args.format, args.output), *extra]:
            if path is not None:
                check_output_path(path, args.force, project / "out")
        if args.inventory is not None and args.manifests is None:
            raise AnalyzeError("--inventory is read with --manifests only (a stack file holds its own inventory); "
                               "fix: drop --inventory, or pass --manifests DIR")
        ppc = load_policy_pack_config(args.policy_pack_config) if args.policy_pack_config else None
        if args.manifests is not None:
            if args.inventory is None and args.context_stack:
                args.inventory = project / f"Pulumi.{args.context_stack}.yaml"
            if args.inventory is None:
                raise AnalyzeError("--manifests needs --inventory STACKFILE (a stack-format file with "
                                   "llm-serving:cluster and llm-serving:models, e.g. policies/fixtures/Pulumi.fixture.yaml)")
            context, context_name = _context(args, project)
            report = analyze_manifests(args.manifests, args.inventory, ppc, args.pack_dir, args.workers, context, context_name)
        else:
            stack_file = args.stack_file or project / f"Pulumi.{args.stack}.yaml"
            report = analyze_program(stack_file, ppc, args.pack_dir, program=project / "__main__.py", workers=args.workers)
    except (AnalyzeError, InputError, running.ContextError, packproc.PackStartError,
            packproc.PackCallError) as err:
        return cli.fail("analyze", err)
    files: dict[Path, str] = {}
    for fmt, path in [(args.format, args.output), *extra]:
        text = report.render(fmt)
        if path is None:
            sys.stdout.write(text)
        else:
            files[path] = text
    cli.write_files(files)  # every report written aside, then moved in place: a full disk leaves the last good ones
    if args.output is not None or args.format != "table":
        print(report.headline(), file=sys.stderr)
    return report.exit_code()


if __name__ == "__main__":
    cli.run(main, "analyze")
