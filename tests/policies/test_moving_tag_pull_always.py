"""moving-tag-pull-always: an image not pinned by digest is pulled on every pod start (seed 003)."""

from __future__ import annotations

import pytest

from policylib import resource_helpers as rh
from policylib.pack import policy
from tests.paths import REFERENCE
from tests.policy_harness import DEFAULT_STACK_FILE, manifests, run_policy, use_stack_config
from tools.offline.manifests import load_manifest_dir, load_stack_file


def test_spec_history_row_coder_14b_fp16_as_written_is_the_only_finding_among_the_references():
    """Spec: "001's coder-14b-fp16.yaml as written: moving tag :sm70-gptq-slim without
    imagePullPolicy: Always"; clef-candle.yaml (Always) and coder.yaml (digest) pass."""
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    found = run_policy(policy("moving-tag-pull-always"), load_manifest_dir(REFERENCE))
    assert [(v.urn.rsplit("::", 1)[-1], ":sm70-gptq-slim" in v.message) for v in found] == [
        ("llm-serving/candle-vllm", True)
    ]


@pytest.mark.parametrize(
    "image, repository, tag, digest",
    [
        ("forgejo.riotpiao.com/riotpiao-poimen/candle-vllm:sm70", "forgejo.riotpiao.com/riotpiao-poimen/candle-vllm", "sm70", None),
        ("registry.local:5000/tools/proxy", "registry.local:5000/tools/proxy", None, None),
        ("registry.local:5000/tools/proxy:v1", "registry.local:5000/tools/proxy", "v1", None),
        ("vllm/vllm-openai:v0.11.0@sha256:014a", "vllm/vllm-openai", "v0.11.0", "sha256:014a"),
        ("nginx", "nginx", None, None),
    ],
)
def test_parse_image(image, repository, tag, digest):
    assert rh.parse_image(image) == rh.ImageRef(repository, tag, digest)


@pytest.mark.parametrize(
    "image, written, effective",
    [
        ("x:sm70", None, ("IfNotPresent", True)),
        ("x:latest", None, ("Always", True)),
        ("x", None, ("Always", True)),
        ("x:sm70", "Always", ("Always", False)),
    ],
)
def test_effective_pull_policy_follows_kubernetes_defaulting(image, written, effective):
    assert rh.effective_pull_policy(rh.parse_image(image), written) == effective


def test_explicit_if_not_present_on_latest_is_reported():
    text = """
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: d, namespace: llm-serving}
spec:
  template:
    spec:
      containers:
      - {name: a, image: "forgejo.riotpiao.com/x/clef-serve:latest", imagePullPolicy: IfNotPresent}
"""
    use_stack_config(load_stack_file(DEFAULT_STACK_FILE))
    (v,) = run_policy(policy("moving-tag-pull-always"), manifests(text))
    assert v.message.startswith(
        "DaemonSet d, container a: image forgejo.riotpiao.com/x/clef-serve:latest has moving tag :latest "
        "and imagePullPolicy IfNotPresent, so a rebuilt image never reaches the pod"
    )


@pytest.mark.parametrize(
    "image, version",
    [
        ("vllm/vllm-openai:v0.11.0@sha256:014a95f2", (0, 11, 0)),
        ("vllm/vllm-openai:v0.6.4.post1", (0, 6, 4)),
        ("vllm/vllm-openai:0.9.2rc1", (0, 9, 2)),
        ("vllm/vllm-openai:v0.10.1.1", (0, 10, 1, 1)),
        ("registry:5000/vllm:v0.11.0-cu128", (0, 11, 0)),
        ("vllm/vllm-openai:latest", None),
        ("ghcr.io/x/candle-vllm:sm70", None),
        ("vllm/vllm-openai", None),
        ("registry:5000/vllm", None),
    ],
)
def test_image_version(image, version):
    assert rh.parse_image(image).version == version
