"""arbitrary-uid-has-home: a ``runAsUser`` the image does not know comes with a writable HOME and a USER.

Rule: a model server container (it runs a server the pack knows, or holds cards) whose ``runAsUser``
is not a uid of its image's /etc/passwd (the image catalog, ``core/data/images.yaml``) sets env
``USER`` (or ``LOGNAME``) and ``HOME`` on a writable volume. Without them HOME is ``/``,
``getpass.getuser()`` raises "getpwuid(): uid not found" (torch's compile cache calls it) and every
cache under HOME is unwritable. Images the catalog does not know are not judged.

Advisory: whether the server reaches those calls depends on its version and flags.
Source: kserve #5666, llm-d-benchmark PR #1573. Judged and worded once, in :mod:`core.rulebook.users`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from core.images import image_user
from core.manifests import filesystem as fs
from core.rulebook import users
from policylib import containers, declare

NAME = "arbitrary-uid-has-home"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for w, c in containers.each(args):
        known = image_user(c.image)
        uid = w.run_as(c)[1]
        if known is None or uid is None or (c.server is None and c.cards <= 0):
            continue
        home = c.env.get("HOME") or "/"
        missing = []
        if not (c.env.get("USER") or c.env.get("LOGNAME")):
            missing.append("USER or LOGNAME")
        if not c.env.get("HOME") or fs.place(w, c, home).mount is None or not fs.place(w, c, home).writable:
            missing.append("HOME on a writable volume")
        containers.report(args, report_violation, w, users.uid_has_home(c.image, uid, known.passwd_uids, home, missing), c)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.MEDIUM)
