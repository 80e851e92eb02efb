"""run-as-non-root-needs-uid: ``runAsNonRoot: true`` on an image whose user is root comes with a
non-zero ``runAsUser``.

Rule: a container whose ``runAsNonRoot`` (its own, else the pod's) is true, with no ``runAsUser``
(its own, else the pod's), running an image the image catalog (``core/data/images.yaml``) records as
running as root: the kubelet refuses it ("container has runAsNonRoot and image will run as root")
and the pod never starts. Images the catalog does not know are not judged, nor clusters whose
admission assigns a uid (the inventory's ``uid_assigned_at_admission``: OpenShift's restricted-v2 SCC).

Source: llm-d/llm-d #12, llm-d-benchmark PR #37; vllm-project/vllm docker/Dockerfile (no USER).
The rule is judged and worded once, in :mod:`core.rulebook.users`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from core.images import image_user
from core.rulebook import users
from policylib import containers, declare, stackconfig

NAME = "run-as-non-root-needs-uid"
SOURCE = registry.RULES[NAME].source


def _uid_assigned() -> bool:
    """The inventory's ``uid_assigned_at_admission`` (False when the inventory is missing or unreadable)."""
    try:
        return stackconfig.inventory().uid_assigned_at_admission
    except stackconfig.StackConfigError:
        return False


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    assigned: bool | None = None
    for w, c in containers.each(args):
        known = image_user(c.image)
        if known is not None:
            non_root, uid = w.run_as(c)
            if assigned is None:
                assigned = _uid_assigned()
            containers.report(args, report_violation, w,
                              users.non_root_needs_uid(c.image, known.user, non_root, uid, assigned), c)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
