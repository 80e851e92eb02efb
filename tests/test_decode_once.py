"""policies/policylib/decode_once.py: one decode per message within an analyzer request, none
shared outside one (the pack's findings over gRPC are the fixtures' in every other test)."""

from __future__ import annotations

from policylib import decode_once


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
