"""The Hugging Face cache of a server that fetches its model by hub id: one rule, three ways it
breaks. The cache must be writable unless the client is offline (kserve #3562, llm-d-modelservice
#243, huggingface_hub #2797); offline, it must be on a volume that outlives the pod, or it is empty at
every start (vllm-project/vllm #1986); on an emptyDir, its sizeLimit must hold the checkpoint, or the
kubelet evicts the pod mid-download (kserve #3792). Judged once for the pack (model-cache-usable).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from core.judging.registry import Breach, declare_policy, rule

SOURCE = ("kserve #3562, llm-d-modelservice #243, huggingface_hub #2797 (read-only cache); vllm-project/vllm #1986 "
          "(offline with an empty cache); kserve #3792 (emptyDir sizeLimit below the checkpoint)")


@rule("model-cache-usable", "A server that fetches its model by hub id has a cache it can use: writable unless "
      "offline, persistent when offline, large enough on an emptyDir.", SOURCE, policy="model-cache-usable")
def cache_usable(model: str, cache: str, where: str, writable: bool, persistent: bool, offline: bool,
                 size_limit: str | None, limit_bytes: int | None, checkpoint_bytes: int | None,
                 denied: bool = False) -> Breach | None:
    """``cache``: the cache directory; ``where``: the volume it lands on, worded; ``size_limit`` /
    ``limit_bytes``: an emptyDir's sizeLimit as written and in bytes; ``checkpoint_bytes``: the
    model's weights on disk (None: not known); ``denied``: not writable because the container's uid may
    not write there (else: read-only; :class:`core.k8s.manifests.filesystem.PathUse`)."""
    at = f"model {model} is fetched by hub id into {cache}, on {where}"
    if offline and not persistent:
        return Breach(f"{at}, with HF_HUB_OFFLINE=1: that volume is empty at every start, so the server cannot "
                      "resolve the model and crash-loops",
                      "put the cache (HF_HOME) on a persistentVolumeClaim that holds the downloaded model, or unset "
                      "HF_HUB_OFFLINE so the server downloads it")
    if not writable and not offline:
        return Breach(f"{at}, which " + ("its uid cannot write" if denied else "is read-only")
                      + ": the hub client cannot write the download (or its lock files), so resolving the model fails",
                      "mount the cache writable, or download the model beforehand and set HF_HUB_OFFLINE=1 so the "
                      "cache is only read")
    if (not offline and limit_bytes is not None and checkpoint_bytes is not None and limit_bytes < checkpoint_bytes):
        return Breach(f"{at}, whose sizeLimit {size_limit} ({limit_bytes / 2**30:.1f} GiB) is below the checkpoint's "
                      f"weights ({checkpoint_bytes / 2**30:.1f} GiB): the kubelet evicts the pod mid-download",
                      f"raise the emptyDir sizeLimit above {checkpoint_bytes / 2**30:.0f} GiB plus headroom, or put the "
                      "cache on a persistentVolumeClaim")
    return None


declare_policy(
    "model-cache-usable",
    (
        "A server fetching its model by hub id has a usable cache: writable unless offline, persistent when "
        "offline, large enough on an emptyDir."
    ),
    (
        "Put HF_HOME on a persistentVolumeClaim: writable when the server downloads, or pre-filled and read "
        "with HF_HUB_OFFLINE=1; an emptyDir cache needs a sizeLimit above the checkpoint and is never "
        "offline."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
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
