"""run-as-non-root-needs-uid: ``runAsNonRoot: true`` on an image whose user is root comes with a
non-zero ``runAsUser``.

Rule: a container whose ``runAsNonRoot`` (its own, else the pod's) is true, with no ``runAsUser``
(its own, else the pod's), running an image the image catalog (``core/data/images.yaml``) records as
running as root: the kubelet refuses it ("container has runAsNonRoot and image will run as root")
and the pod never starts. Images the catalog does not know are not judged.

Source: llm-d/llm-d #12, llm-d-benchmark PR #37; vllm-project/vllm docker/Dockerfile (no USER).
The rule is judged and worded once, in :mod:`core.rulebook.users`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from core.images import image_user
from core.rulebook import users
from policylib import containers, declare

NAME = "run-as-non-root-needs-uid"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for w, c in containers.each(args):
        known = image_user(c.image)
        if known is not None:
            non_root, uid = w.run_as(c)
            containers.report(args, report_violation, w, users.non_root_needs_uid(c.image, known.user, non_root, uid), c)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
