"""`dpcost sweep` as a table, a terminal chart and an SVG: one plan per DP size."""

from __future__ import annotations

import math
from collections.abc import Sequence

from dpcost.engine.report import EstimateReport, SweepRow
from dpcost.render.table import Table, gb, pct
from dpcost.units import fmt_seconds

__all__ = ["sweep_chart", "sweep_svg", "sweep_table", "sweep_verdict"]


def sweep_verdict(reports: Sequence[EstimateReport], best: EstimateReport) -> Table:
    """The answer first: the sweep's best row (engine/verdict.fastest_that_fits) with its verdict, and how
    efficiency falls across the sweep."""
    from dpcost.render.estimate import verdict_table

    why = "the most tokens/s of the sizes that fit" if best.summary.fits else "none fits; the nearest miss"
    t = verdict_table(best, f"Verdict, DP {best.setup.dp} ({why})")
    first, last = reports[0], reports[-1]
    if len(reports) > 1 and first.time is not None and last.time is not None:
        t.rows.append(
            [
                "scaling",
                f"efficiency {pct(first.time.scaling_efficiency)} at DP {first.setup.dp}, "
                f"{pct(last.time.scaling_efficiency)} at DP {last.setup.dp}",
            ]
        )
    return t


def sweep_table(reports: Sequence[EstimateReport], fixed_global_batch: bool) -> Table:
    """One row per DP size (weak scaling at a fixed per-GPU batch unless the global batch is held)."""
    first = reports[0]
    t = Table(
        f"{first.model.title} on {first.topology.name}: cost against DP size",
        [
            "DP",
            *(["GPUs"] if first.layout is not None else []),
            "nodes",
            "global batch",
            "ZeRO",
            "step",
            "compute",
            "exposed comm",
            "lost at scale",
            *(["bubble"] if first.layout is not None else []),
            "comm (serial)",
            "efficiency",
            "tokens/s",
            "MFU",
            "memory/GPU",
            "fits",
        ],
        right=set(range(0, 13)) - {3} if first.layout is None else set(range(0, 15)) - {4},
        drop=[
            "comm (serial)",
            "nodes",
            "compute",
            "MFU",
            "global batch",
            "ZeRO",
            "lost at scale",
            "exposed comm",
            "tokens/s",
            "memory/GPU",
        ],
    )
    for r in reports:
        row = SweepRow.of(r)
        t.rows.append(
            [
                str(row.dp),
                *([f"{r.layout.gpus:,}"] if r.layout is not None else []),
                str(row.nodes),
                f"{row.global_batch:,}",
                f"{row.zero_stage} ({row.recompute})",
                fmt_seconds(row.step_seconds),
                fmt_seconds(row.compute_seconds),
                fmt_seconds(row.exposed_comm_seconds),
                fmt_seconds(row.losses_seconds),
                *([fmt_seconds(row.bubble_seconds or 0.0)] if first.layout is not None else []),
                fmt_seconds(row.comm_seconds),
                pct(row.scaling_efficiency),
                f"{row.tokens_per_second:,.0f}",
                pct(row.mfu),
                gb(row.memory_bytes),
                "yes" if row.fits else "NO",
            ]
        )
        t.data.append(row.model_dump(exclude_none=True))  # gpus and bubble_seconds: a layout's only
    batches = {r.setup.global_batch for r in reports}
    if not fixed_global_batch and len(batches) > 1:
        t.notes.append(
            f"the global batch B = b x a x D grows with DP ({min(batches):,} to {max(batches):,} sequences): "
            "optimization changes; pass --global-batch to hold it"
        )
    if first.layout is not None:
        lay = first.layout
        t.notes.append(
            f"each DP replica is TP {lay.tp} x CP {lay.cp} x PP {lay.pp} = {lay.gpus // first.setup.dp} GPUs; "
            "nodes: the NVLink domains the whole job spans"
        )
    t.notes.append("efficiency: compute time / step time, against one GPU running the same per-GPU batch")
    t.notes.append(
        "lost at scale: compute slowed by overlapping collectives and waits for the slowest rank (docs/frameworks.md)"
    )
    return t


def sweep_chart(reports: Sequence[EstimateReport], columns: int = 80) -> str:
    """A terminal bar chart of scaling efficiency by DP size, within `columns`, on a scale that spans the values
    (nice round bounds around them, printed above the bars) so that 99.6% and 97.0% look different."""
    from dpcost.render.charts import nice_ticks

    label = max(len(str(r.setup.dp)) for r in reports)
    width = max(10, min(50, columns - label - 16))
    effs = [100 * (r.time.scaling_efficiency if r.time else 0.0) for r in reports]
    span = max(max(effs) - min(effs), 0.5)
    ticks = nice_ticks(max(0.0, min(effs) - 0.2 * span), min(100.0, max(effs) + 0.05 * span))
    lo, hi = ticks[0], ticks[-1]
    lines = [f"scaling efficiency (bars from {lo:g}% to {hi:g}%)"]
    for r, eff in zip(reports, effs, strict=True):
        bar = "#" * max(1, round((eff - lo) / (hi - lo) * width))
        lines.append(f"  DP {r.setup.dp:>{label}} |{bar:<{width}}| {eff / 100:6.1%}")
    return "\n".join(lines) + "\n"


def sweep_svg(reports: Sequence[EstimateReport]) -> str:
    """Two small charts (efficiency, and step time: as reported, ideal, serial) against log2 DP, as SVG text."""
    dps = [r.setup.dp for r in reports]
    times = [r.time for r in reports if r.time is not None]
    width, height, pad = 360, 240, 44
    lo, hi = math.log2(min(dps)), math.log2(max(dps)) if max(dps) > min(dps) else math.log2(min(dps)) + 1

    def x(dp: int) -> float:
        return pad + (math.log2(dp) - lo) / (hi - lo) * (width - 2 * pad)

    def panel(ox: int, title: str, series: list[tuple[str, list[float], str]], top: float, unit: str) -> list[str]:
        out = [
            f'<g transform="translate({ox},0)">',
            f'<text x="{pad}" y="18" font-size="13">{title}</text>',
            f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="black"/>',
            f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>',
            f'<text x="4" y="{pad + 4}" font-size="10">{top:.3g}{unit}</text>',
            f'<text x="4" y="{height - pad}" font-size="10">0</text>',
        ]
        for dp in dps:
            out.append(f'<text x="{x(dp) - 8:.1f}" y="{height - pad + 14}" font-size="10">{dp}</text>')
        for i, (name, values, color) in enumerate(series):
            pts = " ".join(
                f"{x(dp):.1f},{height - pad - v / top * (height - 2 * pad):.1f}"
                for dp, v in zip(dps, values, strict=True)
            )
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>')
            out.append(f'<text x="{width - pad - 90}" y="{pad + 12 * i}" font-size="10" fill="{color}">{name}</text>')
        out.append(f'<text x="{width / 2 - 30}" y="{height - 8}" font-size="11">DP size (GPUs)</text></g>')
        return out

    eff = [100 * t.scaling_efficiency for t in times]
    steps = [[t.step_seconds for t in times], [t.ideal_seconds for t in times], [t.serial_seconds for t in times]]
    body = panel(0, "scaling efficiency", [("efficiency", eff, "#1f77b4")], 100.0, "%")
    body += panel(
        width,
        "step time",
        [("step", steps[0], "#d62728"), ("ideal", steps[1], "#2ca02c"), ("serial", steps[2], "#7f7f7f")],
        max(max(s) for s in steps) * 1.05,
        " s",
    )
    head = f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * width}" height="{height}" font-family="sans-serif">'
    return "\n".join([head, '<rect width="100%" height="100%" fill="white"/>', *body, "</svg>"]) + "\n"
