"""Every command takes every format and --output FILE; values are typed the same in CSV, YAML and JSON; the html
page is self-contained and a real browser (headless Chromium) shows what it should."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from test_widths import COMMANDS
from typer.testing import CliRunner

from dpcost.cli import app

FORMATS = ["table", "markdown", "html", "csv", "json", "yaml"]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "120", "NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_every_format_to_a_file(tmp_path: Path, name: str, fmt: str) -> None:
    target = tmp_path / f"out.{fmt}"
    code, out, err = invoke(*COMMANDS[name], "--format", fmt, "--output", str(target))
    assert code in (0, 1), err  # check's example plan fails on purpose
    assert out == "" and f"wrote {target}" in err
    text = target.read_text()
    assert text.strip()
    code2, stdout, _ = invoke(*COMMANDS[name], "--format", fmt)
    assert code2 == code and stdout == text  # the file holds exactly what stdout would
    if fmt == "json":
        json.loads(text)
    elif fmt == "yaml":
        assert yaml.safe_load(text) is not None
    elif fmt == "csv":
        assert list(csv.DictReader(io.StringIO(text)))
    elif fmt == "html":
        assert text.startswith("<!DOCTYPE html>") and "</html>" in text
        assert not re.search(r"(src|href)=|<script|@import|url\(", text)  # nothing fetched: works offline


def test_markdown_lists_the_assumptions() -> None:
    md = invoke("estimate", "--model", "llama-70b", "--dp", "512", "--zero", "auto", "-f", "markdown")[1]
    tail = md.split("### Assumptions", 1)[1]
    for line in (
        "- model: Llama 3.1 70B (llama-70b), 70.55B parameters derived from its shapes",
        "- data parallel: --dp 512",
        "- plan: --zero auto: 3, --recompute auto: op, --recompute-layers 1, --recompute-modules core_attn, --mode "
        "train",
        "- compute: --mfu default: 0.6519, --compute-model ops, --flash-attention on, --compile off, "
        "--grad-accumulation-fusion on, --repeat-kv on, --loss-impl default: upcast, --skew 0.0",
        "- units: 1 GB = 1e9 bytes and GB/s = 1e9 bytes/s; GiB and MiB are labelled as such",
    ):
        assert line in tail, line
    for args in (COMMANDS["sweep"], COMMANDS["collective"], COMMANDS["models"], COMMANDS["memory"]):
        assert "### Assumptions" in invoke(*args, "-f", "markdown")[1]


def _leaves(doc: object) -> dict[str, object]:
    from dpcost.render.formats import flatten

    return {row["key"]: row["value"] for row in flatten(doc)}


def test_estimate_csv_is_the_json_flattened_with_the_same_types() -> None:
    args = ("estimate", "--model", "llama-70b", "--dp", "512")
    doc = json.loads(invoke(*args, "-f", "json")[1])
    rows = list(csv.DictReader(io.StringIO(invoke(*args, "-f", "csv")[1])))
    assert rows[0] == {"key": "schema_version", "value": "2"}
    got = {r["key"]: r["value"] for r in rows}
    for key, value in _leaves(doc).items():
        assert got[key] == ("" if value is None else json.dumps(value, separators=(",", ":")).strip('"')), key
    assert got["memory.stages[0].fits"] == "false" and got["setup.flash_attention"] == "true"
    assert float(got["time.step_seconds"]) == doc["time"]["step_seconds"]  # full precision, not 6 digits
    assert yaml.safe_load(invoke(*args, "-f", "yaml")[1]) == doc


@pytest.mark.parametrize(
    "args", [COMMANDS["sweep"], COMMANDS["collective"], COMMANDS["models"], COMMANDS["topologies"], COMMANDS["check"]]
)
def test_rows_are_typed_alike_in_csv_json_and_yaml(args: list[str]) -> None:
    as_json = json.loads(invoke(*args, "-f", "json")[1])
    assert yaml.safe_load(invoke(*args, "-f", "yaml")[1]) == as_json
    rows = list(csv.DictReader(io.StringIO(invoke(*args, "-f", "csv")[1])))
    if isinstance(as_json, list) and as_json and isinstance(as_json[0], dict):
        for csv_row, json_row in zip(rows, as_json, strict=False):
            for key, value in json_row.items():
                if key in csv_row and not isinstance(value, dict | list):
                    expected = "" if value is None else json.dumps(value).strip('"')
                    assert csv_row[key] == expected, (key, csv_row[key], value)
    for row in rows:
        for value in row.values():
            assert value not in ("True", "False", "None"), row  # JSON's spelling, not Python's


def test_flags_mean_the_same_everywhere() -> None:
    for cmd in (["estimate"], ["collective"], ["memory"], ["sweep"], ["check"], ["models"], ["show", "model"]):
        help_text = invoke(*cmd, "--help")[1]
        assert re.search(r"-f, --format <table\|markdown\|html\|csv\|json\|yaml>", help_text), cmd
        assert "-o, --output FILE" in help_text, cmd
    collective = invoke("collective", "--help")[1]
    assert "all_reduce|reduce_scatter|all_gather|broadcast|reduce" in collective
    assert "ring|tree|hierarchical|nvls|nvls_tree|collnet|pat" in collective
    assert "--zero" in invoke("estimate", "--help")[1] and "0|1|2|3|auto" in invoke("estimate", "--help")[1]
    from dpcost import __version__

    assert invoke("--version")[1] == f"dpcost {__version__}\n"


def test_the_tours_compare_example_runs_as_written() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    line = next(ln for ln in readme.splitlines() if ln.startswith("dpcost collective --compare"))
    args = line.split("#")[0].split()[1:]
    code, out, err = invoke(*args)
    assert code == 0, err
    assert "measured" in out and "-55.9%" in out and "+22.3%" in out  # the log's first size, measured


# ------------------------------------------------------------------------------------------------ html


def _browser() -> str | None:
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)


@pytest.mark.skipif(_browser() is None, reason="needs Debian's chromium package (.ci/run installs it as root)")
def test_the_html_report_in_a_real_browser(tmp_path: Path) -> None:
    page = tmp_path / "estimate.html"
    code, _, err = invoke("estimate", "--model", "llama-70b", "--dp", "512", "-f", "html", "-o", str(page))
    assert code == 0, err
    sweep = tmp_path / "sweep.html"
    assert invoke(*COMMANDS["sweep"], "-f", "html", "-o", str(sweep))[0] == 0
    browser = _browser()
    assert browser is not None
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'p'}"]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    # what the browser parsed: the charts as SVG elements, the tables, the assumptions
    # the memory, step and (op by op) compute charts
    assert dom.count("<svg") == 3 and "<figcaption>Memory per GPU by ZeRO stage (HBM 84.9 GB)</figcaption>" in dom
    assert ">ZeRO-3 (costed)</text>" in dom and ">59.0 GB fits</text>" in dom and ">HBM 84.9 GB</text>" in dom
    assert ">step (as scheduled)</text>" in dom and ">4.30 s</text>" in dom
    assert ">exposed communication 37.7 ms</text>" in dom and ">lost at scale 734 ms</text>" in dom  # the legend
    assert ">reduce_scatter (gradients)</text>" in dom and ">565 ms</text>" in dom
    assert "<h2>Time per step</h2>" in dom and '<td class="prose">488,275 tokens/s</td>' in dom
    assert '<td class="no">NO / 84.9 GB</td>' in dom
    assert "<h2>Assumptions</h2>" in dom and "<li>data parallel: --dp 512</li>" in dom
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", sweep.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "<figcaption>Scaling efficiency against DP size</figcaption>" in dom
    assert "<title>DP 4096: 55.2%</title>" in dom and ">70%</text>" in dom
    shot = tmp_path / "estimate.png"
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1200,1600", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one


def test_only_a_whole_no_or_fail_is_shown_as_failing() -> None:
    from dpcost.render.table import flagged

    assert all(flagged(c) for c in ("NO", "NO / 80.0 GB", "NO: 2 GPUs per replica", "FAIL"))
    assert not any(flagged(c) for c in ("NOVA-13B", "NONE", "yes / 80.0 GB", "FAILOVER", "pass"))
