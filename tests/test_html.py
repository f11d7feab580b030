"""The html report's charts: no label is clipped or drawn over another, whatever the plan, and the memory chart puts
the stages that can fit on a readable scale next to the HBM line (issue 15).

Two ways of looking: in pure Python, each <text>'s box is estimated with the charts' own `text_width` (fast, over many
plans and made-up extremes); in headless Chromium, the page measures every <text> against its <svg> with the fonts
the browser really has, and the Python estimate is checked to be no narrower than what the browser draws.
"""

from __future__ import annotations

import html
import itertools
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcost.cli import app
from dpcost.engine.report import EstimateReport, Memory, StageRow
from dpcost.render.charts import (
    SIZE,
    estimate_charts,
    memory_axis_top,
    memory_svg,
    nice_ticks,
    scaling_svg,
    text_width,
    timeline_svg,
)
from dpcost.units import fmt_bytes

SVG = "{http://www.w3.org/2000/svg}"
Box = tuple[float, float, float, float]  # left, top, right, bottom


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "120", "NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def report(*args: str) -> EstimateReport:
    code, out, err = invoke("estimate", *args, "--format", "json")
    assert code == 0, err
    return EstimateReport.model_validate_json(out)


def svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, re.S)


# ------------------------------------------------------------------------------------------ pure Python


def text_boxes(svg: str) -> tuple[tuple[float, float], list[tuple[str, Box]]]:
    """The SVG's size (from its viewBox) and each <text>'s box as the charts' own width estimate puts it."""
    root = ET.fromstring(svg)
    _, _, width, height = (float(v) for v in root.attrib["viewBox"].split())
    root_size = float(root.attrib.get("font-size", SIZE))
    out = []
    for t in root.iter(f"{SVG}text"):
        size = float(t.attrib.get("font-size", root_size))
        bold = t.attrib.get("font-weight") == "bold"
        anchor = t.attrib.get("text-anchor", "start")
        x, y = float(t.attrib["x"]), float(t.attrib["y"])
        spans = list(t.iter(f"{SVG}tspan"))
        lines = [(s.text or "", float(s.attrib.get("dy", 0))) for s in spans] if spans else [(t.text or "", 0.0)]
        widest = max(text_width(line, size, bold) for line, _ in lines)
        left = x - {"start": 0.0, "middle": widest / 2, "end": widest}[anchor]
        depth = sum(dy for _, dy in lines)
        out.append(
            (" / ".join(line for line, _ in lines), (left, y - 0.95 * size, left + widest, y + depth + 0.25 * size))
        )
    return (width, height), out


def layout_problems(svg: str) -> list[str]:
    """Text outside the SVG, or two texts over each other, by the estimate."""
    (width, height), boxes = text_boxes(svg)
    problems = [
        f"{text!r} at {box} outside 0 0 {width} {height}"
        for text, box in boxes
        if box[0] < 0 or box[1] < 0 or box[2] > width or box[3] > height
    ]
    for (a, p), (b, q) in itertools.combinations(boxes, 2):
        if min(p[2], q[2]) - max(p[0], q[0]) > 1 and min(p[3], q[3]) - max(p[1], q[1]) > 1:
            problems.append(f"{a!r} over {b!r}")
    return problems


PLANS = [
    ("--model", "llama-70b", "--dp", "512"),
    ("--model", "deepseek-v3", "--dp", "512", "--topology", "dgx-b200"),
    ("--model", "llama-8b", "--mode", "inference", "--batch", "16", "--dp", "64"),
    ("--model", "llama-405b", "--mode", "inference", "--batch", "16", "--dp", "64"),
    ("--model", "llama-405b", "--dp", "8"),  # fits nowhere
    ("--model", "mixtral-8x7b", "--dp", "16384", "--framework", "deepspeed", "--topology", "rack-pod-h100"),
    ("--model", "gpt3-175b", "--dp", "1", "--framework", "megatron", "--zero", "0"),
    ("--model", "llama-8b", "--dp", "8", "--framework", "ddp", "--topology", "gb200-nvl72"),
]


@pytest.mark.parametrize("plan", PLANS, ids=lambda p: " ".join(p[1::2]))
def test_every_label_of_a_plan_fits_by_the_estimate(plan: tuple[str, ...]) -> None:
    charts = estimate_charts(report(*plan))
    assert charts
    for caption, svg in charts:
        assert layout_problems(svg) == [], caption


def _stage(stage: int, total: float, hbm: float) -> StageRow:
    part = int(total / 7)
    return StageRow(
        stage=stage, params_bytes=part, grads_bytes=part, optimizer_bytes=part, activations_bytes=part,
        transient_bytes=part, buffers_bytes=part, allocated_bytes=6 * part, fragmentation_bytes=part // 2,
        reserved_bytes=6 * part + part // 2, context_bytes=part - part // 2, overhead_bytes=part,
        total_bytes=int(total), cpu_bytes=0, fits=total <= hbm, max_micro_batch=0, peak_phase="backward",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("hbm", "totals"),
    [
        (80e9, [1e21, 5e20, 3, 0]),  # huge next to tiny
        (80e9, [0, 0, 0, 0]),
        (1, [5, 4, 3, 2]),  # a 1-byte GPU
        (0, [0, 0, 0, 0]),
        (1e18, [9e17, 8e17, 2e18, 1e15]),
        (80e9, [79.9e9, 80.1e9, 81e9, 9e13]),  # just under and over the HBM
    ],
)
def test_memory_charts_at_the_extremes_fit_their_labels(hbm: float, totals: list[float]) -> None:
    memory = Memory(
        hbm_bytes=int(hbm), recipe="x", recompute="none", stages=[_stage(i, t, hbm) for i, t in enumerate(totals)]
    )
    for chosen in (None, 0, 3):
        svg = memory_svg(memory, chosen)
        assert layout_problems(svg) == []
        assert svg.count(">→ ") == svg.count("in all, beyond the axis</title>")  # an arrow on each cut bar's total


def test_long_names_many_bars_and_extreme_times_fit_their_labels() -> None:
    base = report("--model", "llama-70b", "--dp", "512")
    assert base.time is not None
    first = base.communication.collectives[0]
    long = "parameters (forward, expert-parallel all-to-all dispatch across 64 ranks of the MoE layer)"
    for n, seconds, purpose in [(12, 1e-12, long), (3, 1e6, "gradients"), (20, 0.0, "x" * 80)]:
        calls = [first.model_copy(update={"seconds": seconds * (i + 1), "purpose": purpose, "occurrences": i + 1})
                 for i in range(n)]  # fmt: skip
        communication = base.communication.model_copy(update={"collectives": calls})
        odd = base.time.model_copy(
            update={"step_seconds": 1e7, "compute_seconds": 1e-9, "exposed_comm_seconds": 1e-12, "losses_seconds": 9e6}
        )
        for time in (base.time, odd):
            svg = timeline_svg(base.model_copy(update={"communication": communication, "time": time}))
            assert layout_problems(svg) == []
    # a sweep of one size, of 30 sizes a step apart, and of efficiencies from 100% to nearly 0
    for effs in ([1.0], [1.0, 0.999, 0.2, 0.0001], [0.5] * 30):
        reports = [
            base.model_copy(
                update={
                    "setup": base.setup.model_copy(update={"dp": 2**i if len(effs) < 20 else 8 + i}),
                    "time": base.time.model_copy(update={"scaling_efficiency": e}),
                }
            )
            for i, e in enumerate(effs)
        ]
        assert layout_problems(scaling_svg(reports)) == []


def _bar_ends(svg: str) -> tuple[float, float, dict[str, float]]:
    """The plot's left and right ends (first and last tick) and, per lane name, where its bar ends."""
    root = ET.fromstring(svg)
    ticks = sorted(float(g.attrib["x1"]) for g in root.iter(f"{SVG}line") if g.attrib.get("stroke") == "#ddd")
    ends: dict[str, float] = {}
    for rect in root.iter(f"{SVG}rect"):
        title = rect.find(f"{SVG}title")
        if title is not None and title.text and ":" in title.text:
            name = title.text.split(":")[0]
            ends[name] = max(ends.get(name, 0.0), float(rect.attrib["x"]) + float(rect.attrib["width"]))
    return ticks[0], ticks[-1], ends


def test_the_memory_chart_shows_the_stage_that_fits_next_to_the_hbm_line() -> None:
    r = report("--model", "llama-70b", "--dp", "512")
    hbm = r.memory.hbm_bytes
    axis = nice_ticks(0, memory_axis_top(r.memory))[-1]
    assert hbm < axis < 3 * hbm  # was 1.5 TB, from ZeRO-0's 1.34 TB
    svg = memory_svg(r.memory, r.setup.zero_stage)
    assert ">HBM 84.9 GB</text>" in svg and 'stroke-dasharray="5,3"' in svg
    assert ">ZeRO-3 (costed)</text>" in svg and ">59.0 GB fits</text>" in svg
    assert all(f">→ {v} NO</text>" in svg for v in ("1.32 TB", "334 GB", "194 GB"))  # cut, their totals written
    assert svg.count('stroke="#fff" stroke-width="2"') == 2 * 3  # a break mark (two strokes) on each cut bar
    lo, hi, ends = _bar_ends(svg)
    assert (ends["ZeRO-3 (costed)"] - lo) / (hi - lo) > 0.15  # 59.0 GB of a 100 GB axis: a bar, not a sliver
    dashed = next(ln for ln in ET.fromstring(svg).iter(f"{SVG}line") if ln.attrib.get("stroke-dasharray"))
    assert float(dashed.attrib["x1"]) == pytest.approx(lo + hbm / axis * (hi - lo), abs=0.1)


def test_when_no_stage_fits_the_axis_reaches_the_smallest() -> None:
    r = report("--model", "llama-405b", "--dp", "8")
    assert not any(m.fits for m in r.memory.stages)
    smallest = min(r.memory.stages, key=lambda m: m.total_bytes)
    svg = memory_svg(r.memory, r.setup.zero_stage)
    assert f">{fmt_bytes(smallest.total_bytes)} NO</text>" in svg  # whole, not cut
    assert ">HBM 84.9 GB</text>" in svg and svg.count("→") == 3


def test_the_step_chart_writes_its_values_where_they_fit() -> None:
    r = report("--model", "llama-70b", "--dp", "512")
    svg = timeline_svg(r)
    assert ">4.30 s</text>" in svg  # the step, after its bar
    for text in ("compute 3.52 s", "exposed communication 37.7 ms", "lost at scale 734 ms"):  # in the legend
        assert f">{text}</text>" in svg
    assert layout_problems(svg) == []


def test_an_inference_plan_has_a_memory_chart() -> None:
    [(caption, svg)] = estimate_charts(
        report("--model", "llama-8b", "--mode", "inference", "--batch", "16", "--dp", "64")
    )
    assert caption == "Memory per GPU for inference (HBM 84.9 GB)"
    assert ">25.5 GB fits on one GPU</text>" in svg and ">HBM 84.9 GB</text>" in svg
    [(_, svg)] = estimate_charts(report("--model", "llama-405b", "--mode", "inference", "--batch", "16", "--dp", "64"))
    assert ">→ 859 GB NO: 16 GPUs per replica</text>" in svg and ">53.7 GB</text>" in svg


# ------------------------------------------------------------------------------------------ in a browser


def _browser() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)


# Run in the page after the charts: every <text>'s box against its <svg>'s, and each line's drawn width, written
# into a <pre> that --dump-dom prints.
MEASURE = """<script>
(() => {
  const out = [];
  document.querySelectorAll("svg").forEach((svg, i) => {
    const s = svg.getBoundingClientRect();
    svg.querySelectorAll("text").forEach((t) => {
      const b = t.getBoundingClientRect();
      const style = getComputedStyle(t);
      const lines = t.querySelector("tspan") ? [...t.querySelectorAll("tspan")] : [t];
      out.push({
        svg: i, text: t.textContent, size: parseFloat(style.fontSize), bold: parseInt(style.fontWeight) >= 600,
        widths: lines.map((e) => [e.textContent, e.getBBox().width]),
        box: [b.left - s.left, b.top - s.top, b.right - s.left, b.bottom - s.top], frame: [s.width, s.height],
      });
    });
  });
  const pre = document.createElement("pre");
  pre.id = "layout-check";
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
})();
</script>"""

PAGES = {
    "estimate": ["estimate", "--model", "llama-70b", "--dp", "512"],
    "estimate-b200": ["estimate", "--model", "deepseek-v3", "--dp", "512", "--topology", "dgx-b200"],
    "inference": ["estimate", "--model", "llama-8b", "--mode", "inference", "--batch", "16", "--dp", "64"],
    "fits-nowhere": ["estimate", "--model", "llama-405b", "--dp", "8"],
    "memory": ["memory", "--model", "llama-70b", "--dp", "512"],
    "sweep": ["sweep", "--model", "llama-70b", "--dp", "8..4096"],
    # `check` draws no chart: its html page is tables only
}


@pytest.mark.skipif(_browser() is None, reason="needs Debian's chromium package (.ci/run installs it as root)")
def test_no_text_overflows_its_chart_in_a_real_browser(tmp_path: Path) -> None:
    browser = _browser()
    assert browser is not None
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--window-size=1200,1000",
    ]  # fmt: skip
    jobs = {}
    for name, args in PAGES.items():
        page = tmp_path / f"{name}.html"
        code, _, err = invoke(*args, "--format", "html", "--output", str(page))
        assert code == 0, err
        text = page.read_text()
        assert svgs(text), name
        probe = tmp_path / f"{name}-probe.html"
        probe.write_text(text.replace("</body>", MEASURE + "</body>"))
        command = [browser, *flags, f"--user-data-dir={tmp_path / ('profile-' + name)}", "--dump-dom", probe.as_uri()]
        jobs[name] = (
            len(svgs(text)),
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True),
        )
    problems = []
    for name, (count, job) in jobs.items():
        dom, _ = job.communicate(timeout=120)
        assert job.returncode == 0, name
        found = re.search(r'<pre id="layout-check">(.*?)</pre>', dom, re.S)
        assert found, f"{name}: the measuring script did not run"
        texts = json.loads(html.unescape(found.group(1)))
        assert {t["svg"] for t in texts} == set(range(count)), name  # every chart measured
        for t in texts:
            x0, y0, x1, y1 = t["box"]
            width, height = t["frame"]
            if x0 < -0.5 or y0 < -0.5 or x1 > width + 0.5 or y1 > height + 0.5:
                problems.append(f"{name}, chart {t['svg']}: {t['text']!r} at {t['box']} overflows {t['frame']}")
            for line, drawn in t["widths"]:
                if drawn > text_width(line, t["size"], t["bold"]):
                    problems.append(f"{name}: {line!r} is {drawn:.1f} px wide, estimated narrower")
        for a, b in itertools.combinations(texts, 2):
            p, q = a["box"], b["box"]
            if a["svg"] == b["svg"] and min(p[2], q[2]) - max(p[0], q[0]) > 1 and min(p[3], q[3]) - max(p[1], q[1]) > 1:
                problems.append(f"{name}, chart {a['svg']}: {a['text']!r} over {b['text']!r}")
    assert problems == []
