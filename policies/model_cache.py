"""How the pack reads the manifests for the policies :mod:`core.rulebook.model_cache` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core.capacity import estimator as capacity
from core.k8s import quantity
from core.k8s.manifests import filesystem as fs
from core.rulebook import model_cache
from policylib import capacity_helpers, containers, declare, stackconfig

# --- model-cache-usable: a server that fetches its model by hub id has a Hugging Face cache it can use.


def checkpoint_bytes(w, c) -> int | None:
    """The weights of ``c``'s model at one card, when the stack's models know it; else None."""
    try:
        found = [sc for sc in capacity_helpers.servers(w, stackconfig.inventory(), stackconfig.models()) if sc.container is c]
    except stackconfig.StackConfigError:
        return None
    facts = found[0].facts if found else None
    return capacity.weights_per_card(facts, 1) if facts is not None else None


def model_cache_usable(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for w, c in containers.each(args):
        server = c.server
        if server is None or server.engine != "vllm" or not fs.is_hub_id(server.model_arg):
            continue
        cache = fs.hub_cache(w, c, server.get("--download-dir"))
        if cache is None:
            continue
        use = fs.path_use(w, c, "the Hugging Face cache", "HF_HOME", cache, writes=True)  # the container's filesystem
        at = use.place
        limit = quantity.parse_or_none(at.size_limit) if at.size_limit is not None else None
        offline = fs.offline(c)
        need = checkpoint_bytes(w, c) if limit is not None and not offline else None
        denied = at.mount is None and not use.root_read_only and use.denied_uid is not None
        breach = model_cache.cache_usable(str(server.model_arg), cache, use.where, use.writable, at.persistent, offline,
                                          at.size_limit, int(limit) if limit is not None else None, need, denied=denied)
        containers.report(args, report_violation, w, breach, c)


declare.validate("model-cache-usable", model_cache_usable)
