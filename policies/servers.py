"""The pack's policies judged by :mod:`core.rulebook.servers`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

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


declare.resource_policy(
    "gpu-memory-request", gpu_memory_request, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""gpu-memory-request: a container holding cards declares its host memory request and limit.

Rule: each container with ``nvidia.com/gpu`` above 0 of a Deployment, StatefulSet or
InferenceService predictor has a memory limit, and a memory request or the limit Kubernetes
copies into it (:func:`core.rulebook.memory_declared`, the rule the stack file's
``resources`` check judges by too). Parked workloads are judged too (unparking is one replicas change).

Why: node-memory-allocation, like the scheduler, counts a pod by its memory requests; a GPU
server without one counts as 0 MiB and passes beside pods that already fill the node's 63,495
MiB, then is OOM-killed or starves them; without a limit nothing bounds what a server takes
while it loads its weights through host memory. coder.yaml: 12Gi request, 40Gi limit.

Source: spec "Memory requests must fit" row; coder.yaml (worker-1 exposes 63,495 MiB; "two vLLM workers
keep the weights on the GPU and need little host RAM, so the request stays small and the limit
allows burst").

Where: a convention of this cluster, which counts host memory per node
(``llm-serving:cluster`` ``house_conventions: true``, the user's inventory); on an inventory
without it the policy does not run: public manifests commonly leave host memory to the node,
and such house rules must not block other teams' YAML. Does not check: CPU, containers without cards, the figures themselves
(node-memory-allocation sums them).
""",
)


# --- startup-probe-covers-cold-start: a model server's startup probe outlasts its cold start.

#: The cold start assumed for a model server that declares none, seconds: coder.yaml's ~10 min.
ASSUMED_COLD_START_SECONDS = 600
#: Where an assumed cold start comes from, as the wording names it.
ASSUMED = f"annotation {facts.COLD_START_ANNOTATION}; policy parameter assumedColdStartSeconds"

STARTUP_PROBE_COVERS_COLD_START_CONFIG = {
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
        cold = int(stack_helpers.config_value(args, STARTUP_PROBE_COVERS_COLD_START_CONFIG, "assumedColdStartSeconds"))
    house = stackconfig.house_conventions()
    for c in judged_containers(w):
        breach = probe_breach(c, cold, declared, house)
        if breach:
            report_violation(terms.message(w.annotations, breach.finding(f"{label}, container {c.name}")), args.urn)


declare.resource_policy(
    "startup-probe-covers-cold-start", startup_probe_covers_cold_start, EnforcementLevel.MANDATORY, Severity.HIGH,
    config=STARTUP_PROBE_COVERS_COLD_START_CONFIG,
    doc="""startup-probe-covers-cold-start: a model server's startup probe outlasts its cold start.

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
""",
)


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


declare.resource_policy(
    "tensor-parallel-divisibility", tensor_parallel_divisibility, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""tensor-parallel-divisibility: tensor parallel size divides the model's sharded dimensions.

Rule, per vLLM / candle-vllm container with tensor parallel above 1 (vLLM
``--tensor-parallel-size``, candle-vllm the count of ``--d`` devices), by engine
(:meth:`core.catalog.modelfacts.ModelFacts.tp_divisibility_problems`): candle-vllm needs attention
heads, KV heads, intermediate size and vocabulary to divide by TP (it divides heads by the
rank count with integer division, qwen.rs, so the shards no longer match the layer shapes);
vLLM needs the attention heads to divide, replicates the KV heads when TP exceeds them (TP a
multiple of them), pads the vocabulary, and asserts a dense MLP's split (``divide`` in
vllm/distributed/utils.py). Both: the experts' width of an MoE model and, for a GPTQ
checkpoint, the quantization groups of the row-parallel projections. A server
whose model is not in the stack's models is reported with how to add it where the inventory holds
the house conventions (the user's cluster), and not judged elsewhere; a stack that lists no
model at all (``llm-serving:models`` absent: someone else's cluster) is not judged, and the
analyze summary says so.

Source: seed 001 (coder-14b-fp16.yaml: "Every dimension divides by 2: attention heads 40 ->
20, KV heads 8 -> 4, intermediate_size 13824 -> 6912, vocab 152064 -> 76032. Verify this first
for any replacement model"); spec "Tensor parallel needs attention heads, KV heads ... to divide" row.

Does not check: TP x PP against the pod's cards (vllm-parallelism, candle-vllm-args); that a
hybrid (GDN) model runs on one card (seed 003; the components refuse it); TP=1 servers.
""",
)


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


declare.resource_policy(
    "vllm-context-window", vllm_context_window, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""vllm-context-window: vLLM's --max-model-len fits the model's window, or the manifest carries what stretches it.

Rule: for each vLLM container whose model is in the stack's models (``llm-serving:models``),
an explicit ``--max-model-len`` is at most the window vLLM derives
(:func:`core.catalog.modelfacts.derived_max_model_len`: the model's ``max_position_embeddings``, scaled by a
``rope_scaling`` given as ``--hf-overrides '{"rope_scaling": {...}}'`` or the deprecated
``--rope-scaling '{...}'``; YaRN counts from ``original_max_position_embeddings``), unless the
container sets ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` (``1`` or ``true``). Otherwise vLLM v0.11.0
refuses to start ("User-specified max_model_len ... is greater than the derived max_model_len").
The stack file and the component args judge by the same rule and wording,
:func:`core.rulebook.context_window` (:func:`core.catalog.modelfacts.max_model_len_ok`).

Source: Prod's ``reasoning`` asks 65,536 of Qwen3-30B-A3B (config.json: 40,960), which
the user measured serving 64k: the Qwen3 model card's YaRN setting (``rope_type: yarn``,
``original_max_position_embeddings: 32768``, factor 2.0 for about 65,536 tokens, 4.0 for 131,072)
makes it start; coder.yaml ("Native window is 262144 and rope_scaling is null, so 256K needs no YaRN").

The checkpoint's own ``rope_scaling`` (the model facts' ``rope_scaling``, read from config.json)
counts when the manifest gives none: linear and dynamic multiply ``max_position_embeddings`` by the
factor, YaRN counts from ``original_max_position_embeddings``, llama3 / longrope / su leave it, and
Gemma 3's window is already scaled (vLLM v0.11.0 ``_get_and_verify_max_len``); a manifest's
rope_scaling replaces the checkpoint's whole (``--hf-overrides`` sets the config key).

Does not check: ``--hf-overrides`` in dotted form, servers without ``--max-model-len`` (vLLM then uses the derived
window itself), models not in the stack's models (kv-cache-fits-max-model-len reports those).
""",
)


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


declare.resource_policy(
    "vllm-gpu-memory-utilization", vllm_gpu_memory_utilization, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""vllm-gpu-memory-utilization: vLLM's --gpu-memory-utilization stays below its usual ceiling.

Rule: each vLLM container's ``--gpu-memory-utilization`` (vLLM's default 0.90 when absent) is at
most ``core.engines.config.GPU_MEMORY_UTILIZATION_CEILING`` (0.95), by
:func:`core.rulebook.gpu_memory_utilization`, the rule the stack file judges by too.
The bound is lifted only by ``--enforce-eager`` (no CUDA graphs are captured, so the headroom
they need is not needed) or an explicit override: the annotation
``facts.GMU_OVERRIDE_ANNOTATION`` with the reason (the components write it from the stack
file's ``gpu_memory_utilization_override: {reason: ...}``).

Why: vLLM sizes the KV cache to fill ``utilization x card`` and captures CUDA graphs, NCCL
buffers and the sampler's scratch afterwards from what is left: at 0.98 that ran out of memory
in CUDA-graph capture (vllm-project/vllm #15598). The capacity estimate never credits more than
the ceiling either (``core.capacity.estimator.estimate``), so the preview's table shows no extra room for it.

Source: vllm-project/vllm #15598; coder.yaml runs 0.90. Does not check: values outside (0, 1]
(the capacity policies report what the estimator refuses); candle-vllm (its ``--kv-fraction``
is a share of the memory free after load, bounded by the estimator).
""",
)


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


declare.resource_policy(
    "vllm-parallelism", vllm_parallelism, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""vllm-parallelism: vLLM's tensor parallel x pipeline parallel size equals the container's cards.

Rule, for every vLLM container: ``--tensor-parallel-size`` (``-tp``, default 1) x
``--pipeline-parallel-size`` (``-pp``, default 1) x ``--data-parallel-size`` (``-dp``,
default 1; one pod runs every local data-parallel rank) equals the container's
``nvidia.com/gpu`` (its limit, else its request). Fewer cards than ranks: vLLM fails at start
("world size ... greater than the number of available GPUs"); more: cards held and idle,
which on a fully allocated node starves another workload (coder.yaml's 2 cards).

Source: coder.yaml (``--tensor-parallel-size=2``, ``--pipeline-parallel-size=1``
with ``nvidia.com/gpu: "2"``), seed 002 reasoning.yaml (TP 1 on 1 card).

Does not check: that TP divides the model's heads (the TP divisibility policy, with model
facts); multi-node pipeline parallelism (Ray clusters, LeaderWorkerSets), which this stack does
not run; a pod on another vendor's accelerator (``amd.com/gpu``, ``google.com/tpu``), whose cards
are not nvidia.com/gpu (the analyze summary lists it as not judged); a container with no card whose
image the image catalog does not know (``core.catalog.images.image_user``): it may be a CPU build of vLLM
(tchangkiat/aws-cdk-stacks' Graviton vLLM, tests/heldout/).
""",
)
