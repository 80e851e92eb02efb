"""env-var-secret: no token, API key or password is written in plain text in an env value.

Rule: a container's env entry whose name says it holds a credential (``*_TOKEN``, ``*SECRET*``,
``*PASSWORD*``, ``*API_KEY*``, access and private keys: HF_TOKEN, VLLM_API_KEY, ...;
``core.rulebook.pod_security.SECRET_ENV_NAME``) has no literal ``value``: it reads a Secret
(``valueFrom.secretKeyRef``) or composes other variables (``$(VAR)``). A flag (``1``, ``true``), a
file path (``/run/secrets/...``, the Secret mounted as a file) and vLLM's documented "no key" value
``EMPTY`` are no credential.

Source: kube-linter's ``env-var-secret`` (pkg/builtinchecks/yamls/env-var-secret.yaml: an env name
matching ``(?i).*secret.*`` with a non-empty value; "Don't use raw secrets in an environment
variable. Instead, either mount the secret as a file or use a secretKeyRef"). checkov's CKV_K8S_35
(checkov/kubernetes/checks/resource/k8s/Secrets.py, CIS 5.4.1 "Prefer using secrets as files over
secrets as environment variables") is a different check: it fails on ``valueFrom.secretKeyRef`` and
``envFrom.secretRef`` themselves, which this policy accepts.

Advisory: the pod runs; a credential in the manifest is a judgement about who can read it (the
repository, the object), not a failure of serving. Judged on every manifest, not only under the
house conventions: a credential in git is exposed on any cluster.

Does not check: values in ConfigMaps read with ``envFrom`` or ``configMapKeyRef``, or credentials
in args.

The rule is judged and worded once, in :mod:`core.rulebook.pod_security`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from core import registry
from core.terms import message
from policylib import declare, podsec
from policylib.resource_helpers import annotations_of

NAME = "env-var-secret"
SOURCE = registry.RULES[NAME].source


def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    found = [c for _, _, containers in podsec.pods(args.resource_type, args.props)
             for c in podsec.secret_env_values(containers)]
    for where, breach in found:
        report_violation(message(annotations_of(args.props), breach.finding(where)), args.urn)


POLICY = declare.resource_policy(NAME, validate, EnforcementLevel.ADVISORY, Severity.HIGH)
