#!/usr/bin/env python3
"""dpcost's memory per GPU against the peaks Megatron-LM's own functional tests record (a benchmark, not a test).

    python benchmarks/megatron_test_peaks.py [--markdown] [--points] [--after-step]

Each row of tests/reference/memory-peaks/megatron-functional-peaks.csv is one golden file of one functional test:
the test's MODEL_ARGS, the world size its CI recipe launches, and torch.cuda.max_memory_allocated on the last global
rank (the one that writes TensorBoard), the median over the recorded steps. dpcost reads each test as a user would
give it: the arguments as a `torchrun ... pretrain_gpt.py` script through `--from` (dpcost/training_configs/
megatron.py), on the catalog topology of the golden file's GPU, and predicts the last pipeline stage's allocated
memory (a layout's last stage; without one, the chosen ZeRO stage's row). Beside it, the naive figure: the ZeRO
paper's model states of that GPU's parameters (16 bytes each; 4 + 12/DP under the distributed optimizer).

Scored are the first runs of golden files whose environment and platform the recipes still run ("live"); golden files
the recipes no longer run ("stale": other clusters, older containers, measured up to 1.7x apart for one configuration)
are scored apart. Left out, with the reason: a resumed second run, a golden file that names no GPU, a world size no
recipe gives, a configuration changed since the values were measured, what dpcost's reader refuses (said in its own
words), and what it reads but says it does not cost (activation offloading). Errors are predicted / measured - 1; the
geometric mean of |error| as the project's other benchmarks take it.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import statistics
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from dpcost import estimate, load_topology
from dpcost.accuracy import ERROR_FLOOR
from dpcost.errors import InputError
from dpcost.options import WRITTEN, Options
from dpcost.specs import ModelSpec, TopologySpec
from dpcost.training_configs import apply, read_training_config
from dpcost.training_configs.megatron import OFFLOADING

CSV = Path(__file__).resolve().parent.parent / "tests" / "reference" / "memory-peaks" / "megatron-functional-peaks.csv"
TOPOLOGIES = {"A100": "dgx-a100", "H100": "dgx-h100", "GB200": "gb200-nvl72"}
LIVE = "the recipe runs this environment and platform"  # the extraction's note on a golden file CI still checks


@dataclass(frozen=True)
class Point:
    case: str
    golden: str
    group: str  # the feature the row is scored under (GROUPS)
    live: bool
    measured: float
    predicted: float
    naive: float

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1

    @property
    def naive_error(self) -> float:
        return self.naive / self.measured - 1


def rows(path: Path = CSV) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def left_out(row: dict[str, str]) -> str:
    """Why a row is not scored, before dpcost reads it ("" when it is)."""
    if row["golden_file"].endswith("_2nd.json"):
        return "the resumed second run of a checkpoint test"
    if row["hardware"] not in TOPOLOGIES:
        return "the golden file names no GPU"
    if not (row["nodes"] and row["gpus_per_node"]):
        return "no recipe gives its world size (release tests)"
    if "CONFIG DRIFT" in row["notes"]:
        return "its arguments changed since the values were measured"
    return ""


def group(row: dict[str, str]) -> str:
    """The feature a row is scored under, the first that applies."""
    if row["num_experts"]:
        return "MoE"
    if row["fp8"]:
        return "FP8"
    if int(row["context_parallel_size"] or 1) > 1:
        return "context parallel"
    if row["transformer_impl"] == "local" or row["attention_backend"] in ("unfused", "local"):
        return "unfused attention"
    if row["recompute_granularity"]:
        return "recomputation"
    if int(row["tensor_model_parallel_size"] or 1) * int(row["pipeline_model_parallel_size"] or 1) > 1:
        return "TP / PP"
    return "data parallel"


GROUPS = ("data parallel", "TP / PP", "recomputation", "unfused attention", "context parallel", "FP8", "MoE")


class NotCosted(Exception):
    """A test whose arguments run what dpcost reads but does not cost, and says so in its reading."""


def as_launched(model_args: str) -> str:
    """The arguments as Megatron-LM's test launcher passes them: a model_config.yaml value wrapped in [ ] loses its
    brackets and its words become separate arguments (tests/functional_tests/shell_test_utils/_run_training.sh at
    d98e8a64: "Strip square brackets from value"), so "[moe_act mlp]" is --recompute-modules moe_act mlp."""
    return re.sub(r"'\[([^]]+)\]'", r"\1", model_args)


def plan_of(row: dict[str, str], folder: Path) -> tuple[ModelSpec, TopologySpec, Options]:
    """The test as a user gives it to dpcost: its arguments as a `--from` script, on its GPU's catalog topology."""
    script = folder / "pretrain.sh"
    launch = f"torchrun --nnodes {row['nodes']} --nproc-per-node {row['gpus_per_node']} pretrain_gpt.py"
    script.write_text(f"{launch} {as_launched(row['model_args'])}\n")
    config = read_training_config(str(script))
    not_costed = [s.key for s in config.settings if s.note == OFFLOADING]
    if not_costed:
        raise NotCosted(f"{not_costed[0]}: activations offloaded to the host, which dpcost does not cost (it says so)")
    applied = apply(config, {}, None, None)
    if applied.model_spec is None:
        raise InputError(str(script), "the arguments build no model")
    options = Options.model_validate({"dp": applied.dp, **applied.values}, context=WRITTEN)
    return applied.model_spec, load_topology(TOPOLOGIES[row["hardware"]]), options


def predict(row: dict[str, str], folder: Path) -> tuple[float, float]:
    """dpcost's allocated bytes on the last rank for the test as a `--from` script, and the naive model states."""
    model, topology, options = plan_of(row, folder)
    report = estimate(model, topology, options)
    distributed = options.plan.zero is not None and options.plan.zero >= 1
    per_param = 4 + 12 / options.dp if distributed else 16.0
    if report.layout is not None:
        last = report.layout.stages[-1]
        return float(last.memory_bytes), per_param * last.params
    stage = next(s for s in report.memory.stages if s.stage == report.setup.zero_stage)
    return float(stage.allocated_bytes), per_param * report.model.params_total


def compare(path: Path = CSV) -> tuple[list[Point], Counter[str]]:
    """Every scored point, and how many rows were left out for each reason."""
    points, why = [], Counter[str]()
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows(path):
            reason = left_out(row)
            if not reason:
                try:
                    predicted, naive = predict(row, Path(tmp))
                except InputError as exc:
                    reason = "dpcost refuses: " + exc.message
                except NotCosted as exc:
                    reason = "not costed: " + str(exc)
                else:
                    measured = float(row["mem_max_allocated_bytes_median"])
                    live = LIVE in row["notes"]
                    points.append(Point(row["case"], row["golden_file"], group(row), live, measured, predicted, naive))
            if reason:
                why[reason] += 1
    return points, why


def held_after_step(row: dict[str, str], folder: Path) -> float:
    """What dpcost's last stage holds between steps, its states and buffers as each stage's own view holds them
    (layout_report.layout_stage_memory): the counterpart of the row's mem_allocated_bytes_median, which Megatron reads
    after optimizer.step() (training.py training_log)."""
    from dpcost.engine.layout_report import layout_stage_memory

    last = layout_stage_memory(*plan_of(row, folder))[-1]
    return last.weight_and_optimizer + last.buffers


def after_step_gaps(path: Path = CSV) -> list[tuple[float, str, str]]:
    """For each live golden file dpcost costs: what stays allocated after a step less held_after_step, in bytes, with
    the case and golden file."""
    gaps = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in rows(path):
            if left_out(row) or LIVE not in row["notes"]:
                continue
            try:
                held = held_after_step(row, Path(tmp))
            except (InputError, NotCosted):
                continue
            gaps.append((float(row["mem_allocated_bytes_median"]) - held, row["case"], row["golden_file"]))
    return gaps


def geomean(errors: list[float]) -> float:
    """The geometric mean of |errors|, an exact hit counted as ERROR_FLOOR (dpcost/accuracy.py)."""
    return math.exp(sum(math.log(max(abs(e), ERROR_FLOOR)) for e in errors) / len(errors))


def _line(name: str, points: list[Point]) -> str:
    errors = [p.error for p in points]
    worst = max(points, key=lambda p: abs(p.error))
    within = sum(abs(e) <= 0.10 for e in errors)
    naive = [p.naive_error for p in points]
    tests = len({p.case for p in points})
    return (
        f"| {name} | {len(points)} | {tests} | {geomean(errors):.1%} | {statistics.median(errors):+.1%} | {within} | "
        f"{worst.error:+.1%} | {geomean(naive):.1%} | {statistics.median(naive):+.1%} |"
    )


def markdown(points: list[Point], why: Counter[str]) -> str:
    out = [
        "| golden files | points | tests | dpcost (geomean of abs. error) | median | within 10% | worst | "
        "model states, 16 B/param | median |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    live = [p for p in points if p.live]
    for name in GROUPS:
        chosen = [p for p in live if p.group == name]
        if chosen:
            out.append(_line(f"live: {name}", chosen))
    out.append(_line("live: all", live))
    stale = [p for p in points if not p.live]
    if stale:
        out.append(_line("stale: all", stale))
    out.append("")
    out.append(f"Left out ({sum(why.values())} of {sum(why.values()) + len(points)} golden files):")
    out += [f"- {reason}: {count}" for reason, count in sorted(why.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="the README's table")
    parser.add_argument("--points", action="store_true", help="every scored point, worst first")
    parser.add_argument(
        "--after-step", action="store_true", help="what stays allocated after a step beyond dpcost's states and buffers"
    )
    args = parser.parse_args(argv)
    if args.after_step:
        gaps = sorted(after_step_gaps())
        low, median, high = statistics.quantiles([g for g, _, _ in gaps], n=4)
        print(f"{len(gaps)} live golden files: median {median / 1e6:.1f} MB, quartiles {low / 1e6:.1f} and "
              f"{high / 1e6:.1f} MB")  # fmt: skip
        for gap, case, golden in gaps:
            print(f"{gap / 1e6:+10.1f} MB  {case} {golden}")
        return 0
    points, why = compare()
    if args.points:
        for p in sorted(points, key=lambda p: -abs(p.error)):
            print(f"{p.error:+7.1%}  {'live ' if p.live else 'stale'}  {p.group:18s} {p.case} {p.golden}")
        return 0
    print(markdown(points, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
