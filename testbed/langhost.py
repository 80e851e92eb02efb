"""A stand-in for ``pulumi-language-python``, the Pulumi CLI's Python language host.

Why a stand-in: the real host lives in its own Go module
(``github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3``), and the Go module
proxy this project builds from serves no version of it (every ``@v3.x`` and every commit
answers "This module version is not available"; ``testbed/toolchain.py`` records the refusal).
The CLI, the kubernetes provider, the Python SDK, the policy SDK and the exec shim
(``pulumi-language-python-exec``, shipped in the ``sdk/v3`` module and copied beside this
host by the toolchain build) are all the real ones; only this process, which the CLI starts
to run Python, is ours.

What it does, over the CLI's ``LanguageRuntime`` gRPC protocol with pulumi's generated stubs
(``pulumi.runtime.proto.language_pb2_grpc``), the calls the CLI makes for ``preview``,
``up``, ``destroy`` and ``--policy-pack``:

* ``Handshake``, ``GetPluginInfo``;
* ``GetRequiredPackages`` / ``GetRequiredPlugins``: the ``pulumi-plugin.json`` of every
  package installed in the program's virtualenv (``kubernetes 4.25.0`` here), so the
  CLI loads the provider installed under ``PULUMI_HOME/plugins``;
* ``InstallDependencies``: creates the virtualenv named by the runtime option ``virtualenv``
  and ``pip install -r requirements.txt`` into it, streaming pip's output;
* ``Run``: ``<venv>/bin/python -u pulumi-language-python-exec --monitor ... PROGRAM`` with
  ``PULUMI_CONFIG`` and ``PULUMI_CONFIG_SECRET_KEYS``, exit code 32 reported as "bail" (the
  program already showed its error), as the real host does;
* ``RunPlugin``: a policy pack (``kind == "analyzer"``) runs behind the policy proxy the real
  Python host uses since pulumi v3.22x (``sdk/v3/policy_proxy.go``, pulumi/pulumi#21684): the
  host serves an Analyzer proxy and prints its port, waits for the engine's ``ConfigureStack``
  (the stack's config, project, stack, organization, dry run), then starts
  ``<pack venv>/bin/python -u -m pulumi.policy <engine> <pack dir>`` with the legacy
  environment pulumi-policy reads (``PULUMI_CONFIG``, ``PULUMI_CONFIG_SECRET_KEYS``,
  ``PULUMI_PROJECT``, ``PULUMI_STACK``, ``PULUMI_ORGANIZATION``, ``PULUMI_DRY_RUN``), forwards
  ``ConfigureStack`` to it and proxies every other call. (Without the proxy the pack sees no
  stack config: pulumi-policy 1.21's ``ConfigureStack`` keeps only the tags, and the CLI
  passes no ``PULUMI_CONFIG`` on the RunPlugin path; the real suite found this.) Any other
  Python plugin runs as ``python <dir> ARGS``; stdout and stderr stream back, then the exit code.

Everything else answers UNIMPLEMENTED, which the CLI treats as "not supported".

Usage (the CLI starts it): ``pulumi-language-python [-flags...] ENGINE_ADDRESS``; it prints
the port it listens on (127.0.0.1) and serves until the CLI closes it.
"""

from __future__ import annotations

import errno
import importlib.metadata
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import venv
from collections.abc import Iterator, Mapping
from concurrent import futures
from pathlib import Path

import grpc
from google.protobuf import empty_pb2, json_format
from pulumi.runtime.proto import analyzer_pb2 as apb
from pulumi.runtime.proto import analyzer_pb2_grpc as agrpc
from pulumi.runtime.proto import language_pb2 as lpb
from pulumi.runtime.proto import language_pb2_grpc as lgrpc
from pulumi.runtime.proto import plugin_pb2 as ppb

#: The version this host reports; the toolchain build writes the pinned CLI version here via
#: the environment of the wrapper script (``LLM_SERVING_LANGHOST_VERSION``); without it, the
#: version of the pulumi SDK this host's environment has (installed at the same pin).
VERSION = os.environ.get("LLM_SERVING_LANGHOST_VERSION") or importlib.metadata.version("pulumi")
#: The exec shim the real host runs (``sdk/v3/python/cmd/pulumi-language-python-exec``).
EXEC_SHIM = Path(os.environ.get("LLM_SERVING_LANGHOST_EXEC", Path(sys.argv[0]).resolve().parent / "pulumi-language-python-exec"))
#: Exit code with which the exec shim says "an error was already shown to the user".
BAIL_EXIT_CODE = 32
#: gRPC message limit, as the CLI's rpcutil.GrpcChannelOptions (400 MiB).
MAX_MESSAGE_BYTES = 400 * 1024 * 1024
_GRPC_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES), ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]
CHUNK = 32 * 1024


def _options(info: lpb.ProgramInfo | None) -> dict:
    if info is None or not info.HasField("options"):
        return {}
    return json_format.MessageToDict(info.options)


def _venv_dir(info: lpb.ProgramInfo | None, fallback_root: str = "") -> Path | None:
    """The virtualenv named by the runtime option ``virtualenv``, relative to the root directory."""
    name = _options(info).get("virtualenv")
    if not name:
        return None
    root = Path((info.root_directory if info is not None else "") or fallback_root or ".")
    path = Path(name)
    return path if path.is_absolute() else root / path


def _python(venv_dir: Path | None) -> str:
    if venv_dir is not None:
        return str(venv_dir / "bin" / "python")
    return os.environ.get("PULUMI_PYTHON_CMD", "python3")


def _activated_env(base: Mapping[str, str], venv_dir: Path | None) -> dict:
    env = dict(base)
    if venv_dir is not None:
        env["VIRTUAL_ENV"] = str(venv_dir)
        env["PATH"] = str(venv_dir / "bin") + os.pathsep + env.get("PATH", "")
        env.pop("PYTHONHOME", None)
    return env


_PLUGINS_SCRIPT = r"""
import json, importlib.metadata as md, pathlib
out = []
for dist in md.distributions():
    name = (dist.metadata.get("Name") or "").lower().replace("_", "-")
    if not name.startswith("pulumi-") or name == "pulumi-policy":
        continue
    for f in dist.files or ():
        if f.name in ("pulumi-plugin.json", "pulumiplugin.json") and len(f.parts) == 2:
            data = json.loads(pathlib.Path(dist.locate_file(f)).read_text())
            if data.get("resource"):
                out.append({"name": data.get("name") or name[len("pulumi-"):],
                            "version": data.get("version") or dist.version,
                            "server": data.get("server", "")})
print(json.dumps(out))
"""


def required_packages(venv_dir: Path | None, cwd: str) -> list[dict]:
    """Resource plugins of the Pulumi packages installed in the virtualenv (``pulumi-plugin.json``)."""
    proc = subprocess.run([_python(venv_dir), "-c", _PLUGINS_SCRIPT], cwd=cwd or None, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"could not list the Python packages of {venv_dir or 'python3'}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def _version(v: str) -> str:
    return v if v.startswith("v") else "v" + v


def _plugin_output(field: str, data: bytes) -> lpb.RunPluginResponse:
    return lpb.RunPluginResponse(stdout=data) if field == "stdout" else lpb.RunPluginResponse(stderr=data)


def policy_env(config: apb.AnalyzerStackConfigureRequest) -> dict[str, str]:
    """The environment a pulumi-policy pack reads its stack from (``constructEnv`` of the CLI's
    ``analyzer_plugin.go``, which the real host's policy proxy reproduces)."""
    return {
        "PULUMI_CONFIG": json.dumps(dict(config.config)),
        "PULUMI_CONFIG_SECRET_KEYS": json.dumps(list(config.config_secret_keys)),
        "PULUMI_PROJECT": config.project,
        "PULUMI_STACK": config.stack,
        "PULUMI_ORGANIZATION": config.organization,
        "PULUMI_DRY_RUN": "true" if config.dry_run else "false",
    }


class PolicyProxy(agrpc.AnalyzerServicer):
    """An Analyzer server in front of a policy pack process that does not take its stack
    configuration over gRPC: answers ``Handshake`` and ``ConfigureStack`` itself, and forwards
    everything else to the pack once it runs (``sdk/v3/policy_proxy.go``)."""

    def __init__(self) -> None:
        self._configured = threading.Event()
        self._config: apb.AnalyzerStackConfigureRequest | None = None
        self._attached = threading.Event()
        self._client: agrpc.AnalyzerStub | None = None
        self._error = ""
        self._channel: grpc.Channel | None = None
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=_GRPC_OPTIONS)
        agrpc.add_AnalyzerServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    # -- the host's side -----------------------------------------------------------------
    def await_configuration(self, context) -> apb.AnalyzerStackConfigureRequest | None:
        while not self._configured.wait(0.5):
            if not context.is_active():
                return None
        return self._config

    def attach(self, port: int) -> None:
        self._channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=_GRPC_OPTIONS)
        client = agrpc.AnalyzerStub(self._channel)
        if self._config is not None:
            try:
                client.ConfigureStack(self._config)
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.UNIMPLEMENTED:
                    self.fail(f"policy pack configuration failed: {err.details()}")
                    return
        self._client = client
        self._attached.set()

    def fail(self, message: str) -> None:
        self._error = message
        self._attached.set()

    def stop(self) -> None:
        self._server.stop(grace=None)
        if self._channel is not None:
            self._channel.close()

    # -- the engine's side ---------------------------------------------------------------
    def Handshake(self, request, context):
        return apb.AnalyzerHandshakeResponse()

    def ConfigureStack(self, request, context):
        if not self._configured.is_set():
            self._config = request
            self._configured.set()
        return apb.AnalyzerStackConfigureResponse()

    def _forward(self, name: str, request, context):
        # A call before ConfigureStack (e.g. `pulumi policy publish`): start without config.
        self._configured.set()
        while not self._attached.wait(0.5):
            if not context.is_active():
                context.abort(grpc.StatusCode.CANCELLED, "the engine went away")
        if self._client is None:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"policy pack not started: {self._error}")
        try:
            return getattr(self._client, name)(request, timeout=None)
        except grpc.RpcError as err:
            context.abort(err.code(), err.details() or "")

    def Analyze(self, request, context):
        return self._forward("Analyze", request, context)

    def AnalyzeStack(self, request, context):
        return self._forward("AnalyzeStack", request, context)

    def Remediate(self, request, context):
        return self._forward("Remediate", request, context)

    def GetAnalyzerInfo(self, request, context):
        return self._forward("GetAnalyzerInfo", request, context)

    def GetPluginInfo(self, request, context):
        return self._forward("GetPluginInfo", request, context)

    def Configure(self, request, context):
        return self._forward("Configure", request, context)

    def Cancel(self, request, context):
        return self._forward("Cancel", request, context)


class LanguageHost(lgrpc.LanguageRuntimeServicer):
    def __init__(self, engine_address: str) -> None:
        self.engine_address = engine_address
        self.root_directory = ""
        self.program_directory = ""
        self._children: set[subprocess.Popen] = set()
        self._lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------
    def Handshake(self, request, context):
        self.engine_address = request.engine_address or self.engine_address
        self.root_directory = request.root_directory
        self.program_directory = request.program_directory
        return lpb.LanguageHandshakeResponse()

    def GetPluginInfo(self, request, context):
        return ppb.PluginInfo(version=VERSION)

    def Cancel(self, request, context):
        self.terminate_children()
        return empty_pb2.Empty()

    def terminate_children(self, grace_s: float = 5.0) -> None:
        """Stop every program and plugin this host started (SIGTERM, then SIGKILL)."""
        with self._lock:
            children = [c for c in self._children if c.poll() is None]
        for child in children:
            child.terminate()
        for child in children:
            try:
                child.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                child.kill()

    def _popen(self, cmd: list[str], context, **kwargs) -> subprocess.Popen:
        """Start a child, or end the call with one clear line (e.g. a stack config over Linux's
        128 KiB limit for one environment variable: E2BIG)."""
        try:
            proc = subprocess.Popen(cmd, **kwargs)
        except OSError as err:
            size = len((kwargs.get("env") or {}).get("PULUMI_CONFIG", ""))
            why = (f"its stack config is {size // 1024} KiB, over Linux's 128 KiB for one environment variable "
                   "(PULUMI_CONFIG); make the stack config smaller" if err.errno == errno.E2BIG else str(err))
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"cannot start {cmd[0]}: {why}")
        with self._lock:
            self._children.add(proc)
        return proc

    # -- dependencies ----------------------------------------------------------------------
    def GetRequiredPackages(self, request, context):
        deps = required_packages(_venv_dir(request.info, self.root_directory), request.info.program_directory)
        return lpb.GetRequiredPackagesResponse(
            packages=[ppb.PackageDependency(kind="resource", name=d["name"], version=_version(d["version"]), server=d["server"]) for d in deps]
        )

    def GetRequiredPlugins(self, request, context):
        deps = required_packages(_venv_dir(request.info, self.root_directory), request.info.program_directory or request.pwd)
        return lpb.GetRequiredPluginsResponse(
            plugins=[ppb.PluginDependency(kind="resource", name=d["name"], version=_version(d["version"]), server=d["server"]) for d in deps]
        )

    def InstallDependencies(self, request, context) -> Iterator[lpb.InstallDependenciesResponse]:
        info = request.info
        root = info.root_directory or request.directory
        venv_dir = _venv_dir(info, root)
        requirements = Path(info.program_directory or request.directory or root) / "requirements.txt"
        if venv_dir is not None and not (venv_dir / "bin" / "python").exists():
            yield lpb.InstallDependenciesResponse(stdout=f"Creating virtual environment {venv_dir}\n".encode())
            venv.EnvBuilder(with_pip=True).create(venv_dir)
        if not requirements.exists():
            return
        cmd = [_python(venv_dir), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(requirements)]
        yield lpb.InstallDependenciesResponse(stdout=("$ " + " ".join(cmd) + "\n").encode())
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(requirements.parent))
        assert proc.stdout is not None
        for line in proc.stdout:
            yield lpb.InstallDependenciesResponse(stdout=line)
        if proc.wait() != 0:
            context.abort(grpc.StatusCode.UNKNOWN, f"pip install -r {requirements} failed with exit code {proc.returncode}")

    # -- running -----------------------------------------------------------------------------
    def Run(self, request, context):
        info = request.info if request.HasField("info") else None
        venv_dir = _venv_dir(info, self.root_directory)
        program = request.program or (info.entry_point if info is not None else "") or "."
        args = [_python(venv_dir), "-u", str(EXEC_SHIM)]
        for flag, value in (
            ("monitor", request.monitor_address),
            ("engine", self.engine_address),
            ("project", request.project),
            ("stack", request.stack),
            ("pwd", request.pwd),
            ("dry_run", "true" if request.dryRun else "false"),
            ("parallel", str(request.parallel)),
            ("organization", request.organization),
            ("root_directory", info.root_directory if info is not None else ""),
        ):
            if value:
                args += [f"--{flag}", value]
        args.append(program)
        args.extend(request.args)
        env = _activated_env(os.environ, venv_dir)
        env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
        env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
        if request.loader_target:
            env["PULUMI_LOADER_TARGET"] = request.loader_target
        proc = self._popen(args, context, cwd=request.pwd or None, env=env)
        code = proc.wait()
        with self._lock:
            self._children.discard(proc)
        if code == 0:
            return lpb.RunResponse()
        if code == BAIL_EXIT_CODE:
            return lpb.RunResponse(bail=True)
        return lpb.RunResponse(error=f"Program exited with non-zero exit code: {code}")

    def RunPlugin(self, request, context) -> Iterator[lpb.RunPluginResponse]:
        info = request.info
        venv_dir = _venv_dir(info, info.root_directory)
        program_dir = info.program_directory or request.program or request.pwd
        if venv_dir is not None and not (venv_dir / "bin" / "python").exists():
            name = _options(info).get("virtualenv")
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"the 'virtualenv' option of {program_dir} is {name!r}, but {venv_dir} is not a virtual environment; "
                f"create it: python3 -m venv {venv_dir} && {venv_dir}/bin/pip install -r {program_dir}/requirements.txt",
            )
        base = dict(e.split("=", 1) for e in request.env if "=" in e) if request.env else dict(os.environ)
        env = _activated_env(base, venv_dir)
        out: queue.Queue[lpb.RunPluginResponse | None] = queue.Queue()
        proxy: PolicyProxy | None = None
        if request.kind == "analyzer":
            engine = request.args[0] if request.args else self.engine_address
            cmd = [_python(venv_dir), "-u", "-m", "pulumi.policy", engine, program_dir]
            proxy = PolicyProxy()
            # The engine dials the proxy at once; the pack starts when the proxy knows the stack.
            yield lpb.RunPluginResponse(stdout=f"{proxy.port}\n".encode())
            config = proxy.await_configuration(context)
            if config is not None:
                env.update(policy_env(config))
        else:
            cmd = [_python(venv_dir), "-u", program_dir, *request.args]
        proc = self._popen(cmd, context, cwd=request.pwd or program_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def pump(stream, field: str, first_line_is_port: bool) -> None:
            if first_line_is_port and proxy is not None:
                line = stream.readline()
                try:
                    proxy.attach(int(line.strip()))
                except ValueError:
                    proxy.fail(f"the policy pack printed no port (first line: {line[:200]!r})")
                    out.put(_plugin_output(field, line))
            for chunk in iter(lambda: os.read(stream.fileno(), CHUNK), b""):
                out.put(_plugin_output(field, chunk))
            out.put(None)

        for stream, field in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
            threading.Thread(target=pump, args=(stream, field, field == "stdout"), daemon=True).start()
        finished = 0
        try:
            while finished < 2:
                try:
                    item = out.get(timeout=0.5)
                except queue.Empty:
                    if not context.is_active():
                        proc.terminate()
                        return
                    continue
                if item is None:
                    finished += 1
                else:
                    yield item
            code = proc.wait()
            yield lpb.RunPluginResponse(exitcode=code)
        finally:
            if proc.poll() is None:  # the engine went away: the pack goes too
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
            with self._lock:
                self._children.discard(proc)
            if proxy is not None:
                proxy.stop()

    def About(self, request, context):
        return lpb.AboutResponse(executable=sys.executable, version=sys.version.split()[0])

    def GetProgramDependencies(self, request, context):
        return lpb.GetProgramDependenciesResponse()


def main(argv: list[str]) -> int:
    positional = [a for a in argv if not a.startswith("-")]
    engine = positional[-1] if positional else ""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=_GRPC_OPTIONS)
    host = LanguageHost(engine)
    lgrpc.add_LanguageRuntimeServicer_to_server(host, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)
    # The CLI ends its plugins with SIGINT, then SIGKILL: stop serving quietly on either.
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1.0):
        pass
    server.stop(grace=1)
    host.terminate_children()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
