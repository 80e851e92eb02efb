"""The policy pack run in the Pulumi CLI's order (``pkg/engine`` ``installAndLoadPolicyPlugins``,
``NewPolicyAnalyzer`` in ``sdk/go/common/resource/plugin/analyzer_plugin.go``, the step generator
and the deployment executor), which :class:`PackProcess` follows:

1. start the pack (:func:`tools.offline.packproc.spawn`), ``Handshake`` (UNIMPLEMENTED tolerated),
   ``ConfigureStack`` (stack, project, organization, config, dry run);
2. ``GetAnalyzerInfo``, ``GetPluginInfo``;
3. reconcile the policy pack config (:func:`tools.offline.policyconfig.reconcile_policy_config`),
   then ``Configure`` with every policy;
4. per resource: ``Remediate`` (only when a policy is at level ``remediate``: with none,
   pulumi-policy's Remediate returns nothing, so skipping it changes no result) and
   ``Analyze`` -- pipelined, up to :data:`tools.offline.packproc.PIPELINE_WINDOW` calls in flight;
5. ``AnalyzeStack`` with every resource (parent, dependencies, options).

Findings are sorted (:class:`tools.offline.report.Report`), so the order of the resources does not
change the report. A finding from ``Analyze`` carries the analysed resource's URN, as the
engine reports it; one from ``AnalyzeStack`` carries the URN the policy gave when that resource
is in the stack, else the stack's root URN (:func:`tools.offline.findings.root_stack_urn`).

Public API: :func:`run_pack`, :func:`start_pack` / :class:`PackProcess` (the preview starts the
pack before running the program, to overlap the pack's start-up; :meth:`PackProcess.stream`
judges while it runs), :func:`not_judged`, :data:`PACK_DIR`.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from core.base.stackkeys import PROJECT
from tools.offline import packproc
from tools.offline.findings import finding, k8s_object, pack_version, policy_summary, root_stack_urn
from tools.offline.manifests import Resource, config_env
from tools.offline.policyconfig import policy_configs, reconcile_policy_config
from tools.offline.report import ADVISORY, REMEDIATE, Finding, Report

# grpc, protobuf, pulumi's stubs and jsonschema load on first use, after the pack process is
# spawned (tools.analyze_inputs.analyze_manifests), so its start-up overlaps ours.
if TYPE_CHECKING:
    from google.protobuf import struct_pb2
    from pulumi.runtime.proto import analyzer_pb2 as pb
else:
    struct_pb2 = packproc.struct_pb2
    pb = packproc.pb

ROOT = Path(__file__).resolve().parent.parent.parent
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
                findings.extend(finding(d, r.urn, objects, "resource", sources) for d in resp.diagnostics)
            clock.lap("analyze")
            if unjudged is None:
                unjudged = pool.submit(not_judged, resources, self._config)
            for d in (stack_call or pool.submit(stack)).result():
                findings.append(finding(d, d.urn if d.urn in objects else root, objects, "stack", sources))
            clock.lap("analyze_stack")
            notes_not_judged = tuple(unjudged.result())
        self.timings = clock.laps
        return Report(
            pack=info.name, pack_version=pack_version(self.conn.pack_dir) or info.version,
            project=self.env.project, stack=self.env.stack, resources=len(resources),
            policies=tuple(policy_summary(p, reconciled[p.name]) for p in info.policies),
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
    from core.capacity.inventory import CLUSTER_CONFIG_KEY, ClusterInventory
    from core.catalog.modelfacts import MODELS_CONFIG_KEY, ModelEntry
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

