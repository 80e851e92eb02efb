"""How the pack reads the manifests for the policies :mod:`core.rulebook.paths` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

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


declare.validate("server-paths-usable", server_paths_usable)
