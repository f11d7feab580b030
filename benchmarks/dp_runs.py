#!/usr/bin/env python3
"""Throughput of published pure data-parallel runs, held out: dpcost's tokens/s per GPU beside the naive figure.

    python benchmarks/dp_runs.py [--markdown]

Every row of tests/reference/dp-runs/*.csv (one source per file; its header says where each value comes from and what
the source leaves unstated) is costed as `dpcost estimate --framework fsdp --zero 3` with the run's GPUs, topology,
micro-batch, sequence length and recomputation (--recompute-layers for every-K-th-block AC), and where the file gives
them its hybrid-sharding group, gradient dtype and torch.compile, and nothing given for compute: the per-op model,
dpcost's default. A model or topology the catalog lacks is the file's own, in dp-runs/models/ or dp-runs/topologies/.
Its tokens/s per GPU is set beside the published one, and beside it the naive figure, PaLM's model FLOPs at 40% of the
dense peak. No constant was set from these files: every row is out of sample.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from dpcost.catalog import load_model, load_topology
from dpcost.engine.estimate import estimate
from dpcost.engine.utilization import naive_tokens_per_second
from dpcost.options import Options

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "reference"
HERE = REFERENCE / "dp-runs"


@dataclass(frozen=True)
class Run:
    source: str  # the CSV's name
    series: str
    model: str
    gpus: int
    micro_batch: int
    seq_len: int
    recompute: str
    recompute_layers: int
    topology: str
    published: float  # tokens/s per GPU
    shard_group: int | None = None  # HSDP's shard group (None: FULL_SHARD over every GPU)
    grad_dtype: str | None = None  # the reduction's dtype (None: the framework's)
    compile: bool = False


def runs() -> list[Run]:
    out = []
    for path in sorted(HERE.glob("*.csv")):
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
        for row in csv.DictReader(lines):
            out.append(
                Run(
                    path.name,
                    row["series"],
                    row["model"],
                    int(row["gpus"]),
                    int(row["micro_batch"]),
                    int(row["seq_len"]),
                    row["recompute"],
                    int(row["recompute_layers"] or 1),
                    row["topology"],
                    float(row["tokens_per_s_per_gpu"]),
                    int(row["shard_group"]) if row.get("shard_group") else None,
                    row.get("grad_dtype") or None,
                    row.get("compile") == "yes",
                )
            )
    return out


def spec_for(model: str) -> str:
    """A catalog name, or a config.json kept in tests/reference/hf-configs/ or dp-runs/models/."""
    for kept in (REFERENCE / "hf-configs" / f"{model}.json", HERE / "models" / f"{model}.json"):
        if kept.is_file():
            return str(kept)
    return model


def topology_for(name: str) -> str:
    """A catalog name, or a source's own cluster in dp-runs/topologies/."""
    kept = HERE / "topologies" / f"{name}.yaml"
    return str(kept) if kept.is_file() else name


def predicted(r: Run) -> float:
    """dpcost's tokens/s per GPU for the run, as `dpcost estimate` costs it."""
    options = Options(
        dp=r.gpus,
        framework="fsdp",
        zero=3,
        recompute=r.recompute,
        recompute_layers=r.recompute_layers,
        micro_batch=r.micro_batch,
        seq_len=r.seq_len,
        shard_group=r.shard_group,
        grad_dtype=r.grad_dtype,
        compile=r.compile,
    )
    report = estimate(load_model(spec_for(r.model)), load_topology(topology_for(r.topology)), options)
    assert report.time is not None
    return report.time.tokens_per_second / r.gpus


def naive(r: Run) -> float:
    """Every model FLOP (PaLM's 6N + 12LHQT) at 40% of the dense BF16 peak, nothing else."""
    return naive_tokens_per_second(
        load_model(spec_for(r.model)), load_topology(topology_for(r.topology)).gpu, r.seq_len
    )


def _geomean(errors: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(max(abs(e), 1e-4)) for e in errors))


def markdown(all_runs: list[Run]) -> str:
    out = [
        "| source | run | GPUs | published tokens/s/GPU | dpcost | error | naive (40% MFU) | naive error |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    by_source: dict[str, tuple[list[float], list[float]]] = {}
    for r in all_runs:
        ours, flat = predicted(r), naive(r)
        error, naive_error = ours / r.published - 1, flat / r.published - 1
        errors = by_source.setdefault(r.source, ([], []))
        errors[0].append(error)
        errors[1].append(naive_error)
        out.append(
            f"| {r.source} | {r.series} | {r.gpus} | {r.published:,.0f} | {ours:,.0f} | {error:+.1%} | {flat:,.0f} "
            f"| {naive_error:+.1%} |"
        )
    out += ["", "| source | runs | dpcost (geomean of abs. error) | naive | dpcost median signed |"]
    out.append("|---|---:|---:|---:|---:|")
    for source, (ours_errors, naive_errors) in by_source.items():
        out.append(
            f"| {source} | {len(ours_errors)} | {_geomean(ours_errors):.1%} | {_geomean(naive_errors):.1%} "
            f"| {statistics.median(ours_errors):+.1%} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", action="store_true", help="the README's table (the default output too)")
    ap.parse_args(argv)
    print(markdown(runs()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
