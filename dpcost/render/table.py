"""The one shape every report takes before it is rendered: titled tables of strings, with their data rows.

Rich tables, markdown and CSV are renderings of the same `Table`s (formats.py), so a number cannot differ between
them; JSON and YAML dump the report's own models (the machine contract, engine/report.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from dpcost.units import fmt_bytes

__all__ = ["Table", "flagged", "gb", "pct", "us"]


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    right: set[int] = field(default_factory=set)  # right-aligned (numeric) columns
    notes: list[str] = field(default_factory=list)
    data: list[dict[str, Any]] = field(default_factory=list)  # machine-readable rows (CSV/JSON)
    # In a terminal too narrow for every column: the last column wraps at spaces when it is prose (default: in
    # tables of up to three columns), and `drop` names the columns to leave out first (default: right to left).
    prose: bool | None = None
    drop: list[str] = field(default_factory=list)
    # Columns whose cells may break at spaces and after hyphens (names, values with units) before any column is
    # left out.
    breakable: list[str] = field(default_factory=list)
    # The answer a report leads with: in a terminal and in markdown, its title and then each key with its value,
    # no rules or headers, so that it reads in a few lines (formats.py).
    verdict: bool = False
    # A text chart drawn under the table in markdown, in a fenced block so that it reads in any viewer; the
    # terminal leaves it out, and html draws its charts as SVG (charts.py).
    figure: str = ""

    @property
    def wraps(self) -> bool:
        return self.prose if self.prose is not None else len(self.columns) <= 3


def flagged(cell: str) -> bool:
    """A cell that says something does not fit or a check failed ("NO", "NO / 80.0 GB", "FAIL"): shown in red.
    The marker is a whole word, so that a name such as "NOVA" is not."""
    return cell == "FAIL" or re.match(r"NO\b", cell) is not None


def us(x: float) -> str:
    """Microseconds as nccl-tests prints them: two decimals below 1000, one above."""
    return f"{x:.2f}" if x < 1000 else f"{x:.1f}"


def pct(x: float) -> str:
    return f"{x:.1%}"


def gb(x: float) -> str:
    return fmt_bytes(x)
