"""A bounded fuzz test (hypothesis) over the command-line surfaces: any argv of each command's options
with hostile values ends in the exit-code contract of tools/cli.py, never in a traceback, and writes
nothing on exit 2.

Each command runs in-process through :func:`tools.cli.outcome` (what its ``__main__`` runs), the
policy pack off where the command allows it, so 25 examples a command take about 20 s on a
2-core machine; ``FUZZ_EXAMPLES`` raises the count for a longer hunt.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools import adopt_diff, analyze, cli, plan, preview, rollout

FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")), deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
CONTRACT = {cli.OK, cli.VERDICT, cli.BAD_INPUT}

#: Values a user, a script or an attacker may put after an option.
HOSTILE_TEXT = st.one_of(
    st.sampled_from(["", " ", "-", "--", "/", "/dev/null", "/dev/zero", "/proc/self/mem", "/etc/passwd", ".", "..",
                     "x" * 300, "\u202eevil", "a\x1b[2Jb", "0", "-1", "1e309", "²", "prod", "../prod",
                     "sarif=out/x.sarif", "json=", "=x", "{}", "[" * 50]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20),
)
FILE_TEXT = st.sampled_from(["", "{}", "[]", "[" * 5000, "{\"a\": 1e309}", "config: {}\n", "a:\n\tb: 1\n",
                             "{{ .Values }}", "\x00\x01", "kind: Service\n", "---\n---\n", "!!binary AA==\n"])


@st.composite
def argv(draw, options: list[str], flags: list[str], tmp: Path) -> list[str]:
    out: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        if flags and draw(st.booleans()):
            out.append(draw(st.sampled_from(flags)))
            continue
        option = draw(st.sampled_from(options))
        if draw(st.booleans()):
            path = tmp / f"in{len(out)}"
            path.write_text(draw(FILE_TEXT))
            out += [option, str(path)]
        else:
            out += [option, draw(HOSTILE_TEXT)]
    return out


def _run(main, args: list[str], name: str) -> tuple[int, str]:
    """``main(args, stdout, stderr)`` through :func:`tools.cli.outcome`, everything it says captured."""
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = cli.outcome(lambda: main(args, out, err), name)
    return code, err.getvalue() + out.getvalue()


def _check(main, args: list[str], name: str, tmp: Path) -> None:
    """Run in ``tmp``, so a relative path on the command line lands there (as from the user's shell)."""
    before = sorted(p.name for p in tmp.iterdir())
    cwd = os.getcwd()  # noqa: PTH109
    os.chdir(tmp)
    try:
        code, text = _run(main, args, name)
    finally:
        os.chdir(cwd)
    assert code in CONTRACT, (args, code, text[-2000:])
    assert "Traceback" not in text, (args, text[-2000:])
    if code == cli.BAD_INPUT:
        assert sorted(p.name for p in tmp.iterdir()) == before, args  # nothing written on exit 2


#: name -> (the command, run as main(args, stdout, stderr); its options taking a value; its flags;
#: the arguments always given first, from the temporary directory).
COMMANDS = {
    "preview": (lambda a, o, e: preview.main(a, stdout=o, stderr=e),
                ["--stack", "--stack-file", "--out", "--base", "--policy-pack-config"], [],
                lambda tmp: ["--no-policy", "--out", str(tmp / "o")]),
    "analyze": (lambda a, o, e: analyze.main(a),  # the checks before the pack (the pack is its own tests')
                ["--manifests", "--inventory", "--policy-pack-config", "--workers", "--also", "--output"], [],
                lambda tmp: ["--stack-file", str(tmp / "missing.yaml")]),
    "plan": (lambda a, o, e: plan.main(a, stdout=o, stderr=e), [], [], lambda tmp: []),
}


@pytest.mark.parametrize("name", list(COMMANDS))
@FUZZ
@given(data=st.data())
def test_a_command_line_ends_in_the_contract(name, data):
    main, options, flags, first = COMMANDS[name]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if name == "plan":  # one positional: a plan file with hostile content, or a hostile path
            (tmp / "plan.json").write_text(data.draw(FILE_TEXT))
            args = data.draw(st.one_of(st.just([str(tmp / "plan.json")]),
                                       HOSTILE_TEXT.filter(lambda t: t != "-").map(lambda t: [t])))
        else:
            args = data.draw(argv(options, flags, tmp))
        _check(main, [*first(tmp), *args], name, tmp)


@FUZZ
@given(data=st.data())
def test_cluster_readers_command_line(data):
    """adopt-diff and rollout without a cluster: kubectl missing is exit 2 with the fix."""
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        old = os.environ.get("PATH", "")
        os.environ["PATH"] = str(tmp)
        try:
            args = data.draw(argv(["--namespace", "--kubeconfig"], [], tmp))
            _check(lambda a, o, e: rollout.main(a, stdout=o, stderr=e), args, "rollout", tmp)
            args = data.draw(argv(["--stack-file", "--kubeconfig"], [], tmp))
            _check(lambda a, o, e: adopt_diff.main(a, stdout=o, stderr=e), args, "adopt-diff", tmp)
        finally:
            os.environ["PATH"] = old
