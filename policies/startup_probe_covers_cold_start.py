"""startup-probe-covers-cold-start: a model server's startup probe outlasts its cold start.

Applies to every workload that runs a model server (a vLLM or candle-vllm container,
recognised by image or command) and to every workload that declares a cold start
(annotation ``facts.COLD_START_ANNOTATION``, whole seconds, e.g. the PyTorch clef-serve).
The judged containers are the model-server containers, else those holding cards, else all.
One violation per problem:

- a declared cold start must be whole seconds above 0;
- each judged container has a ``startupProbe``: without one the kubelet runs the liveness
  probe from its ``initialDelaySeconds``, and a server still loading its weights fails it and
  is restarted (the message states that probe's own delay and budget); with one, liveness waits
  until startup succeeds;
- its budget, initialDelaySeconds + periodSeconds x failureThreshold (Kubernetes defaults 0,
  10 and 3 when omitted), EXCEEDS the cold start (spec "must exceed"), by
  :func:`core.rulebook.startup_budget`, the rule the program's config check judges by too.

The cold start judged is the declared one; when a model server declares none (every
hand-written manifest), it is the policy parameter ``assumedColdStartSeconds``, default 600 s:
coder.yaml's measured "TP=2 at 256K needs ~10 min before the API binds", the longest start
measured in this namespace (clef-serve: about 4 min). Why this and not the alternatives:

- a mandatory "declare it" (what this policy did) failed every correct hand-written manifest,
  e.g. coder.yaml with its ample 120 x 15 s probe, for a missing annotation, not a fault;
- an estimate from the weights size would be wrong by its largest terms: coder.yaml's start was
  22 s of weights, 80 s of torch.compile, 85 s of KV profiling, then graph capture, and the
  weights' share depends on the PVC's throughput, which nothing here knows;
- a default judged like a declaration keeps the check: a manifest without a probe, or with
  the Kubernetes default probe (3 x 10 s = 30 s), still fails, naming the assumption, while
  any probe that covers the namespace's worst measured start passes. A server that needs
  longer declares its cold start, which always wins over the default.

That is the user's cluster (inventory ``house_conventions: true``). On another team's cluster
600 s is this namespace's figure, not theirs, so an undeclared cold start decides only what it
must: a liveness probe without a startup probe whose grace (initialDelaySeconds + period x
threshold) does not cover the assumed cold start restarts the server while it loads, and
fails; a server with no liveness probe is never restarted while loading, and a startup probe
its author sized passes (declare the cold start to have it checked).

Source: seed 002 (clef-serve "Cold start is about four minutes ... startupProbe allows for
that"), coder.yaml ("TP=2 at 256K needs ~10 min before the API binds ... 120 x 15s = 30 min
of headroom"), spec "Start-up can take minutes" row; correct YAML raises no false alarm
(tests/manifests/hand-written/vllm-tp2.yaml).

Does not check: that the probes hit the port the server listens on (server-listen-endpoint);
that a liveness probe exists at all (a judgement, not a start-up failure); readiness probes;
parked workloads are judged too (unparking is one replicas change).
"""

from __future__ import annotations

from collections.abc import Mapping

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
)

from core import facts, manifests, registry, rulebook, rules, terms
from core.registry import Breach
from core.rulebook import probes
from policylib import declare, stack_helpers, stackconfig, views
from policylib import resource_helpers as rh

NAME = "startup-probe-covers-cold-start"
SOURCE = registry.RULES[NAME].source
#: The cold start assumed for a model server that declares none, seconds: coder.yaml's ~10 min.
ASSUMED_COLD_START_SECONDS = 600
#: Where an assumed cold start comes from, as the wording names it.
ASSUMED = f"annotation {facts.COLD_START_ANNOTATION}; policy parameter assumedColdStartSeconds"

CONFIG_PROPERTIES = {
    "assumedColdStartSeconds": {
        "type": "integer",
        "minimum": 1,
        "default": ASSUMED_COLD_START_SECONDS,
        "description": (
            "Cold start, seconds, assumed for a model server without the cold-start-seconds annotation "
            "(default 600: coder.yaml's vLLM TP=2 at 256K, the longest start measured here)."
        ),
    },
}


def judged_containers(w: manifests.Workload) -> list[manifests.Container]:
    """Model-server containers, else card-holding containers, else every container."""
    servers = [c for c, _ in w.servers]
    return servers or rh.gpu_containers(w) or list(w.containers)


def declared_cold_start(w: manifests.Workload) -> tuple[int | None, Breach | None]:
    """``(seconds, breach)``: the declared cold start (None when not declared), or what is wrong
    with its declaration (:func:`core.rulebook.probes.cold_start_declared`)."""
    raw = w.annotations.get(facts.COLD_START_ANNOTATION)
    if raw is None:
        return None, None
    seconds = rh.whole(raw)
    breach = probes.cold_start_declared(raw, seconds)
    return (None, breach) if breach else (seconds, None)


def liveness_text(probe: Mapping) -> str:
    """What a liveness probe without a startup probe does to a loading server, in its own numbers."""
    budget, formula = rh.probe_budget(probe)
    delay = rh.whole(probe.get("initialDelaySeconds")) or 0
    start = f"from initialDelaySeconds {delay}" if delay else "from the container's start (no initialDelaySeconds)"
    return (f"; its livenessProbe runs {start} and restarts the server if it is not answering "
            f"{budget} s in ({formula}), while it may still be loading")


def probe_breach(c: manifests.Container, cold: int, declared: bool, house: bool = True) -> Breach | None:
    """The start-up breach of one container against cold start ``cold`` seconds, or None.

    ``house``: the inventory's ``house_conventions`` (the user's cluster: every model server has
    a startup probe covering the declared or assumed cold start). Without it, an undeclared
    cold start is judged only where it decides the outcome: a liveness probe with no startup
    probe restarts a server that is not answering within the liveness grace, so that grace must
    cover the assumed cold start; a server with no liveness probe is never restarted while it
    loads, and a startup probe the author sized is left to that author (declare the cold start
    to have it checked)."""
    if not house and not declared:
        if c.startup_probe is not None or c.liveness_probe is None:
            return None
        grace, _ = rh.probe_budget(rh.mapping(c.liveness_probe))
        if rules.startup_budget_covers(grace, cold):
            return None
    if c.startup_probe is None:
        whose = (f"declared cold start of {cold} s" if declared
                 else f"cold start of {cold} s assumed for a model server that declares none ({ASSUMED})")
        killer = liveness_text(rh.mapping(c.liveness_probe)) if c.liveness_probe is not None else ""
        return probes.startup_probe_present(False, whose, killer)
    probe = rh.mapping(c.startup_probe)
    return rulebook.startup_budget(
        cold, rh.whole(probe.get("periodSeconds")) or rh.PROBE_PERIOD_DEFAULT,
        rh.whole(probe.get("failureThreshold")) or rh.PROBE_FAILURE_THRESHOLD_DEFAULT,
        rh.whole(probe.get("initialDelaySeconds")) or 0, assumed=None if declared else ASSUMED)


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    declared = facts.COLD_START_ANNOTATION in w.annotations
    if not w.servers and not declared:
        return
    label = rh.workload_label(w)
    cold, problem = declared_cold_start(w)
    if problem:
        report_violation(terms.message(w.annotations, problem.finding(label)), args.urn)
        return
    if cold is None:
        cold = int(stack_helpers.config_value(args, CONFIG_PROPERTIES, "assumedColdStartSeconds"))
    house = stackconfig.house_conventions()
    for c in judged_containers(w):
        breach = probe_breach(c, cold, declared, house)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{label}, container {c.name}")), args.urn)


POLICY = declare.resource_policy(
    NAME,
    validate,
    EnforcementLevel.MANDATORY,
    Severity.HIGH,
    config_schema=PolicyConfigSchema(properties=CONFIG_PROPERTIES),
)
