"""Secrets: a stack config value marked secret (``secure:`` in the stack file, what
``pulumi config set --secret`` writes; decrypted by the CLI, which marks the key secret) is
accepted where a secret belongs, ``secret_env`` of a workload, and refused anywhere else. The
workload's Secret stays with Pulumi (registered, applied by ``pulumi up``, encrypted in the state)
and is never rendered: the rendering ArgoCD applies holds only the ``secretKeyRef`` that names it
(docs/secrets.md). A planted token, and the placeholder ``[secret]``, are looked for in every
output; the real CLI's side is ``tests/real/test_real_secrets_render.py``.
"""

from __future__ import annotations

import copy
import io

import pytest
import yaml
from pydantic import SecretStr

from stackfile import ConfigError, load_stack_config
from tests.paths import PROD_STACK_FILE
from tools import analyze, preview
from tools.offline import mockrun, outdir, render, rendering, summary, treediff
from tools.offline.manifests import load_stack_file
from tools.offline.report import FORMATS

TOKEN = "hf_PLANTEDt0ken9f3a"
W = "llm-serving:workloads"


def prod_with_secret(value) -> dict:
    config = copy.deepcopy(load_stack_file(PROD_STACK_FILE))
    config[W]["reasoning"]["secret_env"] = {"HF_TOKEN": value}
    config[W]["candle-vllm"]["secret_env"] = {"API_KEY": value}
    return config


@pytest.fixture(scope="module")
def decrypted_run():
    """The program as the CLI runs it after decrypting: the value in plain text in
    PULUMI_CONFIG, the key listed in PULUMI_CONFIG_SECRET_KEYS."""
    config = prod_with_secret(TOKEN)
    return config, mockrun.run_program(config, secret_keys=[W])


def test_a_secret_is_registered_with_pulumi_and_only_its_secret_key_refs_are_rendered(decrypted_run):
    _, run = decrypted_run
    objs = {(o["kind"], o["metadata"]["name"]): o for o in render.manifests(run.resources)}
    assert not [key for key in objs if key[0] == "Secret"]
    registered = {r.name: r.props for r in run.resources if r.type == "kubernetes:core/v1:Secret"}
    assert registered["reasoning-env"]["stringData"] == {"HF_TOKEN": "[secret]"}  # the mock's view of Output.secret
    assert registered["candle-vllm-env"]["stringData"] == {"API_KEY": "[secret]"}
    assert render.kept_by_pulumi(run.resources) == ["Secret llm-serving/candle-vllm-env", "Secret llm-serving/reasoning-env"]
    isvc_env = objs[("InferenceService", "reasoning")]["spec"]["predictor"]["containers"][0]["env"]
    assert isvc_env[-1] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "reasoning-env", "key": "HF_TOKEN"}}}
    pod = objs[("Deployment", "candle-vllm")]["spec"]["template"]["spec"]
    assert pod["containers"][0]["env"] == [
        {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "candle-vllm-env", "key": "API_KEY"}}}]
    secret = next(r for r in run.resources if r.type == "kubernetes:core/v1:Secret" and r.name == "reasoning-env")
    assert secret.parent.endswith("VllmInferenceService::reasoning")


def test_the_planted_token_is_in_no_output(decrypted_run, tmp_path):
    config, run = decrypted_run
    files = render.render(render.manifests(run.resources))
    base = tmp_path / "base"
    outdir.write_tree(render.render(render.manifests(mockrun.run_program(
        load_stack_file(PROD_STACK_FILE)).resources)), base)
    diff = treediff.diff_trees(rendering.load_tree(base), {render.render_path(o): o for o in render.manifests(run.resources)})
    report = analyze.run_pack(run.resources, preview.pack_config(config))
    texts = {
        "rendering": "\n".join(files.values()),
        "diff": diff.render(),
        "summary": summary.summary(run.resources, config, "prod", run.outputs),
        "records": repr([r.props for r in run.resources]),
        "outputs": repr(run.outputs),
        **{f"report {fmt}": report.render(fmt) for fmt in FORMATS},
    }
    assert "reasoning-env" in diff.render()  # the secretKeyRef that names it
    assert {name: TOKEN in text for name, text in texts.items()} == {name: False for name in texts}
    assert "[secret]" not in texts["rendering"] + texts["diff"]
    assert report.exit_code() == 0, report.render("table")


def test_a_secure_value_in_the_stack_file_previews_with_nothing_decrypted(tmp_path):
    text = PROD_STACK_FILE.read_text().replace(
        "      reasoning_parser: qwen3\n",
        "      reasoning_parser: qwen3\n      secret_env:\n        HF_TOKEN:\n          secure: v1:c2VjcmV0Y2lwaGVy\n")
    stack = tmp_path / "Pulumi.sec.yaml"
    stack.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    code = preview.main(["--stack-file", str(stack), "--out", str(tmp_path / "out")], stdout=out, stderr=err)
    assert code == 0, out.getvalue() + err.getvalue()
    assert not (tmp_path / "out" / "1-manifest" / "v1-secret-llm-serving-reasoning-env.yaml").exists()
    assert ("not rendered: Secret llm-serving/reasoning-env, applied by pulumi up only (Secrets stay with Pulumi; "
            "docs/secrets.md)") in out.getvalue()
    rendered = "".join(p.read_text() for p in (tmp_path / "out").rglob("*.yaml"))
    isvc = yaml.safe_load((tmp_path / "out" / "1-manifest" / "serving.kserve.io_v1beta1-inferenceservice-llm-serving-reasoning.yaml").read_text())
    assert isvc["spec"]["predictor"]["containers"][0]["env"][-1] == {
        "name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "reasoning-env", "key": "HF_TOKEN"}}}
    assert "c2VjcmV0Y2lwaGVy" not in rendered + out.getvalue() + err.getvalue()
    assert "[secret]" not in rendered


@pytest.mark.parametrize("value", [TOKEN, {"plain": TOKEN}, [TOKEN]])
def test_a_plain_text_secret_is_refused_without_showing_it(value):
    with pytest.raises(ConfigError) as err:
        load_stack_config(prod_with_secret(value))
    text = err.value.render()
    assert TOKEN not in text
    found = {p.path: p for p in err.value.problems}
    p = found.get(f"{W}.reasoning.secret_env.HF_TOKEN") or found[f"{W}.reasoning.secret_env"]
    assert p.value == "[secret]"
    if isinstance(value, str):
        assert "pulumi config set --secret" in p.fix


def test_a_plain_text_secret_in_a_stack_file_is_exit_2_and_never_printed(tmp_path):
    text = PROD_STACK_FILE.read_text().replace(
        "      reasoning_parser: qwen3\n", f"      reasoning_parser: qwen3\n      secret_env:\n        HF_TOKEN: {TOKEN}\n")
    stack = tmp_path / "Pulumi.plain.yaml"
    stack.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    code = preview.main(["--stack-file", str(stack), "--out", str(tmp_path / "out")], stdout=out, stderr=err)
    assert code == 2
    assert "llm-serving:workloads.reasoning.secret_env.HF_TOKEN" in err.getvalue()
    assert TOKEN not in out.getvalue() + err.getvalue()
    assert not (tmp_path / "out").exists()


def test_a_problem_of_the_whole_workload_does_not_show_its_secret():
    config = prod_with_secret(SecretStr(TOKEN))  # as config_from_pulumi hands over a decrypted secret key
    config[W]["reasoning"]["env"] = {"HF_TOKEN": "x"}  # a workload-level rule: the value is the whole workload
    with pytest.raises(ConfigError) as err:
        load_stack_config(config)
    found = {p.path: p for p in err.value.problems}
    assert found[f"{W}.reasoning"].value["secret_env"] == {"HF_TOKEN": "[secret]"}
    assert TOKEN not in err.value.render()


def test_a_name_in_env_and_secret_env_is_refused():
    config = prod_with_secret({"secure": "v1:abc"})
    config[W]["reasoning"]["env"] = {"HF_TOKEN": "x"}
    with pytest.raises(ConfigError, match="HF_TOKEN is in both env and secret_env"):
        load_stack_config(config)


SECURE = {"secure": "v1:c2VjcmV0Y2lwaGVy"}


@pytest.mark.parametrize("where, path", [
    (lambda c: c[W]["reasoning"].setdefault("env", {}).update(HF_HOME=SECURE), f"{W}.reasoning.env.HF_HOME"),
    (lambda c: c[W]["reasoning"].setdefault("labels", {}).update(team=SECURE), f"{W}.reasoning.labels.team"),
    (lambda c: c[W]["candle-vllm"].update(image=SECURE), f"{W}.candle-vllm.image"),
    (lambda c: c.update({"llm-serving:namespace": SECURE}), "llm-serving:namespace"),
    (lambda c: c[W]["reasoning"].update(args=[SecretStr(TOKEN)]), f"{W}.reasoning.args.0"),
])
def test_a_secure_value_outside_secret_env_is_refused_without_showing_it(where, path):
    """On the offline path the value is ``{secure: ...}``; on the real path the program wraps the
    decrypted value in SecretStr where the stack file stores it as secure (config_from_pulumi)."""
    config = copy.deepcopy(load_stack_file(PROD_STACK_FILE))
    where(config)
    with pytest.raises(ConfigError) as err:
        load_stack_config(config)
    [p] = err.value.problems
    assert (p.path, p.value) == (path, "[secret]")
    assert p.rule.startswith("a secret value (secure:, set by pulumi config set --secret) is accepted only under "
                             "llm-serving:workloads.<workload>.secret_env.<NAME>")
    assert p.fix.startswith(f"move it: pulumi config rm --path '{path}'")
    text = err.value.render()
    assert TOKEN not in text and "c2VjcmV0Y2lwaGVy" not in text


def test_the_program_marks_secret_values_where_the_stack_file_stores_them():
    """``config_from_pulumi``'s wrapping: a decrypted key is SecretStr exactly at the stack file's
    secure: leaves, so a secure env value is refused and a secure secret_env value accepted."""
    from stackfile.build import _secret_values

    written = {"reasoning": {"env": {"X": SECURE, "Y": "plain"}, "secret_env": {"HF_TOKEN": SECURE}}}
    decrypted = '{"reasoning": {"env": {"X": "%s", "Y": "plain"}, "secret_env": {"HF_TOKEN": "%s"}}}' % (TOKEN, TOKEN)  # noqa: UP031
    value = _secret_values(decrypted, written)
    assert isinstance(value["reasoning"]["env"]["X"], SecretStr) and value["reasoning"]["env"]["Y"] == "plain"
    assert value["reasoning"]["secret_env"]["HF_TOKEN"].get_secret_value() == TOKEN
    unknown = _secret_values(decrypted)  # no stack file to read: secret_env and env values are taken as secret
    assert isinstance(unknown["reasoning"]["secret_env"]["HF_TOKEN"], SecretStr)
    assert isinstance(unknown["reasoning"]["env"]["X"], SecretStr) and isinstance(unknown["reasoning"]["env"]["Y"], SecretStr)


def test_config_from_elsewhere_never_renders_a_decrypted_value_outside_secret_env():
    """Config from Pulumi ESC or ``--config-file`` (emulated: the key marked secret, the stack file
    as written holding no secure: value): a decrypted env value is refused, unshown, not rendered."""
    config = copy.deepcopy(load_stack_file(PROD_STACK_FILE))
    config[W]["reasoning"]["env"] = {"HF_TOKEN": TOKEN}
    with pytest.raises(mockrun.ProgramError) as err:
        mockrun.run_program(config, secret_keys=[W])
    text = str(err.value)
    assert "llm-serving:workloads.reasoning.env.HF_TOKEN" in text and "accepted only under" in text
    assert TOKEN not in text


def test_the_pack_is_handed_only_the_measured_figures_of_the_workloads(decrypted_run):
    """Of llm-serving:workloads the offline preview gives the pack only what it reads, each
    workload's measured figures: no env value, no secret, nothing else of the workload."""
    config, _ = decrypted_run
    handed = preview.pack_config(config)["llm-serving:workloads"]
    assert handed and all(set(w) == {"measured"} for w in handed.values())
    assert set(handed) == {name for name, w in config["llm-serving:workloads"].items() if w.get("measured")}
    assert TOKEN not in repr(preview.pack_config(config))
