"""At 80, 100 and 160 columns no table cuts a value: every command's terminal output is checked against its own
markdown rendering (the same tables, never fitted), row by row, and no line is wider than the terminal."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REFERENCE
from typer.testing import CliRunner

from dpcost.cli import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
LOG = str(EXAMPLES / "nccl-tests-h100-2n-all_reduce.log")

COMMANDS = {
    "estimate": ["estimate", "--model", "llama-70b", "--dp", "512"],
    "estimate-moe": ["estimate", "--model", "deepseek-v3", "--dp", "512", "--topology", "gb200-nvl72"],
    "estimate-inference": ["estimate", "--model", "llama-8b", "--dp", "64", "--mode", "inference", "--batch", "16"],
    "sweep": ["sweep", "--model", "llama-70b", "--dp", "8..4096"],
    "collective": ["collective", "--ranks", "16", "--sizes", "8,1M,1G"],
    "collective-compare": ["collective", "--compare", LOG, "--topology", "dgx-h100"],
    "memory": ["memory", "--params", "7.5B", "--largest-layer-params", "1B", "--dp", "64", "--recipe", "deepspeed"],
    "models": ["models"],
    "topologies": ["topologies"],
    "show-model": ["show", "model", "deepseek-v3"],
    "show-topology": ["show", "topology", "rack-pod-h100"],
    "check": ["check", str(EXAMPLES / "capacity-plan-failing.yaml")],
    "calibrate": ["calibrate", str(REFERENCE / "nccl-tests" / "h100-2n-all_reduce-nccltests309.log")],
}


def output(args: list[str], columns: int) -> str:
    result = CliRunner().invoke(app, args, env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout


def markdown_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header, rows) of every table in dpcost's markdown output."""
    tables = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|--"):
            header = _cells(line)
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(_cells(row))
            tables.append((header, rows))
    return tables


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [p.strip().replace("\\|", "|") for p in parts]


def squeeze(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("columns", [80, 100, 160])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_value_appears_whole(name: str, columns: int) -> None:
    args = COMMANDS[name]
    text = output(args, columns)
    flat = squeeze(text)
    lines = text.splitlines()
    # a line wider than the terminal only to hold one unbreakable word (a URL in a list), never a table row
    for line in lines:
        assert len(line.rstrip()) <= columns or " " not in line.strip(), (columns, line)
    left_out = {c for m in re.finditer(r"left out to fit \d+ columns: (.*?) \(a wider", flat) for c in m[1].split(", ")}
    md = CliRunner().invoke(app, [*args, "--format", "markdown"]).stdout
    for header, rows in markdown_tables(md):
        kept = [i for i, h in enumerate(header) if h not in left_out]
        assert kept, header
        for row in rows:
            cells = [row[i] for i in kept if row[i].strip()]
            if not cells:
                continue
            whole = squeeze(" ".join(cells))
            if len(header) > 3 and not name.startswith(("topologies", "calibrate")):
                # a table of values: the row is one line holding every kept value, whole, in order
                pattern = r"(?<!\S)" + r"\s+".join(re.escape(c) for c in cells) + r"(?!\S)"
                assert any(re.search(pattern, ln) for ln in lines), (columns, name, cells)
            else:
                # a table with a prose column: the row's words, in order, whatever the wrapping
                assert whole in flat, (columns, name, whole)


def test_the_issues_examples() -> None:
    """COLUMNS=100 dpcost sweep showed DP 16, 128 and 1024 as `1`; dpcost topologies cut names to a letter."""
    text = output(COMMANDS["sweep"], 100)
    dps = [ln.split()[0] for ln in text.splitlines() if re.match(r"\s+\d+\s+[\d,]+\s", ln)]
    assert dps == ["8", "16", "32", "64", "128", "256", "512", "1024", "2048", "4096"]
    assert "left out to fit 100 columns: nodes, compute, comm (serial)" in squeeze(text)
    text = output(["topologies"], 100)
    names = [ln.split()[0] for ln in text.splitlines() if re.match(r"  [a-z]", ln)]
    assert names[1:] == [
        "aws-p4de",
        "aws-p5",
        "aws-p5en",
        "aws-p6-b200",
        "dgx-a100",
        "dgx-a100-40gb",
        "dgx-b200",
        "dgx-b300",
        "dgx-h100",
        "gb200-nvl72",
        "gb300-nvl72",
        "gcp-a3-mega",
        "gcp-a3-ultra",
        "gcp-a4",
        "grand-teton-h100-96gb",
        "hgx-h200",
        "hgx-h800",
        "rack-pod-h100",
        "snellius-h100",
    ]


def test_wide_terminals_drop_nothing() -> None:
    for args in (COMMANDS["sweep"], COMMANDS["models"], COMMANDS["estimate"]):
        assert "left out" not in output(args, 240)


def test_chart_scale_shows_the_differences() -> None:
    # the schedule alone (no losses at scale), every FLOP at 40%: efficiencies 99.6% to 96.6%, a few points apart
    args = [*COMMANDS["sweep"], "--chart", "--overlap-slowdown", "0", "--sync-jitter", "0", "--compute-model", "flops"]
    text = output(args, 100)
    assert "scaling efficiency (bars from 95% to 100%)" in text
    bars = {ln.split()[1]: ln.count("#") for ln in text.splitlines() if ln.startswith("  DP ")}
    assert bars["8"] > bars["2048"] > bars["4096"] > 0
    assert bars["8"] - bars["4096"] >= 25  # 99.6% against 96.6%: more than half the chart apart, not one character
