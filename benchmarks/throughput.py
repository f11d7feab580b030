#!/usr/bin/env python3
"""Estimates per second through the batch API, and `dpcost plan`'s search time (a benchmark, not a test).

    python benchmarks/throughput.py [--rounds 5] [--against DIR]

Each workload runs in its own Python process (caches start empty, as in a CI job), `--rounds` times, and the
median is printed. With `--against DIR` (another checkout of dpcost, e.g. `git worktree add /tmp/old <rev>`) each
workload also runs on that checkout, interleaved round by round with this one, and the ratio of the medians is
printed: machines differ, ratios of interleaved runs less so. A workload the other checkout cannot run (no
`estimate_many`, no `plan`) is timed there through what it has, or left out.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# Each estimates/s workload runs these plans through estimate_many (or, on a checkout without it, estimate in a
# loop) and prints plans per second; a costs/s workload runs them through cost_many, the cost core's plain numbers
# without the report (on a checkout without it, as estimates).
RATE = """
from dpcost import Options, load_model, load_topology
import dpcost, time
m, t = load_model({model!r}), load_topology("dgx-h100")
plans = {plans}
many = (getattr(dpcost, {api!r}, None) or getattr(dpcost, "estimate_many", None)
        or (lambda m, t, ps: [dpcost.estimate(m, t, p) for p in ps]))
start = time.perf_counter(); many(m, t, plans); print(len(plans) / (time.perf_counter() - start))
"""
FIXED = '[Options(dp=2 ** k, zero=3, recompute="full") for k in range(3, 13)] * 20'
# the same plan at 512 DP sizes, each once: what a sweep or a search sees, no plan (nor its collectives) seen before
DISTINCT = '[Options(dp=d, zero=3, recompute="full") for d in range(8, 4097, 8)]'
AUTO = "[Options(dp=2 ** k) for k in range(3, 13)] * 10"
LAYOUT = (
    "[Options(dp=d, tp=8, pp=16, micro_batch=b, global_batch=2048, seq_len=8192, "
    "sequence_parallel=True) for d in (16, 32, 64, 128) for b in (1, 2)] * 4"
)
# Each plan workload runs one search and prints its seconds.
SEARCH = """
from dpcost import Options, load_model, load_topology
from dpcost.engine.search import search
import time
m, t = load_model({model!r}), load_topology({topology!r})
start = time.perf_counter(); search(m, t, {gpus}, Options(dp=1, global_batch={batch}, seq_len={seq}))
print(time.perf_counter() - start)
"""

# name -> (what it measures, Python run in a fresh process; prints the count of estimates or the seconds it took)
WORKLOADS: dict[str, tuple[str, str]] = {
    "fixed": (
        "estimates/s, Llama 3 70B, a fixed plan (ZeRO-3, full recomputation) at 10 DP sizes 8..4096, x20",
        RATE.format(model="llama-70b", plans=FIXED, api="estimate_many"),
    ),
    "fixed-cost": (
        "costs/s, the same plans as fixed through cost_many (plain numbers, no report)",
        RATE.format(model="llama-70b", plans=FIXED, api="cost_many"),
    ),
    "distinct-cost": (
        "costs/s, the fixed plan at 512 DP sizes 8, 16, ..., 4096, each once (no plan repeated), through cost_many",
        RATE.format(model="llama-70b", plans=DISTINCT, api="cost_many"),
    ),
    "auto": (
        "estimates/s, Llama 3 70B, ZeRO stage and recomputation chosen (auto) at 10 DP sizes 8..4096, x10",
        RATE.format(model="llama-70b", plans=AUTO, api="estimate_many"),
    ),
    "auto-cost": (
        "costs/s, the same plans as auto through cost_many",
        RATE.format(model="llama-70b", plans=AUTO, api="cost_many"),
    ),
    "zero1": (
        "estimates/s, Llama 3 70B at ZeRO-1 (one 25 MiB bucket at a time), DP 64..1024, x4",
        RATE.format(
            model="llama-70b",
            plans='[Options(dp=2 ** k, zero=1, recompute="full") for k in range(6, 11)] * 4',
            api="estimate_many",
        ),
    ),
    "layout": (
        "estimates/s, Llama 3 405B TP8 x PP16 at DP 16..128 and micro-batches 1, 2, x4",
        RATE.format(model="llama-405b", plans=LAYOUT, api="estimate_many"),
    ),
    "layout-cost": (
        "costs/s, the same plans as layout through cost_many",
        RATE.format(model="llama-405b", plans=LAYOUT, api="cost_many"),
    ),
    "plan-70b-4096": (
        "seconds, dpcost plan: Llama 3 70B on 4,096 H100, global batch 2,048 x 8,192",
        SEARCH.format(model="llama-70b", topology="dgx-h100", gpus=4096, batch=2048, seq=8192),
    ),
    "plan-405b-16384": (
        "seconds, dpcost plan: Llama 3 405B on 16,384 H100, global batch 2,048 x 8,192",
        SEARCH.format(model="llama-405b", topology="dgx-h100", gpus=16384, batch=2048, seq=8192),
    ),
    "plan-dsv3-2048": (
        "seconds, dpcost plan: DeepSeek-V3 on 2,048 H800, global batch 15,360 x 4,096",
        SEARCH.format(model="deepseek-v3", topology="hgx-h800", gpus=2048, batch=15360, seq=4096),
    ),
}


def run(code: str, root: Path) -> float | None:
    """One fresh process on the checkout at `root`: the number it prints, or None if it cannot run there."""
    done = subprocess.run(  # run in `root`, whose dpcost/ comes first on the path
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, env={"PYTHONPATH": str(root)}
    )
    return float(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--against", type=Path, help="another dpcost checkout, timed interleaved with this one")
    ap.add_argument("--only", nargs="*", choices=sorted(WORKLOADS), help="run these workloads only")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args()
    rows = []
    for name in args.only or WORKLOADS:
        what, code = WORKLOADS[name]
        mine: list[float] = []
        theirs: list[float] = []
        for _ in range(args.rounds):
            value = run(code, HERE)
            if value is None:
                sys.exit(f"{name}: failed on this checkout")
            mine.append(value)
            if args.against is not None:
                other = run(code, args.against)
                if other is not None:
                    theirs.append(other)
        here = statistics.median(mine)
        there = statistics.median(theirs) if theirs else None
        rate = what.startswith(("estimates/s", "costs/s"))
        faster = None if there is None else (here / there if rate else there / here)
        rows.append((name, what, here, there, faster))
    if args.markdown:
        print("| workload | what | this checkout | the other | this / the other (speed) |")
        print("|---|---|---:|---:|---:|")
    for name, what, here, there, faster in rows:
        unit = "/s" if what.startswith(("estimates/s", "costs/s")) else " s"
        other = "-" if there is None else f"{there:,.2f}{unit}"
        ratio = "-" if faster is None else f"{faster:.2f}x"
        if args.markdown:
            print(f"| {name} | {what} | {here:,.2f}{unit} | {other} | {ratio} |")
        else:
            print(f"{name:16} {here:>12,.2f}{unit:3} {other:>14} {ratio:>7}   {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
