"""nccl-tests' alltoall_perf read and predicted: the program's rows (redop none, root -1, a per-rank count, its
in-place result unchecked) read as dpcost's all_to_all, and each size priced as NCCL's grouped send/recv
(engine/p2p.py), the same way in the scored comparison, `collective --compare` and `collective --op all_to_all`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REFERENCE
from test_nccl_logs import nccl_table, write
from typer.testing import CliRunner

from dpcost.accuracy import predict
from dpcost.calibration import calibrate
from dpcost.catalog import load_measurements, load_topology
from dpcost.cli import app
from dpcost.engine.p2p import all_to_all
from dpcost.engine.placement import place
from dpcost.nccl_tests import parse_measurements

GIB = 2**30
ALLTOALL_16 = nccl_table(16, "none", -1, True, 15 / 16, ("0", "N/A"))  # 2 nodes x 8 GPUs, validated


def test_an_alltoall_log_reads_as_all_to_all(tmp_path: Path) -> None:
    m = load_measurements(str(write(tmp_path, "# Collective test starting: alltoall_perf\n" + ALLTOALL_16)))
    assert m.ops == ("all_to_all",) and m.ranks == 16 and m.gpus_per_node == 8
    assert sorted({r.column for r in m.rows}) == ["in-place", "out-of-place"]


@pytest.mark.parametrize("named", ["# op: all_to_all\n", "# op: alltoall\n", "mpirun ./alltoall_perf -b 1M\n"])
def test_each_way_of_naming_the_program_reads_it(tmp_path: Path, named: str) -> None:
    assert load_measurements(str(write(tmp_path, named + ALLTOALL_16))).ops == ("all_to_all",)


def test_a_csv_names_it_either_way(tmp_path: Path) -> None:
    rows = "op,ranks,gpus_per_node,size_bytes,time_us\nalltoall,16,8,1048576,60\nall_to_all,16,8,2097152,90\n"
    assert load_measurements(str(write(tmp_path, rows, "a.csv"))).ops == ("all_to_all",)


def test_each_size_is_priced_as_the_grouped_send_recv() -> None:
    """Two H100 nodes: 8/16 of each rank's bytes leave through its 400G NIC, which sets the time (p2p.py)."""
    h100 = load_topology("dgx-h100")
    text = "# Collective test starting: alltoall_perf\n" + ALLTOALL_16
    points = predict(parse_measurements(text, "a.log"), h100)
    at_256m = next(p for p in points if p.size_bytes == 1 << 28)
    expected = all_to_all(h100, place(h100, 16), 1 << 28)
    assert at_256m.predicted_us == pytest.approx(expected.seconds * 1e6, rel=1e-12)
    assert at_256m.algorithm == "p2p/simple"
    nic = 50e9 * 0.98
    assert expected.bandwidth_seconds == pytest.approx(8 / 16 * (1 << 28) / nic, rel=1e-9)


def test_collective_prices_an_all_to_all_in_nccl_tests_vocabulary() -> None:
    """One H100 node: each GPU sends 7/8 of its GiB over NVLink at 450 GB/s x 0.82; busbw = algbw x 7/8."""
    result = CliRunner().invoke(
        app, ["collective", "--op", "all_to_all", "-n", "8", "--sizes", "1G", "-f", "json"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)
    h100 = load_topology("dgx-h100")
    latency = all_to_all(h100, place(h100, 8), GIB).latency_seconds
    assert row["time_us"] == pytest.approx((7 / 8 * GIB / (450e9 * 0.82) + latency) * 1e6, rel=1e-9)
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 7 / 8, rel=1e-9)


def test_an_algorithm_cannot_be_forced_on_an_all_to_all() -> None:
    result = CliRunner().invoke(app, ["collective", "--op", "all_to_all", "--algorithm", "ring"])
    assert result.exit_code == 2 and "--algorithm" in result.stderr and "send/recv" in result.stderr


ALLTOALL_10N = REFERENCE / "nccl-tests-holdout" / "h100-10n-alltoall-xxrjun.log"


def test_calibrate_predicts_all_to_alls_but_fits_the_collectives() -> None:
    """An all-to-all's per-peer costs are not in dpcost's model: fitted, they would raise the hop latencies every
    collective pays (x20 on this run alone). The fit with the all-to-all run is the fit without it, and the run is
    still reported before and after."""
    h100 = load_topology("dgx-h100")
    all_reduce = load_measurements(
        str(Path(__file__).parent / "reference" / "nccl-tests" / "h100-4n-all_reduce-nccltests309.log")
    )
    alltoall = load_measurements(str(ALLTOALL_10N))
    both, alone = calibrate(h100, [alltoall, all_reduce]), calibrate(h100, [all_reduce])
    assert both.fitted == alone.fitted and both.points == alone.points
    assert [r.name for r in both.runs] == [alltoall.name, all_reduce.name]


def test_calibrate_refuses_all_to_alls_alone() -> None:
    result = CliRunner().invoke(app, ["calibrate", str(ALLTOALL_10N)])
    assert (
        result.exit_code == 2
        and result.stderr.count("\n") == 1
        and "all-to-all and send/recv rows only" in result.stderr
    )
