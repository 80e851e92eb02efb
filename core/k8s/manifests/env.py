"""A container's environment as the kubelet builds it: every variable that is set, with its value
where the manifests hold it, and where it comes from.

The kubelet (k8s.io/kubernetes ``pkg/kubelet/kubelet_pods.go`` ``makeEnvironmentVariables``) sets
the ``envFrom`` sources first, in order (a later source overrides an earlier one; ``prefix``
before each key), then each ``env`` entry in order (a later entry overrides): a ``value`` with
``$(VAR)`` expanded against the variables set before it (:func:`k8s_expand`),
or a ``valueFrom`` (``secretKeyRef``, ``configMapKeyRef``, ``fieldRef``, ``resourceFieldRef``)
resolved on the node. A variable from ``valueFrom`` is set, its value unknown to the manifests
(:attr:`EnvVar.value` None); a name an ``envFrom`` source may define is "maybe set"
(:meth:`Environment.is_set` None).

Plain values in (the env and envFrom lists as the manifest writes them), frozen dataclasses out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def env_flag_on(value: str | None) -> bool:
    """How vLLM's envs.py reads a boolean variable such as ``VLLM_ALLOW_LONG_MAX_MODEL_LEN``:
    ``"1"`` or ``"true"`` (any case) is on; unset or anything else is off."""
    return (value or "").strip().lower() in ("1", "true")


# --- Kubernetes service links -----------------------------------------------------------------


def service_link_env_names(service: str, ports: Sequence[tuple[str | None, int, str]]) -> list[str]:
    """The variables the kubelet injects into every pod of the namespace with service links on
    (``enableServiceLinks`` unset or true) for Service ``service``, docker-links style
    (kubernetes pkg/kubelet/envvars ``FromServices``): the name upper-cased with ``-`` as ``_``,
    then ``_SERVICE_HOST``, ``_SERVICE_PORT``, ``_SERVICE_PORT_<PORT NAME>`` for each named
    port, ``_PORT`` (``tcp://<ip>:<port>`` of the first port) and, for each port,
    ``_PORT_<port>_<PROTO>`` with ``_PROTO``, ``_PORT`` and ``_ADDR``. ``ports``: (name,
    port, protocol) as the Service lists them. Service ``vllm`` gives ``VLLM_PORT``."""
    base = service.upper().replace("-", "_")
    names = [f"{base}_SERVICE_HOST", f"{base}_SERVICE_PORT"]
    names += [f"{base}_SERVICE_PORT_{name.upper().replace('-', '_')}" for name, _, _ in ports if name]
    if ports:
        names.append(f"{base}_PORT")
    for _, port, proto in ports:
        pp = f"{base}_PORT_{port}_{proto.upper()}"
        names += [pp, f"{pp}_PROTO", f"{pp}_PORT", f"{pp}_ADDR"]
    return names


def env_collisions(names: Sequence[str], prefix: str) -> list[str]:
    """The ``names`` in an engine's own environment namespace ``prefix`` (``VLLM_``)."""
    return [n for n in names if n.startswith(prefix)]


class Unknown(Exception):  # noqa: N818
    """A part of the argv cannot be known from the manifest; the message says which and why."""


#: Stands for an env variable whose value is not in the manifest (``valueFrom``, ``envFrom``).
UNKNOWN = object()


def k8s_expand(text: str, env: Mapping[str, Any], maybe_defined: bool = False,
               keep_unknown: Callable[[str], bool] | None = None) -> str:
    """``text`` with ``$(VAR)`` replaced as the kubelet replaces it in ``command``, ``args`` and
    env values (k8s.io/kubernetes third_party/forked/golang/expansion ``Expand``): ``$(VAR)`` of a
    defined variable is its value; of an undefined one stays ``$(VAR)`` literally; ``$$`` is one
    ``$`` (so ``$$(VAR)`` is the literal ``$(VAR)``); any other ``$`` is kept.

    ``env``: name -> value, or :data:`UNKNOWN` for a variable whose value the manifest does not
    hold. ``maybe_defined``: an ``envFrom`` may define any other name. ``keep_unknown(text before
    the reference)``: True keeps a reference whose value is not known as written (the value of an
    opaque flag, ``--api-key=$(KEY)``). Raises :class:`Unknown` when the text needs a value that is
    not known.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch != "$" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
                continue
            name = text[i + 2:close]
            value = env.get(name)
            if (value is UNKNOWN or (value is None and maybe_defined)) and keep_unknown is not None \
                    and keep_unknown("".join(out)):
                out.append(f"$({name})")
                i = close + 1
                continue
            if value is UNKNOWN or (value is None and maybe_defined):
                where = "is set from a Secret, ConfigMap or field" if value is UNKNOWN else "may come from envFrom"
                raise Unknown(f"$({name}) {where}, so its value is not in the manifest")
            out.append(f"$({name})" if value is None else str(value))
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


#: The ``valueFrom`` forms of core/v1 ``EnvVarSource``, in the order the API documents them.
VALUE_FROM_KINDS = ("secretKeyRef", "configMapKeyRef", "fieldRef", "resourceFieldRef", "fileKeyRef")


@dataclass(frozen=True)
class EnvVar:
    """One variable the container's process gets: ``value`` as the process sees it (None: set on
    the node, not in the manifests), ``source`` (``value``, one of :data:`VALUE_FROM_KINDS`, or
    ``expansion`` for a value that expands a variable whose value is unknown) and ``ref``, where the
    value lives, for messages (``Secret vllm-secrets, key api-key``)."""

    name: str
    value: str | None
    source: str = "value"
    ref: str = ""

    @property
    def shown(self) -> str:
        """``VLLM_API_KEY (from Secret vllm-secrets, key api-key)`` or ``TP=8``, as messages show it."""
        if self.value is not None:
            return f"{self.name}={self.value}"
        return f"{self.name} (from {self.ref or self.source})"


@dataclass(frozen=True)
class Environment:
    """Every variable a container sets (:attr:`vars`, by name, in the kubelet's order) and the
    ``envFrom`` sources whose keys the manifests do not list (:attr:`open_sources`, e.g.
    ``("Secret hf-token",)``)."""

    vars: Mapping[str, EnvVar] = field(default_factory=dict)
    open_sources: tuple[str, ...] = ()

    def is_set(self, name: str) -> bool | None:
        """True when ``name`` is set (a value or a ``valueFrom``), None when only an ``envFrom``
        source may set it, False when nothing sets it."""
        if name in self.vars:
            return True
        return None if self.open_sources else False

    def value(self, name: str) -> str | None:
        """The value ``name`` has in the process, or None (not set, or not in the manifests)."""
        var = self.vars.get(name)
        return None if var is None else var.value

    def known(self) -> dict[str, str]:
        """Name -> value of every variable whose value the manifests hold."""
        return {n: v.value for n, v in self.vars.items() if v.value is not None}

    def describe(self, name: str) -> str:
        """How ``name`` is set, for messages: ``env VLLM_API_KEY (from Secret s, key k)``."""
        var = self.vars.get(name)
        if var is None:
            return f"env {name} (maybe, from envFrom {', '.join(self.open_sources)})" if self.open_sources else f"env {name} (unset)"
        return f"env {var.shown}" if var.value is None else f"env {name}"


def _ref(kind: str, spec: Mapping[str, Any]) -> str:
    """Where a ``valueFrom`` takes its value, in the API's words."""
    if kind == "secretKeyRef":
        return f"Secret {spec.get('name', '?')}, key {spec.get('key', '?')}"
    if kind == "configMapKeyRef":
        return f"ConfigMap {spec.get('name', '?')}, key {spec.get('key', '?')}"
    if kind == "fieldRef":
        return f"the pod's {spec.get('fieldPath', '?')}"
    if kind == "resourceFieldRef":
        return f"the container's {spec.get('resource', '?')}"
    return kind


def _source_name(entry: Mapping[str, Any]) -> str:
    for kind, word in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
        ref = entry.get(kind)
        if isinstance(ref, Mapping):
            prefix = entry.get("prefix")
            return f"{word} {ref.get('name', '?')}" + (f" (prefix {prefix})" if prefix else "")
    return "an envFrom source"


def environment(env: Sequence[Any], env_from: Sequence[Any] = ()) -> Environment:
    """The :class:`Environment` of a container from its ``env`` and ``envFrom`` lists as written
    (non-map entries and entries without a name are skipped, as the API server would refuse them)."""
    sources = tuple(_source_name(e) for e in env_from if isinstance(e, Mapping))
    out: dict[str, EnvVar] = {}
    for entry in env:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        name = str(entry["name"])
        value_from = entry.get("valueFrom")
        if isinstance(value_from, Mapping) and value_from:
            kind = next((k for k in VALUE_FROM_KINDS if k in value_from), next(iter(value_from)))
            spec = value_from.get(kind)
            out[name] = EnvVar(name, None, str(kind), _ref(str(kind), spec if isinstance(spec, Mapping) else {}))
            continue
        raw = entry.get("value")
        text = "" if raw is None else str(raw)
        known: dict[str, Any] = {n: (UNKNOWN if v.value is None else v.value) for n, v in out.items()}
        try:
            out[name] = EnvVar(name, k8s_expand(text, known, bool(sources)))
        except Unknown as err:
            out[name] = EnvVar(name, None, "expansion", str(err))
    return Environment(out, sources)
