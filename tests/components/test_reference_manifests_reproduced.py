"""Fidelity to the user's YAML: the five reference manifests, produced by the components' pure
manifest functions from typed inputs and compared field by field with the parsed reference.

References: ``tests/reference/``, an unchanged copy of ``../shared/reference/k8s/apps/llm-serving/``
(``tests/project/test_reference_copy.py`` keeps it byte-identical).
Inputs: ``tests/fixtures/prod/Pulumi.prod.yaml`` (prod, frozen) for candle-vllm,
clef-candle, coder-predictor and reasoning-long-predictor; ``tests/stacks/after-002.yaml`` for
the coder InferenceService of coder.yaml (no longer in prod).

Every leaf of both manifests is compared. The rendering must equal the reference except for
the deltas listed in ``DELTAS``, each with its reason. A delta that is not listed fails the
test, and so does a listed delta that no longer occurs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from core.base import facts
from stackfile import load_stack_config
from stackfile.build import render_manifests
from tests.paths import REFERENCE, ROOT
from tools.offline.manifests import load_stack_file

Path_ = tuple  # a path into a manifest: keys and list indexes


@dataclass(frozen=True)
class Delta:
    """An expected difference: ``kind`` (added | removed | changed) at ``path`` or below it."""

    kind: str
    path: Path_
    reason: str


CONTAINER = ("spec", "template", "spec", "containers", 0)
POD = ("spec", "template", "spec")
PREDICTOR = ("spec", "predictor")
ISVC_CONTAINER = PREDICTOR + ("containers", 0)

CONTRACT = "the component -> policy contract annotations (core/base/facts.py), so the policy pack judges"
NODE = ("pinned to worker-1 with nodeSelector kubernetes.io/hostname, as coder.yaml pins its predictor; "
        "cards are counted per node")
STARTUP = "a startup probe whose budget exceeds the declared cold start (002, coder.yaml: 120 x 15 s)"
LIVENESS = "a liveness probe behind the startup probe (spec: facts each component must carry)"
SERVICE_LINKS = ("enableServiceLinks: false: a Service named like the engine (vllm) would inject VLLM_PORT=tcp://... "
                 "and vLLM refuses to start (vllm-project/vllm #34199)")


#: The pod security added to every model server (core/base/facts.py, components/workload.py).
SECURITY = "pod security: Pod Security Standards restricted where a GPU server allows it"
AS_ROOT = "runs as the image's user (root), with the reason written as the runs-as-root annotation"
WAIVERS = "checkov's skip annotations: each check the Deployment cannot meet, with its reason"


def _pod_security(pod: tuple, container: tuple, readiness: bool) -> list[Delta]:
    out = [Delta("added", pod + ("automountServiceAccountToken",), SECURITY + ": no service account token"),
           Delta("added", pod + ("securityContext",), SECURITY + ": seccomp RuntimeDefault"),
           Delta("added", container + ("securityContext",), SECURITY + ": no privilege escalation, drop ALL"),
           Delta("added", ("metadata", "annotations", facts.RUNS_AS_ROOT_ANNOTATION), AS_ROOT)]
    if readiness:
        out.append(Delta("added", container + ("readinessProbe",), "a readiness probe on every model server"))
    if pod == POD:
        out += [Delta("added", ("metadata", "annotations", f"{facts.CHECKOV_SKIP_ANNOTATION}{i}"), WAIVERS)
                for i in range(1, 5)]
    return out


AWAIT = ("how long pulumi up waits for it, from the declared cold start (core.rulebook.time_budgets.await_timeout_seconds; "
         "the provider's default is 10 minutes, less than reasoning's cold start with a margin)")


def _annotations(*keys: str) -> list[Delta]:
    return [Delta("added", ("metadata", "annotations", k), AWAIT if k == facts.AWAIT_TIMEOUT_ANNOTATION else CONTRACT)
            for k in keys]


WORKLOAD_ANNOTATIONS = (facts.COMPONENT_ANNOTATION, facts.COLD_START_ANNOTATION, facts.SERVED_NAMES_ANNOTATION,
                        facts.AWAIT_TIMEOUT_ANNOTATION)
SERVICE_ANNOTATIONS = (facts.COMPONENT_ANNOTATION, facts.CLIENTS_ANNOTATION, facts.AWAIT_TIMEOUT_ANNOTATION)

#: reference file -> (stack file, kind, name, expected deltas)
DELTAS: dict[str, tuple[str, str, str, list[Delta]]] = {
    "coder-14b-fp16.yaml": ("tests/fixtures/prod/Pulumi.prod.yaml", "Deployment", "candle-vllm", [
        *_annotations(*WORKLOAD_ANNOTATIONS),
        Delta("added", POD + ("nodeSelector",), NODE),
        Delta("added", CONTAINER + ("imagePullPolicy",),
              "imagePullPolicy Always on the moving tag :sm70-gptq-slim, or a rebuilt image never reaches the pod (003)"),
        Delta("added", CONTAINER + ("startupProbe",), STARTUP),
        Delta("added", CONTAINER + ("livenessProbe",), LIVENESS),
        Delta("added", CONTAINER + ("volumeMounts", 1),
              "TP=2: a Memory-backed /dev/shm (8Gi); the 64Mi default hangs NCCL or raises a bus error (coder.yaml)"),
        Delta("added", POD + ("volumes", 1), "the shm emptyDir volume behind that mount (coder.yaml)"),
        *_pod_security(POD, CONTAINER, readiness=True),
        Delta("added", POD + ("enableServiceLinks",), SERVICE_LINKS),
    ]),
    "clef-candle.yaml": ("tests/fixtures/prod/Pulumi.prod.yaml", "Deployment", "clef-candle", [
        *_annotations(*WORKLOAD_ANNOTATIONS),
        Delta("added", POD + ("nodeSelector",), NODE),
        Delta("added", CONTAINER + ("startupProbe",), STARTUP),
        Delta("added", CONTAINER + ("livenessProbe",), LIVENESS),
        *_pod_security(POD, CONTAINER, readiness=True),
        Delta("added", POD + ("enableServiceLinks",), SERVICE_LINKS),
    ]),
    "coder.yaml": ("tests/stacks/after-002.yaml", "InferenceService", "coder", [
        *_annotations(*WORKLOAD_ANNOTATIONS),
        Delta("added", ("metadata", "annotations", facts.WAIT_FOR_ANNOTATION),
              "pulumi up awaits the InferenceService's Ready condition (pulumi-kubernetes awaits a custom resource "
              "only with pulumi.com/waitFor), bounded by its timeoutSeconds"),
        Delta("added", ISVC_CONTAINER + ("livenessProbe",), LIVENESS),
        *_pod_security(PREDICTOR, ISVC_CONTAINER, readiness=False),
        Delta("added", ISVC_CONTAINER + ("volumeMounts", 0, "readOnly"),
              "the models PVC read-only everywhere (spec storage row); vLLM reads its Hugging Face cache on it offline"),
        Delta("added", ISVC_CONTAINER + ("env", 3), "HF_HUB_OFFLINE=1: the cache on the read-only PVC is read, never written"),
        Delta("added", PREDICTOR + ("enableServiceLinks",), SERVICE_LINKS),
    ]),
    "coder-service.yaml": ("tests/fixtures/prod/Pulumi.prod.yaml", "Service", "coder-predictor", [
        *_annotations(*SERVICE_ANNOTATIONS),
    ]),
    "reasoning-long-service.yaml": ("tests/fixtures/prod/Pulumi.prod.yaml", "Service", "reasoning-long-predictor", [
        *_annotations(*SERVICE_ANNOTATIONS),
    ]),
}


def flatten(value: Any, path: Path_ = ()) -> dict[Path_, Any]:
    """Every leaf of a manifest by its path; empty maps and lists are leaves."""
    if isinstance(value, dict) and value:
        out: dict[Path_, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, path + (k,)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, path + (i,)))
        return out
    return {path: value}


def differences(ours: dict, reference: dict) -> dict[Path_, tuple[str, Any, Any]]:
    """Leaf differences: path -> (added | removed | changed, our value, the reference's)."""
    a, b = flatten(ours), flatten(reference)
    out = {}
    for path in a.keys() | b.keys():
        if path not in b:
            out[path] = ("added", a[path], None)
        elif path not in a:
            out[path] = ("removed", None, b[path])
        elif a[path] != b[path] or type(a[path]) is not type(b[path]):
            out[path] = ("changed", a[path], b[path])
    return out


def _under(path: Path_, prefix: Path_) -> bool:
    return path[: len(prefix)] == prefix


def _show(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(path))


_configs: dict[str, Any] = {}


def rendered(stack_file: str, kind: str, name: str) -> dict:
    if stack_file not in _configs:
        _configs[stack_file] = load_stack_config(load_stack_file(ROOT / stack_file))
    for m in render_manifests(_configs[stack_file]):
        if m["kind"] == kind and m["metadata"]["name"] == name:
            return m
    raise AssertionError(f"{stack_file} renders no {kind} {name}")


@pytest.mark.parametrize("reference", sorted(DELTAS))
def test_reference_reproduced_except_listed_deltas(reference):
    stack_file, kind, name, expected = DELTAS[reference]
    ref = yaml.safe_load((REFERENCE / reference).read_text())
    ours = rendered(stack_file, kind, name)
    diffs = differences(ours, ref)

    unexplained = [
        f"{kind_} {_show(p)}: ours {a!r}, reference {b!r}"
        for p, (kind_, a, b) in sorted(diffs.items(), key=lambda kv: _show(kv[0]))
        if not any(d.kind == kind_ and _under(p, d.path) for d in expected)
    ]
    assert not unexplained, f"{reference}: deltas not listed:\n" + "\n".join(unexplained)

    stale = [f"{d.kind} {_show(d.path)} ({d.reason})" for d in expected
             if not any(k == d.kind and _under(p, d.path) for p, (k, _, _) in diffs.items())]
    assert not stale, f"{reference}: listed deltas that no longer occur:\n" + "\n".join(stale)


def test_the_comparison_sees_a_changed_leaf():
    """The comparison is field by field: one argv item changed is a delta at its index."""
    ref = yaml.safe_load((REFERENCE / "clef-candle.yaml").read_text())
    ours = yaml.safe_load((REFERENCE / "clef-candle.yaml").read_text())
    ours["spec"]["template"]["spec"]["containers"][0]["args"][11] = "0.31"
    assert differences(ours, ref) == {CONTAINER + ("args", 11): ("changed", "0.31", "0.30")}


def test_the_listed_deltas_carry_the_facts():
    """The deltas are the facts, with their values: Always on the moving tag, the shm volume
    for TP=2, the startup budget above the cold start (candle-vllm declares 300 s)."""
    ours = rendered("tests/fixtures/prod/Pulumi.prod.yaml", "Deployment", "candle-vllm")
    container = ours["spec"]["template"]["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "Always"
    assert {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}} in ours["spec"]["template"]["spec"]["volumes"]
    probe = container["startupProbe"]
    assert probe["httpGet"] == {"path": "/v1/models", "port": 8080}
    assert probe["periodSeconds"] * probe["failureThreshold"] == 900 > 300
