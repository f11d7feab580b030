"""Inline SVG charts for the html report: memory by ZeRO stage, the step's time, and the scaling curve of a sweep.

Plain SVG text, no script and no fonts or styles fetched from anywhere: the page works offline. Every number
drawn or printed is a field of the report (engine/report.py); this module only places it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from dpcost.engine.report import EstimateReport, Memory
from dpcost.units import fmt_bytes, fmt_seconds

__all__ = ["memory_svg", "nice_ticks", "scaling_svg", "timeline_svg"]

COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]
FONT = 'font-family="sans-serif" font-size="12"'


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 times a power of ten."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(lo / step) * step
    out = []
    v = first
    while v <= hi + step * 1e-9:
        out.append(round(v, 12))
        v += step
    if out[-1] < hi:
        out.append(round(out[-1] + step, 12))
    return out


def _svg(width: int, height: int, label: str, body: list[str]) -> str:
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-label="{escape(label)}" {FONT}>',
            *body,
            "</svg>",
        ]
    )


def _bars(
    lanes: Sequence[tuple[str, Sequence[tuple[str, float, str]], str]],
    top: float,
    fmt: Callable[[float], str],
    label: str,
    marker: tuple[str, float] | None = None,
) -> str:
    """Horizontal bars: one lane per (name, [(segment, value, colour)], text at its end), on one linear axis."""
    left, right, lane, pad = 230, 150, 26, 30
    width = 900
    plot = width - left - right
    legend = list(dict.fromkeys((seg, color) for _, segments, _ in lanes for seg, _, color in segments))
    places, lx, ly = [], left, 0
    for seg, _ in legend:
        step = 30 + 7 * len(seg)
        if lx + step > width and lx > left:
            lx, ly = left, ly + 18
        places.append((lx, ly))
        lx += step
    height = pad + lane * len(lanes) + 40 + ly + 18
    ticks = nice_ticks(0, top)
    top = ticks[-1]

    def x(v: float) -> float:
        return left + v / top * plot

    body = []
    for tick in ticks:
        body.append(
            f'<line x1="{x(tick):.1f}" y1="{pad - 6}" x2="{x(tick):.1f}" y2="{pad + lane * len(lanes)}" stroke="#ddd"/>'
        )
        body.append(
            f'<text x="{x(tick):.1f}" y="{pad + lane * len(lanes) + 16}" text-anchor="middle">'
            f"{escape(fmt(tick)) if tick else '0'}</text>"
        )
    for row, (name, segments, text) in enumerate(lanes):
        y = pad + row * lane
        body.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{escape(name)}</text>')
        start = 0.0
        for seg, value, color in segments:
            body.append(
                f'<rect x="{x(start):.1f}" y="{y + 3}" width="{max(x(start + value) - x(start), 0.5):.1f}" '
                f'height="{lane - 8}" fill="{color}"><title>{escape(f"{name}: {seg} {fmt(value)}")}</title></rect>'
            )
            start += value
        body.append(f'<text x="{x(start) + 6:.1f}" y="{y + 15}">{escape(text)}</text>')
    if marker is not None:
        name, value = marker
        mx = x(value)
        body.append(
            f'<line x1="{mx:.1f}" y1="{pad - 10}" x2="{mx:.1f}" y2="{pad + lane * len(lanes)}" '
            'stroke="black" stroke-dasharray="5,3"/>'
        )
        body.append(f'<text x="{mx:.1f}" y="{pad - 14}" text-anchor="middle">{escape(name)}</text>')
    for (seg, color), (lx, dy) in zip(legend, places, strict=True):
        yy = pad + lane * len(lanes) + 40 + dy
        body.append(f'<rect x="{lx}" y="{yy - 10}" width="12" height="12" fill="{color}"/>')
        body.append(f'<text x="{lx + 17}" y="{yy}">{escape(seg)}</text>')
    return _svg(width, height, label, body)


def memory_svg(memory: Memory, chosen: int | None) -> str:
    """Memory per GPU at each ZeRO stage, stacked by what holds it, against the GPU's HBM."""
    parts = ("params", "grads", "optimizer", "activations", "buffers", "overhead")
    lanes = []
    for m in memory.stages:
        values = (m.params_bytes, m.grads_bytes, m.optimizer_bytes, m.activations_bytes, m.buffers_bytes,
                  m.overhead_bytes)  # fmt: skip
        segments = [(name, float(v), COLORS[i]) for i, (name, v) in enumerate(zip(parts, values, strict=True))]
        mark = " (costed)" if m.stage == chosen else ""
        lanes.append((f"ZeRO-{m.stage}{mark}", segments, f"{fmt_bytes(m.total_bytes)} {'fits' if m.fits else 'NO'}"))
    top = max([m.total_bytes for m in memory.stages] + [memory.hbm_bytes]) * 1.02
    return _bars(
        lanes, top, fmt_bytes, "memory per GPU by ZeRO stage", (f"HBM {fmt_bytes(memory.hbm_bytes)}", memory.hbm_bytes)
    )


def timeline_svg(report: EstimateReport) -> str:
    """The step: compute, then the communication left exposed and the losses at scale; below it each collective's
    time per step (the calls overlap the compute, so these bars are durations, not start times), and their serial
    sum."""
    t = report.time
    assert t is not None
    lanes: list[tuple[str, Sequence[tuple[str, float, str]], str]] = [
        (
            "step (as scheduled)",
            [
                ("compute", t.compute_seconds, COLORS[0]),
                ("exposed communication", t.exposed_comm_seconds, COLORS[2]),
                ("lost at scale", t.losses_seconds, COLORS[1]),
            ],
            f"{fmt_seconds(t.step_seconds)} ({fmt_seconds(t.exposed_comm_seconds)} exposed, "
            f"{fmt_seconds(t.losses_seconds)} lost at scale)",
        )
    ]
    for i, c in enumerate(report.communication.collectives):
        name = f"{c.op} ({c.purpose})" + (f" x{c.occurrences}" if c.occurrences > 1 else "")
        lanes.append((name, [(f"{c.op} {c.purpose}", c.seconds, COLORS[3 + i % 6])], fmt_seconds(c.seconds)))
    lanes.append(
        ("communication, serial sum", [("communication", t.comm_seconds, "#bab0ac")], fmt_seconds(t.comm_seconds))
    )
    top = max([t.step_seconds, t.comm_seconds] + [c.seconds for c in report.communication.collectives]) * 1.02
    return _bars(
        lanes, top, fmt_seconds, "the step's time: compute, exposed communication, losses at scale, each collective"
    )


def scaling_svg(reports: Sequence[EstimateReport]) -> str:
    """Scaling efficiency against DP size (log scale), on an axis that spans the values so differences show."""
    points = [(r.setup.dp, 100 * r.time.scaling_efficiency) for r in reports if r.time is not None]
    width, height, left, right, top_pad, bottom = 900, 340, 70, 30, 30, 50
    lo_v, hi_v = min(v for _, v in points), max(v for _, v in points)
    span = max(hi_v - lo_v, 0.5)
    ticks = nice_ticks(max(0.0, lo_v - 0.1 * span), min(100.0, hi_v + 0.1 * span))
    y0, y1 = ticks[0], ticks[-1]
    lo_x, hi_x = math.log2(points[0][0]), math.log2(points[-1][0])
    hi_x = hi_x if hi_x > lo_x else lo_x + 1

    def x(dp: int) -> float:
        return left + (math.log2(dp) - lo_x) / (hi_x - lo_x) * (width - left - right)

    def y(v: float) -> float:
        return top_pad + (y1 - v) / (y1 - y0) * (height - top_pad - bottom)

    body = []
    for tick in ticks:
        body.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{width - right}" y2="{y(tick):.1f}" stroke="#ddd"/>')
        body.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}%</text>')
    for dp, _ in points:
        body.append(f'<text x="{x(dp):.1f}" y="{height - bottom + 18}" text-anchor="middle">{dp}</text>')
    body.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 10}" text-anchor="middle">DP size (GPUs, '
        "log scale)</text>"
    )
    body.append(f'<text x="14" y="{top_pad - 12}">scaling efficiency (%)</text>')
    path = " ".join(f"{x(dp):.1f},{y(v):.1f}" for dp, v in points)
    body.append(f'<polyline fill="none" stroke="{COLORS[0]}" stroke-width="2" points="{path}"/>')
    for dp, v in points:
        body.append(
            f'<circle cx="{x(dp):.1f}" cy="{y(v):.1f}" r="4" fill="{COLORS[0]}">'
            f"<title>DP {dp}: {v:.1f}%</title></circle>"
        )
        body.append(f'<text x="{x(dp):.1f}" y="{y(v) - 9:.1f}" text-anchor="middle" font-size="10">{v:.1f}%</text>')
    return _svg(width, height, "scaling efficiency against DP size", body)


def estimate_charts(report: EstimateReport) -> list[tuple[str, str]]:
    """The html report's charts for one plan: memory by stage and the step's time (training)."""
    if report.time is None:
        return []
    return [
        (
            f"Memory per GPU by ZeRO stage (HBM {fmt_bytes(report.memory.hbm_bytes)})",
            memory_svg(report.memory, report.setup.zero_stage),
        ),
        (
            "The step: compute and the communication left exposed; each collective's time per step (its calls "
            "overlap the compute, so these are durations, not start times)",
            timeline_svg(report),
        ),
    ]
