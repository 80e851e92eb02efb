"""A stand-in policy pack: one resource policy, two stack policies, one with a config schema.

Started by tools/analyze.py exactly like policies/ (``python -u -m pulumi.policy <addr> .``),
so tests of the runner do not depend on the real policies.

- ``no-latest-tag`` (resource, mandatory, high): a Deployment container image ending ``:latest``;
  at level ``remediate`` it rewrites ``:latest`` to ``:pinned``.
- ``replica-budget`` (stack, advisory, medium): Deployments' replicas summed over the stack
  exceed ``maxReplicas`` (config, integer >= 1, default 3). Reports the URN of the largest.
- ``stack-echo`` (stack, advisory, low): reports what the pack received from the runner --
  the stack, project and organization (pulumi.get_*), the dry-run flag, the node names in
  the ``llm-serving:cluster`` config (PULUMI_CONFIG), the type of a number property, and each
  resource's parent/dependencies/protect -- so a test can assert they arrived as the CLI sends them.

With ``STANDIN_CALL_LOG`` set to a file path, the pack appends one JSON line per gRPC call it
receives, in the order it receives them: ``{"method": ...}``, plus the URN for ``Analyze`` /
``Remediate`` and stack, project, organization, dry run and config for ``ConfigureStack``
(a server interceptor, so calls pulumi-policy does not implement, such as ``Handshake``, are
logged too). tests/tools/test_analyze_call_order.py checks the runner's call order with it.
"""

import json
import os
import threading
from collections.abc import Mapping, Sequence

import grpc
import pulumi
import pulumi.runtime
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ResourceValidationPolicy,
    Severity,
    StackValidationPolicy,
)

DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _no_latest(args, report):
    if args.resource_type != DEPLOYMENT:
        return
    for c in args.props["spec"]["template"]["spec"]["containers"]:
        if str(c.get("image", "")).endswith(":latest"):
            report(f"{args.props['metadata']['name']}: image {c['image']} uses the moving tag :latest")


def _plain(value):
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(v) for v in value]
    return value


def _pin_latest(args):
    if args.resource_type != DEPLOYMENT:
        return None
    props = _plain(args.props)
    for c in props["spec"]["template"]["spec"]["containers"]:
        if str(c.get("image", "")).endswith(":latest"):
            c["image"] = c["image"][: -len(":latest")] + ":pinned"
    return props


def _replica_budget(args, report):
    limit = (args.get_config() or {}).get("maxReplicas", 3)
    deployments = [r for r in args.resources if r.resource_type == DEPLOYMENT]
    total = sum(r.props["spec"].get("replicas", 1) for r in deployments)
    if total > limit:
        largest = max(deployments, key=lambda r: (r.props["spec"].get("replicas", 1), r.urn))
        names = ", ".join(sorted(f"{r.props['metadata']['name']} {r.props['spec'].get('replicas', 1):g}" for r in deployments))
        report(f"{total:g} replicas requested, at most {limit}: {names}", largest.urn)


def _stack_echo(args, report):
    cluster = json.loads(pulumi.runtime.get_config("llm-serving:cluster") or '{"nodes": []}')
    nodes = ",".join(n["name"] for n in cluster["nodes"])
    report(
        f"stack={pulumi.get_stack()} project={pulumi.get_project()} org={pulumi.get_organization()} "
        f"dry_run={pulumi.runtime.is_dry_run()} nodes={nodes}"
    )
    for r in sorted(args.resources, key=lambda r: r.urn):
        replicas = r.props.get("spec", {}).get("replicas") if r.resource_type == DEPLOYMENT else None
        report(
            f"{r.name}: parent={r.parent.urn if r.parent else ''} deps={[d.urn for d in r.dependencies]} "
            f"protect={r.opts.protect} replicas_type={type(replicas).__name__}",
            r.urn,
        )


def _log_calls(path: str) -> None:
    """Make every gRPC server this process creates log each call to ``path`` (see above)."""
    lock = threading.Lock()

    def record(method: str, request) -> None:
        entry = {"method": method}
        if method in ("Analyze", "Remediate"):
            entry["urn"] = request.urn
        elif method == "ConfigureStack":
            entry.update(stack=request.stack, project=request.project, organization=request.organization,
                         dry_run=request.dry_run, config=dict(request.config.items()))
        with lock, open(path, "a", encoding="utf-8") as f:  # noqa: PTH123
            f.write(json.dumps(entry) + "\n")

    class CallLog(grpc.ServerInterceptor):
        def intercept_service(self, continuation, details):
            handler = continuation(details)
            method = details.method.rsplit("/", 1)[-1]
            if handler is None or handler.unary_unary is None:
                record(method, None)
                return handler
            inner = handler.unary_unary

            def logged(request, context):
                record(method, request)
                return inner(request, context)

            return handler._replace(unary_unary=logged)

    make_server = grpc.server

    def server(*args, **kwargs):
        kwargs["interceptors"] = [CallLog(), *(kwargs.get("interceptors") or ())]
        return make_server(*args, **kwargs)

    grpc.server = server


if os.environ.get("STANDIN_CALL_LOG"):
    _log_calls(os.environ["STANDIN_CALL_LOG"])


PolicyPack(
    name="standin-pack",
    enforcement_level=EnforcementLevel.ADVISORY,
    policies=[
        ResourceValidationPolicy(
            name="no-latest-tag",
            description="Images do not use the moving tag :latest.",
            enforcement_level=EnforcementLevel.MANDATORY,
            severity=Severity.HIGH,
            remediation_steps="Pin the image by digest or a release tag.",
            validate=_no_latest,
            remediate=_pin_latest,
        ),
        StackValidationPolicy(
            name="replica-budget",
            description="The stack's Deployments stay within a replica budget.",
            severity=Severity.MEDIUM,
            remediation_steps="Lower replicas, or raise maxReplicas in the policy pack config.",
            config_schema=PolicyConfigSchema(properties={"maxReplicas": {"type": "integer", "minimum": 1, "default": 3}}),
            validate=_replica_budget,
        ),
        StackValidationPolicy(
            name="stack-echo",
            description="Echoes what the pack received.",
            severity=Severity.LOW,
            remediation_steps="Nothing to fix: a test probe.",
            validate=_stack_echo,
        ),
    ],
)
