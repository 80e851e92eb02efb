"""Run the Pulumi program under Pulumi's own mock runtime and record what it registers.

:func:`run_program` executes the SAME ``__main__.py`` that ``pulumi preview`` runs, the way the
Python language host runs it (``pulumi-language-python-exec``: ``set_all_config`` from
``PULUMI_CONFIG``, then ``run_in_stack(lambda: runpy.run_path(<program dir>, run_name="__main__"))``),
except that the resource monitor is :class:`RecordingMonitor`, a subclass of the SDK's
``pulumi.runtime.mocks.MockMonitor`` installed with ``pulumi.runtime.set_mocks(..., monitor=)``.
It records every ``RegisterResource`` request (type, name, URN, parent URN, custom, protect,
dependencies, ignoreChanges, deleteBeforeReplace, provider, inputs) and the root Stack's
``RegisterResourceOutputs`` (what ``pulumi.export`` set).

Each run happens in a fresh :class:`contextvars.Context` with its own event loop: the SDK keeps
its settings, root resource and config in context variables, so a second run in the same
process starts clean (the tests call it many times).

Errors the program raises on purpose come out as :class:`ProgramError` with the message only:
``pulumi.RunError`` / ``pulumi.InputPropertyError`` (their text) and ``stackfile.ConfigError``
(its ``render()``: every problem with key path, value, rule and fix). Anything else is a bug in
the program and propagates with its traceback. Nothing is written to disk here.

Cost. A registration costs the SDK about 1.1-1.5 ms here (4,003 registrations of the generated
100-node stack: about 5.5 s). What this module removes, keeping the records and outputs equal:
the cyclic garbage collector is paused during the run (it doubled the time, see
:func:`run_program`); the monitor echoes the request's serialized inputs as the mock state
instead of a deserialize / re-serialize round trip; inputs are converted with protobuf's
``json_format`` instead of ``rpc.deserialize_properties`` (about 110 vs 260 us for an
InferenceService). What remains is the SDK's: capturing the stack trace and source position of
every registration (``pulumi.runtime.resource._get_stack_trace``, about 12 % of the run; this
SDK version offers no setting to switch it off), serializing the inputs, resolving the outputs
and the asyncio tasks of each Output.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import runpy
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pulumi
import pulumi.runtime
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc, settings
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.stack import run_in_stack

from core.k8s.values import REDACTED
from tools import cli
from tools.offline.manifests import PROJECT, Resource, config_env

ROOT = Path(__file__).resolve().parents[2]
STACK_TYPE = "pulumi:pulumi:Stack"

#: The logger the program's ``pulumi.log`` messages go to (the mock engine's logger).
PROGRAM_LOG = logging.getLogger("llm-serving.program")


class ProgramError(Exception):
    """The program refused its input (RunError, InputPropertyError or ConfigError).

    ``str(err)`` is the message for the user, without a traceback.
    """


@dataclass
class ProgramRun:
    """What one run of the program registered.

    ``resources``: every registered resource (the root Stack first, then by URN), as the analyzer
    sees it; ``props`` are the resource's inputs. ``outputs``: the stack outputs (``pulumi.export``),
    plain values.
    """

    resources: list[Resource]
    outputs: dict[str, Any] = field(default_factory=dict)


class _Mocks(pulumi_mocks.Mocks):
    """Resource state = inputs (what the provider would echo in a preview); no invokes."""

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict]:
        return _mock_id(args.typ, args.name, args.inputs, bool(args.custom)), args.inputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        return {}, None


def _mock_id(type_: str, name: str, inputs: dict, custom: bool) -> str:
    """The id a kubernetes object gets from the provider (``<namespace>/<name>``); components get ""."""
    if not custom:
        return ""
    meta = inputs.get("metadata") if isinstance(inputs, dict) else None
    if type_.startswith("kubernetes:") and isinstance(meta, dict) and meta.get("name"):
        return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])
    return f"{name}_id"


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, recording each registration as a :class:`tools.offline.manifests.Resource`
    (``records``, in the order registrations complete) and the root Stack's outputs
    (``stack_outputs``).

    ``RegisterResource`` answers as ``MockMonitor.RegisterResource`` does (URN from
    ``make_urn``, id and state from the mocks), but echoes the request's already-serialized
    inputs back as the state instead of deserializing and re-serializing them: the state the
    mocks return IS the inputs, so the response is the same and one protobuf round trip a
    resource is saved. Inputs are recorded as plain JSON values (:func:`struct_to_plain`).
    Registrations arrive on the event loop's executor threads, hence the lock. ``on_register``
    (default none) is called with each record as it is made (the preview hands it to the pack).
    """

    def __init__(self, mocks: pulumi_mocks.Mocks, on_register: Callable[[Resource], None] | None = None):
        super().__init__(mocks)
        self.on_register = on_register
        self.records: list[Resource] = []
        self.stack_outputs: dict[str, Any] = {}
        self._stack_urn = ""
        self._lock = threading.Lock()

    def RegisterResource(self, request):  # noqa: N802 - the gRPC method name
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == STACK_TYPE:
            self._stack_urn = urn
            self._record(Resource(type=request.type, name=request.name, urn=urn, props={}, custom=False))
            return resource_pb2.RegisterResourceResponse(urn=urn)
        inputs = struct_to_plain(request.object)
        args = pulumi_mocks.MockResourceArgs(
            typ=request.type,
            name=request.name,
            inputs=inputs,
            provider=request.provider,
            resource_id=request.importId,
            custom=request.custom or False,
        )
        id_, state = self.mocks.new_resource(args)
        # The mocks may give no id (None): kept as given, as Pulumi's own MockMonitor does.
        self.resources[urn] = pulumi_mocks.MockMonitor.ResourceRegistration(urn, cast(str, id_), state)
        self._record(_resource(request, urn, inputs))
        if state is inputs:
            return resource_pb2.RegisterResourceResponse(urn=urn, id=cast(str, id_), object=request.object)
        obj = pulumi_mocks._sync_await(rpc.serialize_properties(state, {}))
        return resource_pb2.RegisterResourceResponse(urn=urn, id=cast(str, id_), object=obj)

    def RegisterResourceOutputs(self, request):  # noqa: N802 - the gRPC method name
        if request.urn == self._stack_urn:
            self.stack_outputs = struct_to_plain(request.outputs)
        return super().RegisterResourceOutputs(request)

    def _record(self, resource: Resource) -> None:
        with self._lock:
            self.records.append(resource)
        if self.on_register is not None:
            self.on_register(resource)


def _resource(request, urn: str, inputs: dict) -> Resource:
    return Resource(
        type=request.type,
        name=request.name,
        urn=urn,
        props=inputs,
        parent=request.parent,
        custom=bool(request.custom),
        protect=bool(request.protect),
        dependencies=list(request.dependencies),
        ignore_changes=list(request.ignoreChanges),
        delete_before_replace=request.deleteBeforeReplace if request.deleteBeforeReplaceDefined else None,
        provider=request.provider,
    )


def struct_to_plain(struct: Any) -> dict[str, Any]:
    """A registration's serialized inputs (a protobuf ``Struct``) as plain JSON values.

    ``json_format.MessageToDict`` (the protobuf library's converter), then :func:`_plain` for
    what Pulumi encodes inside a Struct. Measured for an InferenceService: 110 us, against 260 us
    through the SDK's ``rpc.deserialize_properties`` (which handles assets and Output values the
    record does not need) and the same :func:`_plain`.
    """
    return _plain(json_format.MessageToDict(struct))


def _plain(value: Any) -> Any:
    """Pulumi's encodings made plain: a secret is :data:`core.k8s.values.REDACTED`, a resource reference its URN, an
    unknown (preview) ``None``; whole numbers are ints (protobuf numbers are doubles, and Go's
    JSON, so the provider, writes 1.0 as 1)."""
    if isinstance(value, dict):
        sig = value.get(rpc._special_sig_key)
        if sig is None:
            return {k: _plain(v) for k, v in value.items()}
        if sig == rpc._special_secret_sig:
            return _redacted(_plain(value.get("value")))  # never in a rendering, a diff or a report
        if sig == rpc._special_resource_sig:
            return value.get("urn")
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value == rpc.UNKNOWN:
        return None
    return value


def _redacted(value: Any) -> Any:
    """``value`` with every leaf replaced by :data:`core.k8s.values.REDACTED`, its keys kept (a
    Secret's ``stringData`` still names its keys)."""
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return REDACTED


def _ordered(records: list[Resource]) -> list[Resource]:
    """The root Stack first, then by URN: independent of the order registrations completed in."""
    return sorted(records, key=lambda r: (r.type != STACK_TYPE, r.urn))


def run_program(
    config: dict[str, Any],
    program: Path = ROOT / "__main__.py",
    stack: str = "prod",
    project: str = PROJECT,
    preview: bool = True,
    secret_keys: list[str] | None = None,
    on_register: Callable[[Resource], None] | None = None,
) -> ProgramRun:
    """Run ``program`` under the mock runtime with the stack's ``config:`` map.

    ``config`` is a stack file's ``config:`` map as written (``{"llm-serving:cluster": {...}}``);
    structured values reach the program JSON-encoded, as the CLI passes them in ``PULUMI_CONFIG``
    (:func:`tools.offline.manifests.config_env`). ``preview`` is ``pulumi.runtime.is_dry_run()``.
    Secret keys, as the CLI marks them (``PULUMI_CONFIG_SECRET_KEYS``): every key whose value
    holds a ``secure:`` value, and ``secret_keys`` (keys given decrypted, as the CLI passes them).
    ``on_register`` (default none) is called with each resource as it is registered, on the
    thread that registers it, in the order registrations complete (not ``resources``' order).

    Returns a :class:`ProgramRun`. Raises :class:`ProgramError` (message only) when the program
    raises ``pulumi.RunError``, ``pulumi.InputPropertyError`` or a ``ConfigError``; other
    exceptions propagate unchanged. Safe to call repeatedly in one process.

    The cyclic garbage collector is paused while the program runs and restored after: the SDK
    allocates about a hundred asyncio objects a registration, and full collections over the
    growing heap doubled the run time (measured: 2,000 registrations 6.1 s -> 2.7 s, peak RSS
    219 -> 241 MiB). Reference counting still frees acyclic garbage meanwhile.
    """
    program = Path(program).resolve()
    strings = json.loads(config_env(config))
    secret = sorted(set(secret_keys or ()) | {k for k, v in config.items() if _holds_secure(v)})
    with cli.collector_off():
        return contextvars.Context().run(_run, strings, secret, program, stack, project, preview, on_register)


def _holds_secure(value: Any) -> bool:
    """A value holding a ``{secure: ...}`` map anywhere (a secret in the stack file)."""
    if isinstance(value, dict):
        return (set(value) == {"secure"}) or any(_holds_secure(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_secure(v) for v in value)
    return False


def _run(config: dict[str, str], secret: list[str], program: Path, stack: str, project: str, preview: bool,
         on_register: Callable[[Resource], None] | None = None) -> ProgramRun:
    loop = asyncio.new_event_loop()
    previous_loop = _current_loop()
    asyncio.set_event_loop(loop)
    monitor = RecordingMonitor(_Mocks(), on_register)
    interrupted = False
    try:
        _configure(config, secret, monitor, stack, project, preview)
        try:
            loop.run_until_complete(run_in_stack(lambda: _exec(program)))
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (cli.Terminated) mid-run: leave at once
            interrupted = True
            raise
        except BaseException as err:  # noqa: BLE001 - classified, then re-raised
            clean = _clean(err)
            if clean is err:
                raise
            raise clean from None
        return ProgramRun(resources=_ordered(monitor.records), outputs=dict(monitor.stack_outputs))
    finally:
        _close(loop, interrupted)
        asyncio.set_event_loop(previous_loop)
        monitor.resources.clear()


def _current_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        return None


def _configure(config: dict[str, str], secret: list[str], monitor: RecordingMonitor, stack: str, project: str,
               preview: bool) -> None:
    """Config and settings as the language host sets them, with the recording monitor.

    ``set_mocks`` creates and finishes a root Stack when none exists (for unit tests that never
    run a program); here ``run_in_stack`` makes the Stack the program's exports land on, as the
    language host does, so a placeholder root keeps ``set_mocks`` from making its own.
    """
    pulumi.runtime.set_all_config(config, secret)
    settings.ROOT.set(object())  # type: ignore[arg-type]
    pulumi.runtime.set_mocks(
        monitor.mocks, project=project, stack=stack, preview=preview, logger=PROGRAM_LOG, monitor=monitor
    )
    settings.ROOT.set(None)
    settings.SETTINGS.outputs = set()


def _exec(program: Path) -> None:
    """``runpy`` the program as the language host does: the program directory when the file is
    ``__main__.py`` (runpy makes the directory ``sys.path[0]`` while it runs), else the file
    itself (a single-file program; it imports installed packages only)."""
    if program.name == "__main__.py":
        runpy.run_path(str(program.parent), run_name="__main__")
        return
    runpy.run_path(str(program), run_name="__main__")


def _clean(err: BaseException) -> BaseException:
    """A :class:`ProgramError` for errors the program raises on purpose; ``err`` itself otherwise."""
    if isinstance(err, ProgramError):
        return err
    render = getattr(err, "render", None)
    if type(err).__name__ == "ConfigError" and callable(render):
        return ProgramError(str(render()))
    if isinstance(err, (pulumi.RunError, pulumi.InputPropertyError, pulumi.InputPropertiesError)):
        return ProgramError(str(err))
    return err


def _close(loop: asyncio.AbstractEventLoop, interrupted: bool = False) -> None:
    """Cancel what a failed program left pending, stop the executor threads, close the loop.
    ``interrupted`` (Ctrl-C, SIGTERM): the tasks are cancelled without being run again and the
    executor's threads are not waited for (a registration in flight would hold the exit until
    SIGKILL), and asyncio says nothing of what the cancellation ends."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if interrupted:
        # The process is ending: the coroutines the cancellation drops are not news.
        warnings.filterwarnings("ignore", message="coroutine .* was never awaited", category=RuntimeWarning)
        loop.set_exception_handler(lambda _loop, _context: None)
        executor = getattr(loop, "_default_executor", None)
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        for task in pending:
            task._log_destroy_pending = False  # type: ignore[attr-defined]  # no "Task was destroyed" line
        loop.close()
        return
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()
