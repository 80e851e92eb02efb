"""The stack file (``Pulumi.<stack>.yaml``'s ``llm-serving:*`` map): what feeds the components.
Its public names, in one place to import them from; the code is split by job:

- :mod:`stackfile.schema`: the ``config:`` map as typed pydantic models (extra keys refused),
  the checks one field or one item needs on its own, and the stack output's card table;
- :mod:`stackfile.loader`: :func:`load_stack_config`, which validates the map and translates
  every error into a :class:`~core.judging.problems.Problem` (key path, value, rule, fix), raising
  :class:`~core.judging.problems.ConfigError` with every problem at once;
- :mod:`stackfile.checks`: the cross-checks (each workload against the node and model it
  names, each Service against its workload, the retire list); the engine, card and capacity
  rules are the policy pack's, judged once on the rendered manifests;
- :mod:`stackfile.objects`: the objects a stack renders and those it leaves alone
  (``llm-serving:left_alone``), with the one wording of an object left alone;
- :mod:`stackfile.build`: the validated config as the components' typed args, the components
  built (:func:`~stackfile.build.build_stack`), the stack outputs, the manifests rendered
  without the engine;
- :mod:`core.rulebook` (not re-exported here): the rules, each worded once (registered in
  :mod:`core.judging.registry`) and judged once: by the policy pack, or by the cross-checks where
  only the stack file can say it;
- :mod:`core.k8s.placement`: where a workload runs (one model for every workload kind);
- :mod:`core.engines.config`: the engines' server settings (one model per engine);
- :mod:`core.judging.problems`: the one message form.

The package imports :mod:`components` (for :mod:`stackfile.build`) and :mod:`core`; the
components never import it. This ``__init__`` itself is plain pydantic, no Pulumi import.
"""

from __future__ import annotations

from core.engines.config import CANDLE_BINARY, ServedName, check_served_name, fraction_text
from core.judging.problems import ConfigError, Problem
from core.k8s.placement import (
    STARTUP_HEADROOM,
    STARTUP_PERIOD_SECONDS,
    Parked,
    Placement,
    Quantity,
    ResourceAmounts,
    Resources,
    StartupProbe,
    secret_name,
    startup_threshold,
)
from core.k8s.traffic import IngressRule, NetworkPolicyConfig, ServiceClient
from stackfile.loader import load_stack_config
from stackfile.objects import LeftAlone, ObjectRef, left_alone_text
from stackfile.schema import (
    PREFIX,
    PROJECT,
    STRING_KEYS,
    TOP_LEVEL_KEYS,
    WORKLOAD_CLASSES,
    CandleWorkload,
    Name,
    PytorchWorkload,
    ServiceConfig,
    StackConfig,
    VllmWorkload,
    Workload,
    is_digest_pinned,
    mib,
)

__all__ = [
    "CANDLE_BINARY", "PREFIX", "PROJECT", "STARTUP_HEADROOM", "STARTUP_PERIOD_SECONDS", "STRING_KEYS",
    "TOP_LEVEL_KEYS", "WORKLOAD_CLASSES", "CandleWorkload", "ConfigError", "IngressRule", "LeftAlone", "Name",
    "NetworkPolicyConfig", "ObjectRef", "Parked", "Placement", "Problem", "PytorchWorkload", "Quantity", "ResourceAmounts", "Resources",
    "ServedName", "ServiceClient", "ServiceConfig", "StackConfig", "StartupProbe", "VllmWorkload",
    "Workload", "check_served_name", "fraction_text", "is_digest_pinned", "left_alone_text", "load_stack_config", "mib",
    "secret_name", "startup_threshold",
]
