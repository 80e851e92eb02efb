"""``python3 dev.py test``: the fast suite on both cores in a random order with its seed printed,
the caller's own choice of either kept; ``--each`` runs every real-suite module in a pytest of its
own, all of them, and ends with the worst exit code and the modules that failed."""

from __future__ import annotations

import pytest

import dev
from tests.paths import ROOT

REAL_MODULES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "real").glob("test_real_*.py"))


def test_the_fast_suite_runs_on_both_cores_in_a_random_order_and_prints_the_seed(capsys):
    options = dev.fast_options(["-q"])
    assert options[:4] == ["-n", "2", "--dist", "loadfile"]
    [seed_option] = [o for o in options if o.startswith("--random-order-seed=")]
    assert "--random-order-bucket=module" in options
    seed = seed_option.split("=", 1)[1]
    assert f"seed {seed} (the same order again: python3 dev.py test --fast --random-order-seed={seed})" in capsys.readouterr().err


@pytest.mark.parametrize("given, kept", [
    (["-n", "0"], ["--random-order"]),
    (["-n4"], ["--random-order"]),
    (["-p", "no:xdist"], ["--random-order"]),
    (["--random-order-seed=7"], ["-n"]),
    (["-p", "no:random_order"], ["-n"]),
])
def test_the_callers_own_workers_or_order_are_kept(given, kept, capsys):
    options = dev.fast_options(given)
    chose_workers = any(o.startswith("-n") for o in given) or "no:xdist" in given
    assert ("-n" in options) is not chose_workers
    assert any(o.startswith("--random-order") for o in options) is chose_workers
    assert [k for k in kept if any(o.startswith(k) for o in options)] == kept
    assert ("seed" in capsys.readouterr().err) is chose_workers


def test_each_real_module_runs_alone_and_all_run_after_a_failure(monkeypatch, capsys):
    calls = []
    failing = {REAL_MODULES[0], REAL_MODULES[-1]}

    def pytest_(marker, args):
        calls.append((marker, args))
        return 1 if args[-1] in failing else 0

    monkeypatch.setattr(dev, "_pytest", pytest_)
    assert dev.real_each(["-q"]) == 1
    assert calls == [("real", ["-q", module]) for module in REAL_MODULES]
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"dev.py: real-suite modules that failed alone: {REAL_MODULES[0]}, {REAL_MODULES[-1]}"


def test_each_stops_at_an_interruption_and_gives_the_worst_code(monkeypatch):
    codes = iter([0, 3, dev.cli.INTERRUPTED, 0])
    calls = []
    monkeypatch.setattr(dev, "_pytest", lambda marker, args: calls.append(args[-1]) or next(codes))
    assert dev.real_each([]) == dev.cli.INTERRUPTED
    assert calls == REAL_MODULES[:3]
    codes = iter([1, 3] + [0] * len(REAL_MODULES))
    monkeypatch.setattr(dev, "_pytest", lambda marker, args: next(codes))
    assert dev.real_each([]) == 3


def test_dev_py_test_each_passes_the_real_suite_to_real_each(monkeypatch):
    seen = []
    monkeypatch.setattr(dev, "_pytest", lambda marker, args: seen.append(("pytest", marker)) or 0)
    monkeypatch.setattr(dev, "real_each", lambda args: seen.append(("each", tuple(args))) or 0)
    monkeypatch.setattr(dev.cli, "call", lambda *a, **k: 0)  # the toolchain step
    assert dev.test(["--real", "--each", "-q"]) == 0
    assert seen == [("each", ("-q",))]
    seen.clear()
    assert dev.test(["--real", "-q"]) == 0
    assert seen == [("pytest", "real")]
