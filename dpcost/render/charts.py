"""Inline SVG charts for the html report: memory by ZeRO stage, the step's time, where the compute goes (the per-op
model), and the scaling curve of a sweep.

Plain SVG text, no script and no fonts or styles fetched from anywhere: the page works offline. Every number
drawn or printed is a field of the report (engine/report.py); this module only places it.

Text is laid out before it is drawn: each label is measured with `text_width` (a little wider than DejaVu Sans,
the widest common default sans-serif), long names wrap, the plot narrows to leave room for the values written after
the bars, and the SVG grows when that is not enough, so no label is clipped whatever the plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape
from typing import NamedTuple

from dpcost.engine.report import ComputeBreakdown, EstimateReport, Memory, Serving
from dpcost.units import fmt_bytes, fmt_seconds

__all__ = [
    "Lane",
    "compute_svg",
    "estimate_charts",
    "inference_svg",
    "memory_axis_top",
    "memory_svg",
    "nice_ticks",
    "scaling_svg",
    "text_width",
    "timeline_svg",
    "wrap",
]

COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]
SIZE = 12  # the charts' font size, px
FONT = f'font-family="sans-serif" font-size="{SIZE}"'
WIDTH = 900  # the charts' usual width; a chart grows wider only when its text needs it
HALO = 'stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke"'  # legible across a line

# Advance widths in em, rounded up from DejaVu Sans (Debian's sans-serif, wider than Helvetica or Arial); bold text
# is measured 12% wider, and every estimate has 5% more on top.
_EM = {
    **dict.fromkeys(" !\"'(),-./:;I[\\]`fijlrt|·", 0.47),
    **dict.fromkeys("0123456789abcdeghknopqsuvxyzEFJLPSTYZ$*?_{}µ", 0.65),
    **dict.fromkeys("ABCDGHKNOQRUVX", 0.8),
    **dict.fromkeys("#&+<=>^~×→", 0.84),
}


def text_width(text: str, size: float = SIZE, bold: bool = False) -> float:
    """A conservative estimate of `text`'s width in px at `size` px: never narrower than the browser draws it."""
    return 1.05 * (1.12 if bold else 1.0) * size * sum(_EM.get(ch, 1.0) for ch in text)


def wrap(text: str, room: float, size: float = SIZE, bold: bool = False) -> list[str]:
    """`text` in lines no wider than `room`, broken at spaces (a word wider than `room` is broken inside)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and text_width(f"{lines[-1]} {word}", size, bold) <= room:
            lines[-1] = f"{lines[-1]} {word}"
            continue
        while len(word) > 1 and text_width(word, size, bold) > room:
            cut = 1
            while cut < len(word) - 1 and text_width(word[: cut + 1], size, bold) <= room:
                cut += 1
            lines.append(word[:cut])
            word = word[cut:]
        lines.append(word)
    return lines or [""]


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


def _svg(width: float, height: float, label: str, body: list[str]) -> str:
    w, h = math.ceil(width), math.ceil(height)
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" '
            f'height="{h}" role="img" aria-label="{escape(label)}" {FONT}>',
            *body,
            "</svg>",
        ]
    )


def _lines(x: float, y: float, lines: Sequence[str], attrs: str = "") -> str:
    """One <text> of one or more lines, the first with its baseline at y."""
    if len(lines) == 1:
        return f'<text x="{x:.1f}" y="{y:.1f}"{attrs}>{escape(lines[0])}</text>'
    spans = "".join(
        f'<tspan x="{x:.1f}" dy="{0 if i == 0 else LINE}">{escape(line)}</tspan>' for i, line in enumerate(lines)
    )
    return f'<text x="{x:.1f}" y="{y:.1f}"{attrs}>{spans}</text>'


class Lane(NamedTuple):
    """One horizontal bar: its name (left of the axis), its stacked segments (what, value, colour) and the text
    written after its end."""

    name: str
    segments: Sequence[tuple[str, float, str]]
    text: str
    strong: bool = False  # the plan costed: its name in bold


LINE = 15  # baseline to baseline of wrapped lines
BAR = 18  # a bar's thickness
GAP = 6  # between a bar's end and its text
BREAK = 16  # a bar beyond the axis runs this far past its end, cut by a break mark
MARGIN = 6  # kept clear inside the SVG's edges
NAME_ROOM = 260  # names wider than this wrap
ARROW = "→ "  # before the total written after a bar that runs past the axis


def _bars(
    lanes: Sequence[Lane],
    top: float,
    fmt: Callable[[float], str],
    label: str,
    limit: tuple[str, float] | None = None,
    legend: Sequence[tuple[str, str]] | None = None,
) -> str:
    """Horizontal bars on one linear axis from 0 to a round value at or above `top`. A bar longer than the axis is
    cut past its end with a break mark, and an arrow goes before the text after it (its total). `limit` (a name and
    a value, the GPU's HBM) is drawn as a dashed line, the axis beyond it shaded. The legend is the segments' names
    unless given as (text, colour)."""
    names = [wrap(ln.name, NAME_ROOM, bold=ln.strong) for ln in lanes]
    left = MARGIN + max(text_width(s, bold=ln.strong) for ln, ls in zip(lanes, names, strict=True) for s in ls) + 8
    if legend is None:
        legend = list(dict.fromkeys((seg, color) for ln in lanes for seg, _, color in ln.segments))
    entries = [17 + text_width(text) for text, _ in legend]
    width = max(WIDTH, left + max(entries, default=0) + MARGIN)
    limit_half = text_width(f"{limit[0]}") / 2 if limit else 0.0
    totals = [sum(v for _, v, _ in ln.segments) for ln in lanes]

    def layout(width: float, count: int) -> tuple[list[float], float]:
        ticks = nice_ticks(0, top, count)
        axis = ticks[-1]
        right = max(text_width(fmt(axis)) / 2, limit_half) + MARGIN
        room = width - left - right
        plot = room
        for ln, total in zip(lanes, totals, strict=True):
            frac, extra, arrow = (1.0, BREAK, ARROW) if total > axis else (total / axis, 0.0, "")
            need = extra + GAP + text_width(arrow + ln.text) + MARGIN + 1  # 1 px against rounding
            if frac > 0:
                plot = min(plot, (width - left - need) / frac)
        return ticks, max(plot, 0.45 * room)

    for count in (5, 4, 3, 2):
        ticks, plot = layout(width, count)
        widest = max(text_width(fmt(t)) for t in ticks)
        if plot / (len(ticks) - 1) >= widest + 12:
            break
    axis = ticks[-1]

    def x(v: float) -> float:
        return left + min(v, axis) / axis * plot

    def end(total: float) -> float:
        return x(total) + (BREAK if total > axis else 0.0)

    # the text after each bar: wrapped into the room left, and the chart made wider if a word still does not fit
    texts = []
    for ln, total in zip(lanes, totals, strict=True):
        start = end(total) + GAP
        lines = wrap((ARROW if total > axis else "") + ln.text, width - MARGIN - start)
        width = max(width, start + max(text_width(s) for s in lines) + MARGIN)
        texts.append(lines)
    if limit is not None:
        width = max(width, x(limit[1]) + limit_half + MARGIN)

    pad = 32 if limit is not None else 14
    heights = [max(26, LINE * max(len(a), len(b)) + 11) for a, b in zip(names, texts, strict=True)]
    tops = [pad + sum(heights[:i]) for i in range(len(lanes))]
    bottom = pad + sum(heights)

    body = []
    if limit is not None and limit[1] < axis:
        body.append(
            f'<rect x="{x(limit[1]):.1f}" y="{pad - 6}" width="{x(axis) - x(limit[1]):.1f}" '
            f'height="{bottom - pad + 6}" fill="#fbeeee"><title>{escape(f"beyond {limit[0]}")}</title></rect>'
        )
    for tick in ticks:
        body.append(f'<line x1="{x(tick):.1f}" y1="{pad - 6}" x2="{x(tick):.1f}" y2="{bottom}" stroke="#ddd"/>')
        body.append(
            f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(fmt(tick)) if tick else '0'}</text>"
        )
    for ln, total, y, name_lines, value_lines in zip(lanes, totals, tops, names, texts, strict=True):
        weight = ' font-weight="bold"' if ln.strong else ""
        body.append(_lines(left - 8, y + 15, name_lines, f' text-anchor="end"{weight}'))
        start, cut = 0.0, "#bab0ac"
        for seg, value, color in ln.segments:
            if start < axis:
                body.append(
                    f'<rect x="{x(start):.1f}" y="{y + 3}" width="{max(x(start + value) - x(start), 0.5):.1f}" '
                    f'height="{BAR}" fill="{color}"><title>{escape(f"{ln.name}: {seg} {fmt(value)}")}</title></rect>'
                )
            if start <= axis < start + value:
                cut = color  # the segment the axis cuts: the stub past the axis is its colour
            start += value
        if total > axis:
            xa = x(axis)
            body.append(
                f'<rect x="{xa:.1f}" y="{y + 3}" width="{BREAK}" height="{BAR}" fill="{cut}">'
                f"<title>{escape(f'{ln.name}: {fmt(total)} in all, beyond the axis')}</title></rect>"
            )
            for dx in (4, 9):
                body.append(
                    f'<line x1="{xa + dx - 3:.1f}" y1="{y + 3 + BAR + 1}" x2="{xa + dx + 3:.1f}" y2="{y + 2}" '
                    'stroke="#fff" stroke-width="2"/>'
                )
        body.append(_lines(end(total) + GAP, y + 15, value_lines, f" {HALO}"))
    if limit is not None:
        name, value = limit
        mx = x(value)
        body.append(
            f'<line x1="{mx:.1f}" y1="{pad - 10}" x2="{mx:.1f}" y2="{bottom}" stroke="black" stroke-dasharray="5,3"/>'
        )
        lx = min(max(mx, MARGIN + limit_half), width - MARGIN - limit_half)
        body.append(f'<text x="{lx:.1f}" y="{pad - 14}" text-anchor="middle">{escape(name)}</text>')
    lx, ly, base = left, 0, bottom + 40
    for (entry, color), step in zip(legend, entries, strict=True):
        if lx + step > width - MARGIN and lx > left:
            lx, ly = left, ly + 18
        body.append(f'<rect x="{lx:.1f}" y="{base + ly - 10}" width="12" height="12" fill="{color}"/>')
        body.append(f'<text x="{lx + 17:.1f}" y="{base + ly}">{escape(entry)}</text>')
        lx += step + 18
    last = base + ly if legend else bottom + 16
    notes = []
    if limit is not None and limit[1] < axis:
        notes.append(f"shaded: more than {limit[0]}")
    if any(total > axis for total in totals):
        notes.append("a bar cut by // runs on past the axis, to the total written after it")
    if notes:
        lines = wrap("; ".join(notes) + ".", width - MARGIN - left)
        body.append(_lines(left, last + 22, lines, ' fill="#555"'))
        last += 22 + LINE * (len(lines) - 1)
    return _svg(width, last + 10, label, body)


def memory_axis_top(memory: Memory) -> float:
    """How far the memory chart's axis must reach: a tenth above the HBM and the stages that can fit (the largest
    that fits; when none does, the smallest), so that a plan that fits is drawn at a readable size next to the HBM
    line. Stages beyond are cut, their totals written out."""
    fitting = [m.total_bytes for m in memory.stages if m.fits]
    reach = max(fitting) if fitting else min((m.total_bytes for m in memory.stages), default=0)
    return 1.1 * max(memory.hbm_bytes, reach)


def memory_svg(memory: Memory, chosen: int | None) -> str:
    """Memory per GPU at each ZeRO stage, stacked by what holds it, against the GPU's HBM (a dashed line)."""
    parts = ("params", "grads", "optimizer", "activations", "transient", "buffers", "overhead")
    lanes = []
    for m in memory.stages:
        values = (m.params_bytes, m.grads_bytes, m.optimizer_bytes, m.activations_bytes, m.transient_bytes,
                  m.buffers_bytes, m.overhead_bytes)  # fmt: skip
        segments = [(name, float(v), COLORS[i]) for i, (name, v) in enumerate(zip(parts, values, strict=True))]
        mark = " (costed)" if m.stage == chosen else ""
        total = f"{fmt_bytes(m.total_bytes)} {'fits' if m.fits else 'NO'}"
        lanes.append(Lane(f"ZeRO-{m.stage}{mark}", segments, total, m.stage == chosen))
    return _bars(
        lanes,
        memory_axis_top(memory),
        fmt_bytes,
        "memory per GPU by ZeRO stage",
        (f"HBM {fmt_bytes(memory.hbm_bytes)}", memory.hbm_bytes),
    )


def inference_svg(inference: Serving, hbm_bytes: int) -> str:
    """Inference: one replica's weights, KV cache and overhead against the GPU's HBM; per GPU too when a replica
    needs more than one."""
    i, g = inference, inference.gpus_per_replica
    parts = [("weights", i.weights_bytes, COLORS[0]), ("KV cache", i.kv_cache_bytes, COLORS[3]),
             ("overhead", i.overhead_bytes, COLORS[5])]  # fmt: skip
    verdict = "fits on one GPU" if i.fits else f"NO: {g} GPUs per replica"
    lanes = [Lane("one replica", [(n, float(v), c) for n, v, c in parts], f"{fmt_bytes(i.total_bytes)} {verdict}")]
    if g > 1:
        lanes.append(
            Lane(f"per GPU ({g} per replica)", [(n, v / g, c) for n, v, c in parts], fmt_bytes(i.per_gpu_bytes))
        )
    top = 1.1 * max(hbm_bytes, i.per_gpu_bytes)  # the GPU's share on a readable scale; a whole replica may run past
    return _bars(lanes, top, fmt_bytes, "inference memory per GPU", (f"HBM {fmt_bytes(hbm_bytes)}", hbm_bytes))


def timeline_svg(report: EstimateReport) -> str:
    """The step: compute, then the communication left exposed and the losses at scale (their values in the
    legend); below it each collective's time per step (the calls overlap the compute, so these bars are durations,
    not start times), and their serial sum."""
    t = report.time
    assert t is not None
    step = [
        ("compute", t.compute_seconds, COLORS[0]),
        ("exposed communication", t.exposed_comm_seconds, COLORS[2]),
        ("lost at scale", t.losses_seconds, COLORS[1]),
    ]
    lanes = [Lane("step (as scheduled)", step, fmt_seconds(t.step_seconds), strong=True)]
    for i, c in enumerate(report.communication.collectives):
        name = f"{c.op} ({c.purpose})" + (f" x{c.occurrences}" if c.occurrences > 1 else "")
        lanes.append(Lane(name, [(f"{c.op} {c.purpose}", c.seconds, COLORS[3 + i % 6])], fmt_seconds(c.seconds)))
    lanes.append(
        Lane("communication, serial sum", [("communication", t.comm_seconds, "#bab0ac")], fmt_seconds(t.comm_seconds))
    )
    top = max([t.step_seconds, t.comm_seconds] + [c.seconds for c in report.communication.collectives]) * 1.02
    return _bars(
        lanes,
        top,
        fmt_seconds,
        "the step's time: compute, exposed communication, losses at scale, each collective",
        legend=[(f"{name} {fmt_seconds(value)}", color) for name, value, color in step],
    )


def compute_svg(compute: ComputeBreakdown) -> str:
    """--compute-model ops: each part's share of one GPU's compute per step, one bar each on an axis from 0 to 100%,
    its share and seconds written after it."""
    lanes = [
        Lane(part.part, [("share", part.share, color)], f"{part.share:.1%} ({fmt_seconds(part.seconds_per_step)})")
        for part, color in zip(compute.parts, COLORS, strict=False)
    ]

    def share(v: float) -> str:
        return f"{v:.1%}".replace(".0%", "%")  # ticks 20%, tooltips 73.7%

    return _bars(lanes, 1.0, share, "share of one GPU's compute per step, by part", legend=[])


def scaling_svg(reports: Sequence[EstimateReport]) -> str:
    """Scaling efficiency against DP size (log scale), on an axis that spans the values so differences show."""
    points = sorted((r.setup.dp, 100 * r.time.scaling_efficiency) for r in reports if r.time is not None)
    width, height, right, top_pad, bottom, inset = WIDTH, 350, 30, 44, 50, 28
    lo_v, hi_v = min(v for _, v in points), max(v for _, v in points)
    span = max(hi_v - lo_v, 0.5)
    ticks = nice_ticks(max(0.0, lo_v - 0.1 * span), min(100.0, hi_v + 0.1 * span))
    y0, y1 = ticks[0], ticks[-1]
    left = max(70.0, MARGIN + max(text_width(f"{t:g}%") for t in ticks) + 6)
    lo_x, hi_x = math.log2(points[0][0]), math.log2(points[-1][0])
    hi_x = hi_x if hi_x > lo_x else lo_x + 1

    def x(dp: int) -> float:
        return left + inset + (math.log2(dp) - lo_x) / (hi_x - lo_x) * (width - left - right - 2 * inset)

    def y(v: float) -> float:
        return top_pad + (y1 - v) / (y1 - y0) * (height - top_pad - bottom)

    body = []
    for tick in ticks:
        body.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{width - right}" y2="{y(tick):.1f}" stroke="#ddd"/>')
        body.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g}%</text>')
    title = "scaling efficiency (%)"
    body.append(f'<text x="{MARGIN}" y="16">{title}</text>')
    # the boxes of the text placed so far: a DP or value label that would overlap one is left out (the value is
    # still in the point's tooltip)
    placed: list[tuple[float, float, float, float]] = [(MARGIN, 4.0, MARGIN + text_width(title), 20.0)]

    def free(box: tuple[float, float, float, float]) -> bool:
        return not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed)

    base = height - bottom + 18
    for dp, _ in points:
        half = text_width(str(dp)) / 2
        box: tuple[float, float, float, float] = (x(dp) - half - 3, base - 12, x(dp) + half + 3, base + 4)
        if free(box):
            placed.append(box)
            body.append(f'<text x="{x(dp):.1f}" y="{base}" text-anchor="middle">{dp}</text>')
    body.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 10}" text-anchor="middle">DP size (GPUs, '
        "log scale)</text>"
    )
    path = " ".join(f"{x(dp):.1f},{y(v):.1f}" for dp, v in points)
    body.append(f'<polyline fill="none" stroke="{COLORS[0]}" stroke-width="2" points="{path}"/>')
    for dp, v in points:
        body.append(
            f'<circle cx="{x(dp):.1f}" cy="{y(v):.1f}" r="4" fill="{COLORS[0]}">'
            f"<title>DP {dp}: {v:.1f}%</title></circle>"
        )
        label, w = f"{v:.1f}%", text_width(f"{v:.1f}%", 10)
        for at in (y(v) - 9, y(v) + 17):  # above the point, else below it
            box = (x(dp) - w / 2, at - 10, x(dp) + w / 2, at + 3)
            if free(box):
                placed.append(box)
                body.append(
                    f'<text x="{x(dp):.1f}" y="{at:.1f}" text-anchor="middle" font-size="10" {HALO}>{label}</text>'
                )
                break
    return _svg(width, height, "scaling efficiency against DP size", body)


def estimate_charts(report: EstimateReport) -> list[tuple[str, str]]:
    """The html report's charts for one plan: memory by stage, the step's time and, with the per-op model, where the
    compute goes (training); or the memory of one replica (inference)."""
    if report.time is None:
        if report.inference is None:
            return []
        hbm = report.memory.hbm_bytes
        return [(f"Memory per GPU for inference (HBM {fmt_bytes(hbm)})", inference_svg(report.inference, hbm))]
    charts = [
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
    if (c := report.compute) is not None:
        charts.append(
            (
                f"Compute, op by op: each part's share of one GPU's compute per step "
                f"({fmt_seconds(c.single_gpu_step_seconds)}, no communication); MFU {c.mfu:.1%}, HFU {c.hfu:.1%}",
                compute_svg(c),
            )
        )
    return charts
