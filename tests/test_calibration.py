"""`dpcost calibrate`: a synthetic run made from known parameters is fitted back to them; bad input exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import REFERENCE
from typer.testing import CliRunner

from dpcost.calibration import Fit, band_weights, calibrate, with_values
from dpcost.catalog import load_runs, load_topology
from dpcost.cli import app
from dpcost.engine.collectives import fastest
from dpcost.nccl_tests import parse_runs
from dpcost.specs import TopologySpec

TRUTH = {
    "network_efficiency": 0.90,
    "nvlink_efficiency": 0.75,
    "nvls_efficiency": 0.62,
    "call_overhead": 9e-6,
    "latency_scale": 1.6,
    "scaling_loss": 0.03,
    "crossing_loss": 0.08,
}


def synthetic_csv(topology: TopologySpec, ranks: tuple[int, ...], forced: str | None = None) -> str:
    """What dpcost predicts for all-reduce, reduce-scatter and all-gather, 64 KiB to 8 GiB, as a calibrate CSV."""
    lines = ["# made by tests/test_calibration.py from known parameters", "op,ranks,gpus_per_node,size_bytes,time_us"]
    for n in ranks:
        for op in ("all_reduce", "reduce_scatter", "all_gather"):
            for k in range(16, 34):
                t = fastest(topology, op, n, 2.0**k, forced if op == "all_reduce" else None).seconds
                lines.append(f"{op},{n},{min(n, 8)},{2**k},{t * 1e6:.4f}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def five_counts_fit() -> Fit:
    """dgx-h100 fitted to what it predicts with TRUTH's values on 1, 2, 8, 32 and 128 nodes (past the leaf)."""
    base = load_topology("dgx-h100")
    runs = parse_runs(synthetic_csv(with_values(base, TRUTH), (8, 16, 64, 256, 1024)), "synthetic.csv")
    assert len(runs) == 5
    return calibrate(base, runs)


def test_nvls_loss_per_doubling_is_fitted_back_from_two_domain_sizes() -> None:
    """In a rack-scale NVLink domain, NVLS runs over 8 ranks and over 64 tell NVLS's efficiency (quoted at 8 ranks)
    from its loss per doubling beyond; on an 8-GPU board the loss is no part of the topology."""
    base = load_topology("gb200-nvl72")
    truth = {"nvls_efficiency": 0.62, "nvls_loss_per_doubling": 0.08}
    fit = calibrate(base, parse_runs(synthetic_csv(with_values(base, truth), (8, 64)), "synthetic.csv"))
    for name, value in truth.items():
        assert fit.fitted[name] == pytest.approx(value, rel=0.03), name
    one_size = calibrate(base, parse_runs(synthetic_csv(with_values(base, truth), (64,)), "synthetic.csv"))
    assert "nvls_loss_per_doubling" not in one_size.fitted
    board = calibrate(load_topology("dgx-h100"), parse_runs(synthetic_csv(load_topology("dgx-h100"), (8,)), "x.csv"))
    assert "nvls_loss_per_doubling" not in board.fitted and "nvls_loss_per_doubling" not in board.undetermined


def test_a_synthetic_run_is_fitted_back_to_its_parameters(five_counts_fit: Fit) -> None:
    fit = five_counts_fit
    assert fit.undetermined == {}
    for name, value in TRUTH.items():
        assert fit.fitted[name] == pytest.approx(value, rel=0.02), name
    for run in fit.runs:
        assert all(b.geomean < 0.01 for b in run.after), run.name


def test_one_node_count_cannot_determine_the_loss_with_scale() -> None:
    base = load_topology("dgx-h100")
    truth = with_values(base, TRUTH)
    fit = calibrate(base, parse_runs(synthetic_csv(truth, (16,)), "two-nodes.csv"))
    assert "scaling_loss" in fit.undetermined and "scaling_loss" not in fit.fitted
    assert fit.topology.scaling_loss == base.scaling_loss
    assert fit.fitted["network_efficiency"] == pytest.approx(0.90, rel=0.02)


def test_a_public_log_calibrated_then_predicted_within_5_percent() -> None:
    """Calibrate on a log, then predict that same log: <= 5% at >= 64 MiB."""
    base = load_topology("dgx-h100")
    for name in ("h100-2n-all_reduce-nccltests309.log", "h100-4n-all_reduce-nccltests309.log"):
        runs = load_runs(str(REFERENCE / "nccl-tests" / name), name)
        fit = calibrate(base, runs)
        after = {b.band: b.geomean for b in fit.runs[0].after}
        assert after[">=64 MiB"] <= 0.05, (name, after)


# ------------------------------------------------------------------------------------------------ the command


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_calibrate_writes_a_topology_that_loads_and_records_the_fit(tmp_path: Path) -> None:
    log = REFERENCE / "nccl-tests" / "h100-2n-all_reduce-nccltests309.log"
    out = tmp_path / "my-cluster.yaml"
    code, stdout, stderr = run("calibrate", str(log), "--base", "dgx-h100", "--save-topology", str(out))
    assert code == 0, stderr
    assert "Fitted parameters" in stdout and "network_efficiency" in stdout and "scaling_loss" in stdout
    assert "needs runs at two node counts" in stdout
    spec = load_topology(str(out))
    assert spec.name == "my-cluster" and spec.calibration is not None
    assert spec.calibration.base == "dgx-h100" and spec.calibration.files == [str(log)]
    assert spec.calibration.error[">=64 MiB"] < 0.05
    doc = yaml.safe_load(out.read_text())
    assert doc["tiers"][1]["bandwidth"].endswith("GB/s")  # unit strings, as the catalog writes them
    code, stdout, _ = run("estimate", "--model", "llama-8b", "--dp", "64", "--topology", str(out))
    assert code == 0 and "my-cluster" in stdout


def test_calibrate_guesses_the_base_from_the_gpu_and_takes_several_files() -> None:
    a = REFERENCE / "nccl-tests" / "h100-2n-all_reduce-nccltests309-gjaion.log"
    b = REFERENCE / "nccl-tests" / "h100-4n-all_reduce-nccltests309.log"
    code, stdout, stderr = run("calibrate", str(a), str(b), "--format", "json")
    assert code == 0, stderr
    assert '"scaling_loss"' in stdout and '"determined": true' in stdout


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("", ["not an nccl-tests log"]),
        ("# only a comment\n", ["not an nccl-tests log"]),
        ("op,ranks,gpus_per_node,size_bytes,time_us\nall_reduce,16,8,1048576\n", ["line 2", "cells"]),
        ("op,ranks,size_bytes\nall_reduce,16,1024\n", ["lacks time_us"]),
        ("op,ranks,gpus_per_node,size_bytes,time_us\nall_reduce,16,8,1048576,150\n", ["1 measured rows", "at least"]),
        (
            "op,ranks,gpus_per_node,size_bytes,time_us\nall_reduce,16,8,1048576,150\nall_gather,16,8,,12\n",
            ["line 3", "size_bytes: expected a number"],
        ),
        ("op,ranks,gpus_per_node,size_bytes,time_us,algorithm\nall_reduce,16,8,8,30,fastest\n", ["algorithm"]),
    ],
)
def test_bad_input_to_calibrate_exits_2_with_one_line(tmp_path: Path, text: str, needles: list[str]) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(text)
    code, stdout, stderr = run("calibrate", str(path), "--base", "dgx-h100")
    assert code == 2, (code, stdout, stderr)
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr.count(str(path)) == 1, stderr
    for needle in needles:
        assert needle in stderr, (needle, stderr)


def test_a_truncated_log_exits_2(tmp_path: Path) -> None:
    log = (REFERENCE / "nccl-tests" / "h100-2n-all_reduce-nccltests309.log").read_text()
    path = tmp_path / "all_reduce-cut.log"
    path.write_text(log[: log.index("# Using devices") + 400])  # the header and a few rank lines, no data
    code, _, stderr = run("calibrate", str(path), "--base", "dgx-h100")
    assert code == 2 and "no nccl-tests data rows" in stderr


def test_calibrate_needs_a_base_it_can_tell(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    rows = "".join(f"all_reduce,16,{2**k},{10 + k}\n" for k in range(20, 26))
    path.write_text("op,ranks,size_bytes,time_us\n" + rows)
    code, _, stderr = run("calibrate", str(path))
    assert code == 2 and "--base" in stderr


def test_an_unwritable_save_topology_is_refused_before_the_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 3-4 s fit must not run only to end in "cannot write the file"."""

    def no_fit(*args: object, **kwargs: object) -> None:
        raise AssertionError("the fit ran before --save-topology was checked")

    monkeypatch.setattr("dpcost.calibration.calibrate", no_fit)
    log = Path(__file__).parent.parent / "examples" / "nccl-tests-h100-2n-all_reduce.log"
    code, stdout, stderr = run("calibrate", str(log), "--save-topology", "/nonexistent/dir/x.yaml")
    assert code == 2 and stdout == "", (code, stdout, stderr)
    assert stderr.startswith("dpcost: error: --save-topology: /nonexistent/dir/x.yaml: ") and stderr.count("\n") == 1


def test_the_loss_with_scale_needs_two_node_counts_beyond_two_nodes() -> None:
    """Issue 17: fitted on 2 and 4 nodes, a per-doubling loss would absorb the end of the trees' two-node regime."""
    base = load_topology("dgx-h100")
    truth = with_values(base, TRUTH)
    fit = calibrate(base, parse_runs(synthetic_csv(truth, (16, 32)), "two-and-four-nodes.csv"))
    assert fit.undetermined["scaling_loss"] == "needs runs at two node counts beyond two nodes"
    assert fit.held_out is None  # two node counts: nothing to hold out


def test_three_node_counts_hold_the_largest_out_and_the_fit_never_predicts_it_worse() -> None:
    """gj-aion's H100 cluster (nccl-tests #309) at 2, 4 and 8 nodes: the 8-node run predicted from the others is no
    worse fitted than with the catalog topology; the terms kept are then fitted to all three."""
    base = load_topology("dgx-h100")
    names = ("h100-2n-all_reduce-nccltests309-gjaion.log", "h100-4n-all_reduce-nccltests309.log",
             "h100-8n-all_reduce-nccltests309.log")  # fmt: skip
    runs = [run for name in names for run in load_runs(str(REFERENCE / "nccl-tests" / name), name)]
    fit = calibrate(base, runs)
    assert fit.held_out is not None and fit.held_out.nodes == 8
    assert fit.held_out.fitted_error <= fit.held_out.base_error
    synthetic = calibrate(base, parse_runs(synthetic_csv(with_values(base, TRUTH), (8, 16, 64, 256)), "s.csv"))
    # 1, 2 and 8 nodes leave the loss with scale undetermined (one count beyond two): 32 nodes within 3%, not 38%
    assert synthetic.held_out is not None and synthetic.held_out.fitted_error < 0.03 < synthetic.held_out.base_error


def aws_p5_priced_at_the_reported_latency() -> TopologySpec:
    """aws-p5 as the catalog declared it until 2026-12-05, each network step priced at the 75 us the EFA plugin
    reports to NCCL: a base that two of these runs judge better than any fit (the rule is what is tested)."""
    p5 = load_topology("aws-p5")
    efa = p5.tiers[1].model_copy(update={"hop_latency": 75e-6, "reported_latency": None})
    return p5.model_copy(update={"tiers": [p5.tiers[0], efa]})


def test_a_fit_that_predicts_the_held_out_count_worse_than_the_base_is_not_kept() -> None:
    """Issue 17, calibration that never hurts: AWS p5 all-reduces at 4, 8 and 32 nodes (crazyguitar, held out).
    Fitted on 4 and 8 nodes, every choice of terms predicts a size band of 32 nodes worse than the base (all of
    them: 8.5% against 40.1% at 1-64 MiB, 15.3% against 8.7% at >= 64 MiB), so nothing is fitted and the
    topology is the base's."""
    base = aws_p5_priced_at_the_reported_latency()
    names = [f"h100-{n}n-all_reduce-crazyguitar.csv" for n in (4, 8, 32)]
    runs = [run for name in names for run in load_runs(str(REFERENCE / "nccl-tests-holdout" / name), name)]
    fit = calibrate(base, runs)
    assert fit.held_out is not None and fit.held_out.nodes == 32 and fit.held_out.kept_base
    assert fit.held_out.fitted_error == fit.held_out.base_error == pytest.approx(0.160, abs=0.001)
    assert fit.fitted == {}
    assert fit.topology == with_values(base, {})
    assert all(why == "the held-out node count predicts no better with it fitted" or "no measured point" in why
               for why in fit.undetermined.values())  # fmt: skip


def test_the_held_out_count_is_judged_band_by_band() -> None:
    """Issue 17, calibration that never hurts: AWS p5 all-reduces at 2-16 nodes (crazyguitar, held out). Fitted on
    2-8 nodes, NCCL's hop latencies scaled to their floor predict 16 nodes better over all points (12.1% against
    13.8%) but its >= 64 MiB calls worse (10.2% against 5.6%): the latency scale is not kept, and no band of the
    held-out count reads worse than with the base."""
    base = aws_p5_priced_at_the_reported_latency()
    names = [f"h100-{n}n-all_reduce-crazyguitar.csv" for n in (2, 4, 8, 16)]
    runs = [run for name in names for run in load_runs(str(REFERENCE / "nccl-tests-holdout" / name), name)]
    fit = calibrate(base, runs)
    assert fit.held_out is not None and fit.held_out.nodes == 16 and not fit.held_out.kept_base
    assert [band for band, _, _ in fit.held_out.bands] == ["1-64 MiB", ">=64 MiB"]
    assert all(after <= before for _, before, after in fit.held_out.bands)
    assert fit.undetermined["latency_scale"] == "the held-out node count predicts no better with it fitted"
    assert "latency_scale" not in fit.fitted


def test_a_count_that_alone_crosses_the_spine_is_not_the_one_held_out(five_counts_fit: Fit) -> None:
    """Issue 17: past a 256-GPU leaf another cluster loses 8%, which fits on smaller counts cannot see. The
    held-out count is the largest that reaches no tier the smaller ones miss (32 nodes, inside the leaf); the
    128-node run, the only one past it, then fixes the spine's crossing loss in the fit on every run."""
    fit = five_counts_fit
    assert fit.held_out is not None and fit.held_out.nodes == 32
    assert fit.fitted["crossing_loss"] == pytest.approx(0.08, abs=0.005)
    assert fit.topology.tiers[2].crossing_loss == fit.fitted["crossing_loss"]


def test_every_run_s_every_size_band_weighs_alike_in_the_fit() -> None:
    """Issue 17: the fit scores points as the accuracy report does, each run's each band alike: 10 sub-MiB rows, 4 of
    1-64 MiB and 2 above weigh 1/10, 1/4 and 1/2 each (a mean of one over the run), so the band of many rows cannot
    outvote the others."""
    sizes = [2**k for k in range(10, 20)] + [2**k for k in (20, 22, 24, 25)] + [2**26, 2**30]
    rows = "".join(f"all_reduce,16,{s},{10 + i}\n" for i, s in enumerate(sizes))
    run = parse_runs("op,ranks,size_bytes,time_us\n" + rows, "bands.csv")
    weights = band_weights(run)
    scale = len(sizes) / 3
    assert weights == pytest.approx([scale / 10] * 10 + [scale / 4] * 4 + [scale / 2] * 2)
    assert sum(weights) == pytest.approx(len(sizes))


def test_a_run_fitted_on_itself_reads_its_1_64_mib_band_no_worse() -> None:
    """gj-aion's tuned 8-node H100 log (nccl-tests #309), fitted on itself: with every point alike its 16 rows of
    >= 64 MiB outweighed its 12 of 1-64 MiB, the fit scaled NCCL's hop latencies by 1.28 and the 1-64 MiB band went
    from 26.8% to 39.3%; each band alike (a scale of 0.76) it reads better than the catalog topology in both."""
    name = "h100-8n-all_reduce-tuned-nccltests309.log"
    runs = load_runs(str(REFERENCE / "nccl-tests" / name), name)
    fit = calibrate(load_topology("dgx-h100"), runs)
    (run,) = fit.runs
    before = {b.band: b.geomean for b in run.before}
    after = {b.band: b.geomean for b in run.after}
    for band in ("1-64 MiB", ">=64 MiB"):
        assert after[band] < before[band], band


def test_calibrate_keeps_the_channels_nccls_log_prints(tmp_path: Path) -> None:
    """A log run with NCCL_DEBUG=INFO prints the communicator's channels ("12 coll channels, ..., 16 nvls channels",
    init.cc's summary line); the calibrated topology keeps them (here across nodes, 2 x 8 H100), where the rules
    would give 16, and writes them; the base's rules stand where no run printed any."""
    log = (REFERENCE / "nccl-tests" / "h100-2n-all_reduce-nccltests309.log").read_text()
    info = "node1:1:2 [0] NCCL INFO 12 coll channels, 0 collnet channels, 16 nvls channels, 16 p2p channels, 2 p2p"
    printed = tmp_path / "with-info.log"
    printed.write_text(info + " channels per peer\n" + info.replace("12 coll", "14 coll") + "\n" + log)
    (m,) = parse_runs(printed.read_text(), "with-info.log")
    assert (m.coll_channels, m.nvls_channels) == (12, 16)  # the fewest printed
    out = tmp_path / "mine.yaml"
    code, _, stderr = run("calibrate", str(printed), "--base", "dgx-h100", "--save-topology", str(out))
    assert code == 0, stderr
    spec = load_topology(str(out))
    assert spec.channels is not None and (spec.channels.across_nodes, spec.channels.nvls) == (12, 16)
    assert spec.channels.one_node is None
    (plain,) = parse_runs(log, "plain.log")
    assert plain.coll_channels is None and calibrate(load_topology("dgx-h100"), [plain]).topology.channels is None
