"""The policy pack gives the same verdicts on the same objects, from the program or as plain YAML.

What only a component knows (a Service's clients, a parked workload, a cold start) is
declared the same way in both modes (the annotations of ``core/base/facts.py``), so a team
can check its hand-written YAML before migrating and get the verdicts the program will get.

1. The user's directory: the five reference manifests plus a hand-written clef-serve
   Deployment (``tests/manifests/clef-serve.yaml``), checked as plain manifests, and the same
   objects registered by a Pulumi program through the pulumi-kubernetes typed classes under
   the mock runtime (the path ``pulumi preview`` takes: SDK serialisation, the analyzer's
   protobuf Struct). Both through the real pack process over gRPC.
2. The program's own rendering of a stack, judged as the program's resources and again as the
   YAML files the preview writes.
Verdicts compare (policy, level, object, message); URNs differ by construction.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from tests.paths import REFERENCE, ROOT
from tools import analyze
from tools.offline import mockrun, outdir, render
from tools.offline.manifests import load_stack_file

INVENTORY = ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"
CLEF_SERVE = ROOT / "tests" / "manifests" / "clef-serve.yaml"

#: A Pulumi program that registers every manifest of a directory with the typed classes.
REGISTER_MANIFESTS = textwrap.dedent(
    '''
    import os
    from pathlib import Path

    import pulumi
    import yaml
    from pulumi_kubernetes.apiextensions import CustomResource
    from pulumi_kubernetes.apps.v1 import Deployment
    from pulumi_kubernetes.core.v1 import Service

    for path in sorted(Path(os.environ["MANIFEST_DIR"]).glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            name = doc["metadata"]["name"]
            if doc["kind"] == "Deployment":
                Deployment(name, metadata=doc["metadata"], spec=doc["spec"])
            elif doc["kind"] == "Service":
                Service(name, metadata=doc["metadata"], spec=doc["spec"])
            else:
                CustomResource(name, api_version=doc["apiVersion"], kind=doc["kind"],
                               metadata=doc["metadata"], spec=doc["spec"])
    '''
)


@pytest.fixture(scope="module")
def user_directory(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("user-yaml")
    for f in sorted(REFERENCE.glob("*.yaml")) + [CLEF_SERVE]:
        shutil.copy(f, d / f.name)
    return d


def test_the_users_directory_gets_the_same_verdicts_from_yaml_and_from_a_program(user_directory, tmp_path, monkeypatch):
    config = load_stack_file(INVENTORY)
    plain = analyze.analyze_manifests(user_directory, INVENTORY)

    program = tmp_path / "__main__.py"
    program.write_text(REGISTER_MANIFESTS)
    monkeypatch.setenv("MANIFEST_DIR", str(user_directory))
    run = mockrun.run_program(config, program=program, stack="fixture")
    assert sorted(r.type for r in run.resources if r.custom) == [
        "kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:Deployment",
        "kubernetes:core/v1:Service", "kubernetes:core/v1:Service",
        "kubernetes:serving.kserve.io/v1beta1:InferenceService",
    ]
    from_program = analyze.run_pack(run.resources, config, stack="fixture")

    assert from_program.verdicts() == plain.verdicts()
    # Not vacuous: the hand-written directory has real findings, the same in both modes.
    flagged = {(policy, obj) for policy, _, obj, _ in plain.verdicts()}
    assert ("moving-tag-pull-always", "Deployment llm-serving/candle-vllm") in flagged
    assert ("multi-gpu-shm", "Deployment llm-serving/candle-vllm") in flagged
    assert ("service-selector-uniqueness", "Service llm-serving/reasoning-long-predictor") in flagged
    assert any(p == "gpu-card-allocation" and "worker-1: 5 of 4 cards" in m for p, _, _, m in plain.verdicts())
    # The parked clef-serve (replicas 0, declared by annotation) takes no card in either mode.
    assert not any("clef-serve" in m for p, _, _, m in plain.verdicts() if p == "gpu-card-allocation")
    assert plain.exit_code() == from_program.exit_code() == 1


@pytest.mark.parametrize("stack_file", ["tests/fixtures/prod/Pulumi.prod.yaml", "tests/stacks/after-001.yaml"])
def test_the_programs_objects_get_the_same_verdicts_as_the_yaml_it_writes(stack_file, tmp_path):
    stack_file = ROOT / stack_file
    config = load_stack_file(stack_file)
    run = mockrun.run_program(config, stack="prod")
    from_program = analyze.run_pack(run.resources, config, stack="prod")

    out = tmp_path / "out"
    outdir.write_tree(render.render(render.manifests(run.resources)), out)
    plain = analyze.analyze_manifests(out, stack_file)

    assert plain.verdicts() == from_program.verdicts()
    if stack_file.name == "after-001.yaml":
        # Seed 001's state: the spec's over-allocation, found the same way in both modes.
        assert any("worker-1: 6 of 4 cards requested" in m for _, _, _, m in plain.verdicts())
    else:
        assert plain.exit_code() == 0
