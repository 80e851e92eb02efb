"""The policy pack as its own process, driven over the analyzer gRPC protocol.

This is the transport half of the offline policy runner (:mod:`tools.analyze` holds the
orchestration, :mod:`tools.offline.report` the results). It does what the Pulumi CLI does with a
python policy pack (``sdk/go/common/resource/plugin/analyzer_plugin.go``, ``NewPolicyAnalyzer``
and ``constructEnv``; the ``pulumi-analyzer-policy-python`` shim):

* start ``<python> -u -m pulumi.policy <engine-address> .`` with the working directory set to
  the pack directory and the environment ``PULUMI_CONFIG`` (the stack's config, JSON of
  ``key -> string``), ``PULUMI_PROJECT``, ``PULUMI_STACK``, ``PULUMI_ORGANIZATION`` and
  ``PULUMI_DRY_RUN``;
* read the port from the first line the pack prints (``pulumi_policy.PolicyPack`` writes it
  once its gRPC server listens);
* connect with grpc and pulumi's generated stubs (``pulumi.runtime.proto.analyzer_pb2_grpc``).

No engine runs here: the engine address is a placeholder that nothing dials (pulumi-policy
neither connects to it nor logs through it).

Errors: :class:`PackStartError` (the process exited, printed no port, or did not answer in
time; the message carries its stderr) and :class:`PackCallError` (an RPC failed; the message
names the call and the pack's stderr tail).
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any


class LazyModule(ModuleType):
    """A module imported on first attribute use (by ``load``, default ``importlib.import_module``).
    The client starts the pack before it imports grpc, protobuf and pulumi's stubs, so the two
    start-ups overlap."""

    def __init__(self, name: str, load: Callable[[str], ModuleType] = importlib.import_module):
        super().__init__(name)
        self._load = load
        self._target: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._target is None:
            self._target = self._load(self.__name__)
        return getattr(self._target, attr)


#: The package name pulumi's generated protobuf stubs are loaded under when pulumi itself is not.
STUBS_PACKAGE = "_pulumi_proto_stubs"


def proto_stubs(name: str) -> ModuleType:
    """Pulumi's generated module ``pulumi.runtime.proto.<last part of name>`` (``analyzer_pb2``,
    ``analyzer_pb2_grpc``). When pulumi is not imported yet (``analyze --manifests``) the files are
    loaded from pulumi's ``runtime/proto`` directory as the package :data:`STUBS_PACKAGE`, without
    running pulumi's ``__init__`` (its runtime, automation and telemetry: about 0.13 s of CPU
    here); they import nothing but protobuf, grpc and each other. The descriptors go to
    protobuf's default pool, so a later ``import pulumi`` in the same process gets the same
    descriptors and message classes."""
    leaf = name.rsplit(".", 1)[-1]
    spec = None if "pulumi" in sys.modules else importlib.util.find_spec("pulumi")
    if spec is None or not spec.submodule_search_locations:
        return importlib.import_module(f"pulumi.runtime.proto.{leaf}")
    if STUBS_PACKAGE not in sys.modules:
        package = ModuleType(STUBS_PACKAGE)
        package.__path__ = [str(Path(next(iter(spec.submodule_search_locations))) / "runtime" / "proto")]
        sys.modules[STUBS_PACKAGE] = package
    return importlib.import_module(f"{STUBS_PACKAGE}.{leaf}")


if TYPE_CHECKING:
    import grpc
    from google.protobuf import empty_pb2, struct_pb2
    from pulumi.runtime.proto import analyzer_pb2 as pb
    from pulumi.runtime.proto import analyzer_pb2_grpc as pb_grpc
else:
    grpc = LazyModule("grpc")
    empty_pb2 = LazyModule("google.protobuf.empty_pb2")
    struct_pb2 = LazyModule("google.protobuf.struct_pb2")
    pb = LazyModule("pulumi.runtime.proto.analyzer_pb2", proto_stubs)
    pb_grpc = LazyModule("pulumi.runtime.proto.analyzer_pb2_grpc", proto_stubs)

#: How long the pack may take to print its port (seconds). Cold imports of pulumi, grpc and
#: the policy modules take about 1 s here; 60 s leaves room for a loaded CI machine.
START_TIMEOUT_S = 60.0
#: Placeholder engine address; pulumi.policy parses it and nothing dials it.
ENGINE_ADDRESS = "127.0.0.1:0"
#: The Pulumi CLI raises gRPC message limits to 400 MiB (rpcutil.GrpcChannelOptions); an
#: AnalyzeStack request with every resource of a 10,000-resource stack is tens of MiB.
MAX_MESSAGE_BYTES = 400 * 1024 * 1024
#: Analyze requests in flight at once (pipelining). The pack's server has 4 worker threads;
#: a window keeps the client busy serialising while the server evaluates, without queueing
#: 10,000 futures. Measured: 64 is within noise of 16..256 (bench/pack_bench.py).
PIPELINE_WINDOW = 64
STDERR_TAIL_CHARS = 4000
#: Linux's limit on one environment variable (MAX_ARG_STRLEN = 32 pages of 4 KiB).
MAX_ENV_VALUE_BYTES = 131072


class PackStartError(Exception):
    """The policy pack process did not come up: it exited, printed no port, or timed out."""


class PackCallError(Exception):
    """An analyzer RPC failed (the pack raised, or the process died mid-run)."""


@dataclass(frozen=True)
class PackEnv:
    """What the CLI hands the pack: the stack's identity and its config (``PULUMI_CONFIG``)."""

    config_json: str
    project: str
    stack: str
    organization: str = "organization"
    dry_run: bool = True

    def environ(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The process environment: ``base`` (default ``os.environ``) plus the PULUMI_* keys."""
        env = dict(os.environ if base is None else base)
        env.update(
            PULUMI_CONFIG=self.config_json,
            PULUMI_PROJECT=self.project,
            PULUMI_STACK=self.stack,
            PULUMI_ORGANIZATION=self.organization,
            PULUMI_DRY_RUN="true" if self.dry_run else "false",
        )
        return env


class PackConnection:
    """A pack process and its analyzer client. :func:`spawn` starts the process and returns at
    once (the pack imports its policies meanwhile); the first call waits for its port
    (:meth:`wait_ready`).

    Always :meth:`close` it (or use it as a context manager): the process is terminated and
    reaped, also when a call failed. A connection dropped without close() still stops it.
    """

    def __init__(self, proc: subprocess.Popen, stderr_file, pack_dir: Path, timeout: float = START_TIMEOUT_S):
        self.proc = proc
        self.pack_dir = pack_dir
        self.timeout = timeout
        self.port: int | None = None
        self._stderr = stderr_file
        self._channel: grpc.Channel | None = None
        self._stub: pb_grpc.AnalyzerStub | None = None
        self._finalizer = weakref.finalize(self, stop_process, proc)

    def wait_ready(self) -> None:
        """Read the port and open the channel (once). Raises :class:`PackStartError`."""
        if self._stub is not None:
            return
        try:
            self.port = _read_port(self.proc, self.timeout)
        except PackStartError as err:
            stop_process(self.proc)
            tail = self.stderr_tail().strip()
            raise PackStartError(
                f"cannot start the policy pack in {self.pack_dir}: {err}"
                + (f"\n--- pack stderr ---\n{tail}" if tail else "")
                + "\nfix: run `python -m pulumi.policy 0 .` in that directory to see the error, "
                "and check that policies/requirements.txt is installed"
            ) from None
        _drain(self.proc.stdout)
        self._channel = grpc.insecure_channel(
            f"127.0.0.1:{self.port}",
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ],
        )
        self._stub = pb_grpc.AnalyzerStub(self._channel)

    @property
    def stub(self) -> pb_grpc.AnalyzerStub:
        self.wait_ready()
        assert self._stub is not None
        return self._stub

    # --- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> PackConnection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel and stop the process (SIGTERM, then SIGKILL after 5 s)."""
        try:
            if self._channel is not None:
                self._channel.close()
        finally:
            self._finalizer.detach()
            stop_process(self.proc)
            try:  # noqa: SIM105
                self._stderr.close()
            except OSError:
                pass

    def stderr_tail(self) -> str:
        """The last few thousand characters the pack wrote to stderr."""
        return read_tail(self._stderr)

    def _fail(self, call: str, err: grpc.RpcError) -> PackCallError:
        detail = err.details() if hasattr(err, "details") else str(err)
        code = err.code().name if hasattr(err, "code") and err.code() else "UNKNOWN"
        tail = self.stderr_tail().strip()
        msg = f"policy pack {self.pack_dir}: {call} failed ({code}): {detail}"
        if self.proc.poll() is not None:
            msg += f"; the pack process exited with code {self.proc.returncode}"
        if tail:
            msg += f"\n--- pack stderr (tail) ---\n{tail}"
        return PackCallError(msg)

    # --- the analyzer calls, in the CLI's order ----------------------------------------

    def handshake(self) -> pb.AnalyzerHandshakeResponse | None:
        """``Handshake`` with the pack directory as root and program directory. A pack that
        does not implement it (UNIMPLEMENTED, as pulumi-policy 1.21) returns None, as in the CLI."""
        req = pb.AnalyzerHandshakeRequest(
            engine_address=ENGINE_ADDRESS,
            root_directory=str(self.pack_dir),
            program_directory=str(self.pack_dir),
        )
        try:
            return self.stub.Handshake(req)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None
            raise self._fail("Handshake", err) from None

    def configure_stack(self, env: PackEnv, config: dict[str, str], tags: dict[str, str] | None = None) -> None:
        """``ConfigureStack``: stack, project, organization, dry run and the config as a Struct
        of ``key -> string`` (the CLI marshals its decrypted ``map[Key]string``)."""
        cfg = struct_pb2.Struct()
        cfg.update(config)
        req = pb.AnalyzerStackConfigureRequest(
            stack=env.stack, project=env.project, organization=env.organization,
            dry_run=env.dry_run, config=cfg, tags=tags or {},
        )
        try:
            self.stub.ConfigureStack(req)
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise self._fail("ConfigureStack", err) from None

    def analyzer_info(self) -> pb.AnalyzerInfo:
        try:
            return self.stub.GetAnalyzerInfo(empty_pb2.Empty())
        except grpc.RpcError as err:
            raise self._fail("GetAnalyzerInfo", err) from None

    def plugin_version(self) -> str:
        try:
            return self.stub.GetPluginInfo(empty_pb2.Empty()).version
        except grpc.RpcError as err:
            raise self._fail("GetPluginInfo", err) from None

    def configure(self, policy_config: dict[str, pb.PolicyConfig]) -> None:
        try:
            self.stub.Configure(pb.ConfigureAnalyzerRequest(policyConfig=policy_config))
        except grpc.RpcError as err:
            raise self._fail("Configure", err) from None

    def pipelined(self, method: str, requests: Iterable[Any], window: int = PIPELINE_WINDOW) -> list[Any]:
        """Call unary ``method`` (``Analyze`` or ``Remediate``) for every request, keeping up
        to ``window`` calls in flight; responses come back in request order. ``requests`` may be
        an iterator: each request is taken when its call is sent."""
        rpc = getattr(self.stub, method)
        out: list[Any] = []
        inflight: deque = deque()
        try:
            for i, req in enumerate(requests):
                out.append(None)
                inflight.append((i, rpc.future(req)))
                if len(inflight) >= window:
                    j, fut = inflight.popleft()
                    out[j] = fut.result()
            while inflight:
                j, fut = inflight.popleft()
                out[j] = fut.result()
        except grpc.RpcError as err:
            for _, fut in inflight:
                fut.cancel()
            raise self._fail(method, err) from None
        return out

    def analyze_stack(self, resources: Iterable[pb.AnalyzerResource]) -> pb.AnalyzeResponse:
        try:
            return self.stub.AnalyzeStack(pb.AnalyzeStackRequest(resources=list(resources)))
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                return pb.AnalyzeResponse()
            raise self._fail("AnalyzeStack", err) from None


# --- process management --------------------------------------------------------------------

def spawn(pack_dir: Path, env: PackEnv, python: str | None = None, timeout: float = START_TIMEOUT_S) -> PackConnection:
    """Start the pack in ``pack_dir`` the way the CLI's python shim does; return at once.

    ``python`` defaults to the running interpreter (the project's .venv has the same pins as
    ``policies/requirements.txt``; the CLI uses ``policies/venv``). Raises
    :class:`PackStartError` when ``pack_dir`` has no ``PulumiPolicy.yaml``; a pack that exits
    or prints no port within ``timeout`` seconds raises it on first use, with its stderr.
    """
    pack_dir = Path(pack_dir).resolve()
    if not (pack_dir / "PulumiPolicy.yaml").is_file():
        raise PackStartError(
            f"cannot start the policy pack: {pack_dir} has no PulumiPolicy.yaml; "
            "pass the policy pack directory (the one holding PulumiPolicy.yaml and __main__.py)"
        )
    stderr_file = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            [python or sys.executable, "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, "."],
            cwd=pack_dir,
            env=env.environ(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr_file,
        )
    except OSError as err:
        stderr_file.close()
        if err.errno == errno.E2BIG:
            raise PackStartError(
                f"cannot start the policy pack: PULUMI_CONFIG is {len(env.config_json.encode()):,} bytes and Linux "
                f"limits one environment variable to {MAX_ENV_VALUE_BYTES:,} (MAX_ARG_STRLEN); the Pulumi CLI "
                "passes the stack config the same way and would fail too; fix: shrink the stack config "
                "(the inventory and models are what the pack reads)"
            ) from None
        raise PackStartError(f"cannot start the policy pack in {pack_dir}: {err.strerror or err}; fix: check that "
                             f"{python or sys.executable} runs and the directory is readable") from None
    return PackConnection(proc, stderr_file, pack_dir, timeout)


def _read_port(proc: subprocess.Popen, timeout: float) -> int:
    """The port from the pack's first stdout line (read on a thread so a hang times out)."""
    box: dict[str, bytes] = {}

    def read() -> None:
        try:
            box["line"] = proc.stdout.readline()  # type: ignore[union-attr]
        except (ValueError, OSError):  # the pack was closed meanwhile: its stdout reads as ended
            box["line"] = b""

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise PackStartError(f"no port printed within {timeout:.0f} s")
    line = box.get("line", b"").decode(errors="replace").strip()
    if not line:
        proc.wait(timeout=5)
        raise PackStartError(f"the process exited with code {proc.returncode} before printing its port")
    try:
        return int(line)
    except ValueError:
        raise PackStartError(
            f"its first stdout line is {line[:200]!r}, not a port (a policy module printing to stdout "
            "at import breaks the CLI the same way)"
        ) from None


def _drain(stream) -> None:
    """Keep reading the pack's stdout (policies may print) so its pipe never fills."""

    def run() -> None:
        try:
            for _ in iter(lambda: stream.read(65536), b""):
                pass
        except (ValueError, OSError):  # the pack was closed meanwhile (its stdout with it)
            return

    threading.Thread(target=run, daemon=True).start()


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate ``proc`` (this process only) and reap it; SIGKILL after 5 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        try:  # noqa: SIM105
            proc.stdout.close()
        except OSError:
            pass


def read_tail(f, chars: int = STDERR_TAIL_CHARS) -> str:
    """The last ``chars`` characters of a binary temp file, decoded."""
    try:
        f.flush()
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - chars))
        return f.read().decode(errors="replace")
    except (OSError, ValueError):
        return ""


# --- resources as protobuf -----------------------------------------------------------------

def to_struct(props: dict[str, Any]) -> struct_pb2.Struct:
    """A properties dict as a ``google.protobuf.Struct`` (numbers become doubles, as the CLI's
    ``MarshalProperties`` sends them: ``replicas: 0`` arrives as ``0.0``)."""
    s = struct_pb2.Struct()
    s.update(props)
    return s


def resource_options(r: Any) -> pb.AnalyzerResourceOptions:
    """``AnalyzerResourceOptions`` of a :class:`tools.offline.manifests.Resource` (protect,
    ignoreChanges, deleteBeforeReplace, parent), as ``marshalResourceOptions`` fills them."""
    return pb.AnalyzerResourceOptions(
        protect=r.protect,
        ignoreChanges=list(r.ignore_changes),
        deleteBeforeReplace=bool(r.delete_before_replace),
        deleteBeforeReplaceDefined=r.delete_before_replace is not None,
        parent=r.parent,
        customTimeouts=pb.AnalyzerResourceOptions.CustomTimeouts(),
    )


def analyze_request(r: Any, props: struct_pb2.Struct) -> pb.AnalyzeRequest:  # noqa: D103
    return pb.AnalyzeRequest(urn=r.urn, type=r.type, name=r.name, properties=props, options=resource_options(r))


def analyzer_resource(r: Any, props: struct_pb2.Struct) -> pb.AnalyzerResource:  # noqa: D103
    return pb.AnalyzerResource(
        urn=r.urn, type=r.type, name=r.name, properties=props, options=resource_options(r),
        parent=r.parent, dependencies=list(r.dependencies),
    )
