"""How the pack reads the manifests for the policies :mod:`core.rulebook.users` declares (each record is there; docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import ReportViolation, ResourceValidationArgs

from core.catalog.images import image_user
from core.k8s.manifests import filesystem as fs
from core.rulebook import users
from policylib import containers, declare, stackconfig

# --- arbitrary-uid-has-home: a ``runAsUser`` the image does not know comes with a writable HOME and a USER.


def arbitrary_uid_has_home(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
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


declare.validate("arbitrary-uid-has-home", arbitrary_uid_has_home)


# --- run-as-non-root-needs-uid: ``runAsNonRoot: true`` on an image whose user is root comes with a


def _uid_assigned() -> bool:
    """The inventory's ``uid_assigned_at_admission`` (False when the inventory is missing or unreadable)."""
    try:
        return stackconfig.inventory().uid_assigned_at_admission
    except stackconfig.StackConfigError:
        return False


def run_as_non_root_needs_uid(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    assigned: bool | None = None
    for w, c in containers.each(args):
        known = image_user(c.image)
        if known is not None:
            non_root, uid = w.run_as(c)
            if assigned is None:
                assigned = _uid_assigned()
            containers.report(args, report_violation, w,
                              users.non_root_needs_uid(c.image, known.user, non_root, uid, assigned), c)


declare.validate("run-as-non-root-needs-uid", run_as_non_root_needs_uid)
