#!/usr/bin/env python3
"""How close dpcost's collective times come to real nccl-tests runs.

    python benchmarks/accuracy.py [FILE_OR_DIR ...] [--holdout | --all] [--topology NAME] [--points] [--markdown]

With no arguments it reads tests/reference/nccl-tests/; --holdout, the held-out runs of nccl-tests-holdout/; --all,
both (its summary pools every run that fixed no constant). For
each run it prints the geometric-mean relative error of the predicted time for 1 MiB - 64 MiB and for >= 64 MiB,
with the median and the worst point; --points lists every prediction; --markdown prints the README's table
(tests/test_readme.py keeps the README equal to it). The topology is the file's `# dpcost-topology:` line, else
guessed from the GPU name, or --topology.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import re
import sys
from pathlib import Path

from dpcost.accuracy import BANDS, SMALL_BAND, band_errors, disturbance, guess_topology, line_rate_points, predict
from dpcost.catalog import list_topologies, load_runs, load_topology
from dpcost.errors import InputError
from dpcost.nccl_tests import Measurements

HERE = Path(__file__).resolve().parent.parent
DEFAULT = HERE / "tests" / "reference" / "nccl-tests"
# Runs gathered for issue 17 and never used to fix a constant: the out-of-sample set. Only those on a GPU the catalog
# has a topology for are scored (the RCCL runs on MI300X/MI325X/MI355X name none).
HOLDOUT = HERE / "tests" / "reference" / "nccl-tests-holdout"
# The README's columns: calls below 1 MiB (latency-bound: the host, NCCL's base and step latencies), then the two bands
# the headline figures take.
TABLE_BANDS = (SMALL_BAND, *BANDS)
BAND_NAMES = tuple(name for name, _, _ in TABLE_BANDS)


# Runs a mechanism was modelled after, with nothing fitted to them: in sample all the same. Together's B200 sendrecv
# runs: the channels per peer a send runs on (engine/nccl_channels.py) and NCCL's 14 GB/s for each across nodes
# (engine/p2p.py) were priced after their bandwidth was seen to halve from 4 to 8 to 16 nodes. The A3 Mega all-reduce:
# gcp-a3-mega's protocol (Google's TCPXO profile, Simple and LL128 only) was looked up after its small calls were
# seen to take four times dpcost's LL price.
MODELLED_AFTER = frozenset(
    {*(f"b200-{n}n-sendrecv-together.log" for n in (2, 4, 8, 16)), "h100-2n-all_reduce-gcpa3mega.log"}
)


def in_sample() -> frozenset[str]:
    """The runs whose data fixed a constant: those the hop-latency corrections were fitted to
    (benchmarks/fit_corrections.py RUNS) and those a catalog topology's header derives an efficiency or a loss from;
    and those a mechanism was modelled after (MODELLED_AFTER)."""
    spec = importlib.util.spec_from_file_location("fit_corrections", Path(__file__).with_name("fit_corrections.py"))
    assert spec is not None and spec.loader is not None
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    headers = [t.read_text() for t in (HERE / "topologies").glob("*.yaml")]
    cited = {name for text in headers for name in re.findall(r"[\w.-]+\.(?:log|csv)", text)}
    names = {p.name for p in DEFAULT.iterdir()}
    return frozenset(fit.RUNS) | MODELLED_AFTER | {n for n in names if any(n == c or n.endswith(c) for c in cited)}


def holdout_runs() -> list[Measurements]:
    """The held-out runs dpcost can score: those whose header names a catalog topology."""
    known = {t.name for t in list_topologies()}
    return [m for m in runs_in([HOLDOUT]) if guess_topology(m) in known]


def runs_in(paths: list[Path]) -> list[Measurements]:
    files = sorted(f for p in paths for f in (p.iterdir() if p.is_dir() else [p]) if f.suffix in (".log", ".csv"))
    return [run for f in files for run in load_runs(str(f), where=str(f))]


def markdown(runs: list[Measurements], topology: str | None = None) -> str:
    """One row per run: its topology, ranks, what it forced, the error in each band, and the naive figure's (bus
    bytes at the line rate, no latency: dpcost.accuracy.line_rate_points) beside it. Then the geomean of runs, in
    sample and out of sample, with the out-of-sample runs also scored without the disturbed ones
    (dpcost.accuracy.disturbance: their times fall as the message doubles)."""
    lines = [
        "| run | topology | ranks | forced | < 1 MiB | 1-64 MiB | >= 64 MiB | worst >= 1 MiB | line rate: < 1 MiB "
        "| 1-64 MiB | >= 64 MiB | fixed a constant |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    fitted = in_sample()
    by_sample: dict[tuple[str, str, str], list[float]] = {}
    notes = []
    for m in runs:
        name = topology or guess_topology(m) or "dgx-h100"
        topo = load_topology(name)
        bands = {b.band: b for b in band_errors(predict(m, topo), TABLE_BANDS)}
        naive = {b.band: b for b in band_errors(line_rate_points(m, topo), TABLE_BANDS)}
        algorithms = m.algorithm or (f"NCCL_ALGO={m.nccl_algo}" if m.nccl_algo else "")
        forced = ", ".join(x for x in (algorithms, m.protocol, "" if m.nvls else "no NVLS") if x) or "-"
        if m.gpus_per_thread > 1:
            forced = f"{'' if forced == '-' else forced + ', '}-g {m.gpus_per_thread}"
        cells = [f"{bands[b].geomean:.1%}" if b in bands else "-" for b in BAND_NAMES]
        naive_cells = [f"{naive[b].geomean:.1%}" if b in naive else "-" for b in BAND_NAMES]
        worst = max((b.worst for b in bands.values() if b.band != SMALL_BAND[0]), default=0.0)
        sample = "yes" if m.name in fitted else "no"
        why = disturbance(m)
        label = f"{m.name} (disturbed)" if why else m.name
        if why:
            notes.append(f"{m.name}: {why}")
        lines.append(
            f"| {label} | {name} | {m.ranks} | {forced} | {' | '.join(cells)} | {worst:.0%} "
            f"| {' | '.join(naive_cells)} | {sample} |"
        )
        groups = [sample] + ([] if why or sample == "yes" else ["undisturbed"])
        for band, b in bands.items():
            for group in groups:
                by_sample.setdefault((group, band, "dpcost"), []).append(b.geomean)
                by_sample.setdefault((group, band, "naive"), []).append(naive[band].geomean)
    if len({s for s, _, _ in by_sample}) > 1:
        lines += [
            "",
            "| runs | < 1 MiB (geomean of runs) | 1-64 MiB | >= 64 MiB | line rate: < 1 MiB | 1-64 MiB | >= 64 MiB |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for sample, label in (
            ("yes", "fixed a constant or shaped a mechanism (in sample)"),
            ("no", "fixed none (out of sample)"),
            ("undisturbed", "fixed none, disturbed runs left out"),
        ):
            if not any(key[0] == sample for key in by_sample):
                continue
            cells = [_geomean(by_sample.get((sample, b, w), [])) for w in ("dpcost", "naive") for b in BAND_NAMES]
            lines.append(f"| {label} | {' | '.join(cells)} |")
    if notes:
        lines += ["", *(f"Disturbed: {n}." for n in notes)]
    return "\n".join(lines) + "\n"


def _geomean(errors: list[float]) -> str:
    if not errors:
        return "-"
    return f"{math.exp(sum(math.log(max(e, 1e-4)) for e in errors) / len(errors)):.1%}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument("--topology", help="catalog topology for every file (default: per file)")
    ap.add_argument("--points", action="store_true", help="print every point")
    ap.add_argument("--markdown", action="store_true", help="the README's table")
    ap.add_argument("--holdout", action="store_true", help="the held-out runs (tests/reference/nccl-tests-holdout/)")
    ap.add_argument("--all", action="store_true", help="both folders: every public run, in sample and out (pooled)")
    args = ap.parse_args(argv)
    try:
        runs = (
            runs_in([DEFAULT]) + holdout_runs()
            if args.all
            else holdout_runs()
            if args.holdout
            else runs_in(args.paths or [DEFAULT])
        )
    except InputError as exc:  # a file the CLI would refuse too: its one line, as the CLI prints it
        print(f"accuracy.py: {exc}", file=sys.stderr)
        return 2
    if args.markdown:
        sys.stdout.write(markdown(runs, args.topology))
        return 0
    header = ("run", "topology", "ranks", "band", "n", "geomean", "median", "worst")
    print("{:52s} {:12s} {:>5s}  {:9s} {:>3s} {:>8s} {:>8s} {:>8s}".format(*header))
    for m in runs:
        name = args.topology or guess_topology(m) or "dgx-h100"
        if m.ranks is None:
            print(f"accuracy.py: {m.name}: the number of ranks is unknown: add a line '# ranks: N'", file=sys.stderr)
            return 2
        points = predict(m, load_topology(name))
        forced = f" [{m.algorithm} forced]" if m.algorithm else ""
        for i, b in enumerate(band_errors(points, TABLE_BANDS)):
            label = f"{m.name}{forced}" if i == 0 else ""
            print(
                f"{label:52s} {name if i == 0 else '':12s} {m.ranks if i == 0 else '':>5}  {b.band:9s} {b.points:3d} "
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
