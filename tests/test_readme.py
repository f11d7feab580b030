"""The README's promises: its first lines are the two set-up commands, and its tables (and the reference's sweep
table) are today's output."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_benchmark
from typer.testing import CliRunner

from dpcost.cli import app

README = Path(__file__).resolve().parents[1] / "README.md"
REFERENCE_DOC = README.parent / "docs" / "reference.md"


def _lines() -> list[str]:
    if not README.is_file():
        pytest.skip("README.md is not beside the tests")
    return README.read_text().splitlines()


def test_first_lines_are_the_two_setup_commands() -> None:
    commands = [ln.strip() for ln in _lines()[:6] if ln.startswith("    ")]
    assert len(commands) == 2
    run, test = commands
    assert run.endswith("pip install . && dpcost estimate --model llama-70b --dp 512")
    assert "pip install '.[test]'" in test and test.endswith("pytest")
    for cmd in commands:
        assert cmd.startswith("python3 -m venv .venv && . .venv/bin/activate && ")


def test_the_sweep_table_is_current() -> None:
    if not REFERENCE_DOC.is_file():
        pytest.skip("docs/ is not beside the tests")
    lines = REFERENCE_DOC.read_text().splitlines()
    table = [ln for ln in lines if ln.startswith("| ") and "| 3 (" in ln]
    assert len(table) == 10
    result = CliRunner().invoke(app, ["sweep", "--model", "llama-70b", "--dp", "8..4096", "--format", "markdown"])
    assert result.exit_code == 0
    fresh = [ln for ln in result.stdout.splitlines() if ln.startswith("| ") and "| 3 (" in ln]
    assert fresh == table


def test_the_accuracy_table_is_current() -> None:
    """The README's accuracy table is what `python benchmarks/accuracy.py --markdown` prints today."""
    bench = load_benchmark("accuracy")
    text = _lines()
    for runs in (bench.runs_in([bench.DEFAULT]), bench.holdout_runs()):
        fresh = bench.markdown(runs).splitlines()
        rows = [i for i, line in enumerate(text) if line == fresh[2]]  # a table's first run, found once
        assert len(rows) == 1, fresh[2]
        start = rows[0] - 2
        assert text[start : start + len(fresh)] == fresh


def test_the_training_scaling_table_is_current() -> None:
    """The README's training-scaling table is what `python benchmarks/training_scaling.py` prints today."""
    bench = load_benchmark("training_scaling")
    fresh = bench.markdown(*bench.compare(bench.runs())).splitlines()
    text = _lines()
    start = text.index(fresh[0])
    assert text[start : start + len(fresh)] == fresh


def test_the_megatron_functional_test_peaks_table_is_current() -> None:
    """The README's table of Megatron-LM's functional-test peaks is `python benchmarks/megatron_test_peaks.py`'s."""
    bench = load_benchmark("megatron_test_peaks")
    fresh = bench.markdown(*bench.compare()).splitlines()
    text = _lines()
    start = text.index(fresh[0])
    assert text[start : start + len(fresh)] == fresh


def test_the_ultrascale_playbook_tables_are_current() -> None:
    """The README's Ultra-Scale Playbook tables are what `python benchmarks/ultrascale_runs.py` prints today."""
    fresh = load_benchmark("ultrascale_runs").report().splitlines()
    text = _lines()
    start = text.index(fresh[0])
    assert text[start : start + len(fresh)] == fresh


def test_every_tour_command_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tour's commands, from a checkout's top directory (the files they write land in a scratch copy)."""
    import shlex

    text = _lines()
    start = text.index("## A tour")
    block = text[start : text.index("```", text.index("```", start) + 1)]
    commands = [shlex.split(ln.split("  #")[0])[1:] for ln in block if ln.startswith("dpcost ")]
    assert len(commands) >= 15
    for folder in ("examples", "tests"):
        (tmp_path / folder).symlink_to(README.parent / folder)
    monkeypatch.chdir(tmp_path)
    for args in commands:
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, (args, result.output)


def _large_runs_summary_is_in_the_readme(rows_of: str | None) -> None:
    """`rows_of`: the benchmark's function that reads the rows (holdout_rows, mlperf_rows), None for runs.csv."""
    bench = load_benchmark("large_runs")
    rows = getattr(bench, rows_of)() if rows_of else None
    fresh = bench.summary(bench.compare(rows)[0], bench.compare(rows, compute_model="flops")[0]).splitlines()
    text = _lines()
    at = [i for i, line in enumerate(text) if line == fresh[2]]  # the first source's row: the two tables share a header
    assert len(at) == 1, fresh[2]
    assert text[at[0] - 2 : at[0] - 2 + len(fresh)] == fresh


def test_the_large_runs_per_run_table_is_current() -> None:
    """Every in-sample configuration's published and predicted step, as `benchmarks/large_runs.py` costs it today:
    Megatron-LM SC'21 Table 1 and Korthikanti et al. Table 5 among them (issue 19's must-show)."""
    bench = load_benchmark("large_runs")
    fresh = bench.per_run(bench.compare()[0]).splitlines()
    text = _lines()
    start = text.index(fresh[0])
    assert text[start : start + len(fresh)] == fresh
    tables = {(line.split(" | ")[0], line.split(" | ")[1]) for line in fresh[2:]}
    assert ("| narayanan2021", "Table 1") in tables and ("| korthikanti2022", "Table 5") in tables


def test_the_held_out_large_runs_table_is_current() -> None:
    """The README's held-out summary is what `python benchmarks/large_runs.py --holdout` prints today."""
    _large_runs_summary_is_in_the_readme("holdout_rows")


def test_the_mlperf_table_is_current() -> None:
    """The README's MLPerf Training summary is what `python benchmarks/large_runs.py --mlperf` prints today."""
    _large_runs_summary_is_in_the_readme("mlperf_rows")


def test_the_large_runs_table_is_current() -> None:
    """The README's published-large-runs summary is what `python benchmarks/large_runs.py` prints today."""
    _large_runs_summary_is_in_the_readme(None)


@pytest.fixture(scope="module")
def calibration_out_of_sample() -> tuple[object, list[tuple[str, str, str, dict[str, float], dict[str, float]]]]:
    bench = load_benchmark("calibration_check")
    return bench, bench.out_of_sample()


def test_calibration_out_of_sample_is_never_worse_than_the_catalog_in_any_band(
    calibration_out_of_sample: tuple[object, list[tuple[str, str, str, dict[str, float], dict[str, float]]]],
) -> None:
    """Issue 17's must-show: fitted on a cluster's smaller node counts and predicting its largest, calibration is
    never worse than the catalog topology, band by band (the AWS p5 all-reduce's >= 64 MiB band read 14.9% against
    the catalog's 8.7% while the hold-out judged all points at once)."""
    _, rows = calibration_out_of_sample
    for label, _, _, catalog, calibrated in rows:
        for band, error in catalog.items():
            assert calibrated[band] <= error, (label, band, calibrated[band], error)


def test_the_calibration_out_of_sample_table_is_current(
    calibration_out_of_sample: tuple[object, list[tuple[str, str, str, dict[str, float], dict[str, float]]]],
) -> None:
    """The README's table is what `python benchmarks/calibration_check.py` prints today."""
    bench, rows = calibration_out_of_sample
    fresh = bench.out_of_sample_markdown(rows)  # type: ignore[attr-defined]
    assert fresh in "\n".join(_lines())


def test_the_pooled_accuracy_summary_is_current() -> None:
    """The README's pooled summary is what `python benchmarks/accuracy.py --all --markdown` prints today."""
    bench = load_benchmark("accuracy")
    fresh = bench.markdown(bench.runs_in([bench.DEFAULT]) + bench.holdout_runs()).splitlines()
    start = next(i for i, line in enumerate(fresh) if line.startswith("| runs |"))
    block = fresh[start : start + 5]
    text = _lines()
    at = [i for i in range(len(text)) if text[i : i + 5] == block]
    assert len(at) == 1, block


def test_the_deepseek_v3_prose_reads_the_golden_files_step() -> None:
    """The README's account of DeepSeek-V3 as DeepSeek trained it quotes the step its golden estimate prints (it had
    drifted by 0.7 s once, unnoticed, while the golden file moved)."""
    import re

    golden = (README.parent / "tests" / "golden" / "estimate-deepseek-v3-pp16-ep64-h800.md").read_text()
    found = re.search(r"fits, ([0-9.]+) s per step", golden)
    assert found is not None
    step = found.group(1)
    text = " ".join(README.read_text().split())
    assert f"Its step, {step} s in BF16" in text
    assert f"DeepSeek's PP16 x EP64 x DP128 costs {step} s in dpcost" in text
