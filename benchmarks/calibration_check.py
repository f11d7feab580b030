#!/usr/bin/env python3
"""How well `dpcost calibrate` does: in sample (fit a run, predict it) and out of sample (fit small node counts
of one cluster, predict a larger one).

    python benchmarks/calibration_check.py

In sample: every public run in tests/reference/nccl-tests/ is fitted on its own catalog topology and predicted
again. Out of sample: the runs below, each from one cluster, are fitted on their smaller node counts and the
largest is predicted, beside the catalog topology's prediction of it (the AWS p5 runs are held-out ones, which
fixed no constant of the catalog).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dpcost.accuracy import band_errors, guess_topology, predict
from dpcost.calibration import calibrate, fitted_rows
from dpcost.catalog import load_runs, load_topology
from dpcost.nccl_tests import Measurements

REFERENCE = Path(__file__).resolve().parent.parent / "tests" / "reference"
HERE = REFERENCE / "nccl-tests"
HOLDOUT = "nccl-tests-holdout/"  # runs that fixed no constant (benchmarks/accuracy.py --holdout)
HELD_OUT = (
    (
        "gj-aion's H100 cluster (nccl-tests #309)",
        ("h100-2n-all_reduce-nccltests309-gjaion.log", "h100-4n-all_reduce-nccltests309.log"),
        "h100-8n-all_reduce-nccltests309.log",
    ),
    (
        "GB200 NVL72 racks on OCI",
        ("gb200-16n-all_reduce-ocigb200.csv", "gb200-32n-all_reduce-ocigb200.csv"),
        "gb200-48n-all_reduce-ocigb200.csv",
    ),
    (
        "GB200 NVL72 racks at CoreWeave",
        ("gb200-18n-all_reduce-coreweave.csv", "gb200-36n-all_reduce-coreweave.csv"),
        "gb200-360n-all_reduce-coreweave.csv",
    ),
    *(
        (
            f"AWS p5, {op.replace('_', '-')} (crazyguitar)",
            tuple(f"{HOLDOUT}h100-{n}n-{op}-crazyguitar.csv" for n in (2, 4, 8, 16)),
            f"{HOLDOUT}h100-32n-{op}-crazyguitar.csv",
        )
        for op in ("all_reduce", "all_gather")
    ),
)


def _runs(name: str) -> list[Measurements]:
    """A run of tests/reference/nccl-tests/, or of another folder of tests/reference/ named in front."""
    path = REFERENCE / name if "/" in name else HERE / name
    return load_runs(str(path), path.name)


def _bands(m: Measurements, topology_name_or_spec: object) -> dict[str, float]:
    topology = load_topology(topology_name_or_spec) if isinstance(topology_name_or_spec, str) else topology_name_or_spec
    return {b.band: b.geomean for b in band_errors(predict(m, topology))}  # type: ignore[arg-type]


def _cells(bands: dict[str, float]) -> str:
    return " | ".join(f"{bands[b]:.1%}" if b in bands else "-" for b in ("1-64 MiB", ">=64 MiB"))


def out_of_sample() -> list[tuple[str, str, str, dict[str, float], dict[str, float]]]:
    """Each cluster of HELD_OUT: (label, ranks fitted on, ranks predicted, the catalog's band errors, the
    calibrated topology's band errors) for its largest run."""
    rows = []
    for label, fit_on, held in HELD_OUT:
        runs = [r for name in fit_on for r in _runs(name)]
        base = guess_topology(runs[0]) or "dgx-h100"
        fit = calibrate(load_topology(base), runs)
        target = _runs(held)[0]
        ranks = ", ".join(str(r.ranks) for r in runs)
        rows.append((label, ranks, str(target.ranks), _bands(target, base), _bands(target, fit.topology)))
    return rows


def out_of_sample_markdown(rows: list[tuple[str, str, str, dict[str, float], dict[str, float]]]) -> str:
    """The README's table of out_of_sample()."""
    lines = [
        "| cluster | fitted on | predicted | catalog 1-64 MiB | catalog >= 64 MiB | calibrated 1-64 MiB | "
        "calibrated >= 64 MiB |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for label, ranks, predicted, catalog, calibrated in rows:
        lines.append(f"| {label} | {ranks} ranks | {predicted} ranks | {_cells(catalog)} | {_cells(calibrated)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    print("Out of sample: fitted on the smaller node counts, the largest predicted\n")
    print(out_of_sample_markdown(out_of_sample()))
    print("\nIn sample: each run fitted on its own and predicted again\n")
    print("| run | topology | before 1-64 MiB | before >= 64 MiB | after 1-64 MiB | after >= 64 MiB |")
    print("|---|---|---:|---:|---:|---:|")
    for path in sorted(HERE.iterdir()):
        for m in load_runs(str(path), path.name):
            base = guess_topology(m) or "dgx-h100"
            if sum(1 for _ in m.rows) < 4 or not fitted_rows(m).rows:  # calibrate fits no send/recv-only run
                continue
            fit = calibrate(load_topology(base), [m])
            print(f"| {m.name} | {base} | {_cells(_bands(m, base))} | {_cells(_bands(m, fit.topology))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
