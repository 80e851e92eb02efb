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
from tests.paths import PROD_STACK_FILE, ROOT
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
    (OSError(errno.EROFS, "Read-only file system", "out/x"), cli.BAD_INPUT, "cannot write out/x: the file system is read-only; fix: write to a writable directory"),
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


# --- every crash answered as the contract says -------------------------------------------------------

PROD_TEXT = PROD_STACK_FILE.read_text()
REFERENCE = ROOT / "tests" / "reference"
INVENTORY = ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"


def _kubectl_on_path(tmp_path: Path, body: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "kubectl"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.parametrize("body, words", [
    ("echo '[1, 2]'", "printed JSON that is not an object"),
    ("echo '\"text\"'", "printed JSON that is not an object"),
    ("echo '{\"items\": [1]}'", "printed no list of objects"),
])
def test_context_namespace_on_kubectl_output_that_is_no_object_is_exit_2(tmp_path, capsys, monkeypatch, body, words):
    from tools import analyze

    monkeypatch.setenv("PATH", os.environ["PATH"])
    _kubectl_on_path(tmp_path, body)
    code, text = _outcome(lambda: analyze.main(["--manifests", str(REFERENCE), "--inventory", str(INVENTORY),
                                                "--context-namespace", "llm-serving"]), capsys)
    assert code == cli.BAD_INPUT and words in text and "Traceback" not in text, text


def test_a_fifo_kubeconfig_and_a_kubectl_that_never_answers_are_bounded(tmp_path, capsys, monkeypatch):
    from tools import analyze, context

    fifo = tmp_path / "kubeconfig"
    os.mkfifo(fifo)
    args = ["--manifests", str(REFERENCE), "--inventory", str(INVENTORY), "--context-namespace", "llm-serving"]
    code, text = _outcome(lambda: analyze.main([*args, "--kubeconfig", str(fifo)]), capsys)
    assert code == cli.BAD_INPUT and "FIFO" in text and "Traceback" not in text, text
    monkeypatch.setenv("PATH", os.environ["PATH"])
    _kubectl_on_path(tmp_path, "sleep 30")
    monkeypatch.setattr(kubectl, "TIMEOUT_S", 1.5)  # six kinds: one bound for all of them
    started = time.monotonic()
    code, text = _outcome(lambda: analyze.main(args), capsys)
    assert time.monotonic() - started < 10
    assert code == cli.BAD_INPUT and f"did not answer within 1.5 s for all {len(context.LIVE_KINDS)} kinds" in text, text


@pytest.mark.parametrize("resources", ['{"limits": [1, 2]}', '{"requests": "4Gi"}', '[1]'])
def test_resources_of_another_shape_are_the_schemas_refusal_not_a_crash(tmp_path, capsys, resources):
    (tmp_path / "m").mkdir()
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "llm-serving"},
           "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}}, "spec": {
               "containers": [{"name": "c", "image": "x:1", "resources": json.loads(resources)}]}}}}
    (tmp_path / "m" / "d.json").write_text(json.dumps(doc))
    from tools import analyze

    code, text = _outcome(lambda: analyze.main(["--manifests", str(tmp_path / "m"), "--inventory", str(INVENTORY)]), capsys)
    assert code == cli.BAD_INPUT and "schema" in text and "Traceback" not in text, text


def test_a_yaml_integer_of_more_than_4300_digits_is_refused(tmp_path):
    stack = tmp_path / "Pulumi.big.yaml"
    stack.write_text(PROD_TEXT.replace("cards: 2", "cards: " + "1" * 5000, 1))
    code, err = _preview(["--no-policy", "--stack-file", str(stack), "--out", str(tmp_path / "o")])
    assert code == cli.BAD_INPUT and "a whole number of 5,000 characters, beyond 64 bits" in err, err
    plan_file = tmp_path / "plan.json"
    plan_file.write_text('{"steps": [], "changeSummary": {"same": ' + "9" * 5000 + "}}")
    out = io.StringIO()
    assert plan.main([str(plan_file)], stdout=out, stderr=out) == cli.BAD_INPUT and "no preview writes" in out.getvalue()


def _review_dir(tmp_path: Path) -> Path:
    review = tmp_path / "review"
    review.mkdir()
    (review / "verdicts.code").write_text("0\n")
    (review / "verdicts.md").write_text("PASS\n")
    (review / "preview.txt").write_text("diff\n")
    return review


@pytest.mark.parametrize("make, code, words", [
    (lambda p: p.write_text("\u00b2\n"), cli.OK, "FAILED (exit 3)"),
    (lambda p: p.write_bytes(b"\xff\xfe0\n"), cli.BAD_INPUT, "not UTF-8"),
    (lambda p: p.mkdir(), cli.BAD_INPUT, "directory, not a regular file"),
    (lambda p: p.symlink_to("/dev/zero"), cli.BAD_INPUT, "symbolic link"),
    (lambda p: os.mkfifo(p), cli.BAD_INPUT, "FIFO"),
])
def test_review_comment_on_an_exit_code_file_that_is_no_code_is_answered_at_once(tmp_path, make, code, words):
    from tools import review_comment

    review = _review_dir(tmp_path)
    make(review / "preview.code")
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    got = cli.outcome(lambda: review_comment.main([str(review)], stdout=out, stderr=err), "review-comment")
    assert time.monotonic() - started < 5
    text = out.getvalue() + err.getvalue()
    assert got == code and words in text and "Traceback" not in text, text


def test_a_fence_in_a_section_cannot_end_the_comments_code_block(tmp_path):
    from tools import review_comment

    review = _review_dir(tmp_path)
    (review / "preview.code").write_text("0\n")
    (review / "preview.txt").write_text("before\n```\n## forged heading\n````\nafter\n")
    out = io.StringIO()
    assert review_comment.main([str(review)], stdout=out, stderr=io.StringIO()) == cli.OK
    lines = out.getvalue().splitlines()
    start = lines.index("`````")  # longer than any run of backticks in the section
    assert lines[start + 1:start + 6] == ["before", "```", "## forged heading", "````", "after"]
    assert lines[start + 6] == "`````"


def test_a_damaged_image_catalog_is_exit_2_with_the_fix(tmp_path):
    """A damaged core/data/images.yaml crashed every command at import."""
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "out", "__pycache__", ".*cache"),
                    symlinks=True)
    with open(copy / "core" / "data" / "images.yaml", "a", encoding="utf-8") as f:  # noqa: PTH123
        f.write("x: [\n")
    proc = subprocess.run([sys.executable, "-m", "tools.preview", "--no-policy", "--out", str(tmp_path / "o")],
                          cwd=copy, capture_output=True, text=True, timeout=300)
    assert proc.returncode == cli.BAD_INPUT, proc.stderr
    assert "core/data/images.yaml" in proc.stderr and "git checkout -- core/data/images.yaml" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_closed_stdout_and_an_ascii_locale_keep_the_contract(tmp_path):
    """``preview >&-`` crashed (141 is promised); ``LANG=C PYTHONUTF8=0`` with a non-ASCII stack file
    crashed writing the summary and the rendering."""
    closed = subprocess.run(f"{sys.executable} -m tools.preview --no-policy --out {tmp_path / 'o'} >&-", shell=True,  # noqa: S602
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert closed.returncode == cli.BROKEN_PIPE and closed.stderr == "", closed.stderr
    stack = tmp_path / "Pulumi.utf.yaml"
    stack.write_text(PROD_TEXT.replace("app.kubernetes.io/name: llm-reasoning",
                                       "app.kubernetes.io/name: llm-reasoning\n      env: {GREETING: \"caf\u00e9 \u2615\"}", 1))
    env = {**os.environ, "LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0"}
    run = subprocess.run([sys.executable, "-m", "tools.preview", "--no-policy", "--stack-file", str(stack), "--out",
                          str(tmp_path / "u")], cwd=ROOT, capture_output=True, env=env, timeout=300)
    assert run.returncode == cli.OK, run.stderr.decode(errors="replace")[-2000:]
    rendered = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "u").rglob("*.yaml"))
    assert "caf\u00e9 \u2615" in rendered


def test_the_console_scripts_preview_outside_a_checkout_is_exit_2(tmp_path):
    code, err = _preview(["--no-policy", "--program", str(tmp_path / "site-packages" / "__main__.py"),
                          "--out", str(tmp_path / "o")])
    assert code == cli.BAD_INPUT and "is not there" in err and "--project DIR" in err, err


@pytest.mark.parametrize("content, words", [("", "the state file is empty"), ("[]", "top level is a JSON array"),
                                            ('{"version": 3}', "no deployment object")])
def test_deploy_guard_on_a_state_that_is_no_export_is_bad_input_not_a_first_adoption(tmp_path, content, words):
    from tools import deploy_guard

    state = tmp_path / "state.json"
    state.write_text(content)
    out, err = io.StringIO(), io.StringIO()
    code = deploy_guard.main([str(state), "--stack-file", str(PROD_STACK_FILE)], stdout=out, stderr=err)
    assert code == cli.BAD_INPUT and words in err.getvalue(), err.getvalue()


def test_a_plan_whose_cluster_is_secret_says_so(tmp_path):
    events = [json.loads(x) for x in (ROOT / "tests" / "fixtures" / "plans" / "rename-plain.jsonl").read_text().splitlines() if x]
    for e in events:
        if "preludeEvent" in e:
            e["preludeEvent"]["config"]["llm-serving:cluster"] = "[secret]"
    path = tmp_path / "plan.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    out = io.StringIO()
    assert plan.main([str(path)], stdout=out, stderr=out) == cli.BAD_INPUT
    assert "llm-serving:cluster is a secret" in out.getvalue() and "no valid" not in out.getvalue()


@pytest.mark.parametrize("stem", ["a\nb", "$(id)", ""])
def test_a_stack_file_name_that_is_no_stack_name_is_refused(tmp_path, stem):
    """A stem with a newline or ``$(id)`` was taken as the stack name; an empty one rendered into out/ itself."""
    stack = tmp_path / f"Pulumi.{stem}.yaml"
    stack.write_text(PROD_TEXT)
    code, err = _preview(["--no-policy", "--stack-file", str(stack)])
    assert code == cli.BAD_INPUT and "is not a stack name" in err and "rename the file" in err, err
    assert err.strip().count("\n") == 0, err  # one line: the name's newline escaped
