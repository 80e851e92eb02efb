"""The pack's policies judged by :mod:`core.rulebook.paths`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core.k8s.manifests import filesystem
from core.rulebook import paths
from policylib import containers, declare

# --- server-paths-usable: the directories a model server writes at start are writable, the files it reads exist.


def server_paths_usable(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for w, c in containers.each(args):
        for use in filesystem.paths(w, c):
            if use.writes:
                breach = paths.writes(use.what, use.path, use.named_by, use.where, use.writable,
                                      denied=use.place.mount is None and not use.root_read_only and use.denied_uid is not None)
            else:
                breach = paths.read_present(use.what, use.named_by, use.path, use.place.mount is not None,
                                            filesystem.in_image(c, use.path))
            containers.report(args, report_violation, w, breach, c)


declare.resource_policy(
    "server-paths-usable", server_paths_usable, EnforcementLevel.MANDATORY, Severity.HIGH,
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
