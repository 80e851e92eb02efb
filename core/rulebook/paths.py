"""The paths a model server uses, resolved once against its container's filesystem
(:func:`core.k8s.manifests.filesystem.paths`): a directory it writes at start on a read-only place, and a
path it reads at start (its model, its chat template) that is on no mount and not in the image
(``server-paths-usable``).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from core.judging.registry import Breach, declare_policy, rule

SOURCE = ("gpustack/gpustack #4292 (the model's volume not mounted in the vLLM pod: \"Can't load the configuration of "
          "'/model'\"); llm-d/llm-d PR #1711 (vLLM writes Triton's cache at start; where it cannot, the model server crashes); "
          "vllm-project/vllm #20127 (VLLM_CACHE_ROOT moved, other caches still under HOME); vllm-project/vllm #7978 "
          "(a chat template mounted from a ConfigMap); vllm entrypoints/chat_utils.py load_chat_template")


@rule("server-writes-caches", "A directory a model server writes at start is writable.", SOURCE,
      policy="server-paths-usable")
def writes(what: str, path: str, named_by: str, where: str, writable: bool, denied: bool = False) -> Breach | None:
    """``where``: the place it lands, worded (:attr:`core.k8s.manifests.filesystem.PathUse.where`); ``denied``: it is
    not writable for the container's uid (else: read-only)."""
    if writable:
        return None
    error = "Permission denied" if denied else "Read-only file system"
    return Breach(f"{what} is {path} ({named_by}), on {where}: the server's first write there fails ({error}) and it "
                  "crashes while starting",
                  f"mount a writable emptyDir at {path} (or set HOME, or the env that moves it, to a writable mount)")


@rule("server-reads-present", "A file or directory a server reads at start (its model, its chat template) is on a mount "
      "or in its image.", SOURCE, policy="server-paths-usable")
def read_present(what: str, flag: str, path: str, mounted: bool, in_image: bool | None) -> Breach | None:
    """``mounted``: the path lies under a volume mount; ``in_image``: under a directory the image ships (None: unknown)."""
    if mounted or in_image is not False:
        return None
    return Breach(f"{what} ({flag} {path}) is on no volume mount and not in the image: vLLM cannot open it and exits at start",
                  f"mount the volume that holds it at {path.rsplit('/', 1)[0] or '/'} (or point {flag} at the mount that holds it)")


declare_policy("server-paths-usable",
                "The directories a model server writes at start are writable, and the files it reads at start exist.",
                "Mount a writable emptyDir where each cache goes (or set its env to one), and mount the chat template "
                "where --chat-template names it.",
    kind="resource",
    level="mandatory",
    severity="high",
    doc="""server-paths-usable: the directories a model server writes at start are writable, the files it reads exist.

Rule: for each vLLM container, the paths of its filesystem derived once
(:func:`core.k8s.manifests.filesystem.paths`: vLLM's cache root and Triton's kernel cache, from their env or
their defaults under HOME, and ``--chat-template``'s file), each resolved against the volume mounts,
their ``readOnly``, the volume type, the container's ``readOnlyRootFilesystem`` and its uid: (1) a directory
the server writes while starting is on a writable place (a writable mount, or a root filesystem that is not
read-only, in a directory its uid may write: a non-root uid only under its own HOME or /tmp, so HOME=/ for a
uid the image does not know is not); (2) the model's path and the chat template are on a mount, or under a directory the image
ships (the image catalog's ``files``; an image the catalog does not describe is not judged).

The Hugging Face cache is judged by model-cache-usable; HOME on an arbitrary uid by arbitrary-uid-has-home.
Source: llm-d PR #1711, vllm #20127, vllm #7978, gpustack #4292. Judged and worded once, in :mod:`core.rulebook.paths`.
""",
)
