"""One exit-code contract for every command (tools/cli.py): each kind of hostile input ends in
its code, one line with the fix, and no traceback; a bug is 3 with its traceback."""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed import toolchain
from testbed.cluster import layout
from tests.paths import ROOT
from tools import cli, kubectl, plan, preview, rollout


def _outcome(main, capsys) -> tuple[int, str]:
    code = cli.outcome(main, "cmd")
    return code, capsys.readouterr().err


def _preview(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    return preview.main(args, stdout=out, stderr=err), err.getvalue()


def _raises(err: BaseException):
    def main() -> int:
        raise err
    return main


@pytest.mark.parametrize(("err", "code", "words"), [  # noqa: PT006
    (KeyboardInterrupt(), cli.INTERRUPTED, "cmd: interrupted\n"),
    (cli.Terminated(), cli.TERMINATED, "cmd: terminated (SIGTERM)\n"),
    (RecursionError(), cli.BAD_INPUT, "fix: check the file for runaway nesting"),
    (OSError(errno.ENOSPC, "No space left on device"), cli.BAD_INPUT, "No space left on device; fix: free space"),
    (OSError(errno.EROFS, "Read-only file system", "out/x"), cli.BAD_INPUT, "cannot write out/x: Read-only file system"),
])
def test_what_ends_a_command_has_its_code_and_one_line(err, code, words, capsys):
    got, text = _outcome(_raises(err), capsys)
    assert got == code
    assert words in text and "Traceback" not in text and text.count("\n") == 1


def test_a_bug_is_3_with_its_traceback(capsys):
    got, text = _outcome(_raises(ValueError("oops")), capsys)
    assert got == cli.CRASH
    assert text.startswith("cmd: internal error (a bug in cmd, not in the input)") and "Traceback" in text
    assert "ValueError: oops" in text


def test_argparse_usage_errors_and_help_keep_their_codes(capsys):
    assert cli.outcome(lambda: plan.main(["--no-such-option"]), "plan") == cli.BAD_INPUT
    assert cli.outcome(lambda: plan.main(["--help"]), "plan") == cli.OK


def test_the_table_names_every_code_once():
    assert sorted(cli.EXIT_CODES) == [0, 1, 2, 3, 130, 141, 143]
    for code, (name, _) in cli.EXIT_CODES.items():
        assert getattr(cli, name) == code
        assert f":data:`{name}`" in (cli.__doc__ or "")


def test_control_characters_in_a_message_are_escaped():
    err = io.StringIO()
    cli.fail("analyze", "bad name \x1b[2J\u202eevil\x00", err)
    assert err.getvalue() == "analyze: bad name \\x1b[2J\\u202eevil\\x00\n"


def _script(tmp_path: Path, body: str) -> subprocess.Popen:
    script = tmp_path / "s.py"
    script.write_text(body)
    return subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_sigterm_ends_the_parent_with_143_and_its_child_with_it(tmp_path):
    pid_file = tmp_path / "child.pid"
    proc = _script(tmp_path, f"""
import sys
from tools import cli
cli.run(lambda: cli.call([sys.executable, "-c", "import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"]), "dev.py")
""")
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == cli.TERMINATED, err
    assert err == "dev.py: terminated (SIGTERM)\n"
    child = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


def test_a_closed_stdout_is_141_and_silent(tmp_path):
    proc = _script(tmp_path, """
from tools import cli
def main():
    while True:
        print("x" * 1000)
cli.run(main, "analyze")
""")
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.wait(timeout=60) == cli.BROKEN_PIPE
    assert err == ""


def test_a_full_stdout_is_2_with_the_fix():
    with open("/dev/full", "w") as full:  # noqa: PTH123
        proc = subprocess.run([sys.executable, "-m", "tools.plan", "/dev/null"], cwd=ROOT, stdout=full,
                              stderr=subprocess.PIPE, text=True)
    assert proc.returncode == cli.BAD_INPUT
    assert "Traceback" not in proc.stderr


# --- kubectl's output, as adopt-diff and rollout read it -------------------------------------------

def _proc(stdout: str) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess(["kubectl"], 0, stdout, "")


@pytest.mark.parametrize(("stdout", "words"), [  # noqa: PT006
    ("not json", "printed no JSON"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("[]", "not an object"),
    ('{"items": [{"metadata": []}]}', "no list of objects"),
])
def test_bad_kubectl_json_is_one_line_with_the_fix(stdout, words):
    with pytest.raises(kubectl.KubectlOutputError) as exc:
        kubectl.json_object(_proc(stdout), "get deployments", list_of_items=True)
    assert words in str(exc.value) and "fix: check that `kubectl` on PATH" in str(exc.value)


@pytest.mark.parametrize(("annotations", "seconds"), [  # noqa: PT006
    ({"pulumi.com/timeoutSeconds": "²"}, rollout.DEFAULT_TIMEOUT_S),
    ({"pulumi.com/timeoutSeconds": "٣"}, rollout.DEFAULT_TIMEOUT_S),
    ({"pulumi.com/timeoutSeconds": "900"}, 900),
    ({"pulumi.com/timeoutSeconds": 900}, rollout.DEFAULT_TIMEOUT_S),
    ([], rollout.DEFAULT_TIMEOUT_S),
    (None, rollout.DEFAULT_TIMEOUT_S),
])
def test_a_timeout_annotation_go_would_not_parse_falls_back_to_the_default(annotations, seconds):
    assert rollout.await_bound(annotations) == seconds


# --- documents nested past Python's limit -------------------------------------------------------

def test_a_plan_nested_past_pythons_limit_is_exit_2(tmp_path):
    doc = tmp_path / "plan.json"
    doc.write_text("[" * 100_000 + "]" * 100_000)
    stderr = io.StringIO()
    assert plan.main([str(doc)], stderr=stderr) == cli.BAD_INPUT
    err = stderr.getvalue()
    assert "plan: the plan document nests deeper" in err and "fix: run `pulumi preview --json" in err


def test_a_policy_pack_config_nested_past_pythons_limit_is_exit_2(tmp_path, capsys):
    ppc = tmp_path / "ppc.json"
    ppc.write_text('{"a":' * 50_000 + "1" + "}" * 50_000)
    out = tmp_path / "out"
    code, err = _preview(["--policy-pack-config", str(ppc), "--out", str(out)])
    assert code == cli.BAD_INPUT
    assert f"{ppc}: the JSON nests deeper" in err and "fix: check it for runaway nesting" in err
    assert not out.exists()


# --- malformed --base trees ----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "words"), [  # noqa: PT006
    ("apiVersion: v1\nkind: Service\nmetadata: [a]\n", "metadata is [\"a\"], not a map"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: a, annotations: [x]}\n", "metadata.annotations is [\"x\"]"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: a, annotations: {b: 5}}\n", "not a map of text to text"),
])
def test_a_malformed_base_tree_is_exit_2_naming_the_file(tmp_path, capsys, text, words):
    (tmp_path / "base" / "1-manifest").mkdir(parents=True)
    (tmp_path / "base" / "1-manifest" / "x.yaml").write_text(text)
    code, err = _preview(["--no-policy", "--base", str(tmp_path / "base"), "--out", str(tmp_path / "out")])
    assert code == cli.BAD_INPUT, err
    assert f"--base {tmp_path / 'base' / '1-manifest' / 'x.yaml'}: not a Kubernetes object: " in err
    assert words in err and "fix:" in err and "Traceback" not in err


def test_a_base_tree_linking_out_of_itself_is_refused_not_read(tmp_path, capsys):
    (tmp_path / "base" / "1-manifest").mkdir(parents=True)
    (tmp_path / "base" / "1-manifest" / "x.yaml").symlink_to("/etc/passwd")
    code, err = _preview(["--no-policy", "--base", str(tmp_path / "base"), "--out", str(tmp_path / "out")])
    assert code == cli.BAD_INPUT
    assert "a symbolic link (to /etc/passwd)" in err and "root:" not in err


# --- damaged state of the test bed ----------------------------------------------------------------

@pytest.mark.parametrize("text", ["{", "[]", '{"processes": "x"}', '{"processes": [{"name": 1}]}', "\udcff"])
def test_a_damaged_toolchain_stamp_counts_as_not_built(tmp_path, text, capsys):
    (tmp_path / "stamps").mkdir()
    for name, _, _ in toolchain.PARTS:
        (tmp_path / "stamps" / f"{name}.json").write_text(text, errors="surrogateescape")
    assert set(toolchain.status(toolchain.load_versions(), tmp_path).values()) == {False}


@pytest.mark.parametrize("text", ["{", "[]", '{"processes": "x"}', '{"processes": [{"name": 1, "pid": 2}]}',
                                  '{"options": []}'])
def test_a_damaged_cluster_state_is_ignored_and_said(tmp_path, text, capsys):
    lay = layout.Layout(tmp_path)
    lay.state.parent.mkdir(parents=True, exist_ok=True)
    lay.state.write_text(text)
    assert layout.read_state(lay) is None
    assert "is damaged and was ignored; fix: `python3 dev.py cluster down`" in capsys.readouterr().err


def test_toolchain_env_quotes_for_the_shell(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(toolchain, "environment", lambda: {"PATH": "/a b/$(rm -rf x)':/usr/bin"})
    assert toolchain.main(["--env"]) == 0
    line = capsys.readouterr().out.strip()
    assert line == "export PATH='/a b/$(rm -rf x)'\"'\"':/usr/bin'"
    assert subprocess.run(["sh", "-c", f"{line}; printf %s \"$PATH\""], capture_output=True, text=True,
                          env={}).stdout == "/a b/$(rm -rf x)':/usr/bin"


def test_dev_py_runs_commands_in_the_callers_directory(tmp_path):
    (tmp_path / "plan.json").write_text(json.dumps({"steps": []}))
    proc = subprocess.run([sys.executable, str(ROOT / "dev.py"), "plan", "plan.json"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert "cannot read" not in proc.stderr and "no such file" not in proc.stderr.lower(), proc.stderr
    assert proc.returncode == cli.BAD_INPUT and "changeSummary" in proc.stderr


# --- FIFOs where a file is read: no wait for a writer ----------------------------------------------

def test_a_fifo_kubeconfig_is_exit_2_without_running_kubectl(tmp_path):
    fifo = tmp_path / "kubeconfig"
    os.mkfifo(fifo)
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    assert rollout.main(["--kubeconfig", str(fifo)], stdout=out, stderr=err) == cli.BAD_INPUT
    assert time.monotonic() - started < 10
    assert "the kubeconfig is a FIFO (named pipe), not a regular file; fix: name a regular file" in err.getvalue()


def test_a_fifo_cluster_state_or_toolchain_stamp_is_damaged_not_waited_on(tmp_path, capsys):
    lay = layout.Layout(tmp_path)
    lay.state.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(lay.state)
    assert layout.read_state(lay) is None
    (tmp_path / "stamps").mkdir()
    for name, _, _ in toolchain.PARTS:
        os.mkfifo(tmp_path / "stamps" / f"{name}.json")
    assert set(toolchain.status(toolchain.load_versions(), tmp_path).values()) == {False}
