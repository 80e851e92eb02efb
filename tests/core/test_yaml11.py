"""Manifests read as kubectl reads them (sigs.k8s.io/yaml over yaml.v2, YAML 1.1: core/k8s/yaml11.py),
stack files still as the Pulumi CLI reads them (core/base/yaml12.py)."""

from __future__ import annotations

import pytest
import yaml

from core.judging.problems import ConfigError
from core.k8s.yaml11 import Yaml11Loader, resolve
from tests.paths import ROOT
from tools.offline.manifests import read_manifests
from tools.offline.yamlload import load_documents


@pytest.mark.parametrize(("text", "value"), [  # noqa: PT006
    ("0700", 448), ("0644", 420), ("0o700", 448), ("0x1F", 31), ("0b11", 3), ("-012", -10), ("0", 0),
    ("1_000", 1000), ("+12", 12),
    ("08", 8.0), ("1e3", 1000.0), (".5", 0.5),     # yaml.v2's float pattern after Go's ParseInt fails
    ("yes", True), ("Yes", True), ("on", True), ("ON", True), ("y", True), ("Y", True),
    ("no", False), ("off", False), ("n", False), ("N", False), ("true", True), ("False", False),
    ("~", None), ("null", None), ("", None),
    ("5:00", "5:00"),                              # no base 60 in yaml.v2
    ("2024-01-01", "2024-01-01"),                  # yaml.v2 keeps a timestamp as text in an untyped value
    ("'0700'", "0700"), ("abc", "abc"), ("0x", "0x"),
])
def test_plain_scalars_resolve_as_yaml_v2(text, value):
    assert resolve(text) == value
    assert load_documents(f"a: {text}\n", "m.yaml", kubectl=True) == [{"a": value}]


def test_the_same_text_read_as_a_stack_file_is_still_refused_or_text():
    with pytest.raises(ConfigError):
        load_documents("a: 0700\n", "Pulumi.x.yaml")
    assert load_documents("a: yes\n", "Pulumi.x.yaml") == [{"a": "yes"}]
    assert yaml.load("a: 0700\n", Loader=Yaml11Loader) == {"a": 448}


def test_the_guards_still_hold_for_manifests():
    with pytest.raises(ConfigError, match="given twice"):
        load_documents("a: 1\na: 2\n", "m.yaml", kubectl=True)
    with pytest.raises(ConfigError, match="not plain data"):
        load_documents("a: !!binary aGVsbG8=\n", "m.yaml", kubectl=True)


def test_a_default_mode_of_0700_in_a_plain_manifest_is_448_not_refused(tmp_path):
    """A Secret volume as the Kubernetes docs write it (kubernetes.io/docs/concepts/configuration/secret:
    "defaultMode: 0400" in YAML, 256 in JSON) on production-stack's rendered engine: before, the
    whole file was refused (exit 2, nothing judged) for the leading zero."""
    rendered = (ROOT / "tests" / "heldout" / "production-stack-engine-rendered.yaml").read_text()
    text = rendered.replace("          resources:\n            requests:",
                            "          volumeMounts: [{name: tls, mountPath: /etc/tls, readOnly: true}]\n"
                            "          resources:\n            requests:", 1).replace(
        "      containers:\n", "      volumes:\n      - name: tls\n        secret:\n          secretName: vllm-tls\n"
        "          defaultMode: 0700\n      containers:\n", 1)
    path = tmp_path / "engine.yaml"
    path.write_text(text)
    (deployment, _service) = read_manifests(path).resources
    assert deployment.props["spec"]["template"]["spec"]["volumes"][0]["secret"]["defaultMode"] == 448
