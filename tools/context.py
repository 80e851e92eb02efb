"""What already runs, as context for a file checked with ``python -m tools.analyze --manifests``: a
hand-written Deployment is judged beside the stack's own objects, so a card it asks for is counted
with the cards the stack already holds.

Two sources: :func:`from_stack`, the stack's offline rendering (the program under the mock runtime
with ``Pulumi.<stack>.yaml``, as ``--stack`` runs it); :func:`from_namespace`, the live objects of a
namespace read with kubectl (:mod:`tools.kubectl`). :func:`merge` puts a file's objects beside the
context (a file's object replaces the context's object of the same kind, namespace and name: the
file is the edit) and :func:`keep_file_findings` keeps the findings about the file's objects and
the stack, not the context's own (those are the stack's to fix: ``--stack``).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tools import kubectl
from tools.offline.manifests import Resource, load_stack_file, resources_from_documents
from tools.offline.report import Finding

#: The kinds read from a live namespace: the workloads, Services and NetworkPolicies the pack judges.
LIVE_KINDS = ("deployments.apps", "statefulsets.apps", "inferenceservices.serving.kserve.io",
              "leaderworkersets.leaderworkerset.x-k8s.io", "services", "networkpolicies.networking.k8s.io")
#: Fields of a live object that are the cluster's record, not the manifest.
_LIVE_ONLY = ("managedFields", "resourceVersion", "uid", "generation", "creationTimestamp", "selfLink")


class ContextError(Exception):
    """The context could not be read (the message says which source, why and the fix)."""


def _identity(r: Resource) -> tuple[str, str, str]:
    meta = r.props.get("metadata") or {}
    return r.type, str(meta.get("namespace") or ""), str(meta.get("name") or "")


def merge(file: list[Resource], context: Iterable[Resource]) -> tuple[list[Resource], set[str]]:
    """``(file's objects + the context's others, the context's URNs)``."""
    mine = {_identity(r) for r in file}
    extra = [r for r in context if r.custom and _identity(r) not in mine]
    return [*file, *extra], {r.urn for r in extra}


def keep_file_findings(findings: Iterable[Finding], context_urns: set[str]) -> tuple[Finding, ...]:
    """The findings not about an object of the context."""
    return tuple(f for f in findings if f.urn not in context_urns)


def from_stack(stack: str, root: Path, render: Callable[[dict[str, Any], str], list[Resource]]) -> list[Resource]:
    """The resources the program registers for ``Pulumi.<stack>.yaml`` under ``root``, run offline
    by ``render`` (config, stack) -> resources (:func:`tools.analyze.program_resources`)."""
    path = root / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise ContextError(f"cannot read stack {stack} as context: {path} does not exist; fix: name a stack "
                           "whose Pulumi.<stack>.yaml is in the project directory")
    return render(load_stack_file(path), stack)


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    obj = {k: v for k, v in obj.items() if k != "status"}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _LIVE_ONLY}
    return {**obj, "metadata": meta}


def from_namespace(namespace: str, kubeconfig: Path | None = None, stack: str = "live") -> list[Resource]:
    """The :data:`LIVE_KINDS` objects of ``namespace``, read with ``kubectl get -o json`` (a kind the
    cluster does not serve, such as InferenceService without KServe, is skipped)."""
    docs: list[dict[str, Any]] = []
    deadline = time.monotonic() + kubectl.TIMEOUT_S  # every call together, not each: six kinds
    for kind in LIVE_KINDS:
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise subprocess.TimeoutExpired(["kubectl", "get", kind], kubectl.TIMEOUT_S)
            done = kubectl.run(kubeconfig, "get", kind, "-n", namespace, "-o", "json", timeout=left)
        except FileNotFoundError as err:
            raise ContextError(f"cannot read namespace {namespace} as context: kubectl failed ({err}); fix: put "
                               "kubectl on PATH with a kubeconfig for the cluster, or use --context-stack") from None
        except subprocess.TimeoutExpired:
            raise ContextError(f"cannot read namespace {namespace} as context: kubectl did not answer within "
                               f"{kubectl.TIMEOUT_S} s for all {len(LIVE_KINDS)} kinds; fix: check that the API server "
                               "is reachable (kubectl version), or use --context-stack") from None
        except kubectl.KubectlOutputError as err:
            raise ContextError(f"cannot read namespace {namespace} as context: {err}") from None
        if done.returncode != 0:
            if "doesn't have a resource type" in done.stderr:
                continue
            raise ContextError(f"cannot read {kind} of namespace {namespace}: {done.stderr.strip()[:500]}; fix: check "
                               "the kubeconfig and that you may list them")
        try:
            listed = kubectl.json_object(done, f"get {kind} -n {namespace} -o json", list_of_items=True)
        except kubectl.KubectlOutputError as err:
            raise ContextError(f"cannot read namespace {namespace} as context: {err}") from None
        docs.extend(_clean(item) for item in listed["items"])
    return resources_from_documents(docs, stack, f"namespace {namespace}")
