"""Decode and proxy each resource's properties once per analyzer request, not once per policy (a
speed-up of pulumi-policy's servicer; the findings are the same).

pulumi-policy 1.21's ``_PolicyAnalyzerServicer`` runs, for every policy of a request,
``deserialize_properties(json_format.MessageToDict(r.properties))`` and then wraps the result in
``unknown_checking_proxy`` (``Analyze``: per policy; ``AnalyzeStack``: per policy and resource).
With 33 policies that decoding was most of the pack's time (``bench/pack_bench.py``: at 1,000
resources 16 s over gRPC, against 3.3 s of the policies' own logic).

:func:`install` makes ``MessageToDict``, ``deserialize_properties`` and
``unknown_checking_proxy``, as the servicer module calls them, return the same result for the
same input object within one ``Analyze`` or ``AnalyzeStack`` call (thread-local; the cache holds
the input, so its ``id`` cannot be reused, and is dropped when the call returns). So every policy
of a request reads the same proxy of a resource. Safe because nothing changes them:
``deserialize_properties`` builds a new dict from its input, the proxy copies every dict and list
into its own, and no policy writes through the proxy (pulumi-policy's dict proxy would allow it:
``tests/test_decode_once.py`` runs every policy on every fixture with that write made an error).
Outside those two calls (``Configure``, ``Remediate``, ...) all three pass through unchanged.

Nothing else of pulumi-policy is changed; :func:`install` is idempotent and checks that the
servicer still has the names it wraps (an upgrade that renames them fails the pack's start, not
its findings).
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, Optional

_local = threading.local()


def request_memo() -> Optional[dict[Any, Any]]:
    """The cache of the ``Analyze`` / ``AnalyzeStack`` call in progress on this thread, or None
    outside one: for views derived from a resource's (shared) properties, keyed with ``id`` of the
    properties and holding them (``policylib.views.workload``)."""
    return getattr(_local, "cache", None)


def _scoped(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, request: Any, context: Any) -> Any:
        _local.cache = {}
        try:
            return method(self, request, context)
        finally:
            _local.cache = None

    call.__decode_once__ = True  # type: ignore[attr-defined]
    return call


def _memo(real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def call(value: Any, *args: Any, **kwargs: Any) -> Any:
        cache = getattr(_local, "cache", None)
        if cache is None:
            return real(value, *args, **kwargs)
        key = (real.__name__, id(value), args, tuple(sorted(kwargs.items())) if kwargs else ())
        hit = cache.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        result = real(value, *args, **kwargs)
        cache[key] = (value, result)
        return result

    return call


class _JsonFormat:
    """``google.protobuf.json_format`` as the servicer module sees it, with a memoized
    ``MessageToDict``."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.MessageToDict = _memo(real.MessageToDict)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def install() -> None:
    """Patch ``pulumi_policy.policy`` (see the module docstring). Raises :class:`RuntimeError`
    when the servicer no longer has ``Analyze``, ``AnalyzeStack``, ``json_format``,
    ``deserialize_properties`` or ``unknown_checking_proxy``."""
    from pulumi_policy import policy as servicer_module

    servicer: Any = getattr(servicer_module, "_PolicyAnalyzerServicer", None)
    missing = [name for name in ("json_format", "deserialize_properties", "unknown_checking_proxy")
               if not hasattr(servicer_module, name)]
    missing += [name for name in ("Analyze", "AnalyzeStack") if servicer is None or not hasattr(servicer, name)]
    if missing or servicer is None:
        raise RuntimeError(f"pulumi_policy.policy has no {', '.join(missing)}: decode_once no longer fits this "
                           "pulumi-policy; remove policylib.decode_once.install() from policies/__main__.py")
    if getattr(servicer.Analyze, "__decode_once__", False):
        return
    servicer_module.json_format = _JsonFormat(servicer_module.json_format)
    servicer_module.deserialize_properties = _memo(servicer_module.deserialize_properties)
    servicer_module.unknown_checking_proxy = _memo(servicer_module.unknown_checking_proxy)
    servicer.Analyze = _scoped(servicer.Analyze)
    servicer.AnalyzeStack = _scoped(servicer.AnalyzeStack)
