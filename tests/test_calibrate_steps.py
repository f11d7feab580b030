"""`dpcost calibrate --steps`: measured training steps fit the compute efficiency and the losses at scale.

Synthetic steps made by dpcost itself from known values are fitted back to them; a published series, fitted on
its smaller GPU counts, predicts its largest no worse than the defaults do; bad input exits 2 with one line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import load_benchmark
from typer.testing import CliRunner

from dpcost.calibration_steps import Measured, calibrate_steps, read_steps
from dpcost.catalog import load_model, load_topology
from dpcost.cli import app
from dpcost.engine.estimate import estimate
from dpcost.errors import InputError
from dpcost.options import DEFAULT_MFU, Compute, Options

# Synthetic steps are made with DDP, where the step time is smooth in the loss terms (under FSDP a wait costs
# only beyond its prefetch slack, which makes it jagged): a known value must come back.
PLAN: dict[str, Any] = {"framework": "ddp", "micro_batch": 1, "seq_len": 4096, "recompute": "full"}
FLAGS = ["--framework", "ddp", "--micro-batch", "1", "--seq-len", "4096", "--recompute", "full"]
REPO = Path(__file__).resolve().parents[1]
JITTER = Compute().sync_jitter  # the default, whatever its meaning: the truth is set relative to it


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def synthetic(gpus: tuple[int, ...], **truth: Any) -> list[tuple[int, float]]:
    """(GPUs, step seconds) as dpcost predicts them for llama-8b under FSDP with these compute values."""
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    out = []
    for g in gpus:
        report = estimate(model, topology, Options.model_validate({"dp": g, **PLAN, **truth}))
        assert report.time is not None
        out.append((g, report.time.step_seconds))
    return out


def steps_csv(tmp_path: Path, rows: list[tuple[int, float]], column: str = "step_seconds") -> Path:
    path = tmp_path / "steps.csv"
    path.write_text(
        "# made by tests/test_calibrate_steps.py\n" + f"gpus,{column}\n" + "".join(f"{g},{v!r}\n" for g, v in rows)
    )
    return path


def calibrated(*args: str) -> dict[str, Any]:
    code, stdout, stderr = run("calibrate", *args, "--format", "json")
    assert code == 0, stderr
    return dict(json.loads(stdout))


def terms(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["term"]: t for t in doc["terms"]}


def test_the_compute_efficiency_of_one_gpu_count_is_the_closed_form() -> None:
    """One GPU, nothing communicated, every FLOP at one efficiency (--compute-model flops): step time is FLOPs /
    (peak x mfu), so the fitted mfu is the default times predicted over measured, and recovers the truth within 1%."""
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    plan = Options.model_validate({"dp": 1, "micro_batch": 2, "seq_len": 4096, "compute_model": "flops"})
    default = estimate(model, topology, plan).time
    truth = estimate(
        model, topology, plan.model_copy(update={"compute": Compute(mfu=0.53, compute_model="flops")})
    ).time
    assert default is not None and truth is not None
    fit = calibrate_steps(model, topology, "step_seconds", [Measured(2, 1, truth.step_seconds, plan)])
    closed_form = DEFAULT_MFU * default.step_seconds / truth.step_seconds
    assert fit.fitted["mfu"] == pytest.approx(closed_form, rel=1e-3)
    assert fit.fitted["mfu"] == pytest.approx(0.53, rel=0.01)
    assert set(fit.fitted) == {"mfu"} and fit.held_out is None


def test_synthetic_steps_give_back_the_mfu_and_jitter_they_were_made_with(tmp_path: Path) -> None:
    truth = {"mfu": 0.5, "sync_jitter": 2.5 * JITTER}
    path = steps_csv(tmp_path, synthetic((8, 64, 256, 1024), **truth))
    doc = calibrated("--steps", str(path), "--model", "llama-8b", *FLAGS)
    fitted = terms(doc)
    assert fitted["mfu"]["fitted"] == pytest.approx(0.5, rel=0.01)
    assert fitted["sync_jitter"]["fitted"] == pytest.approx(truth["sync_jitter"], rel=0.05)
    assert doc["error_fitted"] < 0.001 < doc["error_defaults"]
    held = doc["held_out"]
    assert held["gpus"] == 1024 and held["error_calibrated"] < 0.002 < held["error_defaults"]
    assert not held["kept_defaults"]


def test_two_gpu_counts_fit_the_mfu_on_the_smallest_and_keep_the_loss_terms(tmp_path: Path) -> None:
    path = steps_csv(tmp_path, synthetic((8, 128), mfu=0.45))
    doc = calibrated("--steps", str(path), "--model", "llama-8b", *FLAGS)
    fitted = terms(doc)
    assert fitted["mfu"]["fitted"] == pytest.approx(0.45, rel=0.01)
    for name in ("sync_jitter", "overlap_slowdown"):
        assert fitted[name]["fitted"] is None and "two GPU counts beyond the smallest" in fitted[name]["why"]
    assert doc["held_out"]["gpus"] == 128 and doc["held_out"]["error_calibrated"] < 0.002


def test_a_fit_that_would_predict_the_held_out_count_worse_keeps_the_defaults(tmp_path: Path) -> None:
    """The smallest run is much faster than the others, which run at the default efficiency: fitting --mfu to it
    would predict the largest worse than the defaults, so nothing is fitted, and the report says so."""
    path = steps_csv(tmp_path, synthetic((8,), mfu=0.6) + synthetic((16, 32)))
    code, stdout, stderr = run("calibrate", "--steps", str(path), "--model", "llama-8b", *FLAGS)
    assert code == 0, stderr
    assert "no fitted term improves it, so the defaults are kept" in " ".join(stdout.split())
    doc = calibrated("--steps", str(path), "--model", "llama-8b", *FLAGS)
    held = doc["held_out"]
    assert held["kept_defaults"]
    assert held["error_calibrated"] == held["error_defaults"] < held["error_every_term_fitted"]
    assert all(t["fitted"] is None for t in doc["terms"])
    assert "held-out count predicts no better" in terms(doc)["mfu"]["why"]


def test_a_term_given_by_its_flag_is_held(tmp_path: Path) -> None:
    path = steps_csv(tmp_path, synthetic((8, 64), mfu=0.45))
    doc = calibrated("--steps", str(path), "--model", "llama-8b", *FLAGS, "--mfu", "0.45")
    mfu = terms(doc)["mfu"]
    assert mfu["fitted"] is None and mfu["default"] == 0.45 and "flag" in mfu["why"]
    assert doc["error_defaults"] < 0.002


# ------------------------------------------------------------------------------------------------ a real series


def _series(source: str, name: str) -> tuple[list[Any], list[str]]:
    """A published series' runs and the flags the training-scaling benchmark costs them with."""
    bench = load_benchmark("training_scaling")
    runs = [r for r in bench.runs(source) if r.series == name and not r.out_of_scope]
    r = runs[0]
    flags = ["--model", bench.spec_for(r.model), "--topology", r.topology, "--framework", "fsdp"]
    flags += ["--zero", str(r.stage), "--recompute", r.recompute, "--seq-len", str(r.seq_len)]
    flags += ["--compute-dtype", r.compute_dtype, "--grad-dtype", r.grad_dtype]
    if r.gather_dtype:
        flags += ["--gather-dtype", r.gather_dtype]
    return runs, flags


@pytest.mark.parametrize(
    ("source", "series"),
    [
        ("llm-foundry-h100.csv", "MPT-7B FS mb6 noAC"),  # 8, 128, 256, 512 GPUs
        ("llm-foundry-h100.csv", "MPT-1B SGO mb12 noAC"),  # 128, 256, 512
        ("torchtitan-llama3.1-8b-h100.csv", "torchtitan Llama3.1-8B FSDP2 mb2 SAC eager"),  # 8, 128
    ],
)
def test_a_published_series_fitted_on_its_smaller_counts_predicts_its_largest_no_worse(
    tmp_path: Path, source: str, series: str
) -> None:
    runs, flags = _series(source, series)
    path = tmp_path / "runs.csv"
    lines = ["gpus,tokens_per_s_per_gpu,micro_batch,accum"]
    lines += [f"{r.gpus},{r.tokens_per_s_per_gpu},{r.micro_batch},{r.accum}" for r in runs]
    path.write_text("\n".join(lines) + "\n")
    doc = calibrated("--steps", str(path), *flags)
    held = doc["held_out"]
    assert held["gpus"] == max(r.gpus for r in runs)
    assert held["error_calibrated"] <= held["error_defaults"]
    assert doc["error_fitted"] <= doc["error_defaults"]
    if series.startswith("MPT-7B"):  # the level: the default share is above this cluster's; its own 8 GPUs are not
        assert held["error_calibrated"] < 0.03 < held["error_defaults"] / 3


# ------------------------------------------------------------------------------------------------ files written


def test_save_plan_writes_a_plan_that_check_costs_with_the_fitted_values(tmp_path: Path) -> None:
    path = steps_csv(tmp_path, synthetic((8, 64), mfu=0.45))
    plan, topo = tmp_path / "plans" / "fitted.yaml", tmp_path / "cluster.yaml"
    plan.parent.mkdir()
    code, stdout, stderr = run(
        "calibrate", "--steps", str(path), "--model", "llama-8b", *FLAGS,
        "--save-plan", str(plan), "--save-topology", str(topo),
    )  # fmt: skip
    assert code == 0, stderr
    text = plan.read_text()
    assert text.startswith("# Written by `dpcost calibrate --steps steps.csv`: fitted on 2 measured rows at 8, 64")
    doc = yaml.safe_load(text)
    assert doc["defaults"]["mfu"] == pytest.approx(0.45, rel=0.01)
    assert doc["defaults"]["framework"] == "ddp" and doc["defaults"]["topology"] == "../cluster.yaml"
    assert [s["dp"] for s in doc["scenarios"]] == [8, 64] and doc["scenarios"][0]["micro-batch"] == 1
    assert load_topology(str(topo)).calibration is not None
    code, stdout, stderr = run("check", str(plan), "--format", "json")
    assert code in (0, 1), stderr  # 1: DDP's full model states of an 8B model do not fit an 80 GB GPU
    checked = json.loads(stdout)
    assert [s["summary"]["step_seconds"] for s in checked["scenarios"]] == pytest.approx(
        [s for _, s in synthetic((8, 64), mfu=0.45)], rel=0.01
    )
    code, stdout, _ = run("calibrate", "--steps", str(path), "--model", "llama-8b", *FLAGS)
    note = " ".join(stdout.split())
    assert code == 0 and "dpcost estimate --model llama-8b --topology dgx-h100" in note and "--mfu 0.45" in note


def test_rows_may_override_the_batch_and_measure_tokens_per_second(tmp_path: Path) -> None:
    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    rows = []
    for g, batch in ((8, 64), (16, 64), (32, 128)):
        report = estimate(
            model, topology, Options.model_validate({"dp": g, **PLAN, "global_batch": batch, "mfu": 0.42})
        )
        assert report.time is not None
        rows.append(f"{g},{report.time.tokens_per_second!r},{batch}")
    path = tmp_path / "runs.csv"
    path.write_text("gpus,tokens_per_s,global_batch\n" + "\n".join(rows) + "\n")
    doc = calibrated("--steps", str(path), "--model", "llama-8b", *FLAGS, "--accum", "2")
    assert terms(doc)["mfu"]["fitted"] == pytest.approx(0.42, rel=0.01)


@pytest.mark.parametrize("fmt", ["table", "markdown", "html", "csv", "json", "yaml"])
def test_every_format(tmp_path: Path, fmt: str) -> None:
    path = steps_csv(tmp_path, synthetic((8, 16), mfu=0.45))
    code, stdout, stderr = run("calibrate", "--steps", str(path), "--model", "llama-8b", *FLAGS, "--format", fmt)
    assert code == 0 and stdout.strip(), stderr
    assert "mfu" in stdout


# ------------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ("step_seconds\n1.5\n", ["no 'gpus' column"]),
        ("gpus,seconds\n8,1.5\n", ["give exactly one of the columns", "step_seconds, tokens_per_s"]),
        ("gpus,step_seconds,tokens_per_s\n8,1.5,100\n", ["exactly one", "are all given"]),
        ("gpus,step_seconds\n-8,1.5\n", ["line 2", "gpus", "positive integer"]),
        ("gpus,step_seconds\n8,0\n", ["line 2", "step_seconds", "positive"]),
        ("gpus,step_seconds\n8,fast\n", ["line 2", "step_seconds"]),
        ("gpus,step_seconds\n8,1.5,3\n", ["line 2", "3 cells"]),
        ("# only a comment\n", ["no rows"]),
        ("gpus,step_seconds\n", ["no rows"]),
        ("gpus,step_seconds\n20000000,1.5\n", ["line 2", "gpus", "20000000 GPUs"]),
        ("gpus,step_seconds,global_batch\n64,1.5,100\n", ["line 2", "--global-batch", "multiple of 64"]),
    ],
)
def test_bad_steps_exit_2_with_one_line(tmp_path: Path, text: str, needles: list[str]) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(text)
    code, stdout, stderr = run("calibrate", "--steps", str(path), "--model", "llama-8b")
    assert code == 2, (code, stdout, stderr)
    assert stderr.count("\n") == 1 and "Traceback" not in stderr and str(path) in stderr
    for needle in needles:
        assert needle in stderr, (needle, stderr)


def test_gpus_beyond_the_topology_exit_2(tmp_path: Path) -> None:
    spec = yaml.safe_load((REPO / "topologies" / "dgx-h100.yaml").read_text())
    spec["name"] = "small"
    spec["tiers"] = spec["tiers"][:2]
    spec["tiers"][1]["size"] = 64
    topo = tmp_path / "small.yaml"
    topo.write_text(yaml.safe_dump(spec))
    path = steps_csv(tmp_path, [(8, 1.0), (128, 1.0)])
    code, _, stderr = run("calibrate", "--steps", str(path), "--model", "llama-8b", "--topology", str(topo))
    assert code == 2 and stderr.count("\n") == 1
    assert "line 4: gpus" in stderr and "128 GPUs exceed small's 64" in stderr


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        (["--steps", "STEPS", "LOG"], ["FILES", "not both"]),
        (["--steps", "STEPS"], ["--model", "required with --steps"]),
        (["--steps", "STEPS", "--model", "llama-8b", "--base", "dgx-h100"], ["--base", "--topology"]),
        (["--steps", "STEPS", "--model", "llama-8b", "--mode", "inference"], ["--mode", "train"]),
        (["--steps", "STEPS", "--model", "llama-8b", "--zero", "7"], ["--zero", "must be one of"]),
        (["LOG", "--zero", "2"], ["--zero", "goes with --steps"]),
        (["LOG", "--topology", "dgx-h100"], ["--topology", "--base"]),
        (["LOG", "--model", "llama-8b"], ["--model", "goes with --steps"]),
        ([], ["FILES", "--steps"]),
    ],
)
def test_mixing_the_two_modes_exits_2(tmp_path: Path, extra: list[str], needles: list[str]) -> None:
    steps = steps_csv(tmp_path, [(8, 1.0)])
    log = REPO / "examples" / "nccl-tests-h100-2n-all_reduce.log"
    args = [str(steps) if a == "STEPS" else str(log) if a == "LOG" else a for a in extra]
    code, stdout, stderr = run("calibrate", *args)
    assert code == 2, (stdout, stderr)
    assert stderr.count("\n") == 1
    for needle in needles:
        assert needle in stderr, (needle, stderr)


def test_read_steps_reads_comments_units_and_names_columns_it_does_not_read() -> None:
    steps = read_steps("# a run\ngpus,step_seconds,series\n8,1.5s,a\n# b\n16,1500ms,a\n", "x.csv")
    assert [(r.line, r.gpus, r.value) for r in steps.rows] == [(3, 8, 1.5), (5, 16, 1.5)]
    assert steps.ignored == ("series",)
    with pytest.raises(InputError, match="appears twice"):
        read_steps("gpus,gpus,step_seconds\n8,8,1\n", "x.csv")
