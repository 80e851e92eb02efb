"""The user a container runs as, against its image (the image catalog, ``core/data/images.yaml``):
``runAsNonRoot`` on an image whose user is root needs a ``runAsUser`` (the kubelet refuses the
container otherwise), and a uid the image does not know has no name and no home, so it needs HOME
and USER set to something it can write. Judged once for the pack (run-as-non-root-needs-uid,
arbitrary-uid-has-home).

Plain Python, no Pulumi and no pydantic import.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.judging.registry import Breach, declare_policy, rule
from core.rulebook.pod_security import RUN_AS_NON_ROOT, RUN_AS_USER

NEEDS_UID_SOURCE = ("kubelet: 'container has runAsNonRoot and image will run as root' (llm-d/llm-d #12, "
                    "llm-d-benchmark PR #37); vllm/vllm-openai sets no USER")
HOME_SOURCE = ("kserve #5666 (KeyError: 'getpwuid(): uid not found'), llm-d-benchmark PR #1573 "
               "(permission errors under HOME=/)")


@rule("run-as-non-root-needs-uid", "runAsNonRoot on an image whose user is root comes with a non-zero runAsUser.",
      NEEDS_UID_SOURCE, policy="run-as-non-root-needs-uid")
def non_root_needs_uid(image: str, image_user: str, run_as_non_root: object, run_as_user: int | None,
                       uid_assigned: bool = False) -> Breach | None:
    """``image_user``: the catalog's user of ``image`` (``root``); the container's ``runAsNonRoot``
    and ``runAsUser`` (each the container's, else the pod's); ``uid_assigned``: the cluster's admission
    sets a uid on a pod without one (the inventory's ``uid_assigned_at_admission``, OpenShift)."""
    if run_as_non_root is not True or run_as_user is not None or image_user != "root" or uid_assigned:
        return None
    return Breach(
        f"{RUN_AS_NON_ROOT.to(True)} without {RUN_AS_USER}, and image {image} runs as root (its Dockerfile sets no "
        "USER): the kubelet refuses to start it ('container has runAsNonRoot and image will run as root')",
        f"add {RUN_AS_USER}: <non-zero uid> beside it (and give that uid a writable HOME), or remove "
        f"{RUN_AS_NON_ROOT} and declare why it runs as root (annotation llm-serving.riotpiao.com/runs-as-root)",
    )


@rule("arbitrary-uid-has-home", "A runAsUser the image does not know comes with a writable HOME and USER.",
      HOME_SOURCE, policy="arbitrary-uid-has-home")
def uid_has_home(image: str, uid: int, known: Sequence[int], home: str, missing: Sequence[str]) -> Breach | None:
    """``known``: the uids of the image's /etc/passwd; ``home``: HOME as the container gets it;
    ``missing``: what is not set (``USER or LOGNAME``, ``HOME on a writable volume``)."""
    if uid in known or not missing:
        return None
    return Breach(
        f"{RUN_AS_USER.to(uid)} is not a user of image {image} (its /etc/passwd knows uid "
        f"{', '.join(map(str, known))}), so it has no name and HOME is {home}; without "
        f"{' and '.join(missing)}, getpass.getuser() fails ('getpwuid(): uid not found: {uid}') and the caches "
        "under HOME (Hugging Face, torch compile, Triton) cannot be written",
        "set env HOME to a writable emptyDir mount (e.g. /home/server) and USER to a name, or run as a uid the image knows",
    )


declare_policy(
    'arbitrary-uid-has-home',
    "A model server's runAsUser that its image does not know comes with env HOME on a writable volume and USER.",
    (
        'Set env HOME to the mountPath of a writable emptyDir (e.g. /home/server) and USER to a name, or run '
        "as a uid the image's /etc/passwd knows (vllm/vllm-openai: root only)."
    ),
    kind="resource",
    level="advisory",
    severity="medium",
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


declare_policy(
    "run-as-non-root-needs-uid",
    "runAsNonRoot true on an image whose user is root comes with a non-zero runAsUser.",
    (
        "Add securityContext.runAsUser: <non-zero uid> beside runAsNonRoot: true, with env HOME on a writable"
        " volume and USER set (arbitrary-uid-has-home); or remove runAsNonRoot and declare why the server "
        "runs as root in the annotation llm-serving.riotpiao.com/runs-as-root."
    ),
    kind="resource",
    level="mandatory",
    severity="high",
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
