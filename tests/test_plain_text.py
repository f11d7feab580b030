"""Where rich prints no colour (a pipe, a file: CI), dpcost draws its tables without importing rich (issue 20:
start-up). What it prints there must be what rich prints, byte for byte: rich is the reference here."""

from __future__ import annotations

import io

import pytest
from conftest import cli_in_fresh_process

from dpcost.render import formats
from dpcost.render.table import Table

WIDTHS = [60, 80, 120, 240]


def as_rich_prints(tables: list[Table], width: int) -> str:
    """What `emit` printed with rich before: each renderable of to_rich on a console that is not a terminal."""
    from rich.console import Console
    from rich.text import Text

    buf = io.StringIO()
    console = Console(width=width, highlight=False, soft_wrap=False, file=buf)
    for renderable in formats.to_rich(tables, width):
        console.print(renderable, soft_wrap=isinstance(renderable, Text))
    return buf.getvalue()


def reports() -> dict[str, list[Table]]:
    """The tables of a few reports: an estimate (verdict, key/value, wide numeric tables), a layout's, and a
    topology's."""
    from dpcost import Options, estimate, load_model, load_topology
    from dpcost.render.catalog import topology_tables
    from dpcost.render.estimate import estimate_tables

    h100 = load_topology("dgx-h100")
    return {
        "estimate": estimate_tables(estimate(load_model("llama-70b"), h100, Options(dp=512))),
        "layout": estimate_tables(
            estimate(load_model("llama-405b"), h100, Options(dp=128, tp=8, pp=16, global_batch=2048, seq_len=8192))
        ),
        "topology": topology_tables(load_topology("rack-pod-h100")),
    }


@pytest.mark.parametrize("width", WIDTHS)
def test_every_table_is_drawn_as_rich_draws_it(width: int) -> None:
    for name, tables in reports().items():
        assert formats.to_text(tables, width) == as_rich_prints(tables, width), name


def test_headers_wrapped_over_lines_and_a_minimum_width_spread_as_rich_spreads_it() -> None:
    # a narrow terminal wraps headers (bottom-aligned), a note widens the table to its minimum of 100 columns
    # (rich's ratio_distribute), right-aligned numbers, multi-line prose cells (top-aligned), a failing cell
    t = Table(
        "A table whose title is short",
        ["model name", "peak allocated memory per GPU", "why"],
        [["llama", "80.0 GB", "NO / 80.0 GB because the activations of the longest sequence do not fit"]],
        right={1},
        notes=["a note that makes the table as wide as its minimum"],
    )
    for width in WIDTHS:
        assert formats.to_text([t], width) == as_rich_prints([t], width), width


def test_markup_in_a_title_is_left_to_rich() -> None:
    """rich reads "[...]" in a title, header or caption as markup, which to_text does not reproduce."""
    assert formats.to_text([Table("costs [per step]", ["a"], [["1"]])]) is None
    assert formats.to_text([Table("a title", ["a"], [["[1]"]])]) is not None  # cells are rich Text: no markup


def test_a_piped_run_never_imports_rich() -> None:
    args = ["estimate", "--model", "llama-70b", "--dp", "512"]
    out, imported = cli_in_fresh_process(args, "rich")
    assert out.startswith("Verdict: fits") and not imported
    forced, forced_imported = cli_in_fresh_process(args, "rich", {"FORCE_COLOR": "1"})
    assert "\x1b[" in forced and forced_imported


def test_a_table_too_wide_for_the_terminal_lists_each_value_with_its_column() -> None:
    """Where no column can be left out and the rest still do not fit, a table is printed as a list: a key/value
    table's value follows its key; a wider table's values each follow their column's name, so that none reads
    as an unlabelled number (`--compare-variants` at 110 columns printed "94.0 MB over dci - 1.10 s 1.94 s")."""
    wide = Table("Variants", ["variant", "bytes per step", "step"], [["plain DP", "94.0 MB", "1.94 s"]])
    assert formats.fit(wide, 20).stacked
    listed = " ".join((formats.to_text([wide], 20) or "").split())
    assert "plain DP bytes per step: 94.0 MB; step: 1.94 s" in listed
