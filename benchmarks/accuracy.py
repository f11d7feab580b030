#!/usr/bin/env python3
"""How close dpcost's collective times come to real nccl-tests runs.

    python benchmarks/accuracy.py [FILE_OR_DIR ...] [--topology NAME] [--points]

With no arguments it reads ../shared/reference/nccl-tests/ (or the repo's copy in tests/reference/). For each
file it prints the geometric-mean relative error of the predicted time for 1 MiB - 64 MiB and for >= 64 MiB,
with the median and the worst point; --points lists every prediction. The topology comes from the GPU name in
the log or the file name (b200, h100, ...), or --topology.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpcost.accuracy import band_errors, guess_topology, predict
from dpcost.catalog import load_measurements, load_topology

HERE = Path(__file__).resolve().parent.parent
DEFAULTS = (HERE.parent / "shared" / "reference" / "nccl-tests", HERE / "tests" / "reference" / "nccl-tests")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--topology", help="catalog topology for every file (default: guessed per file)")
    ap.add_argument("--points", action="store_true", help="print every point")
    args = ap.parse_args(argv)
    paths = args.paths or [next(d for d in DEFAULTS if d.is_dir())]
    files = sorted(
        f for p in paths for f in (p.iterdir() if p.is_dir() else [p]) if f.suffix in (".log", ".csv", ".txt")
    )
    header = ("file", "topology", "ranks", "band", "n", "geomean", "median", "worst")
    print("{:44s} {:12s} {:>5s}  {:9s} {:>3s} {:>8s} {:>8s} {:>8s}".format(*header))
    for f in files:
        m = load_measurements(str(f))
        name = args.topology or guess_topology(m)
        if name is None:
            print(f"{f.name:44s} (no topology: pass --topology)")
            continue
        points = predict(m, load_topology(name))
        forced = f" [{m.algorithm} forced]" if m.algorithm else ""
        for i, b in enumerate(band_errors(points)):
            label = f"{f.name}{forced}" if i == 0 else ""
            print(
                f"{label:44s} {name if i == 0 else '':12s} {m.ranks if i == 0 else '':>5}  {b.band:9s} {b.points:3d} "
                f"{b.geomean:8.1%} {b.median:8.1%} {b.worst:8.1%}"
            )
        if args.points:
            for p in points:
                print(
                    f"    {p.op:15s} {p.column:12s} {p.size_bytes:>12d} B  measured {p.measured_us:10.1f} us  "
                    f"predicted {p.predicted_us:10.1f} us  {p.error:+7.1%}  {p.algorithm}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
