"""The stack file's schema: the ``config:`` map as typed pydantic models (extra keys refused).

Shape (keys of the ``llm-serving`` namespace; other namespaces such as ``kubernetes:context``
are ignored):

===============================================  ============================================
``llm-serving:namespace``                        str, default ``llm-serving``
``llm-serving:render_yaml_to_directory``         optional str: the provider writes YAML there
``llm-serving:cluster``                          :class:`core.capacity.inventory.ClusterInventory`
``llm-serving:models``                           map of model key -> ``ModelEntry``
``llm-serving:workloads``                        map of name -> :data:`Workload` (``server:``
                                                 ``candle-vllm`` | ``vllm`` | ``pytorch``)
``llm-serving:services``                         map of name -> :class:`ServiceConfig`
``llm-serving:network_policy``                   optional :class:`NetworkPolicyConfig`
``llm-serving:adopt``                            bool, default false: force the takeover
``llm-serving:left_alone``                       list of :class:`stackfile.objects.LeftAlone`:
                                                 live objects left alone, each with why
``llm-serving:retire``                           :class:`Retire`: workloads and Services this
                                                 update deletes on purpose
===============================================  ============================================

The keys every workload shares, whatever its ``server`` (node, cards, labels, env, resources,
cold start, startup probe, models PVC, parked, user, former names), are
:class:`core.k8s.placement.Placement`'s, the model the components' args take whole; its server
settings are :mod:`core.engines.config`'. What one field or one item needs on its own is checked by
the models (a DNS label, a Kubernetes quantity through :mod:`core.k8s.quantity`, a request within
its limit, a reserved label); what relates items is :mod:`stackfile.checks`; loading and error
translation is :mod:`stackfile.loader`.

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Optional

from pydantic import (
    Field,
    PrivateAttr,
    SecretStr,
)

from core.base import facts
from core.base.stackkeys import PREFIX, PROJECT
from core.capacity import allocation
from core.capacity.inventory import ClusterInventory, Node
from core.capacity.measured import Measured
from core.catalog import images
from core.catalog.modelfacts import ModelEntry, ModelFacts
from core.engines.config import CandleConfig, ServedName, VllmConfig
from core.judging.problems import HIDDEN, SECRET_SIG, is_secret
from core.k8s import quantity
from core.k8s.placement import Parked, Placement, StrictModel
from core.k8s.traffic import NetworkPolicyConfig, ServiceClient
from core.k8s.values import ArgString, Image, Int, ProjectDirectory, ServiceName
from stackfile.objects import LeftAlone

#: What Go's strconv.ParseBool reads as false, the way the provider reads a boolean setting.
_GO_FALSE = frozenset({"0", "f", "F", "false", "FALSE", "False"})


def go_false(value: object) -> bool:
    """True when the provider may read ``value`` as the boolean false (Go's strconv.ParseBool: ``false``,
    ``0``, ``f``, ``F``, ``FALSE``, ``False``; or YAML's false), read as the provider will: a decrypted
    secret by its value, a secret not decrypted here (``{secure: ...}``, a plan's ``[secret]`` or
    Pulumi's secret object without its plaintext) as possibly false, since nothing here can read it."""
    if isinstance(value, SecretStr):
        return go_false(value.get_secret_value())
    if isinstance(value, dict) and value.get(SECRET_SIG[0]) == SECRET_SIG[1]:
        plain = value.get("plaintext")
        if not isinstance(plain, str):
            return True
        try:
            return go_false(json.loads(plain))
        except ValueError:
            return go_false(plain)
    if is_secret(value) or value == HIDDEN:
        return True
    return value is False or str(value).strip() in _GO_FALSE


@dataclass(frozen=True)
class RefusedProviderSetting:
    """A provider setting outside ``llm-serving:`` the stack depends on: the stack-file ``key``, the
    provider resource's ``input`` it becomes, the predicate that finds the value that breaks the
    stack (read as the provider reads it), why, and the fix."""

    key: str
    input: str
    refused: Callable[[object], bool]
    why: str
    fix: str


#: The provider settings the loader and ``dev.py plan`` refuse, by stack-file key. Taking over
#: ArgoCD's live objects needs server-side apply (``pulumi.com/patchForce`` only acts there; a
#: client-side create of a live object fails with AlreadyExists).
PROVIDER_KEYS_REFUSED = {s.key: s for s in (
    RefusedProviderSetting(
        "kubernetes:enableServerSideApply", "enableServerSideApply", go_false,
        "taking over the live objects ArgoCD applied needs server-side apply: pulumi.com/patchForce acts only "
        "there, and a client-side create of a live object fails with AlreadyExists (pulumi-kubernetes 4.x)",
        "remove kubernetes:enableServerSideApply from the stack (server-side apply is the provider's default; a "
        "secret value cannot be judged before the CLI decrypts it), or render a separate render-only stack for ArgoCD"),
)}


def provider_value_refused(key: str, value: object) -> bool:
    """True when provider setting ``key`` holds a value :data:`PROVIDER_KEYS_REFUSED` refuses, read
    as the provider reads it (its record's predicate)."""
    setting = PROVIDER_KEYS_REFUSED.get(key)
    return setting is not None and setting.refused(value)


def misspelt_namespace(key: str) -> bool:
    """True for a config key whose namespace looks like a misspelt ``llm-serving`` (``llm-servign:``,
    ``llm_serving:``, ``LLM-serving:``): Pulumi reads it as another namespace's key, so the
    program would see none of it and ``pulumi up`` would delete what it held."""
    namespace, sep, _ = key.partition(":")
    if not sep or namespace == PROJECT:
        return False
    folded = namespace.lower().replace("_", "-").replace(".", "-")
    return folded == PROJECT or difflib.SequenceMatcher(None, folded, PROJECT).ratio() >= 0.8


def config_keys_read(keys: Iterable[str]) -> list[str]:
    """The config keys the loader reads (sorted): this project's, the misspelt namespaces it refuses
    and the provider settings it judges (:data:`PROVIDER_KEYS_REFUSED`)."""
    return sorted(k for k in keys if k.startswith(PREFIX) or misspelt_namespace(k) or k in PROVIDER_KEYS_REFUSED)


#: A Service, workload, namespace or NetworkPolicy name: a DNS-1035 label (core.k8s.kube), the
#: strictest of the names it becomes (a Service name, an ``app`` label value, a Deployment name).
Name = ServiceName


def mib(value: str | None) -> float | None:
    """A memory quantity in MiB ("12Gi" -> 12288.0); None for None (:func:`core.k8s.quantity.mib`).
    Raises :class:`core.k8s.quantity.QuantityError` if it is not a Kubernetes quantity."""
    return quantity.mib(value)


#: ``core.catalog.images.is_digest_pinned``: an image pinned by ``@sha256:<64 hex>``.
is_digest_pinned = images.is_digest_pinned



# --- workloads ------------------------------------------------------------------------------

class CandleWorkload(CandleConfig, Placement):
    """A candle-vllm Deployment (coder-14b-fp16.yaml, clef-candle.yaml): TP = ``cards``; its
    server settings are :class:`core.engines.config.CandleConfig`'s."""

    KIND: ClassVar[str] = "Deployment"  # the kind of the object its component makes
    server: Literal["candle-vllm"]
    model: str = Field(description="Key of llm-serving:models; its weights_path becomes --w.")
    measured: Measured | None = Field(default=None, description="What its own log gave on the cluster (core.capacity.measured).")


class VllmWorkload(VllmConfig, Placement):
    """A vLLM server in a KServe InferenceService, RawDeployment (coder.yaml, 002 reasoning.yaml);
    its server settings are :class:`core.engines.config.VllmConfig`'s."""

    KIND: ClassVar[str] = "InferenceService"  # the kind of the object its component makes
    server: Literal["vllm"]
    model: str = Field(description="Key of llm-serving:models; its hf_id (else weights_path) becomes --model.")
    measured: Measured | None = Field(default=None, description="What its own log gave on the cluster (core.capacity.measured).")

    @property
    def tp(self) -> int:
        """The tensor parallel size: explicit, else cards / pipeline_parallel_size."""
        return self.tp_for(self.cards)


class PytorchWorkload(Placement):
    """A generic GPU Deployment: the reference PyTorch clef-serve server (joint_schema_model.py
    in fp16, pip-installs on boot; 002, 004)."""

    KIND: ClassVar[str] = "Deployment"  # the kind of the object its component makes
    server: Literal["pytorch"]
    image: Image = Field(min_length=1, description="Image; a moving tag is pulled Always (003).")
    model: str | None = Field(default=None, description="Key of llm-serving:models it serves, if any.")
    command: list[ArgString] = Field(default_factory=list, description="Container command; empty: the image's entrypoint.")
    args: list[ArgString] = Field(default_factory=list, description="Container args.")
    port: Int = Field(default=facts.CONTAINER_PORT, ge=1, le=65535, description="Container port (8080).")
    health_path: str = Field(default="/health", description="HTTP health route (004: kubelet /health probes).")
    served_model_names: list[ServedName] = Field(default_factory=list, description="Model names it answers, e.g. clef-flash.")


#: One workload of ``llm-serving:workloads``, chosen by its ``server`` key.
Workload = Annotated[CandleWorkload | VllmWorkload | PytorchWorkload, Field(discriminator="server")]
WORKLOAD_CLASSES: dict[str, type[Placement]] = {
    "candle-vllm": CandleWorkload,
    "vllm": VllmWorkload,
    "pytorch": PytorchWorkload,
}


# --- services and network policy ------------------------------------------------------------

class ServiceConfig(StrictModel):
    """A stable predictor Service (ClusterIP, ports 80 and 8080 to 8080)."""

    selects: Name = Field(description="Name of the workload of llm-serving:workloads it sends traffic to.")
    clients: list[ServiceClient] = Field(default_factory=list, description="Who calls it (namespace, port).")
    parked: Parked | None = Field(default=None, description="Set when it is meant to have no endpoints.")


class Retire(StrictModel):
    """``llm-serving:retire``: names the next update deletes on purpose, by section (a workload and
    a Service may share a name: prod's clef-serve). Anything else deleted is refused in review
    (:func:`core.k8s.manifests.transition_cost.unintended_deletions`)."""

    workloads: list[Name] = Field(default_factory=list, description="Workloads removed from llm-serving:workloads.")
    services: list[Name] = Field(default_factory=list, description="Services removed from llm-serving:services.")
    network_policies: list[Name] = Field(
        default_factory=list, description="NetworkPolicies removed (llm-serving:network_policy dropped or renamed).")


# --- the whole config -----------------------------------------------------------------------

class StackConfig(StrictModel):
    """The validated ``llm-serving:*`` map. Build it with :func:`load_stack_config`."""

    namespace: Name = Field(default="llm-serving", description="Namespace of every object (all seeds).")
    render_yaml_to_directory: ProjectDirectory | None = Field(
        default=None, description="Directory the kubernetes provider writes YAML to instead of applying (ArgoCD)."
    )
    cluster: ClusterInventory = Field(description="Nodes, cards and memory (core/capacity/inventory.py).")
    models: dict[str, ModelEntry] = Field(default_factory=dict, description="Model key -> entry (core/catalog/modelfacts.py).")
    workloads: dict[Name, Workload] = Field(default_factory=dict, description="Workload name -> workload.")
    services: dict[Name, ServiceConfig] = Field(default_factory=dict, description="Service name -> Service.")
    network_policy: NetworkPolicyConfig | None = Field(default=None, description="The namespace ingress policy.")
    adopt: bool = Field(
        default=False,
        description=("Take live objects of another field manager (ArgoCD) over: every object gets "
                     "pulumi.com/patchForce, so the first pulumi up forces the fields whose live value "
                     "differs. Set it for the takeover only (docs/runbooks/argocd.md), then remove it."),
    )
    left_alone: list[LeftAlone] = Field(
        default_factory=list,
        description=("Live objects this stack leaves alone (kind, name, namespace, why): registered never, named in "
                     "the preview; dev.py plan refuses deleting one. Prod: the coder InferenceService (seed 000)."),
    )

    retire: Retire = Field(
        default_factory=lambda: Retire(),
        description=("Workloads and Services the next update deletes on purpose: the preview's --base diff and "
                     "dev.py plan refuse deleting any other (a key dropped or misspelt would delete it). Remove the "
                     "entries once the update ran."),
    )

    _facts: dict[str, ModelFacts] = PrivateAttr(default_factory=dict)
    _card_allocation: allocation.Allocation | None = PrivateAttr(default=None)

    def model_facts(self, key: str) -> ModelFacts:
        """The resolved facts of model ``key`` (KeyError if unknown)."""
        return self._facts[key]

    def node(self, name: str) -> Node:
        """The inventory node ``name`` (KeyError if unknown)."""
        node = self.cluster.node(name)
        if node is None:
            raise KeyError(name)
        return node

    def card_demands(self) -> list[allocation.Demand]:
        """Each workload's cards as a :class:`core.capacity.allocation.Demand`: one pod of ``cards``
        on its node (0 pods when parked; the components roll out with Recreate: no surge)."""
        return [
            allocation.Demand(name, float(wl.cards), 0 if wl.parked else 1, 0, wl.node, name,
                              wl.parked.reason if wl.parked else None)
            for name, wl in self.workloads.items()
        ]

    def replace_delete_first(self, name: str) -> bool:
        """True when a replacement of running workload ``name`` must delete the old object first:
        its node has fewer free cards than one pod of it asks, with the whole stack placed by
        :func:`core.capacity.allocation.cards` (the allocation the card table and gpu-card-allocation use),
        so a second copy would wait Pending for a card the old one holds. Prod: every running
        workload (worker-1 at 4 of 4). False for a parked workload (no pod to overlap)."""
        wl = self.workloads[name]
        if wl.parked:
            return False
        use = self.card_allocation().nodes.get(wl.node)
        return use is None or use.capacity - use.used < wl.cards

    def card_allocation(self) -> allocation.Allocation:
        """:func:`core.capacity.allocation.cards` of :meth:`card_demands` on the inventory, computed once
        (the config is immutable)."""
        if self._card_allocation is None:
            self._card_allocation = allocation.cards(self.card_demands(), self.cluster)
        return self._card_allocation

    def card_table(self) -> dict[str, dict[str, Any]]:
        """Cards per node: ``{node: {"cards": n, "used": n, "workloads": {name: cards}}}``, from
        :func:`core.capacity.allocation.cards` (the allocation gpu-card-allocation judges and the preview
        prints). A parked workload counts 0; cards reserved outside the stack count as used
        and appear under their holder's name, first. Prod: worker-1 4 of 4 (2 + 1 + 1 + 0).
        """
        alloc = self.card_allocation()
        table: dict[str, dict[str, Any]] = {}
        for n in self.cluster.nodes:
            use = alloc.nodes[n.name]
            held = {s.name: int(s.total) for s in use.shares if s.reserved_reason is not None}
            table[n.name] = {"cards": n.cards, "used": int(use.used), "workloads": held}
        for name, wl in self.workloads.items():
            node_use = alloc.nodes.get(wl.node)
            if node_use is not None:
                share = node_use.share_of(name)
                use_cards = int(share.total) if share is not None else 0
                table[wl.node]["workloads"][name] = use_cards
        return table


TOP_LEVEL_KEYS = tuple(StackConfig.model_fields)
STRING_KEYS = {"namespace", "render_yaml_to_directory"}
_SINGLE_SECTIONS: dict[str, Any] = {
    "namespace": Name,
    "render_yaml_to_directory": Optional[ProjectDirectory],  # noqa: UP045
    "cluster": ClusterInventory,
    "network_policy": Optional[NetworkPolicyConfig],  # noqa: UP045
    "adopt": bool,
    "left_alone": list[LeftAlone],
    "retire": Retire,
}


