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
    from tools.offline import outdir

    out = tmp_path / "out"
    release = outdir.lock_out_dir(out)
    try:
        code, err = _preview(["--no-policy", "--out", str(out)])
        assert code == cli.BAD_INPUT
        assert f"another preview is writing {out} now" in err and "fix: wait for it to end, or pass another --out" in err
        assert not out.exists()
    finally:
        release()
    assert _preview(["--no-policy", "--out", str(out)])[0] == cli.OK
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # the lock file is gone


#: A program still registering at the signal: 3,000 outputs resolved one by one in the mock
#: runtime's event loop, so the signal lands in asyncio's callbacks, not in the program's own code.
SLOW_PROGRAM = """import time
import pulumi
open(__file__ + ".started", "w").close()
outs = [pulumi.Output.from_input(i).apply(lambda x: time.sleep(0.02) or x) for i in range(3000)]
pulumi.export("n", pulumi.Output.all(*outs).apply(len))
"""


@pytest.mark.parametrize("sig, code, line", [(signal.SIGTERM, cli.TERMINATED, "preview: terminated (SIGTERM)"),
                                             (signal.SIGINT, cli.INTERRUPTED, "preview: interrupted")])
def test_a_signal_during_the_programs_run_ends_the_preview_and_its_pack_at_once(tmp_path, sig, code, line):
    """SIGINT or SIGTERM about 1.5 s into the mock runtime's run printed an asyncio traceback, waited
    about 11 s for SIGKILL, left the --out lock behind and once the policy pack running with parent 1."""
    slow = tmp_path.parent / f"{tmp_path.name}-apply.py"
    slow.write_text(SLOW_PROGRAM)
    out = tmp_path / "new" / "out"  # a parent that does not exist: the lock is taken all the same
    proc = subprocess.Popen([sys.executable, "-m", "tools.preview", "--out", str(out), "--program", str(slow)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not Path(f"{slow}.started").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.5)
    assert (tmp_path / "new" / ".out.lock").exists()  # held while it runs
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert children, "the policy pack runs beside the program"
    sent = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - sent < 6, err
    assert proc.returncode == code, err
    assert err.strip().splitlines()[-1] == line and "Traceback" not in err and "RuntimeWarning" not in err, err
    assert not [c for c in children if Path(f"/proc/{c}").exists()]  # the pack ended with it
    assert list(tmp_path.iterdir()) == []  # no lock, no staged rendering, not even the parent it made


def test_two_previews_into_a_new_out_whose_parent_does_not_exist_take_one_lock(tmp_path):
    from tools.offline import outdir

    out = tmp_path / "a" / "b" / "out"
    release = outdir.lock_out_dir(out)
    try:
        code, err = _preview(["--no-policy", "--out", str(out)])
        assert code == cli.BAD_INPUT and f"another preview is writing {out} now" in err, err
    finally:
        release()
    assert list(tmp_path.iterdir()) == []  # the parents it made, removed while empty
    assert _preview(["--no-policy", "--out", str(out)])[0] == cli.OK
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]


def _analyze(capsys, *args: str) -> tuple[int, str]:
    code = cli.outcome(lambda: analyze.main(["--manifests", str(ROOT / "tests" / "reference"), "--inventory",
                                            str(ROOT / "policies" / "fixtures" / "Pulumi.fixture.yaml"), *args]), "analyze")
    got = capsys.readouterr()
    return code, got.out + got.err


def test_a_report_into_a_directory_lands_in_it_and_every_report_is_written_aside(tmp_path, capsys, monkeypatch):
    """``--also sarif=out/newdir/`` wrote a file named newdir; on a full disk ``--output`` replaced
    the last good report with a truncated one and ``--also`` left 0-byte files."""
    code, text = _analyze(capsys, "--output", f"{tmp_path}/r/", "--also", f"sarif={tmp_path}/ci/", "--format", "json",
                          "--force")  # outside the project's out/: --force, as the refusal's fix says
    assert code in (cli.OK, cli.VERDICT), text
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["ci", "ci/policy.sarif", "r",
                                                                                 "r/policy.json"]
    good = (tmp_path / "r" / "policy.json").read_text()
    json.loads(good)

    def full(fd, data, real=os.write):  # noqa: ANN001
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", lambda fd: full(fd, b""))
    code, text = _analyze(capsys, "--output", f"{tmp_path}/r/", "--also", f"sarif={tmp_path}/ci/", "--format", "json",
                          "--force")
    assert code == cli.BAD_INPUT and "No space left on device" in text and "fix: free space" in text, text
    assert (tmp_path / "r" / "policy.json").read_text() == good  # the last good report stays
    assert sorted(p.name for p in (tmp_path / "ci").iterdir()) == ["policy.sarif"]  # nothing left aside
