"""Kubernetes objects as the manifests write them: type tokens and small tolerant readers.

The values may be plain dicts and lists (a manifest, the program's rendering) or pulumi-policy
proxies (the policy pack's properties), so only the Mapping / Sequence protocols are used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from core.k8s import quantity as _quantity

DEPLOYMENT_TYPES = {"kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet"}
ISVC_TYPE = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
SERVICE_TYPE = "kubernetes:core/v1:Service"
NETWORK_POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
WORKLOAD_TYPES = DEPLOYMENT_TYPES | {ISVC_TYPE}
#: LeaderWorkerSet (sigs.k8s.io/lws): groups of a leader pod and ``size - 1`` worker pods, one
#: model server across the group (multi-node TP/PP). In the stack view only (Service selection,
#: card and memory allocation); the per-pod server policies do not judge it (:mod:`policylib.coverage`).
LWS_TYPE = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"


def type_token(api_version: str, kind: str) -> str:
    """The Pulumi type token the kubernetes provider uses for ``apiVersion``/``kind``.

    ``v1``/``Service`` -> ``kubernetes:core/v1:Service``; ``apps/v1``/``Deployment`` ->
    ``kubernetes:apps/v1:Deployment``; a CRD keeps its group: ``kubernetes:serving.kserve.io/v1beta1:InferenceService``.
    """
    if "/" not in api_version:
        api_version = "core/" + api_version
    return f"kubernetes:{api_version}:{kind}"


# --- small readers (Mapping / Sequence only: the values may be pulumi-policy proxies) ------------------------------------------------------------------------

def as_map(value: Any) -> Mapping:  # noqa: D103
    return value if isinstance(value, Mapping) else {}


def as_seq(value: Any) -> Sequence:  # noqa: D103
    return value if isinstance(value, Sequence) and not isinstance(value, str) else ()


def plain(value: Any) -> Any:
    """A deep copy of ``value`` as plain dicts and lists (proxies unwrapped)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    return value


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity ("12Gi", "500m", "2", 2) as a Decimal in base units, or None when
    it is missing or invalid (:func:`core.k8s.quantity.parse_or_none`; invalid ones are listed by
    :attr:`Container.invalid_quantities`)."""
    return _quantity.parse_or_none(value)


def mib(value: Any) -> float | None:
    """A memory quantity in MiB ("12Gi" -> 12288.0), or None when missing or invalid."""
    q = quantity(value)
    return None if q is None else float(q / _quantity.MIB)


def whole_number(value: Any) -> int | None:
    """An integer field as written or as gRPC delivers it: ``3``, ``3.0`` and ``"3"`` give 3.

    None for a missing, boolean, fractional or non-numeric value. Over the analyzer protocol every
    number is a protobuf double, so ``replicas: 0`` arrives as ``0.0``; it reads as 0.
    """
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if number != number or number in (float("inf"), float("-inf")) or not number.is_integer():
        return None
    return int(number)


def whole(value: Any, default: int) -> int:
    """:func:`whole_number`, ``default`` when it is None."""
    number = whole_number(value)
    return default if number is None else number
