"""A bounded fuzz test (hypothesis) over the command-line surfaces: any argv of each command's options
with hostile values ends in the exit-code contract of tools/cli.py, never in a traceback, and writes
nothing on exit 2.

The plan reader also gets a real plan damaged (a document before the stream, a failed or edited
summary, a cut or doubled stream, a name forging a ``REFUSED:`` line, a secret cluster); review-comment
a folder whose files are anything (a FIFO, a directory, a link out of it, junk codes); deploy-guard
any state file.

Each command runs in-process through :func:`tools.cli.outcome` (what its ``__main__`` runs), the
policy pack off where the command allows it, so 25 examples a command take about 20 s on a
2-core machine; ``FUZZ_EXAMPLES`` raises the count for a longer hunt.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.paths import PROD_STACK_FILE
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


#: A real plan (the CLI's event stream of a rename), for damage the plan reader must refuse or count.
STREAM = (Path(__file__).resolve().parents[1] / "fixtures" / "plans" / "rename-plain.jsonl").read_text()
PLAN_DAMAGE = [
    lambda t: t,
    lambda t: json.dumps({"steps": [], "changeSummary": {}}) + "\n" + t,  # a document followed by a stream
    lambda t: t.replace('"result": "succeeded"', '"result": "failed"'),
    lambda t: t.replace('"same": 4', '"same": 4.0'),
    lambda t: t.replace('"same": 4', '"same": "4"'),
    lambda t: t.replace('"same": 4, ', ""),
    lambda t: "\n".join(x for i, x in enumerate(t.splitlines()) if i != 3),
    lambda t: t[: len(t) // 2],
    lambda t: t.replace('"name": "clef-candle"', '"name": "clef\\u001b[2K\\nREFUSED: forged"'),
    lambda t: t.replace('"llm-serving:cluster": "{', '"llm-serving:cluster": "[secret]", "x": "{'),
    lambda t: t + t,
]


@st.composite
def plans(draw) -> str:
    text = draw(st.sampled_from(PLAN_DAMAGE))(STREAM)
    if draw(st.booleans()):
        lines = text.splitlines()
        if lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines[i] = draw(st.sampled_from(["", "{}", "[]", "{\"sequence\": 1}", "not json", lines[i][:40]]))
        text = "\n".join(lines) + "\n"
    return text


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
        if name == "plan":  # one positional: a plan file with hostile content, a damaged real plan, or a hostile path
            (tmp / "plan.json").write_text(data.draw(st.one_of(FILE_TEXT, plans())))
            args = data.draw(st.one_of(st.just([str(tmp / "plan.json")]),
                                       HOSTILE_TEXT.filter(lambda t: t != "-").map(lambda t: [t])))
        else:
            args = data.draw(argv(options, flags, tmp))
        _check(main, [*first(tmp), *args], name, tmp)
        if name == "plan":
            code, text = _run(main, [str(tmp / "plan.json")], name)
            assert "\x1b" not in text and "\nREFUSED: forged" not in text, text[-2000:]  # no forged line


#: What a file of the review job's folder may be: text, a code, junk, or not a file at all.
REVIEW_FILES = st.sampled_from(["0\n", "1\n", "2\n", "3\n", "-1\n", "\u00b2\n", "", "x" * 300, "```\n## forged\n```",
                                "\x1b[2J", b"\xff\xfe".decode("latin-1"), "FIFO", "DIR", "LINK"])


@FUZZ
@given(data=st.data())
def test_review_comment_and_deploy_guard_end_in_the_contract(data):
    """review-comment over a folder whose files are anything (a FIFO, a directory, a link out of it,
    junk codes); deploy-guard over any state file: the contract, no traceback, no hang, nothing of
    the link's target posted."""
    from tools import deploy_guard, review_comment

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        secret = tmp / "shadow"
        secret.write_text("root:hf_FUZZshadow:19000\n")
        review = tmp / "review"
        review.mkdir()
        for stem in ("preview", "verdicts", "real", "plan"):
            for suffix in (".code", ".txt" if stem != "verdicts" else ".md"):
                what = data.draw(st.one_of(st.none(), REVIEW_FILES))
                path = review / f"{stem}{suffix}"
                if what is None:
                    continue
                if what == "FIFO":
                    os.mkfifo(path)
                elif what == "DIR":
                    path.mkdir()
                elif what == "LINK":
                    path.symlink_to(secret)
                else:
                    path.write_text(what, encoding="latin-1" if "\xff" in what else "utf-8")
        args = [str(review), *data.draw(st.sampled_from([[], ["--check"]]))]
        code, text = _run(lambda a, o, e: review_comment.main(a, stdout=o, stderr=e), args, "review-comment")
        assert code in CONTRACT | {cli.CRASH if "--check" in args else cli.OK}, (code, text[-2000:])
        assert "Traceback" not in text and "hf_FUZZshadow" not in text and "\x1b" not in text, text[-2000:]
        state = tmp / "state.json"
        state.write_text(data.draw(st.one_of(FILE_TEXT, st.sampled_from(['{"deployment": {"resources": 5}}',
                                                                           '{"deployment": []}', "{}"]))))
        _check(lambda a, o, e: deploy_guard.main(a, stdout=o, stderr=e),
               [str(state), "--stack-file", str(PROD_STACK_FILE)],
               "deploy-guard", tmp)


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
