"""network-egress-for-hub: a NetworkPolicy that isolates a model server's egress lets it fetch its model.

Rule: a running vLLM server whose model is a hub id and whose Hugging Face client is online (no
``HF_HUB_OFFLINE=1``), selected by NetworkPolicies that isolate egress, is admitted DNS (UDP 53) and
HTTPS (TCP 443) by some egress rule of theirs: otherwise resolving and downloading the model fail at
start. Destinations (``to``) are not judged; a rule naming the port to any peer counts.

Source: aws-network-policy-agent #230. Judged and worded once, in :mod:`core.rulebook.network`.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ReportViolation, Severity, StackValidationArgs

from core import registry
from core.manifests import filesystem as fs
from core.manifests.network_policies import parse_egress
from core.rulebook import network
from policylib import containers, declare, views

NAME = "network-egress-for-hub"
SOURCE = registry.RULES[NAME].source


def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:  # noqa: F821
    stack = views.stack_view(args.resources)
    egress = [p for urn, props in stack.network_policies if (p := parse_egress(urn, props)) is not None]
    if not egress:
        return
    for w in stack.workloads:
        if not w.running:
            continue
        isolating = [p for p in egress if p.namespace == w.namespace and w.matched_by(p.pod_selector)]
        if not isolating:
            continue
        for c, server in w.servers:
            if server.engine != "vllm" or not fs.is_hub_id(server.model_arg) or fs.offline(c):
                continue
            dns = any(p.admits(53, "UDP") for p in isolating)
            https = any(p.admits(443, "TCP") for p in isolating)
            containers.report(args, report_violation, w,
                              network.egress_for_hub(str(server.model_arg), [p.name for p in isolating], dns, https), c,
                              stack=True)


POLICY = declare.stack_policy(NAME, validate, EnforcementLevel.MANDATORY, Severity.HIGH)
