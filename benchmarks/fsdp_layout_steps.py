#!/usr/bin/env python3
"""Step throughput of torchtitan's FSDP2 runs with tensor, context or pipeline parallelism: dpcost beside the naive
figure.

    python benchmarks/fsdp_layout_steps.py [--markdown]

Every row of tests/reference/fsdp-layout-steps/torchtitan-steps.csv (its header and README give each source) is
costed as `dpcost estimate --framework fsdp --tp --cp --pp --dp` with the run's model, micro-batch (its
data-parallel rank's batch; under PP that batch in PP micro-batches over torchtitan's December 2024 split), sequence
length, full recomputation, torch.compile, compute dtype, gather dtype and async TP (--tp-comm-overlap, which FSDP's
layouts cost as waited for), on `grand-teton-h100-96gb` (both sources ran Meta's 96 GB H100s; their 500 W cap is not
modelled). Its tokens/s per GPU (torchtitan's: the rank's tokens over TP x CP x PP) is set beside the published one,
and beside it the naive figure, PaLM's model FLOPs at 40% of the dense peak of the compute dtype.
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
from dpcost.training_configs.torchtitan import torchtitan_2024_layout

CSV = Path(__file__).resolve().parent.parent / "tests" / "reference" / "fsdp-layout-steps" / "torchtitan-steps.csv"
TOPOLOGY = "grand-teton-h100-96gb"


@dataclass(frozen=True)
class Run:
    source: str
    row: str
    model: str
    gpus: int
    tp: int
    cp: int
    pp: int
    stages_per_rank: int
    local_batch: int
    seq_len: int
    compile: bool
    compute_dtype: str
    gather_dtype: str | None
    tp_comm_overlap: bool
    published: float  # tokens/s per GPU, torchtitan's
    sample: str


def runs(path: Path = CSV) -> list[Run]:
    lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    out = []
    for row in csv.DictReader(lines):
        out.append(
            Run(
                source=row["source"],
                row=row["row"],
                model=row["model"],
                gpus=int(row["gpus"]),
                tp=int(row["tp"]),
                cp=int(row["cp"]),
                pp=int(row["pp"]),
                stages_per_rank=int(row["stages_per_rank"]),
                local_batch=int(row["local_batch"]),
                seq_len=int(row["seq_len"]),
                compile=row["compile"] == "true",
                compute_dtype=row["compute_dtype"],
                gather_dtype=row["gather_dtype"] or None,
                tp_comm_overlap=row["tp_comm_overlap"] == "true",
                published=float(row["tps_per_gpu"]),
                sample=row["sample"],
            )
        )
    return out


def predicted(r: Run) -> float:
    """dpcost's tokens/s per GPU for the run, as `dpcost estimate --framework fsdp` costs it; under PP the local
    batch in PP micro-batches over torchtitan's December 2024 split (the CSV's header)."""
    model = load_model(r.model)
    dp = r.gpus // (r.tp * r.cp * r.pp)
    pipelined: dict[str, object] = {}
    if r.pp > 1:
        assert model.architecture is not None
        pipelined = dict(
            pp=r.pp, virtual_stages=r.stages_per_rank, global_batch=r.local_batch * dp,
            pipeline_layout=torchtitan_2024_layout(model.architecture.layers, r.pp * r.stages_per_rank),
        )  # fmt: skip
    options = Options(
        dp=dp,
        tp=r.tp,
        cp=r.cp,
        framework="fsdp",
        recompute="full",
        micro_batch=r.local_batch // r.pp,
        seq_len=r.seq_len,
        compile=r.compile,
        compute_dtype=r.compute_dtype,
        gather_dtype=r.gather_dtype,
        tp_comm_overlap=r.tp_comm_overlap,
        **pipelined,  # type: ignore[arg-type]
    )
    report = estimate(model, load_topology(TOPOLOGY), options)
    assert report.time is not None
    return report.time.tokens_per_second / r.gpus


def naive(r: Run) -> float:
    """Every model FLOP (PaLM's 6N + 12LHQT) at 40% of the compute dtype's dense peak, nothing else."""
    return naive_tokens_per_second(load_model(r.model), load_topology(TOPOLOGY).gpu, r.seq_len, r.compute_dtype)


def _geomean(errors: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(max(abs(e), 1e-4)) for e in errors))


def markdown(all_runs: list[Run]) -> str:
    out = [
        "| source | run | GPUs | TP x CP x PP | published tokens/s/GPU | dpcost | error | naive (40% MFU) "
        "| naive error | sample |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    groups: dict[tuple[str, str, bool], tuple[list[float], list[float]]] = {}
    for r in all_runs:
        ours, flat = predicted(r), naive(r)
        error, naive_error = ours / r.published - 1, flat / r.published - 1
        errors = groups.setdefault((r.source, r.sample, r.tp * r.cp * r.pp > 1), ([], []))
        errors[0].append(error)
        errors[1].append(naive_error)
        out.append(
            f"| {r.source} | {r.row} | {r.gpus} | {r.tp} x {r.cp} x {r.pp} | {r.published:,.0f} | {ours:,.0f} "
            f"| {error:+.1%} | {flat:,.0f} | {naive_error:+.1%} | {r.sample} |"
        )
    out += ["", "| source | runs | sample | dpcost (geomean of abs. error) | naive | dpcost median signed |"]
    out.append("|---|---|---|---:|---:|---:|")
    for (source, sample, layout), (ours_errors, naive_errors) in groups.items():
        kind = "with TP, CP or PP" if layout else "FSDP alone"
        out.append(
            f"| {source} | {len(ours_errors)} {kind} | {sample} | {_geomean(ours_errors):.1%} "
            f"| {_geomean(naive_errors):.1%} | {statistics.median(ours_errors):+.1%} |"
        )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--markdown", action="store_true", help="print the README's tables (the default)")
    ap.parse_args()
    print(markdown(runs()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
