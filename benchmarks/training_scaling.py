#!/usr/bin/env python3
"""How well dpcost predicts what real training runs lose as GPUs are added (weak scaling).

    python benchmarks/training_scaling.py [--points] [--fit]

For every series in tests/reference/training-runs/*.csv (one model, framework and per-GPU batch at several GPU
counts), dpcost costs each GPU count with the series' framework, sharding, micro-batch, accumulation, sequence
length and recomputation, and the --mfu that makes its smallest run's compute match the published hardware FLOP
utilisation there (micro-batch-dependent kernel efficiency is out of scope: --mfu is held for the series). It
prints the throughput per GPU of the largest run over the smallest, predicted and measured, and the geometric
mean error of that ratio beside the error of assuming perfect scaling (ratio 1). Runs dpcost cannot cost as
published (tensor, pipeline or context parallelism; hybrid sharding) are left out, and the output says which.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from dpcost.catalog import load_model, load_topology
from dpcost.engine.estimate import estimate
from dpcost.engine.utilization import naive_tokens_per_second
from dpcost.options import Options

HERE = Path(__file__).resolve().parent.parent / "tests" / "reference" / "training-runs"
STAGE = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2}
# Megatron-Core's distributed optimizer (NeMo's distributed Adam) is dpcost's --framework megatron at ZeRO-1: its
# bucketed reduce-scatter and parameter all-gather (engine/frameworks.py); Megatron-FSDP's optim_grads_params is
# --framework megatron at ZeRO-3 (per-layer units, the layout engine: docs/layouts.md); every other series is
# PyTorch-style FSDP.
MEGATRON = ("Megatron-Core distributed optimizer", "distributed_fused_adam")
# Megatron-FSDP's strategies, the longer name first (optim_grads is a prefix of optim_grads_params)
MEGATRON_FSDP = {"Megatron-FSDP optim_grads_params": 3, "Megatron-FSDP optim_grads": 2}
FIT_SOURCE = "llm-foundry-h100.csv"  # what dpcost's default sync_jitter was fitted to (docs/frameworks.md)
OVERRIDES: dict[str, float] = {}  # e.g. overlap_slowdown, sync_jitter, to see how the ratios move with them


@dataclass(frozen=True)
class Run:
    series: str
    model: str
    gpus: int
    stage: int
    micro_batch: int
    accum: int
    seq_len: int
    recompute: str
    tokens_per_s_per_gpu: float
    hfu: float | None
    topology: str
    compute_dtype: str
    grad_dtype: str
    gather_dtype: str | None
    out_of_scope: str  # why dpcost cannot cost this run as published ("" when it can)
    source: str  # the file the run comes from
    shard_group: int | None = None  # hybrid sharding: the GPUs one shard group holds (--shard-group)
    framework: str = "fsdp"  # dpcost's --framework for the run's data parallelism
    compile: bool = False  # the run used torch.compile (the file's `compile` column): dpcost's --compile
    loss_impl: str | None = None  # dpcost's --loss-impl where the run's loss is not its framework's (loss_impl_of)


# A run's activation checkpointing -> dpcost's --recompute under --framework fsdp: torchtitan's per-op SAC is 'op';
# MaxText's 'selective' remat policies are timed as they were before 'op' existed, as no extra FLOPs (under flash
# attention, Megatron-style selective recomputation re-runs no matmul), since FSDP runs no Megatron selective.
RECOMPUTE = {"selective-op": "op", "selective": "none"}


def _grad_dtype(row: dict[str, str]) -> str:
    """PyTorch FSDP's DEFAULT/amp mixed precision reduces in fp32; Composer's PURE and NeMo's settings in bf16."""
    given = row.get("grad_reduce_dtype") or ""
    if given:
        return given
    return "bf16" if "PURE" in (row.get("precision") or "") else "fp32"


def loss_impl_of(source: str) -> str | None:
    """The cross-entropy a file's runs ran where it is not their framework's default (ops.LOSS_TRAFFIC;
    docs/sources/cross-entropy.md): llm-foundry's MPT runs flash-attn's fused kernel (ComposerMPTCausalLM's loss_fn
    default "fused_crossentropy", llmfoundry/models/mpt/modeling_mpt.py at 0085285a); dgxc-benchmarking's NeMo recipes
    at 1b9bb6b3, which Together ran too, Megatron's native fused one (cross_entropy_loss_fusion: true), but GPT-3
    175B's, which leaves it; Megatron-Bridge's performance scripts Transformer Engine's."""
    if source.startswith("llm-foundry"):
        return "fused"
    if source.startswith("together-mbridge"):
        return "vocab-parallel-te"
    if source.startswith(("dgxc-nemo", "together-nemo")) and "gpt3" not in source:
        return "vocab-parallel-fused"
    return None


def _out_of_scope(row: dict[str, str]) -> str:
    parallel = [f"{k.upper()}{row[k]}" for k in ("tp", "pp", "cp") if (row.get(k) or "1") != "1"]
    if parallel:
        return "uses " + " ".join(parallel) + " (this benchmark times data-parallel series; layouts: large_runs.py)"
    return ""


def _shard_group(row: dict[str, str]) -> int | None:
    """The run's hybrid-sharding group, where it shards over fewer GPUs than it runs on (--shard-group)."""
    group = row.get("shard_group") or ""
    return int(group) if group and int(group) != int(row["gpus"]) else None


def runs(pattern: str = "*.csv") -> list[Run]:
    out = []
    for path in sorted(HERE.glob(pattern)):
        lines = [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
        # the A100 tables name their GPU in the file name (llm-foundry's are 40GB parts); the others say in a column
        topology = "dgx-a100-40gb" if "a100-40gb" in path.name else "dgx-a100" if "a100" in path.name else "dgx-h100"
        for row in csv.DictReader(lines):
            hfu = row.get("hfu_pct") or row.get("mfu_pct")
            precision = row.get("precision") or ""
            recompute = row["activation_checkpointing"] or "none"
            megatron = any(name in row["sharding"] for name in MEGATRON)
            megatron_fsdp = next((st for name, st in MEGATRON_FSDP.items() if name in row["sharding"]), None)
            out.append(
                Run(
                    row["series"],
                    row["model"],
                    int(row["gpus"]),
                    1 if megatron else megatron_fsdp or next((v for k, v in STAGE.items() if k in row["sharding"]), 3),
                    int(row["micro_batch"]),
                    int(row["accum"] or 1),
                    int(row["seq_len"]),
                    RECOMPUTE.get(recompute, recompute),
                    float(row["tokens_per_s_per_gpu"]),
                    float(hfu) / 100 if hfu else None,
                    row.get("topology") or topology,
                    "fp8" if precision.startswith("fp8") else "bf16",
                    _grad_dtype(row),
                    "fp8" if "float8 all-gather" in precision else None,
                    _out_of_scope(row),
                    path.name,
                    _shard_group(row),
                    "megatron" if megatron or megatron_fsdp else "fsdp",
                    row.get("compile") == "true",
                    loss_impl_of(path.name),
                )
            )
    return out


def spec_for(model: str) -> str:
    """A model spec kept beside the runs (training-runs/<family>/<name>.yaml), else a catalog name."""
    name = model.lower()
    found = sorted(HERE.glob(f"*/{name}.yaml"))
    return str(found[0]) if found else name


def naive_tokens_per_s(r: Run) -> float:
    """The naive figure: every model FLOP (PaLM's 6N + 12LHQT) at 40% of the dense peak, nothing else."""
    return naive_tokens_per_second(
        load_model(spec_for(r.model)), load_topology(r.topology).gpu, r.seq_len, r.compute_dtype
    )


def predict(r: Run, mfu: float | None, compute_model: str = "flops") -> float:
    options = Options(
        compute_model=compute_model,
        dp=r.gpus,
        framework=r.framework,
        zero=r.stage,
        recompute=r.recompute,
        micro_batch=r.micro_batch,
        accumulation=r.accum,
        seq_len=r.seq_len,
        mfu=mfu,
        compute_dtype=r.compute_dtype,
        grad_dtype=r.grad_dtype,
        gather_dtype=r.gather_dtype,
        shard_group=r.shard_group,
        compile=r.compile,
        loss_impl=r.loss_impl,
        **OVERRIDES,
    )
    report = estimate(load_model(spec_for(r.model)), load_topology(r.topology), options)
    assert report.time is not None
    return report.time.tokens_per_second / r.gpus


@dataclass(frozen=True)
class Row:
    series: str
    source: str
    gpus: tuple[int, int]
    measured: float
    predicted: float
    points: tuple[tuple[int, float, float], ...]
    absolute: float  # tokens/s per GPU of the smallest run, the per-op compute model with nothing given
    naive: float  # the same at 40% MFU of PaLM's model FLOPs, one MFU for every run
    at_published: float | None  # the same with --mfu at the run's published MFU (HFU), where it printed one

    @property
    def error(self) -> float:
        return abs(self.predicted / self.measured - 1)

    @property
    def perfect_error(self) -> float:
        return abs(1 / self.measured - 1)


def compare(all_runs: list[Run]) -> tuple[list[Row], dict[str, str]]:
    """Each series' ratio, and the series left out with why (runs dpcost cannot cost are dropped first)."""
    series: dict[str, list[Run]] = {}
    for r in all_runs:
        series.setdefault(r.series, []).append(r)
    rows, skipped = [], {}
    for name, rs in series.items():
        kept = sorted((r for r in rs if not r.out_of_scope), key=lambda r: r.gpus)
        if len(kept) < 2:
            skipped[name] = next(r.out_of_scope for r in rs if r.out_of_scope)
            continue
        lo, hi = kept[0], kept[-1]
        absolute = predict(lo, None, "ops") / lo.tokens_per_s_per_gpu - 1
        naive = naive_tokens_per_s(lo) / lo.tokens_per_s_per_gpu - 1
        mfu = lo.hfu or 0.4
        at_mfu = predict(lo, mfu)
        at_published = at_mfu / lo.tokens_per_s_per_gpu - 1 if lo.hfu else None
        mfu *= lo.tokens_per_s_per_gpu / at_mfu  # the compute rate that reproduces the smallest run
        mfu = min(mfu, 1.0)
        pred = {r.gpus: predict(r, mfu) for r in kept}
        rows.append(
            Row(
                name,
                lo.source,
                (lo.gpus, hi.gpus),
                hi.tokens_per_s_per_gpu / lo.tokens_per_s_per_gpu,
                pred[hi.gpus] / pred[lo.gpus],
                tuple((r.gpus, r.tokens_per_s_per_gpu, pred[r.gpus]) for r in kept),
                absolute,
                naive,
                at_published,
            )
        )
    return rows, skipped


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(max(x, 1e-4)) for x in xs) / len(xs))


def markdown(rows: list[Row], skipped: dict[str, str], points: bool = False) -> str:
    out = [
        "| series | GPUs | measured ratio | dpcost ratio | dpcost error | perfect-scaling error "
        "| tokens/s, per-op model | at published MFU | at 40% MFU (naive) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lo, hi = row.gpus
        absolute = f"{row.absolute:+.1%}"
        published = "-" if row.at_published is None else f"{row.at_published:+.1%}"
        out.append(
            f"| {row.series} | {lo}-{hi} | {row.measured:.3f} | {row.predicted:.3f} | {row.error:.1%} "
            f"| {row.perfect_error:.1%} | {absolute} | {published} | {row.naive:+.1%} |"
        )
        if points:
            out += [f"|   {g} GPUs | | {m:,.0f} tok/s | {p:,.0f} tok/s | | |" for g, m, p in row.points]
    out.append("")
    out.append(
        "| source | series | dpcost error (geomean) | perfect-scaling error (geomean) "
        "| tokens/s, per-op model (geomean) | at published MFU (geomean) | at 40% MFU (geomean) | sample |"
    )
    out.append("|---|---:|---:|---:|---:|---:|---:|---|")
    by_source: dict[str, list[Row]] = {}
    for row in rows:
        by_source.setdefault(row.source, []).append(row)
    groups = [
        *(
            (source, members, "in sample" if source == FIT_SOURCE else "out of sample")
            for source, members in by_source.items()
        ),
        ("**fixed a constant (in sample)**", [r for r in rows if r.source == FIT_SOURCE], "in sample"),
        ("**fixed none (out of sample)**", [r for r in rows if r.source != FIT_SOURCE], "out of sample"),
        ("**all**", rows, "mixed"),
    ]
    for source, members, sample in groups:
        fit = " (the losses' fit source)" if source == FIT_SOURCE else ""
        absolute = f"{geomean([abs(r.absolute) for r in members]):.1%}"
        published = [abs(r.at_published) for r in members if r.at_published is not None]
        out.append(
            f"| {source}{fit} | {len(members)} | {geomean([r.error for r in members]):.1%} "
            f"| {geomean([r.perfect_error for r in members]):.1%} | {absolute} "
            f"| {f'{geomean(published):.1%}' if published else '-'} "
            f"| {geomean([abs(r.naive) for r in members]):.1%} | {sample} |"
        )
    if skipped:
        out.append("")
        reasons: dict[str, list[str]] = {}
        for name, why in skipped.items():
            reasons.setdefault(why, []).append(name)
        out.append(f"Left out ({len(skipped)} series, as published dpcost cannot cost them):")
        out += [f"- {', '.join(names)}: {why}" for why, names in reasons.items()]
    return "\n".join(out)


def fit_sync_jitter(source: str = FIT_SOURCE) -> float:
    """The sync_jitter (s per sqrt(s) of compute) that minimises the squared log error of the ratios of one
    source's series: a grid in 0.5 ms steps to 50 ms, the overlap slowdown held at its default (how dpcost's
    default was chosen)."""
    fit_runs = runs(source)

    def loss(sigma: float) -> float:
        OVERRIDES["sync_jitter"] = sigma
        rows, _ = compare(fit_runs)
        return sum(math.log(r.predicted / r.measured) ** 2 for r in rows)

    try:
        return min((i * 5e-4 for i in range(101)), key=loss)
    finally:
        OVERRIDES.pop("sync_jitter", None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", action="store_true", help="also print every GPU count's tokens/s per GPU")
    ap.add_argument("--fit", action="store_true", help=f"refit sync_jitter on {FIT_SOURCE} and print it")
    args = ap.parse_args(argv)
    if args.fit:
        print(f"sync_jitter fitted on {FIT_SOURCE}: {fit_sync_jitter() * 1e3:.1f} ms per sqrt(s) of compute")
        return 0
    print(markdown(*compare(runs()), points=args.points))
    return 0


if __name__ == "__main__":
    sys.exit(main())
