"""Paths, options and signals: an --out that cannot be written is exit 2 before any work, an option
that would do nothing or the wrong thing is refused, and a preview ended by a signal leaves the
old rendering in place."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.paths import PROD_STACK_FILE, ROOT
from tools import analyze, cli, preview


def _preview(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    return preview.main(args, stdout=out, stderr=err), err.getvalue()


def _file_as_parent(t: Path) -> Path:
    (t / "file").write_text("x")
    return t / "file" / "out"


def _link(t: Path) -> Path:
    (t / "real").mkdir()
    (t / "link").symlink_to(t / "real")
    return t / "link"


def _strangers(t: Path) -> Path:
    (t / "mine").mkdir()
    (t / "mine" / "notes.txt").write_text("x")
    return t / "mine"


@pytest.mark.parametrize(("make", "words"), [  # noqa: PT006
    (lambda t: Path("/dev/null/out"), "under a kernel file system"),
    (lambda t: Path("/proc/self/out"), "under a kernel file system"),
    (_file_as_parent, "is a file, not a directory"),
    (lambda t: t / ("n" * 256), "over the 255-byte limit"),
    (_link, "is a symbolic link"),
    (_strangers, "not an earlier rendering"),
], ids=["dev-null", "proc", "file-as-parent", "long-name", "symlink", "not-a-rendering"])
def test_an_out_that_cannot_be_written_is_exit_2_before_any_work(tmp_path, make, words):
    out = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, err = _preview(["--no-policy", "--out", str(out)])
    assert code == cli.BAD_INPUT, err
    assert words in err and "fix:" in err and "Traceback" not in err
    assert "wrote" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, no temporary left


@pytest.mark.parametrize(("args", "words"), [  # noqa: PT006
    (["--workers", "0"], "outside 1 to 16"),
    (["--workers", "100000"], "outside 1 to 16"),
    (["--workers", "x"], "not a whole number"),
    (["--inventory", "policies/fixtures/Pulumi.fixture.yaml"], "--inventory is read with --manifests only"),
    (["--also", "sarif=out/x.sarif", "--also", "json=out/x.sarif"], "two reports would be written to"),
    (["--output", "out/r.json", "--format", "json", "--also", "sarif=out/r.json"], "two reports would be written to"),
])
def test_an_option_that_would_do_nothing_or_the_wrong_thing_is_exit_2(args, words, capsys):
    code = cli.outcome(lambda: analyze.main(["--stack-file", str(PROD_STACK_FILE), *args]), "analyze")
    err = capsys.readouterr().err
    assert code == cli.BAD_INPUT, err
    assert words in err and "Traceback" not in err


@pytest.mark.parametrize("extra", [["--format", "sarif"], ["--policy-pack-config", "x.json"]])
def test_no_policy_with_a_policy_option_is_a_usage_error(extra, tmp_path, capsys):
    code = cli.outcome(lambda: preview.main(["--no-policy", *extra, "--out", str(tmp_path / "o")]), "preview")
    err = capsys.readouterr().err
    assert code == cli.BAD_INPUT and "--no-policy runs no policy" in err
    assert not (tmp_path / "o").exists()


def test_a_pack_config_value_json_cannot_carry_is_exit_2_before_anything_is_written(tmp_path):
    ppc = tmp_path / "ppc.json"
    ppc.write_text('{"vllm-volta": {"enforcementLevel": "mandatory", "x": 1e309}}')
    code, err = _preview(["--policy-pack-config", str(ppc), "--out", str(tmp_path / "o")])
    assert code == cli.BAD_INPUT
    assert "1e309 is beyond a 64-bit float" in err and "fix: give a finite number" in err
    assert not (tmp_path / "o").exists()


def test_sigterm_ends_a_preview_with_143_leaving_the_old_rendering(tmp_path):
    out = tmp_path / "out"
    first = subprocess.run([sys.executable, "-m", "tools.preview", "--no-policy", "--out", str(out)], cwd=ROOT,
                           capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    slow = tmp_path.parent / f"{tmp_path.name}-slow.py"  # a program that is still running at the signal
    slow.write_text("import time\nopen(__file__ + '.started', 'w').close()\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-m", "tools.preview", "--out", str(out), "--program", str(slow)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not Path(f"{slow}.started").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == cli.TERMINATED, err
    assert err.strip().splitlines()[-1] == "preview: terminated (SIGTERM)" and "Traceback" not in err
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staged directory left behind
    assert not os.path.exists(out.with_name(".out.lock"))  # noqa: PTH110


@pytest.mark.parametrize("stack", ["", ".", "..", "a/b", "x y", "prod\x1b[2J", "p" * 101])
def test_an_odd_stack_name_is_a_usage_error_naming_the_fix(stack, capsys):
    for main in (preview.main, analyze.main):
        code = cli.outcome(lambda main=main: main(["--stack", stack]), "cmd")
        err = capsys.readouterr().err
        assert code == cli.BAD_INPUT and "is not a stack name" in err and "fix: name a stack" in err
        assert "\x1b" not in err


@pytest.mark.parametrize("directory", ["/", "/etc", "../elsewhere", "a/../../b", " ", "a\nb"])
def test_render_yaml_to_directory_outside_the_project_is_refused(directory, tmp_path):
    text = PROD_STACK_FILE.read_text().replace(
        "# llm-serving:render_yaml_to_directory: rendered", f"llm-serving:render_yaml_to_directory: {json.dumps(directory)}", 1)
    assert f"llm-serving:render_yaml_to_directory: {json.dumps(directory)}" in text
    stack = tmp_path / "Pulumi.x.yaml"
    stack.write_text(text)
    code, err = _preview(["--no-policy", "--stack-file", str(stack), "--out", str(tmp_path / "o")])
    assert code == cli.BAD_INPUT, err
    assert "llm-serving:render_yaml_to_directory" in err and "is not a directory inside the project" in err
    assert "fix:   name a directory inside the project" in err
    assert not (tmp_path / "o").exists()


def test_a_second_preview_into_the_same_out_is_refused_while_the_first_runs(tmp_path):
    from tools.offline import render

    out = tmp_path / "out"
    release = render.lock_out_dir(out)
    try:
        code, err = _preview(["--no-policy", "--out", str(out)])
        assert code == cli.BAD_INPUT
        assert f"another preview is writing {out} now" in err and "fix: wait for it to end, or pass another --out" in err
        assert not out.exists()
    finally:
        release()
    assert _preview(["--no-policy", "--out", str(out)])[0] == cli.OK
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the lock file is gone
