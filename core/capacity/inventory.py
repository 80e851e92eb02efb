"""The cluster inventory: nodes, their cards and memory. One source of truth.

The stack file holds it under the config key ``llm-serving:cluster``. The program validates
it with these models, and the policy pack validates the same key with the same models (it
receives the stack's config from the Pulumi CLI, or from the offline runner, in
``PULUMI_CONFIG``), so there is no second copy of the inventory.

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from core.base.facts import HOSTNAME_LABEL
from core.base.stackkeys import CLUSTER_CONFIG_KEY as CLUSTER_CONFIG_KEY  # re-exported: read where the inventory is
from core.capacity.measured import Measured, measurements
from core.catalog import cards
from core.k8s.values import Int, NodeName, Real, Subdomain, rule_error

_CC_RE = re.compile(r"^\d+\.\d+$")

#: The least share of a card's memory CUDA reports as its total: the driver and ECC keep 1-7%
#: (V100-PCIE-32GB: 32,510 of 32,768 MiB; ECC on GDDR cards: 6.25%); below it the figure is not the card's.
CUDA_TOTAL_SHARE = 0.9


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CardSpec(_Strict):
    """One GPU card model. Defaults: none; every field is a measured fact of the node."""

    product: str = Field(
        description="Card product name as the device plugin reports it, e.g. Tesla-V100-PCIE-32GB."
    )
    memory_mib: Int = Field(
        gt=0, description="Card memory in MiB as the product states it (V100-32GB: 32768; CUDA reports 32,510 MiB, see core.capacity.estimator.CUDA_TOTAL_BYTES)."
    )
    compute_capability: str = Field(
        description='CUDA compute capability as "major.minor", e.g. "7.0" for V100 (sm_70). Source: 001.'
    )
    nvlink: bool = Field(
        description="Whether cards on the node are linked by NVLink. worker-1: false (PCIe only). Source: 001."
    )
    hbm_bandwidth_gb_s: Real = Field(
        gt=0, description="HBM bandwidth in GB/s per card (V100: about 900). Source: 001 header."
    )
    cuda_total_mib: Real | None = Field(
        default=None, gt=0,
        description=("The total CUDA reports on this node's card, measured (torch.cuda.mem_get_info()[1] / 2^20, or "
                     "deviceQuery's MBytes; V100-PCIE-32GB: 32510): wins over the card catalog's figure."),
    )

    @field_validator("compute_capability", mode="before")
    @classmethod
    def _cc_format(cls, v: object) -> object:
        if isinstance(v, (int, float)):
            v = f"{float(v):.1f}"
        if isinstance(v, str) and not _CC_RE.match(v):
            raise ValueError('compute capability must be "major.minor", for example "7.0"')
        return v

    @field_validator("cuda_total_mib")
    @classmethod
    def _within_the_card(cls, v: float | None, info: ValidationInfo) -> float | None:
        memory, product = info.data.get("memory_mib"), info.data.get("product")
        if v is None or not isinstance(memory, int) or not isinstance(product, str):
            return v
        known = cards.lookup(product)
        plate = max(memory, known.memory_mib if known else cards.product_memory_mib(product) or 0)
        if not CUDA_TOTAL_SHARE * plate <= v <= plate:
            raise rule_error(
                f"cuda_total_mib {v:,g} is not a total CUDA reports on a {product} of {plate:,} MiB: it lies between "
                f"{CUDA_TOTAL_SHARE:.0%} of the card's memory and all of it ({CUDA_TOTAL_SHARE * plate:,.0f} to {plate:,} MiB)",
                "copy torch.cuda.mem_get_info()[1] / 2**20 from the node, or remove cuda_total_mib")
        return v

    @model_validator(mode="after")
    def _memory_matches_product(self) -> CardSpec:
        known = cards.lookup(self.product)  # the card catalog first; else the size the name states
        stated = known.memory_mib if known else cards.product_memory_mib(self.product)
        # Either figure names the card within 5%: the nameplate (L4: 24 GB) or what the driver
        # reports (nvidia-smi's 23,034 MiB, the catalog's CUDA total); a 16 GB card written as
        # 32 GB is the mistake this refuses.
        figures = [f for f in (stated, known.cuda_total_bytes // 2**20 if known else None) if f]
        if figures and all(abs(f - self.memory_mib) > 0.05 * f for f in figures):
            where = "the card catalog (core.catalog.cards) gives" if known else "its name states"
            raise ValueError(
                f"memory_mib {self.memory_mib} contradicts the product {self.product}, for which {where} "
                f"{stated} MiB (within 5%); set memory_mib: {stated}, or correct the product"
            )
        return self

    @property
    def sm(self) -> int:
        """The compute capability as an integer, 70 for "7.0"."""
        major, minor = self.compute_capability.split(".")
        return int(major) * 10 + int(minor)

    @property
    def catalog(self) -> cards.CardModel | None:
        """The catalog entry of this product (:func:`core.catalog.cards.lookup`), or None when unknown."""
        return cards.lookup(self.product)

    @property
    def cuda_total_bytes(self) -> int:
        """Bytes CUDA reports as the card's total, which both engines budget from: the measured
        ``cuda_total_mib`` when the inventory gives it, else the catalog's figure for the product
        (V100-32GB: 34,089,730,048), else ``memory_mib`` MiB (which overstates a card the driver
        reserves memory on, by 1-3%)."""
        if self.cuda_total_mib is not None:
            return round(self.cuda_total_mib * cards.MIB)
        known = self.catalog
        return known.cuda_total_bytes if known else self.memory_mib * cards.MIB


class ReservedCards(_Strict):
    """Cards on a node held by a workload outside this stack (another namespace, a manual pod)."""

    workload: str = Field(description="Who holds the cards, as it should appear in messages.")
    cards: Int = Field(ge=1, description="Number of nvidia.com/gpu cards held.")
    reason: str = Field(default="", description="Why they are held; shown in the allocation message.")


class Autoscaling(_Strict):
    """A node pool the cluster autoscaler (GKE, EKS managed node groups or Karpenter, AKS) grows and shrinks."""

    max_nodes: Int = Field(
        ge=1, description=("The most nodes the autoscaler makes of this pool (GKE --max-nodes, an EKS node group's "
                           "maxSize, Karpenter's limits): a pod that fits no running node gets a new one up to this count."),
    )
    min_nodes: Int = Field(default=0, ge=0, description="The fewest nodes the pool keeps (GKE --min-nodes; default 0).")

    @model_validator(mode="after")
    def _order(self) -> Autoscaling:
        if self.min_nodes > self.max_nodes:
            raise ValueError(f"min_nodes {self.min_nodes} exceeds max_nodes {self.max_nodes}")
        return self


class Node(_Strict):
    """One schedulable node, or a pool of identical nodes (``autoscaling``), and what the scheduler can give from it."""

    name: NodeName = Field(description="Node name = its kubernetes.io/hostname label, e.g. worker-1 (a DNS-1123 subdomain and a label value).")
    cards: Int = Field(ge=0, description=(
        "Allocatable nvidia.com/gpu cards on the node (worker-1: 4): what the device plugin advertises, so a card "
        "time-sliced into 4 replicas (sharing.timeSlicing, renameByDefault false) counts 4; with renameByDefault "
        "true the slices are nvidia.com/gpu.shared, listed in extended_resources, and MIG slices are "
        "nvidia.com/mig-<profile> there too."))
    card: CardSpec | None = Field(
        default=None, description="The card model; required when cards > 0."
    )
    allocatable_memory_mib: Int = Field(
        gt=0,
        description=(
            "Allocatable host memory in MiB (worker-1: 63,495; a 24Gi request per pod did not "
            "schedule). Source: coder.yaml."
        ),
    )
    reserved: tuple[ReservedCards, ...] = Field(
        default=(), description="Cards held by workloads outside the stack; they count as used."
    )
    extended_resources: tuple[str, ...] | None = Field(
        default=None,
        description=(
            "Extended resources the node advertises besides nvidia.com/gpu (its cards), as in the node's "
            "status.allocatable (rdma/hca, nvidia.com/mig-1g.5gb); [] for none (worker-1: the device plugin "
            "runs without time-slicing, so no nvidia.com/gpu.shared). Omitted: not recorded, and a request "
            "for another extended resource is not judged."
        ),
    )

    labels: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Node labels a nodeSelector picks the node (or pool) by, besides kubernetes.io/hostname, which is the name: "
            "cloud.google.com/gke-accelerator: nvidia-l4, node.kubernetes.io/instance-type: g5.12xlarge, "
            "nvidia.com/gpu.product. A selector key no inventory node lists is not modelled (ignored). Default: none."
        ),
    )
    autoscaling: Autoscaling | None = Field(
        default=None,
        description=(
            "This entry is a node pool of identical nodes the cluster autoscaler grows up to max_nodes (cards and "
            "allocatable_memory_mib are one node's); name is the pool's. A rollout's surge pod that fits a node the pool "
            "can still add is no finding. Omitted: one fixed node (worker-1), where a pod beyond its cards stays Pending."
        ),
    )

    @property
    def max_nodes(self) -> int:
        """How many nodes this entry can be: the pool's ``autoscaling.max_nodes``, else 1."""
        return self.autoscaling.max_nodes if self.autoscaling is not None else 1

    def selected_by(self, selector: Mapping[str, str], known_keys: frozenset[str],
                    affinity: Sequence[Sequence[tuple[str, str, Sequence[str]]]] = ()) -> bool:
        """Whether a nodeSelector and a required node affinity pick this node: its hostname (the name) and
        every key of ``selector`` that some inventory node lists (``known_keys``) match, and one of the
        affinity's terms (``(key, operator, values)`` expressions, :func:`core.k8s.manifests.pods.required_node_terms`)
        holds. Keys no inventory node lists, and the operators Gt and Lt, are not modelled (they hold)."""
        labels = {**self.labels, HOSTNAME_LABEL: self.name}
        for key, value in selector.items():
            if (key == HOSTNAME_LABEL or key in known_keys) and labels.get(key) != value:
                return False
        return not affinity or any(all(self._holds(e, labels, known_keys) for e in term) for term in affinity)

    @staticmethod
    def _holds(expr: tuple[str, str, Sequence[str]], labels: Mapping[str, str], known_keys: frozenset[str]) -> bool:
        key, op, values = expr
        if key != HOSTNAME_LABEL and key not in known_keys:
            return True
        present = key in labels
        return {"In": present and labels.get(key) in values, "NotIn": not present or labels.get(key) not in values,
                "Exists": present, "DoesNotExist": not present}.get(op, True)

    @model_validator(mode="after")
    def _card_required(self) -> Node:
        if self.cards > 0 and self.card is None:
            raise ValueError(f"node {self.name} has {self.cards} cards but no card spec; add card:")
        held = sum(r.cards for r in self.reserved)
        if held > self.cards:
            raise ValueError(
                f"node {self.name}: reserved cards ({held}) exceed the node's {self.cards} cards"
            )
        return self


class ClusterInventory(_Strict):
    """The nodes of the cluster that workloads of this stack may land on."""

    nodes: tuple[Node, ...] = Field(min_length=1, description="The nodes, each named once.")
    driver_injected_by_default: bool = Field(
        default=False,
        description=(
            "The cluster's default container runtime injects the NVIDIA driver (GKE, the EKS and AKS GPU images, the GPU "
            "Operator with the NVIDIA runtime as containerd's default), so GPU pods need no runtimeClassName. States what "
            "omitting gpu_runtime_class leaves unsaid; the two together are refused. Default false: not recorded."
        ),
    )
    gpu_runtime_class: Subdomain | None = Field(
        default=None,
        description=(
            "The RuntimeClass every GPU pod must name so the NVIDIA driver libraries are injected "
            "(worker-1: nvidia; without it libcuda.so is missing and the server crashes at start, seeds "
            "001, 003). Omitted: the cluster's default runtime injects them (the GPU Operator makes the "
            "NVIDIA runtime the default; GKE refuses a runtimeClassName it does not have), and "
            "gpu-runtime-class does not run."
        ),
    )
    measured: dict[str, Measured] = Field(
        default_factory=dict,
        description=("What was measured on the cluster, by model server name (the Deployment or InferenceService): "
                     "core.capacity.measured.Measured. For plain manifests; a stack-file workload carries its own measured:."),
    )
    house_conventions: bool = Field(
        default=False,
        description=(
            "The team's own conventions are mandatory on this cluster, beyond what fails: every vLLM "
            "server sets --max-model-len explicitly (coder.yaml: the model's 262,144-token default "
            "cost a ten-minute start), and a multi-card pod's /dev/shm has a sizeLimit of at least "
            "multi-gpu-shm's minSizeLimitMiB (coder.yaml: 8Gi). Default false: another cluster is "
            "judged on what fails to start or serve."
        ),
    )
    image_tags_rebuilt: bool = Field(
        default=False,
        description=(
            "Image tags are pushed again in place on this cluster's registry (the user's forge rebuilds "
            ":sm70, seed 003), so every tag not pinned by digest is moving, release tags included. "
            "Default false: a tag naming a release (v0.11.0, core.catalog.images.ImageRef.version) is taken as "
            "fixed; other tags (latest, nightly, sm70) are moving everywhere."
        ),
    )

    uid_assigned_at_admission: bool = Field(
        default=False,
        description=(
            "Admission gives a pod that sets no runAsUser a uid of its own (OpenShift's restricted-v2 SCC: a uid from "
            "the namespace's openshift.io/sa.scc.uid-range), so runAsNonRoot without runAsUser starts. Default "
            "false: the image's user is used (worker-1, GKE, EKS, AKS)."
        ),
    )

    kserve_deployment_mode: Literal["RawDeployment", "Serverless", "NoKnative"] | None = Field(
        default=None,
        description=(
            "What an InferenceService without the serving.kserve.io/deploymentMode annotation becomes on this "
            "cluster: RawDeployment (the inferenceservice-config's defaultDeploymentMode), Serverless (a Knative "
            "Service), or NoKnative (the default is Serverless but Knative is not installed: never ready, "
            "kserve #1768). Omitted: not recorded, and an InferenceService without the annotation is not judged."
        ),
    )

    @model_validator(mode="after")
    def _runtime_stated_once(self) -> ClusterInventory:
        if self.driver_injected_by_default and self.gpu_runtime_class is not None:
            raise ValueError(f"driver_injected_by_default is true and gpu_runtime_class is {self.gpu_runtime_class}: "
                             "GPU pods either need that RuntimeClass or get the driver from the default runtime; keep one")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> ClusterInventory:
        seen: set[str] = set()
        for n in self.nodes:
            if n.name in seen:
                raise ValueError(f"node {n.name} is listed twice")
            seen.add(n.name)
        return self

    def with_workloads_measured(self, workloads: Mapping[str, Any]) -> ClusterInventory:
        """This inventory with the stack file's workloads' own ``measured`` figures added to
        :attr:`measured` (a workload's win; :func:`core.capacity.measured.measurements`), so the preview and
        the policy pack read every measurement from one place. ``workloads``: the raw
        ``llm-serving:workloads`` map. Raises ValueError for an invalid ``measured``."""  # noqa: D404
        merged = measurements(workloads, self.measured)
        return self if merged == self.measured else self.model_copy(update={"measured": merged})

    @property
    def label_keys(self) -> frozenset[str]:
        """Every label key some node of the inventory lists."""
        return frozenset(k for n in self.nodes for k in n.labels)

    def placed_on(self, node_name: str | None, node_selector: Mapping[str, str],
                  affinity: Sequence[Sequence[tuple[str, str, Sequence[str]]]] = ()) -> tuple[list[Node], bool]:
        """``(nodes, pinned)``: the inventory nodes (or pools) a pod with ``nodeName`` / ``nodeSelector`` /
        required node ``affinity`` can land on.

        A ``nodeName`` or a hostname selector pins it to that node (``[]`` when the inventory lacks it). Otherwise
        the nodes whose labels match every selector key and affinity expression the inventory records
        (:meth:`Node.selected_by`); ``pinned`` is True when they narrowed the nodes by a recorded label."""
        host = node_name or node_selector.get(HOSTNAME_LABEL)
        if host:
            found = self.node(host)
            return ([found] if found is not None else []), True
        keys = self.label_keys | {HOSTNAME_LABEL}
        matched = [n for n in self.nodes if n.selected_by(node_selector, keys, affinity)]
        named = [*node_selector, *(e[0] for term in affinity for e in term)]
        return matched, any(k in keys for k in named)

    def node(self, name: str) -> Node | None:
        """The node called ``name``, or None."""
        for n in self.nodes:
            if n.name == name:
                return n
        return None

    @property
    def max_cards(self) -> int:
        """The most cards any one node has."""
        return max((n.cards for n in self.nodes), default=0)
