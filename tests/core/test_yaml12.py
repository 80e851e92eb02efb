"""YAML read as the Pulumi CLI reads it (YAML 1.2, as Go's yaml.v3 does: core/base/yaml12.py), with the
strict loader's guards kept, and every answer on text that is not YAML giving line, rule and fix."""

from __future__ import annotations

import io

import pytest
import yaml

from core.base.yaml12 import Yaml12Loader
from core.judging.problems import ConfigError
from tests.paths import PROD_STACK_FILE, ROOT
from tools import cli, preview
from tools.offline.yamlload import load_documents


@pytest.mark.parametrize(("text", "value"), [  # noqa: PT006
    ("5:00", "5:00"),          # YAML 1.1: 300 (base 60)
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"), ("y", "y"),  # YAML 1.1: booleans
    ("true", True), ("False", False), ("TRUE", True),
    ("0o17", 15),              # YAML 1.1: the text "0o17"
    ("0x1F", 31), ("-0b11", -3), ("+12", 12), ("1_000", 1000),
    ("1e3", 1000.0),           # YAML 1.1: the text "1e3" (its exponent needs a sign)
    ("2.0e9", 2.0e9),
    ("~", None), ("null", None), ("", None),
    ("'0777'", "0777"),
])
def test_plain_scalars_resolve_as_yaml_1_2(text, value):
    assert load_documents(f"a: {text}\n", "f.yaml") == [{"a": value}]
    assert yaml.load(f"a: {text}\n", Loader=Yaml12Loader) == {"a": value}


@pytest.mark.parametrize("text", ["0777", "-012", "00"])
def test_a_leading_zero_integer_is_refused_as_ambiguous(text):
    with pytest.raises(ConfigError) as exc:
        load_documents(f"a: {text}\n", "f.yaml")
    (problem,) = exc.value.problems
    assert problem.path == "a" and "YAML 1.2 reads it in base 10, the Pulumi CLI (yaml.v3) in base 8" in problem.rule
    assert problem.fix.startswith("write 0o")


def test_the_catalogs_and_the_stack_files_read_the_same_but_for_yaml_1_1_text():
    """Every YAML file of the project reads as PyYAML's YAML 1.1 loader read it, except the
    exponents without a sign (YAML 1.1 text, a number to the Pulumi CLI)."""
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    for path in (ROOT / "core" / "data").glob("*.yaml"):
        text = path.read_text()
        assert yaml.load(text, Loader=Yaml12Loader) == yaml.load(text, Loader=base), path
    text = PROD_STACK_FILE.read_text()
    old, new = yaml.load(text, Loader=base), load_documents(text, PROD_STACK_FILE.name)[0]
    facts = "llm-serving:models"
    assert old["config"][facts]["clef-flash"]["facts"]["parameters"] == "2.0e9"
    assert new["config"][facts]["clef-flash"]["facts"]["parameters"] == 2.0e9
    new["config"][facts]["clef-flash"]["facts"]["parameters"] = "2.0e9"
    assert new == old


@pytest.mark.parametrize(("text", "at", "words", "fix"), [  # noqa: PT006
    ("a:\n\tb: 1\n", "line 2, column 1", "a tab character indents this line", "replace the tabs with spaces"),
    ("a: b: c\n", "line 1, column 5", "a colon and a space inside a plain value", "quote the value"),
    ("a:\n  b: 1\n c: 2\n", "line 3, column 2", "the indentation does not line up", "indent each key"),
    ("a: *x\n", "line 1, column 4", "refers to no anchor", "define the anchor first"),
    ("a: " + "[" * 3000 + "]" * 3000 + "\n", "line 1, column 1003", "nested deeper than the parser goes",
     "flatten the data"),
    ("a: 'x\n", "line 2, column 1", "not valid YAML: while scanning a quoted scalar", "correct the YAML at that line"),
])
def test_text_that_is_not_yaml_names_line_rule_and_fix(text, at, words, fix):
    with pytest.raises(ConfigError) as exc:
        load_documents(text, "f.yaml")
    (problem,) = exc.value.problems
    assert (problem.path, words in problem.rule, fix in problem.fix) == (at, True, True), problem


def test_a_helm_template_says_render_it_first():
    with pytest.raises(ConfigError) as exc:
        load_documents("metadata:\n  name: {{ .Release.Name }}\n", "deploy.yaml")
    assert "helm template" in exc.value.problems[0].fix


def _preview(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    return preview.main(args, stdout=out, stderr=err), err.getvalue()


def test_a_stack_file_with_tabs_is_exit_2_with_file_line_and_fix(tmp_path):
    stack = tmp_path / "Pulumi.tabs.yaml"
    stack.write_text("config:\n\tllm-serving:namespace: x\n")
    code, err = _preview(["--stack-file", str(stack), "--out", str(tmp_path / "out"), "--no-policy"])
    assert code == cli.BAD_INPUT and "Traceback" not in err
    assert f"{stack}: not valid YAML at line 2, column 1 (" in err and "; fix: replace the tabs" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_missing_stack_file_is_exit_2_with_the_fix(tmp_path):
    code, err = _preview(["--stack-file", str(tmp_path / "Pulumi.nope.yaml"), "--out", str(tmp_path / "out")])
    assert code == cli.BAD_INPUT
    assert "cannot read the stack file: No such file or directory; fix: name an existing file" in err
