"""moving-tag-pull-always: an image not pinned by digest is pulled on every pod start.

Rule, for every container and init container of every object that runs pods (GPU or not):
an image without ``@sha256:`` digest has a moving tag, so its effective ``imagePullPolicy`` is
``Always``. Which tags move is a fact of the cluster's registry: where the inventory says tags
are rebuilt in place (``llm-serving:cluster`` ``image_tags_rebuilt: true``; the user's forge
rebuilds ``:sm70``, seed 003) every tag moves, whatever it says (``:sm70``, ``:v0.11.0``,
``:latest`` or none). Elsewhere a tag naming a build (it carries a number: a release
``v0.11.0``, a date ``20250312_0916_RC01``, a commit ``sha-3f2a1c9``;
``core.images.ImageRef.names_a_build``) is taken as fixed, as public registries publish them,
and only no tag and word-only tags (``latest``, ``nightly``, ``main``, ``stable``) are judged. An omitted policy counts as what the API server stores:
``Always`` for ``:latest`` or no tag, ``IfNotPresent`` for any other tag (Kubernetes docs,
"Image pull policy").

Source: seed 003 (clef-candle.yaml: ":sm70 is a moving tag. Default IfNotPresent keeps a
cached copy and a rebuilt image never reaches the pod, so a merged fix looks like it did not
land"); spec history row: seed 001's coder-14b-fp16.yaml as written (``:sm70-gptq-slim``,
no imagePullPolicy) is flagged.

Does not check: whether a digest-pinned image exists; ``imagePullSecrets``; that the tag
was in fact rebuilt.

The rule is judged and worded once, in :mod:`core.rulebook.pods`; this module reads the manifests
and reports its breaches.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry, terms
from core.rulebook import pods as rules
from policylib import declare, stackconfig
from policylib import resource_helpers as rh

NAME = "moving-tag-pull-always"
SOURCE = registry.RULES[NAME].source


def tags_rebuilt() -> bool:
    """The inventory's ``image_tags_rebuilt`` (False when the inventory is missing or invalid:
    the stack policies report that)."""
    try:
        return stackconfig.inventory().image_tags_rebuilt
    except stackconfig.StackConfigError:
        return False


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type not in rh.CONTAINER_TYPES:
        return
    rebuilt = tags_rebuilt()
    label = rh.object_label(args.props, args.resource_type)
    annotations = rh.annotations_of(args.props)
    for where, spec in rh.pod_specs(args.resource_type, args.props):
        for field, c in rh.raw_containers(spec):
            image = str(c.get("image") or "")
            if not image:
                continue
            ref = rh.parse_image(image)
            moves = not (ref.pinned or (ref.names_a_build and not rebuilt))
            policy, defaulted = rh.effective_pull_policy(ref, c.get("imagePullPolicy"))
            breach = rules.pull_always(image, ref.shown_tag, moves, policy, defaulted)
            if breach is not None:
                report_violation(terms.message(annotations, breach.finding(rh.container_label(label, where, field, c))),
                                 args.urn)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.MEDIUM)
