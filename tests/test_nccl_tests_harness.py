"""What nccl-tests adds to a call when one thread drives several GPUs (`-g`): its host launches, one per GPU, set a
floor under every call (docs/sources/nccl-tuning.md, section h); and how its back-to-back calls overlap along a chain
(section i)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import REFERENCE
from typer.testing import CliRunner

from dpcost.accuracy import LAUNCH_PER_GPU, predict
from dpcost.calibration import calibrate
from dpcost.catalog import load_measurements, load_topology
from dpcost.cli import app
from dpcost.engine.collectives import fastest
from dpcost.nccl_tests import parse_measurements

SERIES = REFERENCE / "nccl" / "nccl-tests-123-gpus-per-thread.csv"
TOGETHER = REFERENCE / "nccl-tests-holdout" / "h100-1n-all_reduce-together.log"  # -g 8, graph: 0
OCI = REFERENCE / "nccl-tests" / "h200-2n-all_reduce-ocih200.log"  # -g 1: one process per GPU


def _series() -> list[tuple[int, float]]:
    rows = [ln for ln in SERIES.read_text().splitlines() if not ln.startswith("#")]
    return [(int(r["gpus_per_thread"]), float(r["time_us"])) for r in csv.DictReader(rows)]


def test_the_launch_cost_is_the_slope_of_its_source_series() -> None:
    """nccl-tests#123 varies -g alone (2..8 GPUs, one DGX A100): the least-squares slope of its times is the host
    time one thread spends per GPU, 3.96 us."""
    points = _series()
    mx = sum(g for g, _ in points) / len(points)
    my = sum(t for _, t in points) / len(points)
    slope = sum((g - mx) * (t - my) for g, t in points) / sum((g - mx) ** 2 for g, _ in points)
    assert slope == pytest.approx(3.96, abs=0.005)
    assert slope * 1e-6 == pytest.approx(LAUNCH_PER_GPU, abs=0.01e-6)


def test_the_log_says_how_many_gpus_one_thread_drives() -> None:
    assert load_measurements(str(TOGETHER)).gpus_per_thread == 8
    assert load_measurements(str(OCI)).gpus_per_thread == 1
    csv_run = load_measurements(str(REFERENCE / "nccl-tests" / "h100-ndr-x2-ring-all_reduce.csv"))
    assert (csv_run.gpus_per_thread, csv_run.cuda_graphs) == (1, False)


def _with(header: str) -> str:
    """Together's log with its `# nThread` line replaced."""
    lines = TOGETHER.read_text().splitlines()
    return "\n".join(header if ln.startswith("# nThread") else ln for ln in lines)


def test_a_small_call_of_a_g8_run_takes_eight_launches() -> None:
    """8 B on one node: NCCL's Ring/LL takes about 20 us, eight launches 31.7 us, and nccl-tests prints the
    longer; at 1 GiB the call is far longer than the launches and is printed as it is."""
    m = load_measurements(str(TOGETHER))
    topo = load_topology("dgx-h100")
    points = {(p.size_bytes, p.column): p.predicted_us for p in predict(m, topo)}
    call_8b = fastest(topo, "all_reduce", 8, 8).seconds
    assert call_8b * 1e6 < 8 * 3.96
    assert points[(8, "out-of-place")] == pytest.approx(8 * 3.96, rel=1e-3)
    call_1g = fastest(topo, "all_reduce", 8, 2**30).seconds
    assert points[(2**30, "out-of-place")] == pytest.approx(call_1g * 1e6, rel=1e-9)


def test_one_gpu_per_thread_and_cuda_graphs_pay_no_launch_floor() -> None:
    topo = load_topology("dgx-h100")
    call_8b = fastest(topo, "all_reduce", 8, 8).seconds * 1e6
    for header in (
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 graph: 0",
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 graph: 10",
    ):
        m = parse_measurements(_with(header), "together.log")
        first = next(p for p in predict(m, topo) if p.size_bytes == 8)
        assert first.predicted_us == pytest.approx(call_8b, rel=1e-9), header


def test_a_g8_run_does_not_read_as_a_slow_call_overhead() -> None:
    """Calibrated on Together's -g 8 log, the launch cost per GPU is fitted (it was 3.96 us, the floor reads
    about 35 us / 8) and kept out of the topology; before the harness was priced the fit put a 31.9 us overhead on
    every call."""
    fit = calibrate(load_topology("dgx-h100"), [load_measurements(str(TOGETHER))])
    assert fit.fitted["launch_per_gpu"] == pytest.approx(35e-6 / 8, rel=0.1)
    assert fit.topology.call_overhead < 25e-6
    assert "launch_per_gpu" not in fit.topology.model_dump_json()


def test_calibrate_says_the_launch_cost_stays_out_of_the_topology(tmp_path: Path) -> None:
    saved = tmp_path / "cluster.yaml"
    result = CliRunner().invoke(
        app, ["calibrate", str(TOGETHER), "--base", "dgx-h100", "--save-topology", str(saved)], env={"COLUMNS": "250"}
    )
    assert result.exit_code == 0, result.stderr
    assert "launch_per_gpu is nccl-tests' own" in result.stdout
    assert "launch_per_gpu" not in saved.read_text().split("calibration:")[0]


def test_calibrating_one_process_per_gpu_runs_leaves_the_launch_cost_out() -> None:
    fit = calibrate(load_topology("hgx-h200"), [load_measurements(str(OCI))])
    assert "launch_per_gpu" not in fit.fitted and "launch_per_gpu" not in fit.undetermined


def test_compare_prints_the_times_nccl_tests_would() -> None:
    result = CliRunner().invoke(
        app, ["collective", "--compare", str(TOGETHER), "-f", "json"], env={"COLUMNS": "200", "NO_COLOR": "1"}
    )
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    first = next(r for r in rows if r["size_bytes"] == 8)
    assert first["time_us"] == pytest.approx(8 * 3.96, rel=1e-3)
    assert min(first["alternatives_us"].values()) == pytest.approx(8 * 3.96, rel=1e-3)
    assert (
        "drives 8 GPUs from one thread"
        in CliRunner().invoke(app, ["collective", "--compare", str(TOGETHER), "-f", "markdown"]).stdout
    )


def test_an_impossible_gpu_count_per_thread_is_refused_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "all_reduce.log"
    path.write_text(_with("# nThread 1 nGpus 0 minBytes 8 maxBytes 8589934592 step: 2(factor) graph: 0"))
    result = CliRunner().invoke(app, ["calibrate", str(path), "--base", "dgx-h100"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and str(path) in result.stderr and "nGpus 0" in result.stderr


@pytest.mark.parametrize(
    ("name", "topology"),
    [
        ("nccl-tests/gb200-32n-all_reduce-nonvls-ocioke.csv", "gb200-nvl72"),  # NCCL_NVLS_ENABLE=0
        ("nccl-tests/h100-128n-all_reduce-ring-nccltests322.csv", "dgx-h100"),  # Ring, LL128, NVLS off
        ("nccl-tests-holdout/h100-1n-all_gather-together.log", "dgx-h100"),  # -g 8
    ],
)
def test_compare_runs_the_call_as_the_scored_comparison_does(name: str, topology: str) -> None:
    """`dpcost collective --compare` prices each row under the run's own environment (NVLS off, a forced protocol
    and algorithm, its threads' launches), as the accuracy tables do: the same time for every row."""
    path = REFERENCE / name
    result = CliRunner().invoke(app, ["collective", "--compare", str(path), "-t", topology, "-f", "json"])
    assert result.exit_code == 0, result.stderr
    shown = {(r["op"], r["size_bytes"]): r["time_us"] for r in json.loads(result.stdout)}
    scored = {
        (p.op, p.size_bytes): p.predicted_us for p in predict(load_measurements(str(path)), load_topology(topology))
    }
    assert shown.keys() == scored.keys()
    for key, us in scored.items():
        assert shown[key] == pytest.approx(us, rel=1e-9), key


BROADCAST = REFERENCE / "nccl-tests-holdout" / "h100-4n-broadcast-voltagepark.log"  # 4 x 8 H100, iters: 20


def test_back_to_back_broadcasts_overlap_along_the_chain() -> None:
    """A 32-rank chain's one call takes its whole latency (NCCL's nsteps hops: tens of us), but nccl-tests' 20 calls
    issued back to back overlap along it, each further call costing NCCL's base latency and one hop (tuning.cc's
    Ring Broadcast on the same channels): the run prints 9-14 us at 8 B-1 KiB. Past the LL FIFO between two ranks
    (256 KiB) calls no longer overlap, and the run's 512 KiB-1 MiB take the whole latency again."""
    m = load_measurements(str(BROADCAST))
    topology = load_topology("dgx-h100")
    assert m.iters == 20 and m.ranks == 32
    points = {(p.size_bytes, p.column): p for p in predict(m, topology)}
    for (size, _), p in points.items():
        one_call = fastest(topology, "broadcast", 32, size).seconds * 1e6
        if size <= 1024:
            assert 9.0 <= p.measured_us <= 14.0 and one_call > 3 * p.measured_us
            assert p.predicted_us == pytest.approx(p.measured_us, rel=0.4)
        if size >= 512 * 1024:
            assert p.predicted_us == pytest.approx(one_call)


def test_a_logs_iters_are_read_and_the_default_is_twenty() -> None:
    header = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: {} agg iters: 1\n"
    body = "#       size  count  type redop root  time algbw busbw #wrong time algbw busbw #wrong\n"
    row = "           8      2 float  none    0  9.0  0.00  0.00  0  9.0  0.00  0.00  0\n"
    ranks = "# ranks: 16, gpus per node: 8\n"
    assert parse_measurements(ranks + header.format(50) + body + row, "x").iters == 50
    assert parse_measurements(ranks + body + row, "x").iters == 20
