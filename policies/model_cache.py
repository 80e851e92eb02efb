"""The pack's policies judged by :mod:`core.rulebook.model_cache`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

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


declare.resource_policy(
    "model-cache-usable", model_cache_usable, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""model-cache-usable: a server that fetches its model by hub id has a Hugging Face cache it can use.

Rule, per vLLM container whose model is a hub id (``Qwen/Qwen3-8B``, not a path or a URI), with its
cache directory (``--download-dir``, ``HF_HUB_CACHE``, ``HF_HOME``/hub, else HOME/.cache/huggingface/hub,
HOME from the env or the image catalog) and the volume that directory lands on
(:mod:`core.k8s.manifests.filesystem`):

- offline (``HF_HUB_OFFLINE=1``): the cache is on a volume that outlives the pod (not an emptyDir or
  the container's own filesystem, which are empty at every start);
- online: the cache is writable (not a ``readOnly`` mount, not a configMap or secret; on the container's
  own filesystem, not a ``readOnlyRootFilesystem`` and, for a non-root uid, under its HOME or /tmp:
  :func:`core.k8s.manifests.filesystem.path_use`, the model every path rule reads);
- online on an emptyDir with a ``sizeLimit``: the limit holds the checkpoint's weights
  (:func:`core.capacity.estimator.weights_per_card` at one card, for a model in the stack's models).

Not judged: a container whose HOME is not known (an image outside the catalog, with no cache env).
Source: kserve #3562, #3792; llm-d-modelservice #243; huggingface_hub #2797; vllm-project/vllm #1986.
Judged and worded once, in :mod:`core.rulebook.model_cache`.
""",
)
