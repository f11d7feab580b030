"""Issue 15's fuzz acceptance: command lines generated from every command's real options (benchmarks/fuzz.py)
give no exit 3, no exit 1 without a failed check, one-line exit-2 errors, and finite, non-negative JSON.

`python benchmarks/fuzz.py` runs the 10,000; this runs its first lines of seed 0, and holds the harness's own rules
to fake results.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_benchmark

SAMPLE = 1000  # lines of seed 0: ~20 s on two cores, calibrate fits included

fuzz = load_benchmark("fuzz")


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> object:
    return fuzz.setup(tmp_path_factory.mktemp("fuzz"), 0)


def _case(*argv: str) -> object:
    commands = ("estimate", "check", "collective", "sweep", "calibrate")
    words = tuple(a for a in argv[:2] if not a.startswith("-") and a in commands)
    return fuzz.Case(0, words, [[a] for a in argv[len(words) :]], {"COLUMNS": "100"}, False)


def _rules(case: object, code: int, stdout: str = "", stderr: str = "") -> list[str]:
    fails = fuzz.judge(case, fuzz.Result(code, stdout, stderr, 0.0))
    return [f.rule for f in fails]


def test_a_sample_of_fuzzed_lines_finds_no_failure(gen: object) -> None:
    tally = fuzz.fuzz(gen, SAMPLE, seed=0, timeout=30)
    assert tally.lines == SAMPLE
    assert not tally.counts, fuzz.report(tally, gen.cmds, 0.0, 1, 3, {})


def test_the_generator_reads_every_command_and_is_repeatable(gen: object) -> None:
    import typer

    from dpcost.cli import app

    root = typer.main.get_command(app)
    labels = {c.label for c in gen.cmds}
    assert {"estimate", "check", "sweep", "memory", "collective", "calibrate", "show model", "models import"} <= labels
    assert set(root.commands) <= {c.words[0] for c in gen.cmds if c.words}
    estimate = next(c for c in gen.cmds if c.words == ("estimate",))
    assert {"--zero", "--bucket-size", "--sync-jitter", "--check"} <= {p.opts[0] for p in estimate.params}
    again = fuzz.setup(Path(gen.pools.work), 0)
    assert [gen.case(0, i).argv for i in range(50)] == [again.case(0, i).argv for i in range(50)]


def test_an_exit_3_is_a_failure() -> None:
    case = _case("estimate", "--model", "llama-8b", "--dp", "8", "--format", "json")
    assert _rules(case, 3, stderr="dpcost: error: internal error (IndexError: boom); rerun with DPCOST_DEBUG=1\n") == [
        "exit 3"
    ]


def test_non_finite_and_negative_numbers_are_failures_but_signed_keys() -> None:
    case = _case("estimate", "--model", "llama-8b", "--dp", "8", "--format", "json")
    assert _rules(case, 0, '{"time": {"step_seconds": NaN}}') == ["non-finite number"]
    assert _rules(case, 0, '{"time": {"step_seconds": Infinity}}') == ["non-finite number"]
    assert _rules(case, 0, '{"time": {"losses_seconds": -9e-15}}') == ["negative number"]
    assert _rules(case, 0, '{"time": {"step_seconds": 1.5}, "setup": {"flash_attention": true}}') == []
    assert _rules(case, 0, '{"time": ') == ["unparsable output"]
    compare = _case("collective", "--compare", "x.log", "--format", "json")
    assert _rules(compare, 0, '[{"time_us": 3.0, "error": {"in-place": -0.2}}]') == []
    assert _rules(_case("estimate", "--format", "table"), 0, "step time   nan s\n") == ["non-finite number"]
    # calibrate --steps: a row's error is signed; the top-level geometric means of |error| under the same key are not
    steps = _case("calibrate", "--steps", "x.csv", "--format", "json")
    assert _rules(steps, 0, '{"rows": [{"error_defaults": -0.9, "error_held_out": -0.8}]}') == []
    assert _rules(steps, 0, '{"error_defaults": -0.9}') == ["negative number"]


def test_exit_1_only_when_a_check_failed() -> None:
    check = _case("check", "--model", "llama-8b", "--dp", "8", "--format", "json")
    assert _rules(check, 1, '{"passed": true, "scenarios": []}') == ["exit 1 with no failed check"]
    assert _rules(check, 1, '{"passed": false, "scenarios": []}') == []
    assert _rules(check, 0, '{"passed": false, "scenarios": []}') == ["exit 0 with a failed check"]
    fits = '{"setup": {"mode": "train", "zero_stage": 1}, "memory": {"stages": [{"fits": false}, {"fits": %s}]}}'
    estimate = _case("estimate", "--model", "llama-8b", "--dp", "8", "--check", "--format", "json")
    assert _rules(estimate, 1, fits % "true") == ["exit 1 with no failed check"]
    assert _rules(estimate, 1, fits % "false") == []
    plain = _case("estimate", "--model", "llama-8b", "--dp", "8", "--format", "json")
    assert _rules(plain, 1, fits % "false") == ["exit 1 with no check"]


def test_exit_2_is_one_line_of_error() -> None:
    case = _case("estimate", "--model", "nope", "--dp", "8")
    assert _rules(case, 2, stderr="dpcost: error: --model: no model named nope\n") == []
    assert _rules(case, 2, stderr="dpcost: error: one\ndpcost: error: two\n") == ["exit 2 message"]
    pydantic = "dpcost: error: --mfu: Input should be a valid number, unable to parse string as a number\n"
    assert _rules(case, 2, stderr=pydantic) == ["pydantic wording in an error"]
    assert _rules(case, 2, stderr="Usage: dpcost estimate\nError: bad\n") == ["exit 2 message"]
    traceback = "Traceback (most recent call last):\n  File x\nValueError: y\n"
    assert _rules(case, 2, stderr=traceback) == ["traceback in output", "exit 2 message"]
    assert _rules(case, 130, stderr="dpcost: error: aborted\n") == ["exit 130"]


def test_an_escaping_exception_and_a_hang_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpcost.engine.estimate as engine

    def boom(*_args: object, **_kwargs: object) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(engine, "estimate", boom)
    argv = ["estimate", "--model", "llama-8b", "--dp", "8", "--format", "json"]
    res = fuzz.run(argv, {"COLUMNS": "100"})
    assert res.code == 3 and res.stderr.startswith("dpcost: error: internal error (ZeroDivisionError")
    assert fuzz.run(argv, {"COLUMNS": "100"}, debug=True).error.startswith("ZeroDivisionError at dpcost/")

    def slow(*_args: object, **_kwargs: object) -> None:
        while True:
            pass

    monkeypatch.setattr(engine, "estimate", slow)
    assert fuzz.run(argv, {"COLUMNS": "100"}, timeout=0.2).timed_out
