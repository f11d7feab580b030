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
from dpcost.errors import InputError

EXAMPLE = Path(__file__).parent.parent / "examples" / "nccl-tests-h100-2n-all_reduce.log"
ALL_REDUCE = REFERENCE / "nccl-tests" / "h200-2n-all_reduce-ocih200.log"  # names no op but in its file name
ALL_GATHER = REFERENCE / "nccl-tests" / "h200-2n-all_gather-gcpa3ultra.log"
# the line of its first data row (its provenance header grows as sources are added)
ALL_GATHER_ROW = 1 + next(i for i, ln in enumerate(ALL_GATHER.read_text().splitlines()) if ln[:1] == " ")
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


def test_an_nccl_proto_list_in_the_environment_echo_is_read_whole(tmp_path: Path) -> None:
    """NCCL_PROTO takes a comma-separated list (parseList, src/graph/tuning.cc): Google's TCPXO profile echoes
    NCCL_PROTO=Simple,LL128, which forces no single protocol; a name NCCL has not is refused by name."""
    listed = copy(tmp_path, ALL_GATHER, "listed.txt", "# NCCL_PROTO=Simple,LL128\n")
    assert load_measurements(str(listed)).protocol == "ll128,simple"
    single = copy(tmp_path, ALL_GATHER, "single.txt", "# NCCL_PROTO=LL\n")
    assert load_measurements(str(single)).protocol == "ll"
    with pytest.raises(InputError, match="NCCL_PROTO=Simple,LL256"):
        load_measurements(str(copy(tmp_path, ALL_GATHER, "bad.txt", "# NCCL_PROTO=Simple,LL256\n")))


def test_an_op_line_names_the_collective(tmp_path: Path) -> None:
    m = load_measurements(str(copy(tmp_path, ALL_REDUCE, "nccl.txt", "# op: all_reduce\n")))
    assert m.ops == ("all_reduce",) and m.rows == load_measurements(str(ALL_REDUCE)).rows
    # a remark after the op, as provenance headers write it
    m = load_measurements(str(copy(tmp_path, ALL_REDUCE, "remark.txt", "# Op: all_reduce (float32 sum).\n")))
    assert m.ops == ("all_reduce",)


@pytest.mark.parametrize("name", ["h200-allreduce.log", "h200-AllReduce.txt", "all-reduce.out"])
def test_the_file_name_is_the_last_resort(tmp_path: Path, name: str) -> None:
    assert load_measurements(str(copy(tmp_path, ALL_REDUCE, name))).ops == ("all_reduce",)


def test_the_issue_repro_reads_the_table_as_all_reduce(tmp_path: Path) -> None:
    """Issue 15's repro: a real log under a name that says nothing, with no op or command line in it."""
    path = copy(tmp_path, ALL_REDUCE, "nccl.txt")
    assert "_perf" not in path.read_text() and "# op:" not in path.read_text()
    m, original = load_measurements(str(path)), load_measurements(str(ALL_REDUCE))
    assert m.ops == ("all_reduce",) and m.rows == original.rows and len(m.rows) == 10
    assert (m.ranks, m.gpus_per_node) == (16, 8)
    code, stdout, stderr = run("calibrate", str(path))
    assert code == 0 and stderr == "" and "nccl.txt" in stdout, (code, stderr)


SHIPPED = [*sorted((REFERENCE / "nccl-tests").glob("*.log")), EXAMPLE]


@pytest.mark.parametrize("source", SHIPPED, ids=lambda p: p.name)
def test_the_raw_output_of_every_shipped_log_reads_as_its_name_says(tmp_path: Path, source: Path) -> None:
    """What the nccl-tests binary prints, from its '# nThread' line down, names no op: the table tells which."""
    text = source.read_text()
    raw = text[text.index("# nThread") :]
    assert not re.search(r"_perf|# op:|Collective test starting", raw)
    named = re.search("all_reduce|reduce_scatter|all_gather|broadcast|reduce|sendrecv", source.name)
    assert named is not None
    path = tmp_path / "out.txt"
    path.write_text(raw)
    m, original = load_measurements(str(path)), load_measurements(str(source))
    op = {"sendrecv": "send_recv"}.get(named.group(0), named.group(0))
    assert m.ops == (op,) and m.rows == original.rows and m.ranks == original.ranks


def nccl_table(
    ranks: int | None,
    redop: str,
    root: int,
    per_rank: bool,
    factor: float,
    wrong: tuple[str, str] = ("0", "0"),
    counts: float = 1,
) -> str:
    """Raw output as nccl-tests prints it (src/common.cu, src/util.cu): '# Rank' lines, then a row per size with
    size = max(send, receive) bytes, count = the count each rank passes, busbw = factor x algbw. `counts`
    multiplies the count column."""
    lines = ["# nThread 1 nGpus 1 minBytes 1048576 maxBytes 268435456 step: 16(factor) warmup iters: 5 iters: 20"]
    lines += [
        f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on node-{r // 8} device {r % 8:2d} [0x{r:02x}] NVIDIA H100"
        for r in range(ranks or 0)
    ]
    lines.append(
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong"
    )
    for size in (1 << 20, 1 << 24, 1 << 28):
        count = int(size // 4 // ((ranks or 16) if per_rank else 1) * counts)
        time_us = 10 + size / 200e3
        algbw = size / time_us / 1e3
        cells = f"{time_us:7.2f}  {algbw:6.2f}  {algbw * factor:6.2f}"
        head = f"{size:12d}  {count:12d}  {'float':>8s}  {redop:>6s}  {root:6d}"
        lines.append(f"{head}  {cells}  {wrong[0]:>6s}  {cells}  {wrong[1]:>6s}")
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, text: str, name: str = "out.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("op", "redop", "root", "per_rank", "factor"),
    [
        ("all_reduce", "sum", -1, False, 2 * 15 / 16),
        ("reduce_scatter", "sum", -1, True, 15 / 16),
        ("all_gather", "none", -1, True, 15 / 16),
        ("broadcast", "none", 0, False, 1),
        ("reduce", "max", 3, False, 1),
    ],
)
def test_each_collective_is_read_from_its_table(
    tmp_path: Path, op: str, redop: str, root: int, per_rank: bool, factor: float
) -> None:
    m = load_measurements(str(write(tmp_path, nccl_table(16, redop, root, per_rank, factor))))
    assert m.ops == (op,) and len(m.rows) == 6 and m.ranks == 16


def test_the_count_column_tells_all_gather_and_reduce_scatter(tmp_path: Path) -> None:
    """Rows alike but for the count: all_reduce's is the whole buffer's, reduce_scatter's one rank's share
    (size = 16 x count x 4 B); all_gather's is one rank's share, and a whole-buffer count is no nccl-tests row."""
    whole = nccl_table(16, "sum", -1, False, 2 * 15 / 16)
    share = nccl_table(16, "sum", -1, False, 15 / 16, counts=1 / 16)  # reduce_scatter's busbw: (n-1)/n x algbw
    assert load_measurements(str(write(tmp_path, whole))).ops == ("all_reduce",)
    assert load_measurements(str(write(tmp_path, share))).ops == ("reduce_scatter",)
    raw = ALL_GATHER.read_text()[ALL_GATHER.read_text().index("# nThread") :]
    assert load_measurements(str(write(tmp_path, raw))).ops == ("all_gather",)
    first = re.search(r"^ +1024 +16 +float", raw, re.MULTILINE)
    assert first is not None
    path = write(tmp_path, raw.replace("    1024            16", "    1024           256", 1))
    refused(path, f"line {line_of(raw, first.start())}:", "no nccl-tests program prints such a row", "redop none")


def test_a_table_whose_rows_disagree_is_refused(tmp_path: Path) -> None:
    raw = ALL_REDUCE.read_text()[ALL_REDUCE.read_text().index("# nThread") :]
    row = re.search(r"^ +4294967296 +(1073741824) +float +(sum)", raw, re.MULTILINE)
    assert row is not None  # made an all_gather row: no reduction, one rank's share of the buffer
    edited = raw[: row.start(1)] + f"{2**30 // 16:10d}" + "     float    none" + raw[row.end(2) :]
    refused(write(tmp_path, edited), f"line {line_of(raw, row.start())} reads as all_gather", "rows disagree")
    gather = ALL_GATHER.read_text()
    both = raw + gather[gather.index("#       size") :]
    refused(write(tmp_path, both, "both.txt"), "rows disagree", "reads as all_gather", "as all_reduce")


@pytest.mark.parametrize(
    ("table", "needles"),
    [
        # at 2 ranks all_reduce's busbw factor 2(n-1)/n is sendrecv's 1
        (nccl_table(2, "sum", -1, False, 1), ["all_reduce or sendrecv", "at 2 ranks", "'# op: all_reduce'"]),
        # without validation (-c 0) alltoall's in-place #wrong is N/A, as all_gather's is
        (nccl_table(16, "none", -1, True, 15 / 16, ("N/A", "N/A")), ["all_gather or alltoall", "-c 0"]),
        # no in-place check: alltoall, or alltoallv (which dpcost does not read) where its count is not 0
        (nccl_table(16, "none", -1, True, 15 / 16, ("0", "N/A")), ["alltoall or alltoallv", "'# op: all_to_all'"]),
        # without '# Rank' lines a whole-buffer count could be one rank's share
        (
            nccl_table(None, "sum", -1, False, 2 * 15 / 16),
            ["all_reduce or reduce_scatter", "no '# Rank' lines", "'# op: all_reduce'"],
        ),
    ],
)
def test_a_table_that_reads_as_two_programs_is_refused_with_how_to_name_it(
    tmp_path: Path, table: str, needles: list[str]
) -> None:
    refused(write(tmp_path, table), "cannot tell which collective", *needles)
    op = re.search(r"'# op: (\w+)'", " ".join(needles))
    named = load_measurements(str(write(tmp_path, f"# op: {op.group(1) if op else 'all_gather'}\n" + table)))
    assert named.ops == (op.group(1) if op else "all_gather",)


@pytest.mark.parametrize(
    ("table", "program"),
    [
        (nccl_table(16, "none", 5, True, 15 / 16), "gather or scatter"),  # a root and a per-rank count
        (nccl_table(16, "none", -1, True, 1).replace("    none", "        "), "hypercube"),  # an empty redop cell
    ],
)
def test_a_table_of_a_program_dpcost_does_not_model_is_refused(tmp_path: Path, table: str, program: str) -> None:
    refused(write(tmp_path, table), f"reads as a log of {program} (", "dpcost reads all_reduce", "'# op: <op>'")


def test_a_sendrecv_table_reads_as_send_recv(tmp_path: Path) -> None:
    """sendrecv prints all_reduce's redop, root and count; nccl-tests does not check it in place (src/sendrecv.cu,
    N/A since a0a1491, 2022-09) and prints busbw = algbw, where all_reduce's is 2(n-1)/n x algbw. So either tells it
    at 16 ranks; at 2 ranks, where both factors are 1, the in-place N/A still does, and without validation (-c 0)
    nothing does."""
    checked = nccl_table(16, "sum", -1, False, 1, ("0", "N/A"))
    assert load_measurements(str(write(tmp_path, checked))).ops == ("send_recv",)
    unchecked = nccl_table(16, "sum", -1, False, 1, ("N/A", "N/A"))
    assert load_measurements(str(write(tmp_path, unchecked))).ops == ("send_recv",)
    assert load_measurements(str(write(tmp_path, nccl_table(2, "sum", -1, False, 1, ("0", "N/A"))))).ops == (
        "send_recv",
    )
    refused(write(tmp_path, nccl_table(2, "sum", -1, False, 1, ("N/A", "N/A"))), "cannot tell", "busbw = algbw")


def test_an_op_line_overrides_the_table(tmp_path: Path) -> None:
    """An alltoall-shaped table the user says is all_gather is read as all_gather."""
    table = nccl_table(16, "none", -1, True, 15 / 16, ("0", "N/A"))
    assert load_measurements(str(write(tmp_path, "# op: all_gather\n" + table))).ops == ("all_gather",)


@pytest.mark.parametrize(
    ("before", "name", "needles"),
    [
        # an all_gather table under an all_reduce name: redop `none` is no reduction
        ("", "all_reduce.log", [f"line {ALL_GATHER_ROW}:", "not a row of all_reduce", "redop none", "the file name"]),
        # the root column: -1 for every collective but broadcast and reduce
        ("", "broadcast.log", [f"line {ALL_GATHER_ROW}:", "root -1"]),
        ("# op: allreduce\n", "nccl.txt", ["line 1:", "'# op: allreduce'"]),
        # an all_gather table (its in-place result checked) under alltoall_perf's line: alltoall prints N/A there
        (
            "# Collective test starting: alltoall_perf\n",
            "all_gather.log",
            ["not a row of all_to_all", "does not check alltoall in place", "starting' line (line 1)"],
        ),
        ("# Collective test starting: alltoallv_perf\n", "all_gather.log", ["line 1:", "alltoallv_perf"]),
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


def test_a_log_of_several_datatypes_is_refused_naming_them(tmp_path: Path) -> None:
    """nccl-tests -d all prints a row per datatype for each size (src/common.cu): the second datatype's row is named,
    with the first's and the flag that keeps one."""
    lines = []
    for line in EXAMPLE.read_text().splitlines():
        lines.append(line)
        cells = line.split()
        if cells and cells[0].isdigit() and cells[2] == "float" and int(cells[0]) > 0:
            half = line.replace(cells[1], str(2 * int(cells[1])), 1).replace(" float", "  half", 1)
            lines.append(half)
    refused(
        write(tmp_path, "\n".join(lines) + "\n", "all_reduce.log"), "measured again in half (first in float", "-d float"
    )


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


def test_a_log_cut_without_its_rank_lines_states_them_in_a_ranks_line(tmp_path: Path) -> None:
    table = nccl_table(None, "sum", -1, False, 2 * 15 / 16)  # an all_reduce of 16 ranks, its '# Rank' lines cut
    refused(write(tmp_path, "# op: all_reduce\n" + table), "the number of ranks is unknown", "'# ranks: N'")
    m = load_measurements(str(write(tmp_path, "# op: all_reduce\n# ranks: 16, gpus per node: 8\n" + table)))
    assert (m.ranks, m.gpus_per_node) == (16, 8)
    # with the ranks known, the count column tells all_reduce from reduce_scatter without an '# op:' line
    assert load_measurements(str(write(tmp_path, "# ranks: 16\n" + table))).ops == ("all_reduce",)


@pytest.mark.parametrize(
    "label",
    [
        "[1,{rank}]<stdout>:",  # OpenMPI mpirun --tag-output (AWS's EFA recipes run it so)
        "{rank}: ",  # srun --label
        "node-{rank}: ",  # pdsh, clush
        "2026-12-0{rank}T10:00:0{rank}Z ",  # a timestamp per line
    ],
)
def test_a_launchers_label_before_each_line_is_taken_off(tmp_path: Path, label: str) -> None:
    """A log as the launcher printed it, each line labelled (other ranks' NCCL INFO lines among them), reads as the
    log nccl-tests printed; lines without the label are left as they are."""
    plain = ALL_REDUCE.read_text()
    lines = []
    for i, line in enumerate(plain.splitlines()):
        lines.append(label.format(rank=0) + line)
        if i % 7 == 0:
            lines.append(label.format(rank=3) + "node-1:4242:4242 [3] NCCL INFO Channel 00/32 : 0 1 2 3")
    labelled = write(tmp_path, "\n".join(lines) + "\nmpirun: a line of the launcher's own\n")
    read, expected = load_measurements(str(labelled)), load_measurements(str(ALL_REDUCE))
    assert (read.ranks, read.gpus_per_node, read.ops, read.rows) == (
        expected.ranks,
        expected.gpus_per_node,
        expected.ops,
        expected.rows,
    )


def test_rank_lines_from_before_nccl_tests_printed_their_group_are_read(tmp_path: Path) -> None:
    """nccl-tests v2.0.0 (2021: aws-samples/aws-efa-eks's p4d log) printed '#   Rank  0 Pid     25 on host device  0
    [0x10] A100-SXM4-40GB', without the 'Group N' later versions print: the ranks and hosts are read all the same."""
    table = nccl_table(16, "sum", -1, False, 2 * 15 / 16).replace(" Group  0", "")
    assert "Group" not in table
    m = load_measurements(str(write(tmp_path, "# op: all_reduce\n" + table)))
    assert (m.ranks, m.gpus_per_node) == (16, 8)


@pytest.mark.parametrize(
    ("line", "needle"),
    [("# ranks: 12\n", "contradicts its 16 '# Rank' lines"), ("# ranks: 16, gpus per node: 6\n", "multiple")],
)
def test_a_ranks_line_that_cannot_be_is_refused(tmp_path: Path, line: str, needle: str) -> None:
    refused(write(tmp_path, line + nccl_table(16, "sum", -1, False, 2 * 15 / 16)), needle)


def test_compare_will_not_guess_the_ranks_of_a_log_without_them(tmp_path: Path) -> None:
    path = write(tmp_path, "# op: all_reduce\n" + nccl_table(None, "sum", -1, False, 2 * 15 / 16))
    code, _, stderr = run("collective", "--compare", str(path))
    assert code == 2 and stderr.count("\n") == 1 and "--ranks" in stderr and "'# ranks: N'" in stderr
    code, stdout, _ = run("collective", "--compare", str(path), "--ranks", "16", "-f", "markdown")
    assert code == 0 and "16 GPUs (ranks)" in stdout


def test_a_rank_list_cut_short_is_told_by_busbw_and_a_ranks_line_mends_it(tmp_path: Path) -> None:
    """A log pasted with its '# Rank' lines cut to the first few ('...'): nccl-tests printed busbw = 2(n-1)/n x
    algbw for all_reduce at its true n (src/all_reduce.cu AllReduceGetBw), which 5 ranks cannot give. Refused,
    naming the ranks the ratio says; a '# ranks:' line then stands for the list."""
    full = nccl_table(128, "sum", -1, False, 2 * 127 / 128)
    lines = full.splitlines()
    ranks = [i for i, line in enumerate(lines) if line.startswith("#  Rank")]
    cut = "\n".join([*lines[: ranks[0] + 5], "#  ...", *lines[ranks[-1] + 1 :]]) + "\n"
    path = write(tmp_path, "# op: all_reduce\n" + cut, "cut.log")
    refused(path, "busbw / algbw is that of about", "not of the 5 its '# Rank' lines list", "'# ranks:")
    mended = write(tmp_path, "# op: all_reduce\n# ranks: 128, gpus per node: 8\n" + cut, "mended.log")
    m = load_measurements(str(mended))
    assert (m.ranks, m.gpus_per_node) == (128, 8)


def test_a_row_cut_by_nccls_own_log_lines_is_joined_again(tmp_path: Path) -> None:
    """Under NCCL_DEBUG=INFO another thread's log lines ('host:pid:tid [dev] NCCL INFO ...') can land inside a row
    nccl-tests is printing: the row's first cells, the log line glued to its last cell, more log lines, then the
    row's rest on a line of numbers. The row reads as if it had been printed whole; a row whose rest never comes is
    refused."""
    whole = "# op: all_reduce\n" + nccl_table(16, "sum", -1, False, 2 * 15 / 16)
    lines = whole.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("16777216"))
    cells = lines[at].split()
    log = "node-1:4242:4243 [0] NCCL INFO Channel 00/0 : 7[3] -> 0[0] [receive] via NET/IB/2/GDRDMA"
    cut = [" ".join(cells[:5]) + log, log, log.replace("node-1", "node-0"), "   ".join(cells[5:9]), log,
           "   ".join(cells[9:])]  # fmt: skip
    split = "\n".join([*lines[:at], log, *cut, *lines[at + 1 :]]) + "\n"
    assert (
        load_measurements(str(write(tmp_path, split, "split.log"))).rows
        == load_measurements(str(write(tmp_path, whole, "whole.log"))).rows
    )
    refused(write(tmp_path, "\n".join([*lines[:at], log, cut[0]]) + "\n", "cut.log"), "whose rest does not follow")


def test_a_job_that_ran_several_programs_gives_a_run_of_each(tmp_path: Path) -> None:
    """One job running all_reduce_perf, all_gather_perf, sendrecv_perf and scatter_perf in turn prints each
    program's header, rank lines and table after its '# Collective test starting' line: a run of each program dpcost
    reads, named by its collective; scatter, which dpcost does not read, is left out, and a log of it alone refused."""

    def program(name: str, table: str) -> str:
        return f"# Collective test starting: {name}\n{table}# Collective test concluded: {name}\n"

    reduce = nccl_table(16, "sum", -1, False, 2 * 15 / 16)
    gather = nccl_table(16, "none", -1, True, 15 / 16)
    sendrecv = nccl_table(16, "sum", -1, False, 1.0, ("0", "N/A"))
    scatter = nccl_table(16, "none", 0, True, 15 / 16)
    text = "# dpcost-topology: dgx-h100\n" + program("all_reduce_perf", reduce) + program("all_gather_perf", gather)
    path = write(tmp_path, text + program("sendrecv_perf", sendrecv) + program("scatter_perf", scatter), "job.log")
    runs = load_runs(str(path), str(path))
    assert [(r.name, r.ops, r.ranks, r.topology) for r in runs] == [
        ("job.log [all_reduce]", ("all_reduce",), 16, "dgx-h100"),
        ("job.log [all_gather]", ("all_gather",), 16, "dgx-h100"),
        ("job.log [send_recv]", ("send_recv",), 16, "dgx-h100"),
    ]
    alone = write(tmp_path, program("scatter_perf", scatter) + program("scatter_perf", scatter), "sc.log")
    refused(alone, "a log of scatter_perf")


def test_a_per_rank_count_gives_the_ranks_and_a_header_may_lose_its_hash(tmp_path: Path) -> None:
    """all_gather prints size = ranks x count x 4 B for floats (src/all_gather.cu): without '# Rank' lines the count
    column gives the ranks. A page that rendered the log may drop the header's '#' (dstack's docs): still the
    table. all_reduce's whole-buffer count gives no ranks: refused, asking for them."""
    gather = nccl_table(16, "none", -1, True, 15 / 16).replace("#       size", "        size")
    gather = "\n".join(line for line in gather.splitlines() if not line.startswith("#  Rank")) + "\n"
    m = load_measurements(str(write(tmp_path, "# op: all_gather\n" + gather, "gather.log")))
    assert (m.ranks, m.ops) == (16, ("all_gather",))
    reduce = nccl_table(None, "sum", -1, False, 2 * 15 / 16)
    path = write(tmp_path, "# op: all_reduce\n# dpcost-topology: dgx-h100\n" + reduce, "reduce.log")
    code = CliRunner().invoke(app, ["calibrate", str(path)])
    assert code.exit_code == 2 and "# ranks: N" in code.output


def test_a_bandwidth_beyond_a_floats_range_is_no_traceback(tmp_path: Path) -> None:
    """A busbw printed as 1e999 (a hand-edited or corrupted log) bounds nothing when the log's program is worked out
    from busbw / algbw: the log reads as the all_gather it is, and `collective --compare` runs, where 10**999 as
    a printed digit's half-unit overflowed a float."""
    log = (REFERENCE / "nccl-tests" / "b200-2n-all_gather-gcpa4-dranet.log").read_text()
    line = "524288          8192     float    none      -1    549.9    0.95    0.89"
    assert log.count(line) == 1
    path = tmp_path / "edited.log"
    path.write_text(log.replace(line, line[: -len("0.89")] + "1e999"))
    assert {row.op for row in load_measurements(str(path)).rows} == {"all_gather"}
    result = CliRunner().invoke(app, ["collective", "--compare", str(path)])
    assert result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
