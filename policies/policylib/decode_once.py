"""Decode and proxy each resource's properties once per analyzer run, not once per policy and
request, and apply the runtime settings once per thread (a speed-up of pulumi-policy's servicer;
the findings are the same).

pulumi-policy 1.21's ``_PolicyAnalyzerServicer`` runs, for every policy of a request,
``deserialize_properties(json_format.MessageToDict(r.properties))``, wraps the result in
``unknown_checking_proxy`` and builds the resource options (``_get_resource_options``,
``_get_provider_resource``) (``Analyze``: per policy; ``AnalyzeStack``: per policy and resource,
the same resources ``Analyze`` decoded before). And each request starts with
``_configure_runtime_settings``: ``json.loads`` of the whole ``PULUMI_CONFIG``, ``set_config`` of
every key, ``inspect.signature(pulumi.runtime.Settings)`` and ``pulumi.runtime.configure``.
With 33 policies that was most of the pack's time (``bench/pack_bench.py``).

:func:`install` patches the servicer module so that, within an ``Analyze`` or ``AnalyzeStack``
call:

- ``MessageToDict`` of a ``Struct`` returns the same dict for the same serialized bytes, across
  the calls of one analyzer run (``AnalyzeStack`` reads what the ``Analyze`` calls decoded);
  ``deserialize_properties`` and ``unknown_checking_proxy`` return the same result for the same
  input object, across those calls too (the cache holds the input, so its ``id`` cannot be
  reused). The run's cache is dropped when ``AnalyzeStack`` returns (the last call of a preview);
- ``_get_resource_options`` and ``_get_provider_resource`` return the same object for the same
  request message within one call;
- ``_configure_runtime_settings`` runs only when this thread has not applied the same
  ``PULUMI_*`` environment yet, or pulumi's runtime settings no longer read it back (they are
  context variables, so the check is per thread: gRPC serves calls on a thread pool).

So every policy of a run reads the same proxy of a resource. Safe because nothing changes them:
``deserialize_properties`` builds a new dict from its input, the proxy copies every dict and list
into its own, and no policy writes through the proxy or into the options (pulumi-policy's dict
proxy would allow it: ``tests/policies/policylib/test_decode_once.py`` runs every policy on every fixture with that
write made an error). Outside those two calls (``Configure``, ``Remediate``, ...) everything
passes through unchanged.

Nothing else of pulumi-policy is changed; :func:`install` is idempotent and checks that the
servicer still has the names it wraps (an upgrade that renames them fails the pack's start, not
its findings).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any

_local = threading.local()

#: The analyzer run's decoded properties (see the module docstring), shared by the gRPC threads;
#: emptied when ``AnalyzeStack`` returns.
_run: dict[Any, Any] = {}

#: What ``_configure_runtime_settings`` reads from the environment (pulumi_policy/policy.py).
RUNTIME_ENV = ("PULUMI_CONFIG", "PULUMI_PROJECT", "PULUMI_STACK", "PULUMI_DRY_RUN", "PULUMI_ORGANIZATION")


def request_memo() -> dict[Any, Any] | None:
    """The cache of the ``Analyze`` / ``AnalyzeStack`` call in progress on this thread, or None
    outside one: for views derived from a resource's (shared) properties, keyed with ``id`` of the
    properties and holding them (``policylib.views.workload``)."""
    return getattr(_local, "cache", None)


def _scoped(method: Callable[..., Any], ends_run: bool = False) -> Callable[..., Any]:
    """``method`` with a request memo in place while it runs; ``ends_run``: the run's shared
    cache is emptied when it returns."""

    @functools.wraps(method)
    def call(self: Any, request: Any, context: Any) -> Any:
        _local.cache = {}
        try:
            return method(self, request, context)
        finally:
            _local.cache = None
            if ends_run:
                _run.clear()

    call.__decode_once__ = True  # type: ignore[attr-defined]
    return call


def _memo(real: Callable[..., Any], per_run: bool = False) -> Callable[..., Any]:
    """``real`` memoized on the ``id`` of its first argument (held, so the id is not reused),
    within a request, or with ``per_run`` across the requests of the run."""
    name = real.__name__

    @functools.wraps(real)
    def call(value: Any, *args: Any, **kwargs: Any) -> Any:
        cache = getattr(_local, "cache", None)
        if cache is None:
            return real(value, *args, **kwargs)
        if per_run:
            cache = _run
        key = (name, id(value), args, tuple(sorted(kwargs.items()))) if kwargs else (name, id(value), args)
        hit = cache.get(key)
        if hit is not None and hit[0] is value:
            return hit[1]
        result = real(value, *args, **kwargs)
        cache[key] = (value, result)
        return result

    return call


def _method_memo(real: Callable[..., Any]) -> Callable[..., Any]:
    """A servicer method of one message (``self._get_resource_options(request)``) memoized as :func:`_memo`."""
    memo = _memo(lambda message, servicer: real(servicer, message))

    @functools.wraps(real)
    def call(self: Any, message: Any) -> Any:
        return memo(message, self)

    return call


def _message_to_dict(real: Callable[..., Any]) -> Callable[..., Any]:
    """``MessageToDict`` memoized on the message's serialized bytes, across the run's requests."""

    def across(message: Any) -> Any:
        key = ("MessageToDict", message.DESCRIPTOR.full_name, message.SerializeToString(deterministic=True))
        hit = _run.get(key)
        if hit is None:
            hit = _run[key] = real(message)
        return hit

    within = _memo(across)  # the same message object again in this request: no serializing

    @functools.wraps(real)
    def call(message: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_local, "cache", None) is None or args or kwargs:
            return real(message, *args, **kwargs)
        return within(message)

    return call


def _runtime_once(configure: Callable[[Any], None]) -> Callable[[Any], None]:
    """``_configure_runtime_settings`` applied once per thread and environment (module docstring)."""

    @functools.wraps(configure)
    def call(self: Any) -> None:
        env = tuple(os.environ.get(name) for name in RUNTIME_ENV)
        if getattr(_local, "runtime_env", None) == env and _settings_read_back(env):
            return
        configure(self)
        _local.runtime_env = env

    return call


def _settings_read_back(env: tuple[str | None, ...]) -> bool:
    """Pulumi's runtime settings in this thread's context are the ones ``env`` configures."""
    from pulumi.runtime import settings

    _, project, stack, dry_run, _ = env
    if project is None or stack is None or dry_run is None:
        return True  # the servicer configures nothing then
    s = settings.SETTINGS
    return s.project == project and s.stack == stack and bool(s.dry_run) == (dry_run == "true")


class _JsonFormat:
    """``google.protobuf.json_format`` as the servicer module sees it, with a memoized
    ``MessageToDict``."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.MessageToDict = _message_to_dict(real.MessageToDict)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


#: The servicer's methods :func:`install` wraps.
SERVICER_METHODS = ("Analyze", "AnalyzeStack", "_get_resource_options", "_get_provider_resource",
                    "_configure_runtime_settings")


def install() -> None:
    """Patch ``pulumi_policy.policy`` (see the module docstring). Raises :class:`RuntimeError`
    when the servicer module no longer has a name it wraps (:data:`WRAPPED`)."""
    from pulumi_policy import policy as servicer_module

    servicer: Any = getattr(servicer_module, "_PolicyAnalyzerServicer", None)
    missing = [name for name in ("json_format", "deserialize_properties", "unknown_checking_proxy")
               if not hasattr(servicer_module, name)]
    missing += [name for name in SERVICER_METHODS if servicer is None or not hasattr(servicer, name)]
    if missing or servicer is None:
        raise RuntimeError(f"pulumi_policy.policy has no {', '.join(missing)}: decode_once no longer fits this "
                           "pulumi-policy; remove policylib.decode_once.install() from policies/__main__.py")
    if getattr(servicer.Analyze, "__decode_once__", False):
        return
    servicer_module.json_format = _JsonFormat(servicer_module.json_format)
    servicer_module.deserialize_properties = _memo(servicer_module.deserialize_properties, per_run=True)
    servicer_module.unknown_checking_proxy = _memo(servicer_module.unknown_checking_proxy, per_run=True)
    servicer._get_resource_options = _method_memo(servicer._get_resource_options)
    servicer._get_provider_resource = _method_memo(servicer._get_provider_resource)
    servicer._configure_runtime_settings = _runtime_once(servicer._configure_runtime_settings)
    servicer.Analyze = _scoped(servicer.Analyze)
    servicer.AnalyzeStack = _scoped(servicer.AnalyzeStack, ends_run=True)
