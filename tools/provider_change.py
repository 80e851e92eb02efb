"""Provider and render-mode changes in a real plan (``pulumi preview --json``), refused by ``dev.py plan``.

Two changes the pack cannot see, because it judges the objects, not the provider that applies them:

- **An object moved to another provider.** Turning ``llm-serving:render_yaml_to_directory`` on
  (or off) for a stack that already has state gives every object a new provider (the
  ``render-yaml`` provider instead of the default one). The engine replaces an object whose
  provider changes (pulumi/pulumi-kubernetes#1693): with render mode switched on, each live object
  is "replaced" by a file in the directory, and the old provider then deletes the live object from
  the cluster. The safe path: keep this stack's mode, and render from a separate render-only stack
  (its own state, nothing applied).
- **Server-side apply turned off** on a kubernetes provider of the plan
  (``enableServerSideApply: "false"``): taking over ArgoCD's live objects needs server-side apply
  (the stack file's ``kubernetes:enableServerSideApply`` is refused by the loader for the same
  reason, :data:`stackfile.schema.PROVIDER_KEYS_REFUSED`; this catches a provider set elsewhere).

:func:`refusals` gives one message per change, in the one finding form (:class:`core.judging.problems.Finding`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from core.judging.problems import Finding, redacted
from stackfile.schema import PROVIDER_KEYS_REFUSED

PROVIDER_TYPE = "pulumi:providers:kubernetes"
#: Where the replacement on a provider change comes from.
REPLACE_SOURCE = ("pulumi/pulumi-kubernetes#1693 (a changed provider replaces every object it manages) and "
                  "pulumi-kubernetes PR #936 (renderYamlToDirectory)")
SAFE_PATH = ("keep this stack's mode (undo the llm-serving:render_yaml_to_directory change) and render from a separate "
             "render-only stack: `pulumi stack init <stack>-render`, copy the stack file to Pulumi.<stack>-render.yaml, "
             "`pulumi config set --stack <stack>-render llm-serving:render_yaml_to_directory rendered`; its first "
             "`pulumi up` writes every object to the directory and applies nothing (docs/secrets.md)")


def provider_urn(ref: Any) -> str:
    """The URN of a step's provider reference (``<urn>::<id>``); "" when there is none."""
    if not isinstance(ref, str) or "::" not in ref:
        return ""
    return ref.rsplit("::", 1)[0]


def provider_name(urn: str) -> str:
    """The provider's name in its URN (``...::pulumi:providers:kubernetes::render-yaml`` -> ``render-yaml``)."""
    return urn.rsplit("::", 1)[-1]


def moved(steps: Iterable[Any]) -> Counter[tuple[str, str]]:
    """(old provider, new provider) -> how many Kubernetes objects the plan moves between them;
    ``steps`` are :class:`tools.plan.Step` (``op``, ``old`` and ``new`` with ``type``, ``urn``,
    ``inputs``, ``provider``)."""
    seen: dict[str, tuple[str, str]] = {}  # a replacement's replace and create-replacement steps are one object
    for s in steps:
        if s.old is None or s.new is None or not s.new.type.startswith("kubernetes:"):
            continue
        before, after = _provider_of(s.old.provider), _provider_of(s.new.provider)
        if _default_or(before) != _default_or(after):
            seen[s.new.urn] = (before, after)
    return Counter(seen.values())


def _provider_of(ref: Any) -> str:
    """The provider a step's reference names, as the engine reads it: no reference is the default
    provider (``default_4_18_0``, its version's), so an absent reference and a default one are one."""
    return provider_name(provider_urn(ref)) if provider_urn(ref) else DEFAULT


def _default_or(name: str) -> str:
    return DEFAULT if name.startswith(DEFAULT) else name


#: The engine's default kubernetes provider (``default_<version>`` in a URN; absent in a step).
DEFAULT = "default"


def _render_mode(name: str) -> str:
    return "render mode (renderYamlToDirectory)" if name == "render-yaml" else "applying to the cluster"


def refusals(steps: Iterable[Any]) -> list[str]:
    """One refusal per provider move (see the module docstring) and per kubernetes provider with
    server-side apply off."""
    steps = list(steps)
    out = []
    for (before, after), n in sorted(moved(steps).items()):
        out.append(Finding(
            f"provider {before} -> {after}",
            f"the plan moves {n} Kubernetes object(s) from provider {before} ({_render_mode(before)}) to {after} "
            f"({_render_mode(after)}), and the engine replaces every object whose provider changes: switching render "
            "mode on a stack that already has state deletes the live objects (on) or re-creates them over ArgoCD's (off)",
            SAFE_PATH, REPLACE_SOURCE).render())
    for s in steps:
        if s.new is None or s.new.type != PROVIDER_TYPE:
            continue
        for setting in PROVIDER_KEYS_REFUSED.values():
            value = s.new.inputs.get(setting.input)
            if setting.input in s.new.inputs and setting.refused(value):
                out.append(Finding(
                    f"provider {provider_name(s.new.urn)}",
                    f"{setting.input} is {redacted(value, setting.input)}: {setting.why}",
                    setting.fix,
                    "pulumi-kubernetes 4.x server-side apply (patchForce)").render())
    return out
