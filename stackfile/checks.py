"""Cross-checks of the stack file: each workload against its node and model, each Service
against its workload. The rules a server shares with the component args and the policy pack
are :mod:`core.rulebook`'s (registered in :mod:`core.registry`), reported here at their keys.

Rules that judge several workloads together (cards or memory summed over a node, one served
model name answered by two servers, two workloads behind one Service selector) are the policy
pack's (``policies/``), because the history stacks (``tests/stacks/``) must load so the pack
can judge them; these checks refuse what is wrong for one workload or one reference on its own.

Plain pydantic, no Pulumi import.
"""

from __future__ import annotations

from typing import Any

from core import capacity, capacity_measured, facts, kube, quantity, rulebook, rules
from core.engines import ServerSettings
from core.inventory import CardSpec, ClusterInventory, Node
from core.modelfacts import ModelEntry, ModelFacts
from core.placement import STARTUP_HEADROOM, startup_threshold
from core.problems import Problem
from core.registry import Breach
from core.rulebook import allocation as allocation_rules
from core.rulebook import capacity as capacity_rules
from core.rulebook import pods as pods_rules
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
    mib,
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


def _found(at: str, found: list[rulebook.Found]) -> list[Problem]:
    """The rulebook's breaches of workload ``at`` (``workloads.<name>``) at their stack-file keys."""
    return [breach.problem(f"{PREFIX}{at}.{key}" if key else f"{PREFIX}{at}", value) for key, value, breach in found]


def _judged(at: str, judged: list[tuple[str, Any, Breach | None]]) -> list[Problem]:
    """:func:`_found` of the judged ``(key, value, breach or None)`` that broke their rule."""
    return _found(at, [(key, value, breach) for key, value, breach in judged if breach is not None])


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
        out.extend(_check_fits_node(at, wl, node))
    card = node.card if node is not None else None
    threshold = startup_threshold(wl.cold_start_seconds, wl.startup_probe)
    if threshold > kube.INT32_MAX:
        most = kube.INT32_MAX * wl.startup_probe.period_seconds // STARTUP_HEADROOM
        return out + [Problem(f"{PREFIX}{at}.cold_start_seconds", wl.cold_start_seconds,
                              f"a cold start of {wl.cold_start_seconds:,} s needs a startup probe failureThreshold of "
                              f"{threshold:,}, beyond the int32 the Kubernetes API accepts ({kube.INT32_MAX:,})",
                              f"give the measured cold start in seconds (at most {most:,} at a "
                              f"{wl.startup_probe.period_seconds} s period)")]
    out += _found(at, rulebook.startup_breaches(wl.cold_start_seconds, wl.startup_probe.period_seconds, threshold))
    out += _found(at, [("resources", wl.resources.model_dump(exclude_none=True), b) for b in [rulebook.memory_declared(
        mib(wl.resources.requests.memory), mib(wl.resources.limits.memory), wl.cards)] if b])
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


def _check_fits_node(at: str, wl: Any, node: Node) -> list[Problem]:
    """One pod against its node: the per-workload forms of gpu-card-allocation, node-memory-allocation
    and multi-gpu-shm (the component's /dev/shm under the memory limit)."""
    limit = mib(wl.resources.limits.memory)
    return _judged(at, [
        ("cards", wl.cards, allocation_rules.pod_cards_fit(wl.cards, node.cards, node.name)),
        ("resources.requests.memory", wl.resources.requests.memory, allocation_rules.pod_memory_fits(
            mib(wl.resources.requests.memory), node.allocatable_memory_mib, node.name)),
        ("resources.limits.memory", wl.resources.limits.memory, pods_rules.shm_limit_covers(
            wl.cards, limit, quantity.mib_of(facts.SHM_SIZE_LIMIT), facts.SHM_SIZE_LIMIT)),
    ])


def _check_candle(at: str, wl: CandleWorkload, card: CardSpec | None, entry: ModelEntry | None,
                  facts_: ModelFacts | None) -> list[Problem]:
    out = _found(at, rulebook.candle_breaches(wl, cards=wl.cards, card=card, model_key=wl.model, model=facts_))
    if entry is not None and not entry.weights_path:
        out.append(Problem(f"{PREFIX}{at}.model", wl.model, f"model {wl.model} has no weights_path; candle-vllm loads --w from the PVC",
                           f"add weights_path: /mnt/models/<dir> to {PREFIX}models.{wl.model}"))
    if facts_ is not None and card is not None and not out:
        out += _capacity_problems(at, "candle-vllm", wl, facts_, card, wl.settings(cards=wl.cards))
    return out


def _capacity_problems(at: str, engine: str, wl: Any, facts_: ModelFacts, card: CardSpec,
                       settings: ServerSettings) -> list[Problem]:
    """The weights and KV cache of one server on its card, by :func:`core.capacity.estimate`,
    judged by the rules the pack's weights-fit-card and kv-cache-fits-max-model-len judge with."""
    try:
        est = capacity.estimate(facts_, card, settings)
    except ValueError as err:
        return _judged(at, [("", None, capacity_rules.estimable(str(err)))])
    seen = getattr(wl, "measured", None)
    if seen is not None:
        wrong = [(f"measured.{field}", value, capacity_rules.measured_within_card(field, value, bound))
                 for field, value, bound in capacity_measured.impossible(seen, est)]
        if wrong:
            return _judged(at, wrong)
    est = capacity_measured.judged(est, seen)  # the measured KV pool, where there is one
    tp_key = "tensor_parallel_size" if getattr(wl, "tensor_parallel_size", None) else "cards"
    if engine == "vllm":
        kv = ("max_model_len", est.max_model_len, capacity_rules.kv_cache_fits(wl.model, est))
    else:
        kv = ("kv_fraction", wl.kv_fraction, capacity_rules.candle_kv_room(est, wl.kv_fraction))
    judged = [(tp_key, est.tp, capacity_rules.weights_fit_card(wl.model, est)), kv]
    return _judged(at, judged)[:1]


def _sampler_env(wl: VllmWorkload, card: CardSpec) -> str | None:
    """``VLLM_USE_FLASHINFER_SAMPLER`` as the component's env sets it (components/vllm.py
    ``vllm_env``: the sm_70 pair below sm_75, then the workload's env)."""
    env = {**(facts.VLLM_VOLTA_ENV if rules.needs_volta_path(card.sm) else {}), **dict(wl.env or {})}
    return env.get(volta_rules.SAMPLER_ENV)


def _check_vllm(at: str, wl: VllmWorkload, card: CardSpec | None, facts_: ModelFacts | None) -> list[Problem]:
    name = at.split(".", 1)[1]
    out = _found(at, [("", name, b) for b in [rulebook.kserve_label(name)] if b])
    out += _found(at, rulebook.vllm_breaches(wl, cards=wl.cards, card=card, model_key=wl.model, model=facts_,
                                             env=wl.env))
    if facts_ is not None:
        if card is not None and not out:
            out += _capacity_problems(at, "vllm", wl, facts_, card,
                                      wl.settings(tp=wl.tp, flashinfer_sampler=_sampler_env(wl, card)))
        if wl.pipeline_parallel_size > facts_.num_hidden_layers:
            out.append(Problem(f"{PREFIX}{at}.pipeline_parallel_size", wl.pipeline_parallel_size,
                               f"pipeline parallel {wl.pipeline_parallel_size} exceeds the model's {facts_.num_hidden_layers} layers",
                               "lower pipeline_parallel_size"))
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
