"""nccl-tests logs as they are: known by their table header, the collective read from the log, bad rows refused.

Each error is one line that names the file once and, for a row, its line number (issue 15).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REFERENCE
from typer.testing import CliRunner

from dpcost.catalog import load_measurements, load_runs
from dpcost.cli import app

EXAMPLE = Path(__file__).parent.parent / "examples" / "nccl-tests-h100-2n-all_reduce.log"
ALL_REDUCE = REFERENCE / "nccl-tests" / "h200-2n-all_reduce-ocih200.log"  # names no op but in its file name
ALL_GATHER = REFERENCE / "nccl-tests" / "h200-2n-all_gather-gcpa3ultra.log"
ROW_1MIB = re.compile(r"^\s+1048576\s+262144\s+float\s+sum\s+-1\s+(71\.93)\s", re.MULTILINE)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200", "NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def refused(path: Path, *needles: str) -> str:
    """`dpcost calibrate path` exits 2 with one line naming the file once and holding every needle."""
    code, stdout, stderr = run("calibrate", str(path), "--base", "dgx-h100")
    assert code == 2, (code, stdout, stderr)
    assert stderr.startswith("dpcost: error: ") and stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr.count(str(path)) == 1, stderr
    for needle in needles:
        assert needle in stderr, (needle, stderr)
    return stderr


def copy(tmp_path: Path, source: Path, name: str, before: str = "") -> Path:
    path = tmp_path / name
    path.write_text(before + source.read_text())
    return path


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# ------------------------------------------------------------------------------------------------ which collective


def test_a_log_is_known_by_its_table_and_its_command_line_not_its_name(tmp_path: Path) -> None:
    """The shipped example echoes `all_reduce_perf_mpi`; named nccl.txt, it reads as it does under its own name."""
    renamed = load_measurements(str(copy(tmp_path, EXAMPLE, "nccl.txt")))
    original = load_measurements(str(EXAMPLE))
    assert renamed.ops == ("all_reduce",) and renamed.rows == original.rows and len(renamed.rows) == 64
    assert (renamed.ranks, renamed.gpus_per_node) == (16, 8)


def test_nccl_tests_own_starting_line_names_the_collective(tmp_path: Path) -> None:
    """nccl-tests 2.17 and later print `# Collective test starting: <program>` (src/util.cu, writeDeviceReport)."""
    path = copy(tmp_path, ALL_GATHER, "nccl.txt", "# Collective test starting: all_gather_perf_mpi\n")
    m = load_measurements(str(path))
    assert m.ops == ("all_gather",) and m.rows == load_measurements(str(ALL_GATHER)).rows


def test_an_op_line_names_the_collective(tmp_path: Path) -> None:
    m = load_measurements(str(copy(tmp_path, ALL_REDUCE, "nccl.txt", "# op: all_reduce\n")))
    assert m.ops == ("all_reduce",) and m.rows == load_measurements(str(ALL_REDUCE)).rows


@pytest.mark.parametrize("name", ["h200-allreduce.log", "h200-AllReduce.txt", "all-reduce.out"])
def test_the_file_name_is_the_last_resort(tmp_path: Path, name: str) -> None:
    assert load_measurements(str(copy(tmp_path, ALL_REDUCE, name))).ops == ("all_reduce",)


def test_a_log_that_names_no_collective_is_refused_with_how_to_name_it(tmp_path: Path) -> None:
    """The issue's repro: a real log copied to nccl.txt; no op is guessed."""
    refused(copy(tmp_path, ALL_REDUCE, "nccl.txt"), "cannot tell which collective", "'# op: all_reduce'")


@pytest.mark.parametrize(
    ("before", "name", "needles"),
    [
        # an all_gather table under an all_reduce name: redop `none` is no reduction
        ("", "all_reduce.log", ["line 38:", "not a row of all_reduce", "redop none", "the file name"]),
        # the root column: -1 for every collective but broadcast and reduce
        ("", "broadcast.log", ["line 38:", "root -1"]),
        ("# op: allreduce\n", "nccl.txt", ["line 1:", "'# op: allreduce'"]),
        ("# Collective test starting: alltoall_perf\n", "all_gather.log", ["line 1:", "alltoall_perf"]),
        (
            "# Collective test starting: all_reduce_perf\n# op: all_gather\n",
            "nccl.txt",
            ["line 2:", "contradicts line 1"],
        ),
        ("# ran all_gather_perf, then sendrecv_perf\n", "nccl.txt", ["several nccl-tests programs", "# op:"]),
    ],
)
def test_a_collective_the_table_or_the_log_contradicts_is_refused(
    tmp_path: Path, before: str, name: str, needles: list[str]
) -> None:
    refused(copy(tmp_path, ALL_GATHER, name, before), *needles)


def test_the_count_column_tells_a_per_rank_count(tmp_path: Path) -> None:
    """all_reduce prints size = count x 4 B for floats; reduce_scatter prints ranks x that (src/*.cu)."""
    path = copy(tmp_path, ALL_REDUCE, "reduce_scatter.log")
    first = re.search(r"^\s+\d+\s+\d+\s+float", path.read_text(), re.MULTILINE)
    assert first is not None
    refused(path, f"line {line_of(path.read_text(), first.start())}:", "whole-buffer count")


# ------------------------------------------------------------------------------------------------ the table


@pytest.mark.parametrize(
    ("cell", "needle"),
    [
        ("nan", "finite"),
        ("inf", "finite"),
        ("-5", "positive"),
        ("0.00", "positive"),
        ("1e-300", "outside 0.1 us .. 1 hour"),
        ("0.05", "outside 0.1 us .. 1 hour"),
        ("1e308", "outside 0.1 us .. 1 hour"),
        ("4e9", "outside 0.1 us .. 1 hour"),
        ("fast", "expected a number"),
    ],
)
def test_a_bad_time_is_refused_with_its_line(tmp_path: Path, cell: str, needle: str) -> None:
    text = EXAMPLE.read_text()
    m = ROW_1MIB.search(text)
    assert m is not None
    path = tmp_path / "all_reduce.log"
    path.write_text(text[: m.start(1)] + cell + text[m.end(1) :])
    refused(path, f"line {line_of(text, m.start())}: out-of-place time", needle)


def test_a_size_beyond_2_to_the_50_is_refused_with_its_line(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    m = ROW_1MIB.search(text)
    assert m is not None
    path = tmp_path / "all_reduce.log"
    path.write_text(text.replace("     1048576        262144", f"{2**51}  {2**49}", 1))
    refused(path, f"line {line_of(text, m.start())}:", "beyond 2**50")


def test_a_cut_row_and_a_repeated_run_are_refused_with_their_lines(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    lines = text.splitlines()
    last = max(i for i, ln in enumerate(lines) if ln.strip().startswith("17179869184"))
    cut = tmp_path / "all_reduce-cut.log"
    cut.write_text("\n".join([*lines[:last], lines[last][:70]]) + "\n")
    refused(cut, f"line {last + 1}:", "7 columns where the header on line")
    twice = tmp_path / "all_reduce-twice.log"
    twice.write_text(text + text[text.index("#  Rank  0") :])
    refused(twice, "measured again (first on line")


def test_the_header_says_where_the_times_are(tmp_path: Path) -> None:
    """Before 2022 all_gather printed no redop and no root; newer versions may add per-iteration columns."""
    old = tmp_path / "old.log"
    old.write_text(
        "# op: all_gather\n"
        "#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "     1048576        262144     float    25.10   41.78   36.6   0e+00    24.90   42.11   36.8  0e+00\n"
    )
    assert [(r.op, r.time_us) for r in load_measurements(str(old)).rows] == [("all_gather", 25.1), ("all_gather", 24.9)]
    wide = tmp_path / "wide.log"
    wide.write_text(
        "# Collective test starting: all_reduce_perf\n"
        "#  size  count  type  redop  root  time  algbw  busbw  #wrong  i_min  i_max  i_p99  i_cv%"
        "  time  algbw  busbw  #wrong  i_min  i_max  i_p99  i_cv%\n"
        "       0      0  float  sum  -1   0.02   0.00   0.00   0   0.01   0.03   0.03   1.0"
        "   0.02   0.00   0.00   0   0.01   0.03   0.03   1.0\n"
        " 1048576  262144  float  sum  -1   30.5   34.3   64.4   0   29.0   33.0   32.9   2.0"
        "    N/A    N/A    N/A  N/A    N/A    N/A    N/A    N/A\n"
    )
    assert [(r.size_bytes, r.time_us, r.column) for r in load_measurements(str(wide)).rows] == [
        (1048576, 30.5, "out-of-place")
    ]


def test_text_without_a_table_is_not_a_log(tmp_path: Path) -> None:
    path = tmp_path / "all_reduce.log"
    path.write_text("    8    2   float  sum  -1   24.70   0.00   0.00   0   24.70   0.00   0.00   0\n")
    refused(path, "not an nccl-tests log", "table header")


# ------------------------------------------------------------------------------------------------ the file


@pytest.mark.parametrize(("path", "needle"), [("/dev/zero", "not a regular file"), ("/no/such.log", "no such file")])
def test_a_file_that_cannot_be_read_is_named_once(path: str, needle: str) -> None:
    code, _, stderr = run("calibrate", path)
    assert code == 2 and stderr == f"dpcost: error: {path}: {needle}\n"


def test_a_csv_time_is_bounded_and_its_line_is_the_files(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(
        "# made by hand\n\nop,ranks,gpus_per_node,size_bytes,time_us\n"
        "all_reduce,16,8,1048576,150\nall_reduce,16,8,2097152,1e-300\n"
    )
    refused(path, "line 5: time_us", "outside 0.1 us .. 1 hour")


def test_every_reference_log_still_reads() -> None:
    for path in sorted((REFERENCE / "nccl-tests").glob("*.log")):
        assert load_runs(str(path), str(path))[0].rows, path


def test_a_log_without_rank_lines_is_named_by_the_path_given(tmp_path: Path) -> None:
    path = tmp_path / "all_reduce.log"
    path.write_text("".join(ln for ln in ALL_REDUCE.read_text().splitlines(True) if "Rank" not in ln))
    refused(path, "the number of ranks is unknown")
