"""Kubernetes quantities (``12Gi``, ``500m``, ``1Pi``, ``2``): the one parser of the project.

The stack file (``stackfile/``: ``resources.requests.memory`` ...) and the policy
pack (``core/k8s/manifests/``: the manifests' ``resources``) both call
:func:`parse`, so a quantity the stack file accepts is one the pack reads, and a quantity the
pack refuses the stack file refuses too, with its key path.

Two layers, both kept by someone else:

- the grammar, :data:`GRAMMAR`: the serialization format of ``k8s.io/apimachinery/pkg/api/
  resource.Quantity`` as the Kubernetes API reference states it (``<quantity> ::=
  <signedNumber><suffix>``, ``<suffix> ::= <binarySI> | <decimalExponent> | <decimalSI>``,
  binary ``Ki Mi Gi Ti Pi Ei``, decimal ``n u m "" k M G T P E``, exponent ``e|E`` and a
  signed integer). It refuses what the API server refuses: ``1e3Mi`` (an exponent AND a
  suffix), ``1K`` (the kilo suffix is ``k``), ``lots``, ``12 Gi``;
- the arithmetic: the official Kubernetes Python client's
  ``kubernetes.utils.quantity.parse_quantity`` (pinned in ``requirements.txt`` and
  ``policies/requirements.txt``). On its own it is laxer than the grammar (it takes ``NaN``,
  ``1_0``, `` 1``, ``1K`` and ``1e3Mi``), hence the grammar in front of it.

Plain Python; the client's quantity module is loaded on first use, without the client's
package ``__init__`` (see :func:`_client_parse_quantity`).
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

#: The Kubernetes quantity grammar (Kubernetes API reference, "Quantity").
GRAMMAR = re.compile(
    r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)

#: Bytes in one MiB.
MIB = 2**20


class QuantityError(ValueError):
    """``value`` is not a Kubernetes quantity. ``rule`` says why, ``fix`` what to write."""

    def __init__(self, value: Any):
        self.value = value
        self.rule = f"{value!r} is not a Kubernetes quantity"
        self.fix = 'write a quantity such as "4", "500m" (CPU) or "12Gi" (memory): a number and at most one suffix'
        super().__init__(self.rule)


def parse(value: Any) -> Decimal:
    """The quantity ``value`` in base units (bytes, cores, cards) as a Decimal.

    ``value``: text as written in YAML (``"12Gi"``), or a number (``2``, ``0.5``; YAML and the
    analyzer protocol deliver unquoted quantities as numbers). Raises :class:`QuantityError`
    for anything else: text outside :data:`GRAMMAR`, booleans, NaN and infinities.
    """
    if isinstance(value, bool):
        raise QuantityError(value)
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(value)
        return Decimal(str(value))
    if not isinstance(value, str) or not GRAMMAR.match(value):
        raise QuantityError(value)
    return Decimal(_client_parse_quantity()(value))


_PARSE_QUANTITY: Callable[[Any], Decimal] | None = None


def _client_parse_quantity() -> Callable[[Any], Decimal]:
    """``kubernetes.utils.quantity.parse_quantity`` of the pinned client, loaded once.

    The module is loaded from its file in the installed ``kubernetes`` package without running
    the package's ``__init__``, which imports the whole API client (0.13-0.3 s, paid by every
    preview and pack process); the module itself imports only ``decimal``. Falls back to the
    ordinary import if the file is not where the package keeps it."""
    global _PARSE_QUANTITY
    if _PARSE_QUANTITY is None:
        spec = importlib.util.find_spec("kubernetes")
        locations = list(spec.submodule_search_locations or []) if spec else []
        path = Path(locations[0]) / "utils" / "quantity.py" if locations else None
        if path is not None and path.is_file():
            module_spec = importlib.util.spec_from_file_location("_kubernetes_utils_quantity", path)
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            _PARSE_QUANTITY = module.parse_quantity
        else:  # pragma: no cover - a client that moved the module
            from kubernetes.utils.quantity import parse_quantity

            _PARSE_QUANTITY = parse_quantity
    return _PARSE_QUANTITY


def parse_or_none(value: Any) -> Decimal | None:
    """:func:`parse`, or None for a missing (None) or invalid value."""
    if value is None:
        return None
    try:
        return parse(value)
    except QuantityError:
        return None


def mib(value: Any) -> float | None:
    """A memory quantity in MiB (``"12Gi"`` -> 12288.0, ``"1Pi"`` -> 1073741824.0); None for
    None. Raises :class:`QuantityError` for an invalid one."""
    if value is None:
        return None
    return float(parse(value) / MIB)


def mib_of(value: Any) -> float:
    """:func:`mib` of a quantity that is given (not None). Raises :class:`QuantityError`."""
    return float(parse(value) / MIB)


def is_quantity(value: Any) -> bool:
    """True when ``value`` is a Kubernetes quantity (:func:`parse` would succeed)."""
    try:
        parse(value)
    except QuantityError:
        return False
    return True
