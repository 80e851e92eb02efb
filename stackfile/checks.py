"""Cross-checks of the stack file: what only the stack file can say. Each workload against
the node the inventory lists and the model the catalog knows, each Service against its
workload, the former names, the objects left alone and the retire list; and the few server
rules no pack policy judges (a hybrid model on one card or on sm_70, the vLLM image pinned by
digest, KServe's predictor label of the name, pipeline parallel within the model's layers,
measured figures a card can hold), reported at their keys.

The engine, card and capacity rules (dtype on the card, kernels, tensor parallel, context
window, GPU memory utilization, memory requests, cards and memory against the node, /dev/shm,
the startup budget, weights and KV cache on the card) are judged once, by the policy pack on
the rendered manifests, its fix worded in the stack file's keys (docs/architecture.md). So are
the rules that judge several workloads together; the history stacks (``tests/stacks/``) load
so the pack can judge them.

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

from typing import Any

from core.base import facts
from core.capacity import comparison as capacity_measured
from core.capacity import estimator as capacity
from core.capacity.inventory import CardSpec, ClusterInventory, Node
from core.catalog import cards
from core.catalog.modelfacts import ModelEntry, ModelFacts
from core.engines.config import ServerSettings
from core.judging.problems import Problem
from core.judging.registry import Breach
from core.k8s import kube
from core.k8s.placement import STARTUP_HEADROOM, startup_threshold
from core.rulebook import allocation as allocation_rules
from core.rulebook import capacity as capacity_rules
from core.rulebook import servers as servers_rules
from core.rulebook import services as service_rules
from core.rulebook import stack_config as stack_config_rules
from core.rulebook import volta as volta_rules
from stackfile.objects import LeftAlone, ObjectRef, rendered_objects
from stackfile.schema import (
    PREFIX,
    CandleWorkload,
    ServiceConfig,
    StackConfig,
    VllmWorkload,
)

# --- cross-field checks ---------------------------------------------------------------------

def cross_checks(parts: dict[str, Any], model_facts: dict[str, ModelFacts], invalid: set[str],
                  declared: list[str]) -> list[Problem]:
    """Rules that relate items: each workload against its node and model, each Service against
    its workload. O(workloads + services); items in ``invalid`` are already reported. Without a
    valid cluster (``parts`` has no ``cluster``; its problems are already reported) the checks
    that need a node are skipped and every other one runs."""
    cluster: ClusterInventory | None = parts.get("cluster")
    models: dict[str, ModelEntry] = parts["models"]
    workloads: dict[str, Any] = parts["workloads"]
    nodes = {n.name: n for n in cluster.nodes} if cluster is not None else None
    out: list[Problem] = []
    for name, wl in workloads.items():
        out.extend(_check_workload(name, wl, nodes, models, model_facts, invalid))
        out.extend(_check_former_names(name, wl, workloads))
    for name, svc in parts["services"].items():
        if svc.selects not in invalid:
            out.extend(_check_service(name, svc, workloads, declared))
    out.extend(_check_left_alone(parts))
    out.extend(_check_retire(parts))
    if cluster is not None and declared:  # an inventory alone (analyze --manifests) names the manifests' servers
        out.extend(Problem(f"{PREFIX}cluster.measured.{name}", name,
                           f"a measurement for server {name}, which is not in {PREFIX}workloads, so it measures nothing",
                           f"move it under {PREFIX}workloads.<name>.measured, or remove it")
                   for name in cluster.measured if name not in declared)
    return out


def _check_retire(parts: dict[str, Any]) -> list[Problem]:
    """Each ``llm-serving:retire`` name is one its section no longer declares (retiring a current
    workload or Service would let a later deletion of it pass unrefused), named once."""
    retire = parts.get("retire")
    out: list[Problem] = []
    policy = parts.get("network_policy")
    current = {"workloads": parts["workloads"], "services": parts["services"],
               "network_policies": [policy.name] if policy is not None else []}
    for section in ("workloads", "services", "network_policies"):
        seen: set[str] = set()
        for i, name in enumerate(getattr(retire, section, None) or []):
            at = f"{PREFIX}retire.{section}[{i}]"
            if name in current[section]:
                held = "network_policy" if section == "network_policies" else section
                out.append(Problem(at, name, f"{name} is still in {PREFIX}{held}, so it is not retired",
                                   f"remove {name} from {PREFIX}retire.{section}, or remove it from {PREFIX}{held} "
                                   "to delete it"))
            elif name in seen:
                out.append(Problem(at, name, f"{name} is listed twice", "list each retired name once"))
            seen.add(name)
    return out


def _check_left_alone(parts: dict[str, Any]) -> list[Problem]:
    """Each ``llm-serving:left_alone`` entry names an object the stack does not render (the
    stack would manage it after all: Pulumi would change or delete what the entry says it leaves
    alone), and names it once. Objects of workloads that failed validation are not known here;
    those workloads are reported already."""
    items: list[LeftAlone] = parts.get("left_alone") or []
    namespace = parts.get("namespace") or StackConfig.model_fields["namespace"].default
    rendered = rendered_objects(namespace, parts["workloads"], parts["services"], parts.get("network_policy"))
    former = {ObjectRef(wl.KIND, namespace, old): name for name, wl in parts["workloads"].items()
              for old in (getattr(wl, "former_names", None) or ())}
    out: list[Problem] = []
    seen: dict[Any, int] = {}
    for i, item in enumerate(items):
        ref, at = item.ref(namespace), f"{PREFIX}left_alone.{i}"
        shown = item.model_dump(exclude_none=True)
        if ref in rendered:
            out.append(Problem(at, shown, f"{ref} is rendered by this stack, so Pulumi manages it: it cannot also be left alone",
                               f"remove this entry to have the stack manage {ref}, or remove {ref.name} from the stack's "
                               "workloads, services or network_policy to leave the live object alone"))
        elif ref in former:
            out.append(Problem(at, shown, f"{ref} is a former name of workload {former[ref]} (former_names), so Pulumi "
                               "replaces it, deleting the live object: it cannot also be left alone",
                               f"remove {ref.name} from llm-serving:workloads.{former[ref]}.former_names to leave the live "
                               "object alone (the workload is then created beside it), or remove this entry"))
        elif ref in seen:
            out.append(Problem(at, shown, f"{ref} is already listed at {PREFIX}left_alone.{seen[ref]}",
                               "keep one entry per object"))
        seen.setdefault(ref, i)
    return out


def _judged(at: str, judged: list[tuple[str, Any, Breach | None]]) -> list[Problem]:
    """The breaches among the judged ``(key, value, breach or None)`` of workload ``at``
    (``workloads.<name>``), each at its stack-file key (``""``: the workload itself)."""
    return [breach.problem(f"{PREFIX}{at}.{key}" if key else f"{PREFIX}{at}", value)
            for key, value, breach in judged if breach is not None]


def _check_workload(name: str, wl: Any, nodes: dict[str, Node] | None, models: dict[str, ModelEntry],
                    model_facts: dict[str, ModelFacts], invalid: set[str]) -> list[Problem]:
    """``nodes`` is None when the cluster is missing or invalid: node checks are skipped."""
    at = f"workloads.{name}"
    out: list[Problem] = []
    node = nodes.get(wl.node) if nodes is not None else None
    if nodes is not None and node is None:
        out += _judged(at, [("node", wl.node, allocation_rules.node_listed(wl.node, list(nodes), wl.cards))])
    elif node is not None:
        out += _judged(at, [("node", wl.node, allocation_rules.node_is_one_host(
            wl.node, node.autoscaling.max_nodes if node.autoscaling is not None else None))])
    card = node.card if node is not None else None
    threshold = startup_threshold(wl.cold_start_seconds, wl.startup_probe)
    if threshold > kube.INT32_MAX:
        most = kube.INT32_MAX * wl.startup_probe.period_seconds // STARTUP_HEADROOM
        out.append(Problem(f"{PREFIX}{at}.cold_start_seconds", wl.cold_start_seconds,
                           f"a cold start of {wl.cold_start_seconds:,} s needs a startup probe failureThreshold of "
                           f"{threshold:,}, beyond the int32 the Kubernetes API accepts ({kube.INT32_MAX:,})",
                           f"give the measured cold start in seconds (at most {most:,} at a "
                           f"{wl.startup_probe.period_seconds} s period)"))
    model_key = getattr(wl, "model", None)
    if model_key is not None and model_key not in invalid:
        out += _judged(at, [("model", model_key, stack_config_rules.model_listed(model_key, list(models)))])
    facts_ = model_facts.get(model_key) if model_key is not None else None
    if isinstance(wl, CandleWorkload):
        out.extend(_check_candle(at, wl, card, models.get(wl.model), facts_))
    elif isinstance(wl, VllmWorkload):
        out.extend(_check_vllm(at, wl, card, facts_))
    return out


def _check_former_names(name: str, wl: Any, workloads: dict[str, Any]) -> list[Problem]:
    """A former name is an alias of this workload: it cannot be its own name or another current
    workload's (two resources would claim one state entry), nor another workload's former name."""
    out: list[Problem] = []
    for i, former in enumerate(wl.former_names):
        at = f"{PREFIX}workloads.{name}.former_names[{i}]"
        if former in workloads:
            out.append(Problem(at, former, f"{former} is a current workload's name, so it cannot also be a former name of {name}",
                               f"remove {former} from former_names, or rename workload {former}"))
            continue
        claims = sorted(other for other, o in workloads.items() if other != name and former in o.former_names)
        if claims:
            out.append(Problem(at, former, f"{former} is also a former name of {', '.join(claims)}: one old object cannot become two",
                               f"keep {former} under the one workload that replaces it"))
    return out


def _check_candle(at: str, wl: CandleWorkload, card: CardSpec | None, entry: ModelEntry | None,
                  facts_: ModelFacts | None) -> list[Problem]:
    """The model entry's weights path (--w) and the rule no pack policy judges (a hybrid model on
    one card, seed 003); the server's other rules are the pack's, on the rendered Deployment."""
    out: list[Problem] = []
    if entry is not None and not entry.weights_path:
        out.append(Problem(f"{PREFIX}{at}.model", wl.model, f"model {wl.model} has no weights_path; candle-vllm loads --w from the PVC",
                           f"add weights_path: /mnt/models/<dir> to {PREFIX}models.{wl.model}"))
    if facts_ is not None:
        out += _judged(at, [("cards", wl.cards, servers_rules.hybrid_one_card(wl.model, facts_, wl.cards))])
        if card is not None:
            out += _measured_problems(at, facts_, card, wl, wl.settings(cards=wl.cards))
    return out


def _measured_problems(at: str, facts_: ModelFacts, card: CardSpec, wl: Any, settings: ServerSettings) -> list[Problem]:
    """The ``measured`` figures no card can hold (:func:`core.capacity.comparison.impossible`): the
    pack leaves them out of its capacity judgement, so the stack file refuses them. An estimate
    the settings do not allow is the pack's (kv-cache-fits-max-model-len)."""
    seen = getattr(wl, "measured", None)
    if seen is None:
        return []
    try:
        est = capacity.estimate(facts_, card, settings)
    except ValueError:
        return []
    return _judged(at, [(f"measured.{field}", value, capacity_rules.measured_within_card(field, value, bound))
                        for field, value, bound in capacity_measured.impossible(seen, est)])


def _sampler_env(wl: VllmWorkload, card: CardSpec) -> str | None:
    """``VLLM_USE_FLASHINFER_SAMPLER`` as the component's env sets it (components/vllm.py
    ``vllm_env``: the sm_70 pair below sm_75, then the workload's env)."""
    env = {**(facts.VLLM_VOLTA_ENV if cards.needs_volta_path(card.sm) else {}), **dict(wl.env or {})}
    return env.get(volta_rules.SAMPLER_ENV)


def _check_vllm(at: str, wl: VllmWorkload, card: CardSpec | None, facts_: ModelFacts | None) -> list[Problem]:
    """The rules no pack policy judges: the predictor label KServe derives from the name, the
    image pinned by digest (coder.yaml), a hybrid model on sm_70, pipeline parallel within the
    model's layers, measured figures a card can hold; the server's other rules are the pack's,
    on the rendered InferenceService."""
    name = at.split(".", 1)[1]
    out = _judged(at, [("", name, servers_rules.kserve_label(name)),
                       ("image", wl.image, servers_rules.digest_pinned(wl.image))])
    if facts_ is not None:
        out += _judged(at, [("model", wl.model, servers_rules.hybrid_on_volta_vllm(wl.model, facts_, card))])
        if wl.pipeline_parallel_size > facts_.num_hidden_layers:
            out.append(Problem(f"{PREFIX}{at}.pipeline_parallel_size", wl.pipeline_parallel_size,
                               f"pipeline parallel {wl.pipeline_parallel_size} exceeds the model's {facts_.num_hidden_layers} layers",
                               "lower pipeline_parallel_size"))
        if card is not None:
            out += _measured_problems(at, facts_, card, wl,
                                      wl.settings(tp=wl.tp, flashinfer_sampler=_sampler_env(wl, card)))
    return out


def _check_service(name: str, svc: ServiceConfig, workloads: dict[str, Any], declared: list[str]) -> list[Problem]:
    at = f"{PREFIX}services.{name}.selects"
    target = workloads.get(svc.selects)
    if target is None:
        return [Problem(at, svc.selects, f"Service {name} selects workload {svc.selects}, which is not in {PREFIX}workloads",
                        f"use one of {', '.join(declared) or '(none declared)'}, or add the workload")]
    parked = [f"{svc.selects} ({target.parked.reason})"] if target.parked else []
    breach = service_rules.selects_running(0 if target.parked else 1, parked, bool(svc.parked))
    return [breach.problem(at, svc.selects)] if breach else []
