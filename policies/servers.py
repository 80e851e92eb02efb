"""How the pack reads the manifests for the policies :mod:`core.rulebook.servers` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core import rulebook
from core.base import facts
from core.catalog.images import image_user
from core.engines import config
from core.engines.config import VllmConfig
from core.judging import terms
from core.judging.registry import Breach
from core.k8s import manifests
from core.k8s.manifests import env
from core.rulebook import capacity_view as cv
from core.rulebook import probes
from core.rulebook import servers as rulebook_servers
from policylib import capacity_helpers as ch
from policylib import declare, stack_helpers, stackconfig, views
from policylib import resource_helpers as rh

# --- gpu-memory-request: a container holding cards declares its host memory request and limit.


def gpu_memory_request(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or not stackconfig.house_conventions():
        return  # a convention of this cluster's inventory (house_conventions), not a fact of every cluster
    for c in rh.gpu_containers(w):
        breach = rulebook.memory_declared(c.memory_request_mib, c.memory_limit_mib, c.cards)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


declare.validate("gpu-memory-request", gpu_memory_request)


# --- startup-probe-covers-cold-start: a model server's startup probe outlasts its cold start.

#: Where an assumed cold start comes from, as the wording names it.
ASSUMED = f"annotation {facts.COLD_START_ANNOTATION}; policy parameter assumedColdStartSeconds"


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
        if rulebook_servers.startup_budget_covers(grace, cold):
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


def startup_probe_covers_cold_start(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
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
        cold = int(stack_helpers.config_value(args, rulebook_servers.STARTUP_PROBE_COVERS_COLD_START_CONFIG, "assumedColdStartSeconds"))
    house = stackconfig.house_conventions()
    for c in judged_containers(w):
        breach = probe_breach(c, cold, declared, house)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{label}, container {c.name}")), args.urn)


declare.validate("startup-probe-covers-cold-start", startup_probe_covers_cold_start)


# --- tensor-parallel-divisibility: tensor parallel size divides the model's sharded dimensions.

#: Where the model facts come from, for a server whose model the stack does not list.
INVENTORY = "the pack's inventory (the stack config)"


def tensor_parallel_divisibility(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    parallel = [(c, s) for c, s in w.servers if s.tensor_parallel > 1]
    if not parallel:
        return
    try:
        models = stackconfig.models()
    except stackconfig.StackConfigError as err:
        report_violation(rh.config_error("tensor-parallel-divisibility", err), args.urn)
        return
    if not models.entries:
        return  # the stack describes no model: not judged (policylib.coverage says so)
    for c, s in parallel:
        where = f"{w.kind} {w.name}" + (f", container {c.name}" if len(w.servers) > 1 else "")
        found = models.find(s.model_arg)
        if found is None and not stackconfig.house_conventions():
            continue  # a model the stack does not list, on someone else's cluster: not judged (coverage)
        if found is None:
            unknown, _, add = cv.unknown_model_message(s.model_arg, s.engine).partition("; ")
            unlisted = Breach(f"cannot check tensor parallel {s.tensor_parallel}: {unknown}",
                              add or f"add the model to {stackconfig.PROJECT}:models", INVENTORY)
            report_violation(terms.message(w.annotations, unlisted.finding(where)), args.urn)
            continue
        key, facts = found
        breach = rulebook.tp_divides(key, facts, s.tensor_parallel, s.engine)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(where)), args.urn)


declare.validate("tensor-parallel-divisibility", tensor_parallel_divisibility)


# --- vllm-context-window: vLLM's --max-model-len fits the model's window, or the manifest carries what stretches it.

ALLOW_LONG = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def rope_scaling_of(s: manifests.ServerArgs) -> Mapping[str, Any] | None:
    """The rope_scaling a vLLM argv gives: ``--hf-overrides`` JSON's ``rope_scaling``, else
    ``--rope-scaling`` JSON; None when absent or not JSON of that shape."""
    for flag, key in ((VllmConfig.FLAGS["hf_overrides"], "rope_scaling"), ("--rope-scaling", None)):
        raw = s.get(flag)
        if not raw:
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if key and isinstance(value, Mapping):
            value = value.get(key)
        if isinstance(value, Mapping):
            return value
    return None


def message(sc: cv.ServerCapacity, _cards: int) -> str | None:
    if sc.server.engine != "vllm" or sc.facts is None or sc.settings.max_model_len is None:
        return None
    override = rope_scaling_of(sc.server)
    rope = sc.facts.window_rope_scaling(override)
    breach = rulebook.context_window(sc.model_key, sc.facts.max_position_embeddings, sc.settings.max_model_len,
                                     rope, env.env_flag_on(sc.container.env.get(ALLOW_LONG)),
                                     from_checkpoint=override is None and rope is not None)
    if breach is None:
        return None
    subject = f"{sc.workload.kind} {sc.workload.name}, container {sc.container.name}"
    return terms.message(sc.workload.annotations, breach.finding(subject))


def vllm_context_window(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    ch.validate_servers(args, report_violation, "vllm-context-window", "the context window", message)


declare.validate("vllm-context-window", vllm_context_window)


# --- vllm-gpu-memory-utilization: vLLM's --gpu-memory-utilization stays below its usual ceiling.

VLLM_DEFAULT = config.GPU_MEMORY_UTILIZATION_DEFAULT


def vllm_gpu_memory_utilization(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None:
        return
    overridden = facts.GMU_OVERRIDE_ANNOTATION in w.annotations
    for c, s in w.servers_of("vllm"):
        written = s.get(VllmConfig.FLAGS["gpu_memory_utilization"])
        value = s.settings().gpu_memory_utilization
        if value is None:
            value = VLLM_DEFAULT if written is None else None
        if value is None:
            continue  # not a number: the capacity policies report what the estimator refuses
        eager = s.has(VllmConfig.FLAGS["enforce_eager"])  # parse_args reads --enforce_eager as this
        breach = rulebook.gpu_memory_utilization(value, eager, overridden)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


declare.validate("vllm-gpu-memory-utilization", vllm_gpu_memory_utilization)


# --- vllm-parallelism: vLLM's tensor parallel x pipeline parallel size equals the container's cards.


def data_parallel(server: manifests.ServerArgs) -> int:
    """``--data-parallel-size`` (``-dp``), default 1."""
    return rh.whole(server.setting("data_parallel_size")) or 1


def vllm_parallelism(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    w = views.of(args)
    if w is None or (not w.is_gpu and w.other_accelerator):
        return  # another vendor's accelerator (amd.com/gpu, google.com/tpu): not modelled
    for c, server in w.servers_of("vllm"):
        if c.cards == 0 and image_user(c.image) is None:
            continue  # no card and an image outside the catalog: perhaps a CPU build
        breach = rulebook.parallel_matches_cards(server.tensor_parallel, server.pipeline_parallel, c.cards,
                                                 data_parallel(server))
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{rh.workload_label(w)}, container {c.name}")),
                             args.urn)


declare.validate("vllm-parallelism", vllm_parallelism)
