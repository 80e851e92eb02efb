"""startup-probe-covers-cold-start: a model server's startup probe outlasts its declared cold start.

Applies to every workload that runs a model server (a vLLM or candle-vllm container,
recognised by image or command) and to every workload that declares a cold start
(annotation ``facts.COLD_START_ANNOTATION``, whole seconds, e.g. the PyTorch clef-serve).
The judged containers are the model-server containers, else those holding cards, else all.
One violation per problem:
  - a model server declares no cold start: "declare" it (the annotation), since without it
    no one can tell whether the probe budget is enough; the value must be whole seconds > 0;
  - each judged container has a ``startupProbe`` (without one, a ``livenessProbe`` runs from
    the first second and kills a server that is still loading its weights; with one, the
    kubelet holds liveness back until startup succeeds, so liveness sits behind it);
  - its budget, initialDelaySeconds + periodSeconds x failureThreshold (Kubernetes defaults
    0, 10 and 3 when omitted), covers the declared cold start: it must EXCEED it (budget >
    cold start; spec "must exceed"), by ``core.rules.startup_budget_covers``, the
    function the program's config check uses too.

Source: seed 002 (clef-serve "Cold start is about four minutes ... startupProbe allows for
that"), coder.yaml ("TP=2 at 256K needs ~10 min before the API binds ... 120 x 15s = 30 min
of headroom"), spec "Start-up can take minutes" row.

Does not check: that the probes hit a real endpoint or port; that a liveness probe exists at
all (a server without one is never restarted when it hangs, a judgement, not a start-up
failure); readiness probes; parked workloads are judged too (unparking is one replicas change).
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, Severity

from core import facts, rules
from core.problems import Finding
from policylib import resource_helpers as rh
from policylib import terms
from policylib import workloads

NAME = "startup-probe-covers-cold-start"


SOURCE = "seed 002 and coder.yaml (a liveness probe killed the server while it loaded the weights)"


def judged_containers(w: workloads.Workload) -> list[workloads.Container]:
    """Model-server containers, else card-holding containers, else every container."""
    servers = [c for c, _ in w.servers]
    return servers or rh.gpu_containers(w) or list(w.containers)


def cold_start_problem(w: workloads.Workload) -> tuple[int | None, str | None]:
    """``(seconds, problem)``: the declared cold start, or the problem with its declaration."""
    key = facts.COLD_START_ANNOTATION
    raw = w.annotations.get(key)
    if raw is None:
        return None, (
            "runs a model server but declares no cold start, so the startup probe budget cannot be "
            "checked against it; "
            f'declare it as annotation {key}: "<seconds>" (measured pod start to health endpoint answering)'
        )
    seconds = rh.whole(raw)
    if seconds is None or seconds <= 0:
        return None, f"annotation {key} is {raw!r}, not whole seconds above 0; declare the cold start as e.g. \"600\""
    return seconds, None


def probe_problem(c: workloads.Container, cold: int | None) -> str | None:
    """The start-up problem of one container, or None."""
    if c.startup_probe is None:
        killer = (
            "; its livenessProbe then runs from the first second and kills the server while it loads"
            if c.liveness_probe is not None else ""
        )
        target = f" ({cold} s declared)" if cold else ""
        return (f"container {c.name} has no startupProbe{killer}; add a startupProbe whose "
                f"periodSeconds x failureThreshold covers the cold start{target}")
    if cold is None:
        return None
    probe = rh.mapping(c.startup_probe)
    budget, formula = rh.probe_budget(probe)
    if rules.startup_budget_covers(budget, cold):
        return None
    period = rh.whole(probe.get("periodSeconds")) or rh.PROBE_PERIOD_DEFAULT
    delay = rh.whole(probe.get("initialDelaySeconds")) or 0
    needed = rules.startup_threshold_needed(cold, period, delay)
    return (f"container {c.name} startupProbe allows {budget} s ({formula}), which does not exceed the "
            f"declared cold start of {cold} s, so the kubelet kills the server before it is up; raise "
            f"failureThreshold to at least {needed} at periodSeconds {period}")


def validate(args, report_violation) -> None:
    w = workloads.of(args)
    if w is None:
        return
    declared = facts.COLD_START_ANNOTATION in w.annotations
    if not w.servers and not declared:
        return
    label = rh.workload_label(w)
    cold, problem = cold_start_problem(w)
    for text in [problem, *(probe_problem(c, cold) for c in judged_containers(w))]:
        if text:
            wrong, _, fix = text.rpartition("; ")
            report_violation(terms.message(w.annotations, Finding(
                label, wrong, fix, SOURCE,
                stack_fix="set cold_start_seconds under {key}; the component sizes the startup probe from it",
            )), args.urn)


POLICY = ResourceValidationPolicy(
    name=NAME,
    description="Model servers have a startupProbe whose period x failure threshold covers the declared cold start.",
    validate=validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Declare the measured cold start (stack file: cold_start_seconds on the workload, the "
        "components derive the probe; plain YAML: annotation llm-serving.riotpiao.com/cold-start-seconds "
        "on the workload) and give the server container a startupProbe on its health endpoint with "
        "periodSeconds x failureThreshold above it (coder.yaml: 15 s x 120 for about 10 minutes); "
        "keep any livenessProbe, it starts only after the startup probe succeeds."
    ),
)
