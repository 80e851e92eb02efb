"""tools/cli.py, the command line the commands of tools/ share: one parser factory, one set of
exit codes (0 well, 1 verdict, 2 bad input, 3 crash, 130 interrupted), one error line."""

from __future__ import annotations

import gc
import io
import re

import pytest

from tests.paths import ROOT
from tools import adopt_diff, analyze, cli, plan, preview, rollout

#: Each command's main and the program name its --help shows.
COMMANDS = [
    (preview.main, "python -m tools.preview"),
    (analyze.main, "python -m tools.analyze"),
    (plan.main, "python3 dev.py plan"),
    (adopt_diff.main, "python3 dev.py adopt-diff"),
    (rollout.main, "python3 dev.py rollout"),
]


def test_the_exit_codes():
    assert (cli.OK, cli.VERDICT, cli.BAD_INPUT, cli.CRASH, cli.INTERRUPTED) == (0, 1, 2, 3, 130)
    assert (preview.EXIT_OK, preview.EXIT_MANDATORY, preview.EXIT_INPUT, preview.EXIT_CRASH) == (0, 1, 2, 3)
    assert (plan.EXIT_OK, plan.EXIT_REFUSED, plan.EXIT_INPUT) == (0, 1, 2)
    assert (adopt_diff.EXIT_SAME, adopt_diff.EXIT_CHANGES, adopt_diff.EXIT_INPUT) == (0, 1, 2)
    assert (rollout.EXIT_OK, rollout.EXIT_NOT_ROLLED_OUT, rollout.EXIT_INPUT) == (0, 1, 2)


@pytest.mark.parametrize(("main", "prog"), COMMANDS, ids=[p for _, p in COMMANDS])  # noqa: PT006
def test_help_names_the_command_and_exits_0(main, prog, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: {prog} ")
    assert re.search(r"\n\n\S.+\n", out), out  # the description: the module docstring's first paragraph


def test_collector_off_pauses_the_collector_and_restores_its_state():
    assert gc.isenabled()
    with cli.collector_off():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(KeyError), cli.collector_off():
        raise KeyError("x")
    assert gc.isenabled()
    gc.disable()
    try:
        with cli.collector_off():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_analyze_runs_with_the_collector_off_and_restores_it(monkeypatch):
    seen = []
    monkeypatch.setattr(analyze, "_main", lambda args, project: seen.append(gc.isenabled()) or 0)
    assert analyze.main(["--manifests", "m", "--inventory", "i.yaml"]) == 0  # _main is stubbed: nothing is read
    assert seen == [False] and gc.isenabled()


def test_fail_writes_one_line_and_returns_bad_input():
    err = io.StringIO()
    assert cli.fail("plan", "cannot read the plan (no such file)", err) == 2
    assert err.getvalue() == "plan: cannot read the plan (no such file)\n"


def test_interrupt_is_one_line_and_130(capsys):
    def interrupted() -> int:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as exc:
        cli.run(interrupted, "rollout")
    assert exc.value.code == 130
    assert capsys.readouterr().err == "rollout: interrupted\n"


def test_run_leaves_with_mains_code():
    with pytest.raises(SystemExit) as exc:
        cli.run(lambda: 1, "adopt-diff")
    assert exc.value.code == 1


def test_no_command_builds_its_own_parser():
    own = [p.name for p in sorted((ROOT / "tools").glob("*.py"))
           if p.name != "cli.py" and "ArgumentParser(" in p.read_text()]
    assert own == []
