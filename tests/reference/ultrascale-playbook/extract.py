#!/usr/bin/env python3
"""Rebuild runs.csv from the Ultra-Scale Playbook's benchmark figure (the provenance of every row; see README.md),
and collectives.csv from its figure of the cluster's collectives.

    python tests/reference/ultrascale-playbook/extract.py benchmarks_interactive.html > runs.csv
    python tests/reference/ultrascale-playbook/extract.py --collectives pp_comm_bandwidth.html > collectives.csv

The figure (assets/data/benchmarks/benchmarks_interactive.html of the Hugging Face Space nanotron/ultrascale-playbook,
git blob 0e7e20b45fea66e3f0d946e63b1c669f583beab6) is one Plotly call. Each configuration is a point whose hover text
prints its layout and its measurement; the figure draws each point twice (a marker trace and an overlay trace with the
same text), so the two copies are one row. The model is the subplot's column title (x axis 'x' 1B, 'x2' 3B, 'x3' 8B,
'x4' 80B). Nothing is converted: the values are the hover text's, 'nan' (a run that crashed or ran out of memory, the
figure's grey 'crashed/oom' markers) left empty with status 'failed'.

The collectives figure (assets/data/benchmarks/pp_comm_bandwidth.html, git blob 484efe3f) draws, for all-reduce,
all-gather and reduce-scatter of 256MB on 1-64 nodes, the median bandwidth as a line and the 5th to 95th percentile as
a shaded band: each band trace runs up the 95th percentiles and back down the 5th, before its operation's line.
"""

from __future__ import annotations

import csv
import json
import re
import sys

MODEL_OF_AXIS = {"x": "1B", "x2": "3B", "x3": "8B", "x4": "80B"}
FIELDS = ("Nodes", "MBS", "GradAcc", "GBS", "DP", "PP", "TP", "ZeRO", "MFU", "tok/s/gpu", "GPU memory")
COLUMNS = ("model", "nodes", "dp", "tp", "pp", "micro_batch", "grad_accum", "global_batch", "zero", "status",
           "mfu_pct", "tokens_per_s_per_gpu", "gpu_memory_gb")  # fmt: skip


def points(html: str) -> list[tuple[str, str]]:
    """(model, hover text) of every point, one copy each, in the figure's order."""
    seen: set[tuple[str, str]] = set()
    out = []
    for trace in traces(html):
        for text in trace.get("text") or []:
            key = (MODEL_OF_AXIS[trace["xaxis"]], text)
            if isinstance(text, str) and "Nodes:" in text and key not in seen:
                seen.add(key)
                out.append(key)
    return out


def row(model: str, text: str) -> dict[str, str]:
    text = text.replace("\t", " ")
    found = {k: v.strip() for k, v in re.findall(r"(" + "|".join(map(re.escape, FIELDS)) + r"):\s*([^<]*)", text)}
    value = {k: found[k].replace(",", "").removesuffix("%").removesuffix(" GB").strip() for k in FIELDS}
    failed = value["tok/s/gpu"] == "nan"
    return {
        "model": model,
        "nodes": value["Nodes"],
        "dp": value["DP"],
        "tp": value["TP"],
        "pp": value["PP"],
        "micro_batch": value["MBS"],
        "grad_accum": value["GradAcc"],
        "global_batch": value["GBS"],
        "zero": value["ZeRO"],
        "status": "failed" if failed else "ran",
        "mfu_pct": "" if failed else value["MFU"],
        "tokens_per_s_per_gpu": "" if failed else value["tok/s/gpu"],
        "gpu_memory_gb": "" if failed else value["GPU memory"],
    }


def traces(html: str) -> list[dict]:
    start = html.index("[", html.index("Plotly.newPlot("))
    found, _ = json.JSONDecoder().raw_decode(html, start)
    return list(found)


def collectives(html: str) -> list[dict[str, str]]:
    """One row per operation and node count: the median and the 5th and 95th percentiles, as drawn."""
    nodes = (1, 2, 4, 8, 16, 32, 64)  # the x axis's ticktext
    out, band = [], None
    for trace in traces(html):
        if "name" not in trace:  # a band: 95th percentiles up the x axis, then the 5th back down
            band = trace["y"]
            continue
        assert band is not None and len(band) == 2 * len(nodes)
        low, high = band[len(nodes) :][::-1], band[: len(nodes)]
        for n, median, p5, p95 in zip(nodes, trace["y"], low, high, strict=True):
            out.append({"op": OP_OF_NAME[trace["name"]], "nodes": str(n), "ranks": str(8 * n), "size": "256MB",
                        "median_GBps": f"{median:.2f}", "p5_GBps": f"{p5:.2f}", "p95_GBps": f"{p95:.2f}"})  # fmt: skip
    return out


OP_OF_NAME = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter"}


def main() -> int:
    args = sys.argv[1:]
    with open(args[-1], encoding="utf-8") as f:
        html = f.read()
    if args[0] == "--collectives":
        rows = collectives(html)
        out = csv.DictWriter(sys.stdout, list(rows[0]), lineterminator="\n")
        out.writeheader()
        out.writerows(rows)
        return 0
    out = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")
    out.writeheader()
    for model, text in points(html):
        out.writerow(row(model, text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
