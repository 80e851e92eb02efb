"""policies/policylib/decode_once.py: one decode and one proxy per message within an analyzer
request, none shared outside one (the pack's findings over gRPC are the fixtures' in every other
test), and no policy writes into the properties it is given (what sharing the proxy needs)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pulumi_policy import proxy

from policylib import decode_once
from policylib.pack import policies
from tests.paths import ROOT
from tests.policy_harness import fixture_cases, run_fixture


def test_within_a_request_a_message_is_decoded_once_and_outside_every_time():
    calls: list[object] = []

    def decode(message: object) -> dict:
        calls.append(message)
        return {"decoded": id(message)}

    memo = decode_once._memo(decode)

    class Servicer:
        def Analyze(self, request, context):
            return [memo(request) for _ in range(33)] + [memo(object())]

    Servicer.Analyze = decode_once._scoped(Servicer.Analyze)  # type: ignore[method-assign]
    msg = object()
    results = Servicer().Analyze(msg, None)
    assert all(r is results[0] for r in results[:33]) and results[33] is not results[0]
    assert len(calls) == 2  # this message once, the other message once
    memo(msg)
    memo(msg)
    assert len(calls) == 4  # no request in progress: no cache


#: What decode_once wraps in pulumi-policy's servicer module, and the signature it wraps it with
#: (pulumi-policy 1.21.0, ``pulumi_policy/policy.py``): an upgrade that changes one of these fails here.
SERVICER_SHAPE = {
    "Analyze": ["self", "request", "_context"],
    "AnalyzeStack": ["self", "request", "_context"],
    "_get_resource_options": ["self", "request"],
    "_get_provider_resource": ["self", "request"],
    "_configure_runtime_settings": ["self"],
}
MODULE_SHAPE = {"deserialize_properties": ["props", "proxy_secrets"], "unknown_checking_proxy": ["props"]}
#: The calls inside the servicer that the wrapped names must stand behind: if pulumi-policy stopped
#: making them, the patch would still install and silently speed nothing up.
SERVICER_CALLS = ("json_format.MessageToDict(", "deserialize_properties(", "unknown_checking_proxy(",
                  "self._get_resource_options(", "self._get_provider_resource(", "self._configure_runtime_settings()")


def test_the_servicer_still_has_the_shape_decode_once_patches():
    """decode_once is kept because it wins far more than 2x at 1,000 resources (docs/benchmarks.md);
    it patches pulumi-policy's private servicer, so this fails when an upgrade changes what it wraps."""
    import inspect

    from pulumi_policy import policy as servicer_module

    servicer = servicer_module._PolicyAnalyzerServicer
    for name, params in SERVICER_SHAPE.items():
        method = inspect.unwrap(getattr(servicer, name))
        assert list(inspect.signature(method).parameters) == params, name
    for name, params in MODULE_SHAPE.items():
        function = inspect.unwrap(getattr(servicer_module, name))
        assert list(inspect.signature(function).parameters) == params, name
    assert callable(servicer_module.json_format.MessageToDict)
    source = inspect.getsource(inspect.unwrap(servicer.Analyze)) + inspect.getsource(inspect.unwrap(servicer.AnalyzeStack))
    missing = [call for call in SERVICER_CALLS if call not in source]
    assert missing == [], f"pulumi-policy's Analyze / AnalyzeStack no longer call {missing}"
    assert set(decode_once.SERVICER_METHODS) == set(SERVICER_SHAPE)


def test_install_refuses_a_servicer_without_a_name_it_wraps(monkeypatch):
    from pulumi_policy import policy as servicer_module

    monkeypatch.delattr(servicer_module._PolicyAnalyzerServicer, "_get_provider_resource")
    with pytest.raises(RuntimeError, match="_get_provider_resource"):
        decode_once.install()


def test_install_patches_the_servicer_once():
    from pulumi_policy import policy as servicer_module

    decode_once.install()
    analyze = servicer_module._PolicyAnalyzerServicer.Analyze
    decode_once.install()
    assert servicer_module._PolicyAnalyzerServicer.Analyze is analyze
    assert getattr(analyze, "__decode_once__", False)
    assert isinstance(servicer_module.json_format, decode_once._JsonFormat)


def test_no_policy_writes_into_the_resource_properties_it_reads(monkeypatch):
    """Every policy of the request reads one shared proxy: a write by one would be seen by the
    next. pulumi-policy's dict proxy allows writes; here a write is an error, on every fixture."""

    def refuse(self, key, value):
        raise AssertionError(f"a policy wrote {key!r} into the resource's properties")

    monkeypatch.setattr(proxy._DictProxy, "__setitem__", refuse)
    cases = [(p, c) for p in policies() for verdict in ("allowed", "disallowed") for c in fixture_cases(p.name, verdict)]
    assert len(cases) > 100
    for policy, case in cases:
        run_fixture(policy, case)  # raises on a write
    with pytest.raises(AssertionError, match="wrote 'x'"):
        proxy.unknown_checking_proxy({"a": 1})["x"] = 2


def test_a_workload_view_is_built_once_per_request_and_props_object():
    from policylib import views

    props = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w", "namespace": "llm-serving"},
             "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    other = {**props, "metadata": {"name": "v", "namespace": "llm-serving"}}
    t = "kubernetes:apps/v1:Deployment"

    class Servicer:
        def Analyze(self, request, context):
            return views.workload(t, props), views.workload(t, props), views.workload(t, other)

    Servicer.Analyze = decode_once._scoped(Servicer.Analyze)  # type: ignore[method-assign]
    a, b, c = Servicer().Analyze(None, None)
    assert a is b and a is not None and c is not None and c.name == "v"
    # Outside a request nothing is shared (each call builds its own view).
    assert views.workload(t, props) is not views.workload(t, props)
    assert views.workload(t, props) == a


def test_the_runtime_settings_are_applied_once_per_thread_and_environment(monkeypatch):
    """pulumi-policy applies PULUMI_CONFIG and the stack's identity at every request; they are
    context variables, so they are applied again on another thread or when the environment changed."""
    import threading

    from pulumi.runtime import settings

    applied: list[str] = []

    class Servicer:
        def _configure_runtime_settings(self):
            applied.append(threading.current_thread().name)
            settings.SETTINGS.project, settings.SETTINGS.stack = "llm-serving", os.environ["PULUMI_STACK"]
            settings.SETTINGS.dry_run = True

    configure = decode_once._runtime_once(Servicer._configure_runtime_settings)
    monkeypatch.setenv("PULUMI_CONFIG", '{"llm-serving:namespace": "llm-serving"}')
    monkeypatch.setenv("PULUMI_PROJECT", "llm-serving")
    monkeypatch.setenv("PULUMI_STACK", "prod")
    monkeypatch.setenv("PULUMI_DRY_RUN", "true")
    monkeypatch.setattr(decode_once, "_local", threading.local())
    for name in ("project", "stack", "dry_run"):  # restored when the test ends
        monkeypatch.setattr(settings.SETTINGS, name, getattr(settings.SETTINGS, name))
    servicer = Servicer()
    for _ in range(3):
        configure(servicer)
    assert applied == ["MainThread"]
    monkeypatch.setenv("PULUMI_STACK", "dev")
    configure(servicer)
    configure(servicer)
    assert len(applied) == 2
    settings.SETTINGS.stack = "elsewhere"  # the settings no longer read back: applied again
    configure(servicer)
    assert len(applied) == 3
    other = threading.Thread(target=configure, args=(servicer,), name="grpc-worker")
    other.start()
    other.join()
    assert applied[-1] == "grpc-worker" and len(applied) == 4


def test_the_stack_request_reads_what_the_resource_requests_decoded():
    """Equal properties (same bytes, another message object) decode to the same dict across the
    Analyze calls and AnalyzeStack of one run; the run's cache is empty once AnalyzeStack returns."""
    from google.protobuf import json_format, struct_pb2

    calls: list[object] = []

    def decode(message):
        calls.append(message)
        return json_format.MessageToDict(message)

    to_dict = decode_once._message_to_dict(decode)

    def struct(props):
        s = struct_pb2.Struct()
        s.update(props)
        return s

    class Servicer:
        def Analyze(self, request, context):
            return [to_dict(request) for _ in range(23)]

        def AnalyzeStack(self, request, context):
            return [to_dict(r) for r in request]

    Servicer.Analyze = decode_once._scoped(Servicer.Analyze)  # type: ignore[method-assign]
    Servicer.AnalyzeStack = decode_once._scoped(Servicer.AnalyzeStack, ends_run=True)  # type: ignore[method-assign]
    a, b = {"kind": "Service", "metadata": {"name": "a"}}, {"kind": "Service", "metadata": {"name": "b"}}
    first = Servicer().Analyze(struct(a), None)
    second = Servicer().Analyze(struct(b), None)
    assert all(d is first[0] for d in first) and first[0] == a and len(calls) == 2
    stack = Servicer().AnalyzeStack([struct(a), struct(b)], None)
    assert stack[0] is first[0] and stack[1] is second[0] and len(calls) == 2
    assert decode_once._run == {}
    assert Servicer().Analyze(struct(a), None)[0] is not first[0] and len(calls) == 3
    decode_once._run.clear()


def test_the_pack_serves_with_decode_once_and_the_collector_as_python_sets_it():
    """policies/__main__.py installs decode_once (it wins far more than 2x at 1,000 resources) and
    leaves the collector alone: on, nothing frozen, Python's own thresholds (the hand-set ones did not
    win 2x; docs/benchmarks.md). What serves is stubbed: no port is opened."""
    policies_dir = ROOT / "policies"
    code = ("import gc, runpy, policylib.pack as p\n"
            "from pulumi_policy import policy as s\n"
            "p.build_pack = lambda: print(gc.isenabled(), gc.get_threshold(), gc.get_freeze_count(), "
            "getattr(s._PolicyAnalyzerServicer.Analyze, '__decode_once__', False))\n"
            "runpy.run_path('__main__.py', run_name='__main__')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=policies_dir, capture_output=True, text=True, check=True)
    defaults = subprocess.run([sys.executable, "-c", "import gc; print(gc.get_threshold())"], capture_output=True,
                              text=True, check=True).stdout.strip()
    assert out.stdout.strip() == f"True {defaults} 0 True"
