"""testbed/act.py (the workflows under nektos/act with local stand-ins of their actions),
testbed/actions/ (the stand-ins) and the toolchain's act and Gitea parts, without running act."""

from __future__ import annotations

import re

import pytest
import yaml

import dev
from testbed import act, gitea, push_to_comment, toolchain
from tests.paths import ROOT

WORKFLOWS = sorted([*(ROOT / ".gitea" / "workflows").glob("*.yaml"), *(ROOT / ".github" / "workflows").glob("*.yaml")])


def test_every_action_the_workflows_use_has_a_stand_in():
    used = set().union(*(act.actions_used(wf) for wf in WORKFLOWS))
    assert used == set(act.STANDINS), used ^ set(act.STANDINS)
    for uses, folder in act.STANDINS.items():
        action = act.ACTIONS / folder
        if uses.startswith("github/codeql-action@"):
            action = action / "upload-sarif"  # the sub-path of github/codeql-action/upload-sarif@v3
        text = (action / "action.yml").read_text()
        first = text.splitlines()[0]
        assert first.startswith("# Stand-in for ") and "leaves untested" in first, (uses, first)
        spec = yaml.safe_load(text)
        assert spec["runs"]["using"] == "composite"
        assert all(step["name"].startswith("stand-in ") for step in spec["runs"]["steps"]), uses


def test_every_input_a_workflow_gives_is_declared_by_its_stand_in():
    for wf in WORKFLOWS:
        for job in yaml.safe_load(wf.read_text())["jobs"].values():
            for step in job["steps"]:
                if "uses" not in step:
                    continue
                folder = act.ACTIONS / act.STANDINS[act.repository_of(step["uses"])]
                path = step["uses"].split("@")[0].split("/")[2:]
                declared = yaml.safe_load((folder.joinpath(*path) / "action.yml").read_text()).get("inputs", {})
                assert set(step.get("with", {})) <= set(declared), (wf.name, step["uses"])


@pytest.mark.parametrize("uses, repo", [
    ("actions/checkout@v4", "actions/checkout@v4"),
    ("github/codeql-action/upload-sarif@v3", "github/codeql-action@v3"),
])
def test_repository_of(uses, repo):
    assert act.repository_of(uses) == repo


@pytest.mark.parametrize("uses", ["./local", "docker://alpine:3", "actions/checkout", "checkout@v4"])
def test_repository_of_refuses_what_is_not_a_repository(uses):
    with pytest.raises(ValueError, match="owner/repo"):
        act.repository_of(uses)


def test_local_repositories_name_a_folder_per_action():
    args = act.local_repositories()
    pairs = [args[i + 1] for i in range(0, len(args), 2)]
    assert args[::2] == ["--local-repository"] * len(act.STANDINS)
    for pair in pairs:
        uses, _, folder = pair.partition("=")
        assert uses in act.STANDINS and (act.ACTIONS / act.STANDINS[uses]).samefile(folder)


def test_steps_are_read_from_acts_log_without_the_stand_ins_own():
    log = "\n".join([
        "[pull-request/review] ⭐ Run Main actions/checkout@v4",
        "[pull-request/review]   ✅  Success - Main actions/checkout@v4 [81.5ms]",
        "[pull-request/review]   ✅  Success - Main stand-in setup-python [425.5ms]",
        "[pull-request/review]   ✅  Success - Main actions/setup-python@v5 [494.6ms]",
        "[pull-request/review]   ✅  Success - Pre actions/setup-python@v5 [1.2ms]",
        "[pull-request/review]   ✅  Success - Main The real preview with --refresh, and its plan read back [1m37.501717638s]",
        "[pull-request/review]   ❌  Failure - Main Fail on a mandatory violation, a refused plan or bad input [2.1s]",
        "[pull-request/review]   ✅  Success - Post actions/setup-python@v5 [2.1ms]",
    ])
    assert act.steps_of(log) == [("actions/checkout@v4", "Success"), ("actions/setup-python@v5", "Success"),
                                 ("The real preview with --refresh, and its plan read back", "Success"),
                                 ("Fail on a mandatory violation, a refused plan or bad input", "Failure")]


@pytest.mark.parametrize("value", ['plain', 'a "quoted" $HOME \\x', "two\nlines\n"])
def test_dotenv_quote_escapes_what_godotenv_reads_specially(value):
    quoted = act.dotenv_quote(value)
    assert "\n" not in quoted and not re.search(r'(?<!\\)"', quoted) and not re.search(r"(?<!\\)\$", quoted)
    # godotenv's double-quoted unescaping, as act applies it to --secret-file
    assert re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), quoted) == value


def test_the_toolchain_pins_act_and_gitea():
    v = toolchain.load_versions()
    assert (v["act"]["module"], v["act"]["version"]) == ("github.com/nektos/act", "v0.2.89")
    assert (v["gitea"]["module"], v["gitea"]["version"]) == ("code.gitea.io/gitea", "v1.26.0")
    assert {"sqlite", "sqlite_unlock_notify"} <= set(v["gitea"]["tags"])  # SQLite needs both, and cgo
    assert set(v["gitea"]["runtime_dirs"]) == {"options", "templates"}  # a build without bindata reads them
    names = [n for n, _, _ in toolchain.PARTS]
    assert {"act", "gitea"} <= set(names) and {"gitea"} == toolchain.FORGE_PARTS


@pytest.mark.parametrize("name, only, forge, built", [
    ("act", None, False, True), ("gitea", None, False, False), ("gitea", None, True, True),
    ("gitea", ["gitea"], False, True), ("act", ["gitea"], True, False),
])
def test_gitea_is_built_for_the_forge_suite_only(name, only, forge, built):
    assert toolchain.wanted(name, only, forge) is built


def test_check_counts_gitea_only_with_forge(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LLM_SERVING_CACHE", str(tmp_path))
    monkeypatch.setattr(toolchain, "status", lambda v, cache: {n: n != "gitea" for n, _, _ in toolchain.PARTS})
    assert toolchain.main(["--check"]) == 0
    assert toolchain.main(["--check", "--forge"]) == 1
    assert "gitea                  missing or out of date (the forge suite's; counted with --forge)" in capsys.readouterr().out


def test_gitea_listens_on_loopback_only_with_sqlite(tmp_path):
    ini = gitea.app_ini(tmp_path, 3999, tmp_path / "share")
    assert "HTTP_ADDR = 127.0.0.1\n" in ini and "DISABLE_SSH = true\n" in ini and "DB_TYPE = sqlite3\n" in ini
    assert f"STATIC_ROOT_PATH = {tmp_path / 'share'}\n" in ini and "INSTALL_LOCK = true\n" in ini
    assert "[actions]\nENABLED = true\n" in ini and "DISABLE_REGISTRATION = true\n" in ini


def test_dev_test_forge_builds_the_forge_parts_then_runs_the_forge_marker(monkeypatch):
    calls = []
    monkeypatch.setattr(dev.cli, "call", lambda cmd, **kw: calls.append(cmd[1:]) or 0)
    monkeypatch.setattr(dev, "_pytest", lambda marker, args: calls.append((marker, args)) or 0)
    assert dev.test(["--forge", "-q"]) == 0
    assert calls == [["-m", "testbed.toolchain", "--forge"], ("forge", ["-q"])]


def test_the_fast_suite_leaves_the_forge_suite_out(monkeypatch):
    calls = []
    monkeypatch.setattr(dev, "_pytest", lambda marker, args: calls.append(marker) or 0)
    assert dev.test(["--fast"]) == 0
    assert calls == ["not real and not forge"]


@pytest.mark.parametrize("duration, secs", [("1m53.316892547s", 113.316892547), ("81.558372ms", 0.081558372),
                                            ("2.5s", 2.5), ("852.87µs", 0.00085287), ("1h0m1s", 3601.0)])
def test_push_to_comment_reads_acts_go_durations(duration, secs):
    assert push_to_comment.seconds(duration) == pytest.approx(secs)


def test_push_to_comment_times_each_step_but_the_stand_ins_own():
    log = ("[pull-request/review]   ✅  Success - Main Set up .venv, its own step [1m53.3s]\n"
           "[pull-request/review]   ✅  Success - Main stand-in setup-python [425.5ms]\n"
           "[pull-request/review]   ❌  Failure - Main Post the comment on the pull request [2.3s]\n")
    assert push_to_comment.step_times(log) == [("Set up .venv, its own step", pytest.approx(113.3)),
                                               ("Post the comment on the pull request", pytest.approx(2.3))]
