"""The objects of a stack by kind, namespace and name: those it renders
(:func:`rendered_objects`) and those the stack file says it leaves alone (:class:`LeftAlone`,
``llm-serving:left_alone``), with the one wording of an object left alone
(:func:`left_alone_text`).

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, NamedTuple

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from core.k8s.placement import secret_name
from core.k8s.values import ServiceName, Subdomain, rule_error

#: A Kubernetes kind as the API names it: CamelCase, a letter first (``InferenceService``).
_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")


def _kind(value: str) -> str:
    if not _KIND.fullmatch(value):
        raise rule_error(f"kind {value!r} is not a Kubernetes kind as the API names it (CamelCase, a letter first)",
                         "write the kind as `kubectl get <resource> -o yaml` shows it, e.g. InferenceService or Deployment")
    return value


Kind = Annotated[str, AfterValidator(_kind)]


def _reason(value: str) -> str:
    if not value.strip():
        raise rule_error("why is empty: an object left alone says why the stack does not manage it",
                         "write the reason, e.g. the seed or decision that took it out of the stack")
    return value


class ObjectRef(NamedTuple):
    """One Kubernetes object by kind, namespace and name (``InferenceService llm-serving/coder``)."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def left_alone_text(kind: str, namespace: str, name: str, why: str) -> str:
    """The one wording of an object left alone, e.g. ``left alone: InferenceService
    llm-serving/coder, not managed by this stack (Pulumi neither changes nor deletes it): <why>``.
    The program logs it to ``pulumi preview`` / ``pulumi up`` (:func:`stackfile.build.report_left_alone`)
    and the offline preview prints it from the stack output ``left_alone``
    (``tools/offline/summary.py``)."""
    return (f"left alone: {ObjectRef(kind, namespace, name)}, not managed by this stack "
            f"(Pulumi neither changes nor deletes it): {why}")


class LeftAlone(BaseModel):
    """A live object in the cluster that this stack does not manage and leaves as it is
    (``llm-serving:left_alone``, a list of these). The program registers nothing for it, so
    Pulumi never changes, adopts or deletes it; the entry makes that a decision on record: the
    preview (offline and ``pulumi preview``) names it with ``why``. Source: seed 000 (prod stops
    managing the ``coder`` InferenceService; ArgoCD, prune off, left the live object).

    Errors: a kind not in the API's CamelCase form, a name Kubernetes refuses, an empty ``why``;
    and (:mod:`stackfile.checks`) an object the stack renders itself, or one listed twice.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind = Field(description="The object's kind as the API names it, e.g. InferenceService.")
    name: Subdomain = Field(description="The object's name, e.g. coder.")
    namespace: ServiceName | None = Field(
        default=None, description="The object's namespace; default: the stack's (llm-serving:namespace)."
    )
    why: Annotated[str, AfterValidator(_reason)] = Field(description="Why the stack leaves it alone; shown in the preview.")

    def ref(self, stack_namespace: str) -> ObjectRef:
        """Its kind, namespace (the stack's when not given) and name."""
        return ObjectRef(self.kind, self.namespace or stack_namespace, self.name)

    def output(self, stack_namespace: str) -> dict[str, str]:
        """The stack output item: ``{kind, namespace, name, why}`` (namespace resolved)."""
        return {**self.ref(stack_namespace)._asdict(), "why": self.why}


def rendered_objects(namespace: str, workloads: dict[str, Any], services: dict[str, Any],
                     network_policy: Any) -> set[ObjectRef]:
    """Every object a stack of these (validated) parts renders: each workload's object (its
    class's ``KIND``) and its ``<name>-env`` Secret when it has ``secret_env``, each Service, the
    NetworkPolicy (``network_policy``: a :class:`stackfile.schema.NetworkPolicyConfig` or None);
    all in ``namespace``. ``tests/stackfile/test_objects_left_alone.py`` holds it equal to
    :func:`stackfile.build.render_manifests`."""
    out = set()
    for name, wl in workloads.items():
        out.add(ObjectRef(wl.KIND, namespace, name))
        if wl.secret_env:
            out.add(ObjectRef("Secret", namespace, secret_name(name)))
    out |= {ObjectRef("Service", namespace, name) for name in services}
    if network_policy is not None:
        out.add(ObjectRef("NetworkPolicy", namespace, network_policy.name))
    return out


def managed_objects(config: Any) -> set[ObjectRef]:
    """Every object the validated stack ``config`` (a :class:`stackfile.schema.StackConfig`)
    renders (:func:`rendered_objects`)."""
    return rendered_objects(config.namespace, config.workloads, config.services, config.network_policy)


def left_alone_outputs(config: Any) -> list[dict[str, str]]:
    """The stack output ``left_alone`` of the validated stack ``config``: ``[{kind, namespace,
    name, why}]`` in the stack file's order (namespace resolved: the stack's when an entry gives
    none); ``[]`` when it lists none."""
    return [item.output(config.namespace) for item in config.left_alone]
