"""The pack's policies judged by :mod:`core.rulebook.users`, one record each (docs/adding-a-policy.md)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

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


declare.resource_policy(
    "arbitrary-uid-has-home", arbitrary_uid_has_home, EnforcementLevel.ADVISORY, Severity.MEDIUM,
    doc="""arbitrary-uid-has-home: a ``runAsUser`` the image does not know comes with a writable HOME and a USER.

Rule: a model server container (it runs a server the pack knows, or holds cards) whose ``runAsUser``
is not a uid of its image's /etc/passwd (the image catalog, ``core/data/images.yaml``) sets env
``USER`` (or ``LOGNAME``) and ``HOME`` on a writable volume. Without them HOME is ``/``,
``getpass.getuser()`` raises "getpwuid(): uid not found" (torch's compile cache calls it) and every
cache under HOME is unwritable. Images the catalog does not know are not judged.

Advisory: whether the server reaches those calls depends on its version and flags.
Source: kserve #5666, llm-d-benchmark PR #1573. Judged and worded once, in :mod:`core.rulebook.users`.
""",
)


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


declare.resource_policy(
    "run-as-non-root-needs-uid", run_as_non_root_needs_uid, EnforcementLevel.MANDATORY, Severity.HIGH,
    doc="""run-as-non-root-needs-uid: ``runAsNonRoot: true`` on an image whose user is root comes with a
non-zero ``runAsUser``.

Rule: a container whose ``runAsNonRoot`` (its own, else the pod's) is true, with no ``runAsUser``
(its own, else the pod's), running an image the image catalog (``core/data/images.yaml``) records as
running as root: the kubelet refuses it ("container has runAsNonRoot and image will run as root")
and the pod never starts. Images the catalog does not know are not judged, nor clusters whose
admission assigns a uid (the inventory's ``uid_assigned_at_admission``: OpenShift's restricted-v2 SCC).

Source: llm-d/llm-d #12, llm-d-benchmark PR #37; vllm-project/vllm docker/Dockerfile (no USER).
The rule is judged and worded once, in :mod:`core.rulebook.users`.
""",
)
