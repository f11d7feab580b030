"""Tables to text: rich (terminal), markdown, CSV, HTML; and documents to JSON and YAML. One function per format.

Values are typed the same in every machine format: CSV spells booleans, numbers and nulls as JSON does
(`true`, `0.1`, empty), and nested values as compact JSON.

In a terminal, `fit` lays each table out within the console's width without cutting a value: it first wraps the
headers at their spaces (and shortens a few long words), then wraps a prose column at its spaces (never between
a number and its unit), then leaves out whole columns, least important first, and says which in a note. A
key/value table that still cannot fit is printed as a list, each value under its key.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpcost.render.table import Table, flagged

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = [
    "Fitted",
    "fit",
    "flatten",
    "to_csv",
    "to_json",
    "to_markdown",
    "to_rich",
    "to_text",
    "to_yaml",
    "verdict_lines",
    "wrap",
]

# Long header words, shortened only when a column would otherwise be wider than its values.
ABBREVIATIONS = {
    "efficiency": "effic.",
    "activations": "activ.",
    "optimizer": "optim.",
    "overhead": "overh.",
    "transient": "trans.",
    "allocated": "alloc.",
    "reserved": "reserv.",
    "parameters": "params",
    "micro-batch": "micro-b.",
    "algorithm": "alg.",
    "oversubscription": "oversub.",
    "published": "publ.",
    "reduction": "red.",
}
MIN_PROSE = 24  # the narrowest a wrapped prose column gets before columns are left out


# ------------------------------------------------------------------------------------------------ fitting


def _words(text: str) -> list[str]:
    """Words, with a number kept beside the word after it (`6.20 s`, `450 GB/s`, `8 GPUs`)."""
    out: list[str] = []
    for word in text.split():
        if out and re.search(r"[0-9%]$", out[-1]) and not re.match(r"[0-9(=+x-]", word) and len(word) <= 8:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def _atoms(text: str) -> list[str]:
    """What a line break may not split: the short items of a comma-separated list (`leaf 256: 50.0 GB/s,`),
    else words with their units."""
    items = re.split(r"(?<=,) ", text)
    if len(items) == 1:
        return _words(text)
    out: list[str] = []
    for item in items:
        out += [item] if len(item) <= 30 and item.strip() else _words(item)
    return out


def wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap that never breaks an atom; an atom wider than `width` gets a line of its own."""
    lines: list[str] = []
    current = ""
    for atom in _atoms(text):
        if current and len(current) + 1 + len(atom) > width:
            lines.append(current)
            current = atom
        else:
            current = f"{current} {atom}" if current else atom
    if current or not lines:
        lines.append(current)
    return lines


def _pieces(text: str) -> list[str]:
    """What a breakable cell may be split into: words, and a hyphenated name after each hyphen."""
    return [p for p in re.split(r"(?<=-)|\s+", text) if p]


def break_cell(text: str, width: int) -> list[str]:
    """A breakable cell in lines of at most `width` (a piece wider than that keeps a line of its own)."""
    lines: list[str] = []
    for piece in _pieces(text):
        joined = lines[-1] + ("" if lines[-1].endswith("-") else " ") + piece if lines else piece
        if lines and len(joined) <= width:
            lines[-1] = joined
        else:
            lines.append(piece)
    return lines or [""]


def _header(text: str, width: int) -> str:
    """A header wrapped at its spaces to `width`, long words shortened if they alone are wider."""
    words = [ABBREVIATIONS.get(w, w) if len(w) > width else w for w in text.split()]
    return "\n".join(wrap(" ".join(words), width)) if words else text


def _width(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


@dataclass
class Fitted:
    """A table laid out for a width: the columns kept, their headers and cells (pre-wrapped), and notes."""

    title: list[str]
    columns: list[int]
    headers: list[str]
    rows: list[list[str]]
    notes: list[str]
    width: int
    dropped: list[str] = field(default_factory=list)
    stacked: bool = False  # a key/value table printed as a list: each key, then its value indented


def _total(widths: Sequence[int]) -> int:
    """A SIMPLE_HEAD rich table's width: each column has one space each side, one between, one at each edge."""
    return sum(widths) + 3 * len(widths) + 1


def fit(t: Table, width: int) -> Fitted:
    """Lay `t` out within `width` columns (see the module's docstring)."""
    n = len(t.columns)
    prose = t.wraps and n > 1
    order = [t.columns.index(c) for c in t.drop if c in t.columns] or list(range(n - 1, 0, -1))
    kept = list(range(n))
    breakable = {t.columns.index(c) for c in t.breakable if c in t.columns}
    caps: dict[int, int] = {}  # breakable columns narrowed to this width

    def cells(i: int) -> list[str]:
        return [row[i] for row in t.rows]

    def narrowest(i: int) -> int:
        return max((len(p) for c in cells(i) for p in _pieces(c)), default=0)

    def layout(headers_wrapped: bool) -> tuple[list[str], list[int], int]:
        heads, widths = [], []
        for i in kept:
            content = caps.get(i) or max((len(c) for c in cells(i)), default=0)
            if prose and i == n - 1:
                content = max((len(a) for c in cells(i) for a in _atoms(c)), default=0) if headers_wrapped else content
            head = _header(t.columns[i], max(content, 1)) if headers_wrapped else t.columns[i]
            heads.append(head)
            widths.append(max(content, _width(head)))
        return heads, widths, _total(widths)

    heads, widths, total = layout(False)
    if total > width:
        while True:
            heads, widths, total = layout(True)
            victims = [i for i in order if i in kept and i != 0 and not (prose and i == n - 1)]
            if prose and kept[-1] == n - 1:
                room = width - _total(widths[:-1]) - 3
                longest = max((len(c) for c in cells(n - 1)), default=0)
                if room >= max(widths[-1], min(MIN_PROSE, longest)) or (room >= widths[-1] and not victims):
                    widths[-1] = max(widths[-1], min(room, longest))
                    total = _total(widths)
                    break
            elif total <= width:
                break
            if victims:
                kept.remove(victims[0])
                continue
            # no column left to leave out: break the breakable cells, the widest column first
            while total > width:
                wide = [
                    (w, i)
                    for w, i, head in zip(widths, kept, heads, strict=True)
                    if i in breakable and w > max(narrowest(i), _width(head))
                ]
                if not wide:
                    break
                w, i = max(wide)
                caps[i] = max(len(line) for c in cells(i) for line in break_cell(c, w - 1))
                heads, widths, total = layout(True)
            break
    if prose and kept[-1] == n - 1 and heads[-1] != t.columns[-1]:
        heads[-1] = _header(t.columns[-1], widths[-1])
        widths[-1] = max(widths[-1], _width(heads[-1]))
    rows = []
    for row in t.rows:
        out = [row[i] for i in kept]
        if prose and kept[-1] == n - 1:
            out[-1] = "\n".join(wrap(out[-1], widths[-1]))
        for k, i in enumerate(kept):
            if i in caps:
                out[k] = "\n".join(break_cell(out[k], caps[i]))
        rows.append(out)
    dropped = [t.columns[i] for i in range(n) if i not in kept]
    final = max(_total(widths), min(width, 100) if t.notes or dropped else 0)
    stacked = _total(widths) > width
    if stacked:
        final = width
    notes = list(t.notes)
    if dropped and not stacked:  # a list shows every column
        notes.append(
            f"left out to fit {width} columns: {', '.join(dropped)} (a wider terminal, --format markdown or csv "
            "shows every column)"
        )
    return Fitted(
        title=wrap(t.title, final),
        columns=kept,
        headers=heads,
        rows=rows,
        notes=[line for note in notes for line in wrap(note, final)],
        width=final,
        dropped=dropped,
        stacked=stacked,
    )


def to_rich(tables: Iterable[Table], width: int = 240) -> list[RenderableType]:
    """rich Tables fitted to `width` (rich is imported here, so that json/csv output never loads it)."""
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    out: list[RenderableType] = []
    for t in tables:
        if t.verdict:
            out.append(Text("\n".join(verdict_lines(t, width)) + "\n"))
            continue
        f = fit(t, width)
        if f.stacked:
            out.append(Text("\n".join(_stacked(t, f))))
            continue
        rt = RichTable(
            title="\n".join(f.title),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            caption_justify="left",
            min_width=f.width,
        )
        for head, i in zip(f.headers, f.columns, strict=True):
            rt.add_column(head, justify="right" if i in t.right else "left", no_wrap=True, overflow="fold")
        for row in f.rows:
            rt.add_row(*[Text(cell, style="bold red") if flagged(cell) else Text(cell) for cell in row])
        if f.notes:
            rt.caption = "\n".join(f.notes)
        out.append(rt)
    return out


def to_text(tables: Iterable[Table], width: int = 240) -> str | None:
    """What `to_rich`'s renderables print on a console that is not a terminal (no colour, no styles), without
    importing rich: each table in rich's SIMPLE_HEAD box with one space of padding each side of a cell, its
    columns as wide as their widest line and, when the table is narrower than its minimum width, that minimum
    spread over them as rich's `ratio_distribute` spreads it (rich/table.py `_calculate_column_widths`, rich 13-15);
    a title and a caption left-justified and padded to the table's width. None when rich would read a title,
    header or caption as markup or emoji codes, which this does not reproduce: the caller then uses rich."""
    out: list[str] = []
    for t in tables:
        if t.verdict:
            out.append("\n".join(verdict_lines(t, width)) + "\n\n")
            continue
        f = fit(t, width)
        if f.stacked:
            out.append("\n".join(_stacked(t, f)) + "\n")
            continue
        if any(_rich_markup(s) for s in (*f.title, *f.headers, *f.notes)):
            return None
        out.append(_simple_head(f, [i in t.right for i in f.columns]))
    return "".join(out)


def _rich_markup(text: str) -> bool:
    """Text rich's console would change when it renders a string: markup tags and :emoji: codes."""
    return "[" in text or re.search(r":\S+:", text) is not None


def _simple_head(f: Fitted, right: list[bool]) -> str:
    """One fitted table as rich prints a SIMPLE_HEAD table without a terminal (see to_text)."""
    heads = [h.split("\n") for h in f.headers]
    body = [[cell.split("\n") for cell in row] for row in f.rows]
    widths = [max([len(x) for x in h] + [len(x) for row in body for x in row[k]]) + 2 for k, h in enumerate(heads)]
    extra = len(widths) + 1  # the two edges and the dividers between columns
    if sum(widths) < f.width - extra:
        pads = _ratio_distribute(f.width - extra - sum(widths), widths)
        widths = [w + pad for w, pad in zip(widths, pads, strict=True)]
    total = sum(widths) + extra

    def line(cells: list[list[str]], height: int, bottom: bool) -> list[str]:
        rows = []
        padded = [([""] * (height - len(c)) + c) if bottom else (c + [""] * (height - len(c))) for c in cells]
        for n in range(height):
            parts = []
            for k, cell in enumerate(padded):
                inner = widths[k] - 2
                parts.append(" " + (cell[n].rjust(inner) if right[k] else cell[n].ljust(inner)) + " ")
            rows.append(" " + " ".join(parts) + " ")
        return rows

    lines = [t.ljust(total) for t in f.title] if any(f.title) else []
    lines.append(" " * total)
    lines += line(heads, max(len(h) for h in heads), bottom=True)
    lines.append(" " + "─" * (total - 2) + " ")
    for row in body:
        lines += line(row, max(len(c) for c in row), bottom=False)
    lines.append(" " * total)
    lines += [n.ljust(total) for n in f.notes]
    return "\n".join(lines) + "\n"


def _ratio_distribute(total: int, ratios: Sequence[int]) -> list[int]:
    """Split `total` over slots in proportion to `ratios`, each share rounded up, the last taking what is left
    (rich/_ratio.py ratio_distribute, without minimums)."""
    remaining_ratio, remaining = sum(ratios), total
    shares = []
    for ratio in ratios:
        share = math.ceil(ratio * remaining / remaining_ratio) if remaining_ratio > 0 else remaining
        shares.append(share)
        remaining_ratio -= ratio
        remaining -= share
    return shares


def verdict_lines(t: Table, width: int) -> list[str]:
    """The verdict block: its title, then each key and its value wrapped under a hanging indent."""
    key_width = max((len(row[0]) for row in t.rows), default=0)
    indent = 2 + key_width + 2
    lines = wrap(t.title, width)
    for key, value in t.rows:
        wrapped = wrap(value, max(width - indent, MIN_PROSE))
        lines.append(f"  {key:<{key_width}}  {wrapped[0]}")
        lines += [" " * indent + line for line in wrapped[1:]]
    return lines


def _stacked(t: Table, f: Fitted) -> list[str]:
    """A table too wide for the terminal as a list: each row's first cell, then the rest indented and wrapped (a URL
    keeps its own line); past a key/value table's one value, each value after its column's name."""
    lines = [*f.title, ""]
    for row in t.rows:
        key, value = row[0], " ".join(row[1:])
        if len(row) > 2:
            value = "; ".join(f"{head}: {cell}" for head, cell in zip(t.columns[1:], row[1:], strict=True) if cell)
        if key:
            lines.append(f"  {key}")
        lines += [f"      {line}" for line in wrap(value, f.width - 6)]
    if f.notes:
        lines += ["", *f.notes]
    return [*lines, ""]


# ------------------------------------------------------------------------------------------------ text formats


def to_markdown(tables: Iterable[Table], assumptions: Sequence[str] = ()) -> str:
    """GitHub-flavoured markdown tables, each with its notes; then the assumptions the numbers rest on."""
    parts = []
    for t in tables:
        if t.verdict:
            parts.append("\n".join([f"**{t.title}**", "", *(f"- {key}: {value}" for key, value in t.rows)]))
            continue
        lines = [f"### {t.title}", ""]
        lines.append("| " + " | ".join(c or " " for c in t.columns) + " |")
        lines.append("|" + "|".join("---:" if i in t.right else "---" for i in range(len(t.columns))) + "|")
        for row in t.rows:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        if t.notes:
            lines.append("")
            lines += [f"{n}  " for n in t.notes]
        if t.figure:
            lines += ["", "```text", *t.figure.rstrip("\n").split("\n"), "```"]
        parts.append("\n".join(lines))
    if assumptions:
        parts.append("\n".join(["### Assumptions", "", *(f"- {a}" for a in assumptions)]))
    return "\n\n".join(parts) + "\n"


def flatten(doc: Any, prefix: str = "") -> list[dict[str, Any]]:
    """A document as `key,value` rows with dotted keys, as docs/json.md names them (`time.step_seconds`,
    `memory.stages[0].total_bytes`): the CSV of a report that is not a list of rows."""
    if isinstance(doc, dict):
        rows = []
        for k, v in doc.items():
            rows += flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return rows
    if isinstance(doc, list) and any(isinstance(v, dict | list) for v in doc):
        return [row for i, v in enumerate(doc) for row in flatten(v, f"{prefix}[{i}]")]
    return [{"key": prefix, "value": doc}]


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return ""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: _csv_value(v) for k, v in r.items()})
    return buf.getvalue()


def _csv_value(v: Any) -> Any:
    """As JSON spells it: true/false, full-precision numbers, empty for null, nested values as compact JSON."""
    if v is None:
        return ""
    if isinstance(v, bool | int | float | list | dict):
        return json.dumps(v, allow_nan=False, separators=(",", ":"))
    return v


def to_json(doc: Any) -> str:
    """Strict JSON: a NaN or infinity would be a bug upstream, not something to print (allow_nan=False)."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def to_yaml(doc: Any) -> str:
    import yaml

    return str(yaml.safe_dump(doc, sort_keys=False, width=120))
