"""Where a workload runs, as one typed model every workload kind shares: :class:`Placement`
(node, cards, labels, environment, secrets, resources, cold start, startup probe, models PVC,
parked, user, former names), with the value types it is built of (:class:`Resources`,
:class:`StartupProbe`, :class:`Parked`, :data:`Quantity`).

The stack file's workloads (``stackfile.schema``: each ``llm-serving:workloads.<name>``) extend
it, so its keys and their error messages are these; the components' args
(``components.workload``, ``components.vllm``) take it whole as their ``placement`` field.
What one field needs on its own is checked here (a Kubernetes quantity through
:mod:`core.k8s.quantity`, a request within its limit, a reserved label, a variable in both env and
secret_env). Plain pydantic.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from core.base import facts
from core.base.facts import STARTUP_HEADROOM
from core.k8s import kube, quantity
from core.k8s.values import (
    EnvName,
    EnvValue,
    Int,
    Int32,
    LabelKey,
    LabelValue,
    NodeName,
    Secret,
    ServiceName,
    Subdomain,
    rule_error,
)

#: Startup probe period in seconds (coder.yaml: ``periodSeconds: 15``).
STARTUP_PERIOD_SECONDS = 15


def _quantity_text(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    return value


def _quantity(value: str) -> str:
    try:
        quantity.parse(value)
    except quantity.QuantityError as err:
        raise rule_error(err.rule, err.fix) from None
    return value


def _positive(value: str) -> str:
    """After :func:`_quantity` (so ``value`` parses)."""
    if quantity.parse(value) <= 0:
        raise rule_error(f"a model server's cpu or memory must be above zero, not {value} (a memory limit of 0 "
                         "kills the container at once; a request of 0 says nothing)",
                         "give an amount, e.g. memory: 12Gi or cpu: \"4\", or omit the key to leave it unset")
    return value


#: A Kubernetes quantity ("12Gi", "500m"; a bare number is read as its text).
Quantity = Annotated[str, BeforeValidator(_quantity_text), AfterValidator(_quantity)]
#: A quantity above zero (cpu and memory of a server's requests and limits).
PositiveQuantity = Annotated[Quantity, AfterValidator(_positive)]


class StrictModel(BaseModel):
    """Base of the stack file's models: unknown keys refused, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ResourceAmounts(StrictModel):
    """CPU and memory of a container's requests or limits (cards come from ``cards``)."""

    cpu: PositiveQuantity | None = Field(default=None, description='CPU cores above zero, e.g. "4" or "500m".')
    memory: PositiveQuantity | None = Field(default=None, description='Memory above zero, e.g. "12Gi" (binary units).')


class Resources(StrictModel):
    """Requests and limits of the server container, without cards.

    GPU servers keep weights on the card and need little host RAM (coder.yaml: 12Gi request,
    40Gi limit for vLLM TP=2). Errors: a request above its limit.
    """

    requests: ResourceAmounts = Field(default_factory=ResourceAmounts, description="Scheduling requests.")
    limits: ResourceAmounts = Field(default_factory=ResourceAmounts, description="Limits (burst).")

    @model_validator(mode="after")
    def _request_within_limit(self) -> Resources:
        for field in ("memory", "cpu"):
            req, lim = getattr(self.requests, field), getattr(self.limits, field)
            if req is not None and lim is not None and quantity.parse(req) > quantity.parse(lim):
                raise rule_error(
                    f"requests.{field} {req} exceeds limits.{field} {lim}",
                    f"raise limits.{field} to at least {req} or lower requests.{field}",
                )
        return self


class Parked(StrictModel):
    """A workload or Service kept at zero on purpose. Source: 000 (clef-serve parked "to free
    the only V100"), kustomization (an InferenceService at zero replicas still reports Ready)."""

    reason: str = Field(min_length=1, description="Why it is parked; shown in the preview and by the policy pack.")


class StartupProbe(StrictModel):
    """The startup probe's timing. Default period 15 s (coder.yaml); the failure threshold
    defaults to ``ceil(3 x cold_start_seconds / period)`` (coder.yaml: 120 x 15 s for about
    10 minutes of start-up). Errors: a budget (period x threshold) not above the cold start."""

    period_seconds: Int = Field(default=STARTUP_PERIOD_SECONDS, ge=1, le=300, description="Seconds between probes.")
    failure_threshold: Int32 | None = Field(
        default=None, ge=1, description="Failed probes before the pod restarts; default from the cold start."
    )


def startup_threshold(cold_start_seconds: int, probe: StartupProbe) -> int:
    """The startup probe's failure threshold: the explicit one, else 3 x cold start / period."""
    if probe.failure_threshold is not None:
        return probe.failure_threshold
    return max(1, math.ceil(STARTUP_HEADROOM * cold_start_seconds / probe.period_seconds))


def secret_name(workload: str) -> str:
    """The Kubernetes Secret holding a workload's ``secret_env``: ``<workload>-env``."""
    return f"{workload}-env"


class Placement(StrictModel):
    """Where and how one workload runs, whatever its server: the node and cards it holds, its
    labels and environment, its resources, its declared cold start and startup probe, the models
    PVC, whether it is parked, its user and its former names. One model for every workload kind:
    the stack file's workloads extend it (these are their keys), and each component's args hold
    it whole as ``placement``.

    Errors: a variable in both ``env`` and ``secret_env``; a label the component sets itself
    (``app``, part-of, KServe's).
    """

    node: NodeName = Field(description="Node the pods are pinned to (kubernetes.io/hostname), e.g. worker-1. Source: coder.yaml.")
    cards: Int = Field(ge=1, description="nvidia.com/gpu cards one pod holds (requests = limits).")
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="Extra pod labels, e.g. app.kubernetes.io/name: llm-reasoning (reasoning-long-service.yaml).",
    )
    env: dict[EnvName, EnvValue] = Field(default_factory=dict, description="Extra environment variables of the server (names: C identifiers; values without NUL).")
    secret_env: dict[EnvName, Secret] = Field(
        default_factory=dict,
        description=(
            "Environment variables from secrets (an API token): each value set with `pulumi config set --secret "
            "--path 'llm-serving:workloads.<w>.secret_env.<NAME>'` (the stack file holds secure: v1:...); "
            "rendered as a Kubernetes Secret <workload>-env and a secretKeyRef, never as plain text."
        ),
    )
    cold_start_seconds: Int = Field(
        gt=0,
        description=(
            "Seconds from pod start to the health route answering; the startup probe budget, the deploy's "
            "await timeout and, from 600 s on, the Deployment's progressDeadlineSeconds are built from it "
            "(002: clef-serve about 240; coder.yaml: vLLM TP=2 at 256K about 600)."
        ),
    )
    startup_probe: StartupProbe = Field(default_factory=StartupProbe, description="Startup probe timing.")
    resources: Resources = Field(default_factory=Resources, description="CPU and memory (cards come from cards).")
    parked: Parked | None = Field(default=None, description="Set to keep it at zero replicas, with the reason.")
    run_as_user: Int32 | None = Field(
        default=None, ge=1,
        description=(
            "Run the containers as this non-root UID (runAsNonRoot: true), when the image allows it; "
            "default: the image's user, root for every server here (core.base.facts.ROOT_REASONS, written "
            "as the runs-as-root annotation)."
        ),
    )
    models_pvc: Subdomain = Field(default=facts.MODELS_PVC, description="PVC with weights, mounted at /mnt/models. Source: 001, 003.")
    former_names: list[ServiceName] = Field(
        default_factory=list,
        description=(
            "Names this workload had before a rename, newest last, e.g. [clef-candle]. The component "
            "takes them as Pulumi aliases, so the rename replaces the object (the old one deleted "
            "first when its node has no room for both) instead of creating a second copy that waits "
            "Pending for the card the old one holds. Keep them until every stack is updated."
        ),
    )

    @model_validator(mode="after")
    def _labels_reserved(self) -> Placement:
        for name, value in self.env.items():
            size = len(f"{name}={value}".encode()) + 1
            if size > kube.MAX_ARG_STRLEN:
                raise rule_error(f"env {name} is {size:,} bytes as NAME=value, above the {kube.MAX_ARG_STRLEN:,} bytes "
                                 "the kernel's execve takes per string (MAX_ARG_STRLEN): the container never starts (E2BIG)",
                                 f"put the value in a file (a ConfigMap mounted as a volume) and point {name} at it")
        both = sorted(set(self.env) & set(self.secret_env))
        if both:
            raise rule_error(f"{both[0]} is in both env and secret_env", f"keep {both[0]} in secret_env only")
        for key in ("app", facts.PART_OF_LABEL, facts.KSERVE_ISVC_LABEL, facts.KSERVE_COMPONENT_LABEL):
            if key in self.labels:
                raise rule_error(
                    f"label {key} is set by the component (it is what Services select)",
                    f"remove {key} from labels",
                )
        return self

    @property
    def parked_reason(self) -> str | None:
        """Why it is parked, or None when it runs."""
        return self.parked.reason if self.parked else None

    @classmethod
    def of(cls, workload: Placement) -> Placement:
        """The placement of ``workload`` (a stack-file workload, which extends it) as one value,
        without its server settings: what the composition hands to the workload's component."""
        return cls.model_validate({name: getattr(workload, name) for name in cls.model_fields})
