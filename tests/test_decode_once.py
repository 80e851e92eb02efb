"""policies/policylib/decode_once.py: one decode and one proxy per message within an analyzer
request, none shared outside one (the pack's findings over gRPC are the fixtures' in every other
test), and no policy writes into the properties it is given (what sharing the proxy needs)."""

from __future__ import annotations

import pytest
from pulumi_policy import proxy

from policylib import decode_once
from policylib.pack import policies
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
