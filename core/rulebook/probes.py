"""A model server's probes: a readiness probe, a startup probe at all, and a declared cold start
the startup budget is judged against (the budget itself: :func:`core.rulebook.servers.startup_budget`).
The components render every probe; these rules judge hand-written manifests and what a stack
file leaves to them.

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from typing import Optional

from core import facts
from core.registry import describe_policy, MANIFEST, STACK, Breach, only, rule
from core.rulebook.settings import S


@rule("model-server-readiness", "Every model server has a readiness probe.",
      "coder.yaml (readiness on /health every 10 s); checkov CKV_K8S_9", policy="model-server-readiness")
def readiness(has_probe: bool, port: Optional[int]) -> Optional[Breach]:
    """``port``: the container's first containerPort (8080 assumed when it declares none)."""
    if has_probe:
        return None
    return Breach(
        "it has no readinessProbe, so it is Ready (and gets Service traffic) before the model is loaded",
        only(MANIFEST, f"add readinessProbe: {{httpGet: {{path: <health route>, port: {port or 8080}}}, "
                       f"periodSeconds: {facts.READINESS_PERIOD_SECONDS}}}")
        + only(STACK, "preview again: the components add the readiness probe (an older rendering lacks it)"),
    )


@rule("startup-probe-present", "A model server has a startup probe.",
      "seed 002 (clef-serve about 4 min), coder.yaml (vLLM TP=2 at 256K about 10 min, 120 x 15 s)",
      policy="startup-probe-covers-cold-start")
def startup_probe_present(has_probe: bool, cold_start: str, liveness: str = "") -> Optional[Breach]:
    """``cold_start``: the cold start judged, worded (``declared cold start of 600 s``);
    ``liveness``: what its liveness probe does to a loading server, when it has one."""
    if has_probe:
        return None
    return Breach(
        f"it has no startupProbe{liveness}",
        only(MANIFEST, "add a startupProbe on the health endpoint whose periodSeconds x failureThreshold exceeds "
                       f"the {cold_start} (coder.yaml: 120 x 15 s)")
        + only(STACK, f"set {S.cold_start}; the component derives the startup probe"),
    )


@rule("cold-start-declared", "A declared cold start is whole seconds above 0.",
      "seed 002 (clef-serve about 4 min), coder.yaml (vLLM TP=2 at 256K about 10 min, 120 x 15 s)",
      policy="startup-probe-covers-cold-start")
def cold_start_declared(raw: str, seconds: Optional[int]) -> Optional[Breach]:
    """``raw``: the annotation's text; ``seconds``: it read as whole seconds (None: not a number)."""
    if seconds is not None and seconds > 0:
        return None
    return Breach(f"annotation {facts.COLD_START_ANNOTATION} is {raw!r}, not whole seconds above 0",
                  f'declare {S.cold_start} as whole seconds above 0, e.g. "600"')


# --- the pack policies' own text -----------------------------------------------------------------

describe_policy(
    "model-server-readiness",
    "Every model server container (vLLM, candle-vllm, or holding cards) has a readinessProbe.",
    (
        "Add a readinessProbe on the server's health route (candle-vllm: GET /v1/models; vLLM: GET /health) every 10 s; the "
        "components add it with the startup and liveness probes."
    ),
)
