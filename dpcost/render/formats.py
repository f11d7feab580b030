"""Tables to text: rich (terminal), markdown, CSV; and documents to JSON and YAML. One function per format."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dpcost.render.table import Table

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["to_csv", "to_json", "to_markdown", "to_rich", "to_yaml"]


def to_rich(tables: Iterable[Table]) -> list[RenderableType]:
    """rich Tables (imported here so that json/csv output never loads rich)."""
    from rich import box
    from rich.table import Table as RichTable
    from rich.text import Text

    out: list[RenderableType] = []
    for t in tables:
        # captions wrap to the table's width: give narrow tables with notes room for them
        rt = RichTable(
            title=t.title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            caption_justify="left",
            min_width=100 if t.notes else None,
        )
        for i, col in enumerate(t.columns):
            prose = i == len(t.columns) - 1 and len(t.columns) <= 3  # key/value tables wrap their last column
            rt.add_column(col, justify="right" if i in t.right else "left", no_wrap=not prose, overflow="fold")
        for row in t.rows:
            styled = [Text(cell, style="bold red") if cell.startswith("NO") else Text(cell) for cell in row]
            rt.add_row(*styled)
        if t.notes:
            rt.caption = "\n".join(t.notes)
        out.append(rt)
    return out


def to_markdown(tables: Iterable[Table]) -> str:
    parts = []
    for t in tables:
        lines = [f"### {t.title}", ""]
        lines.append("| " + " | ".join(c or " " for c in t.columns) + " |")
        lines.append("|" + "|".join("---:" if i in t.right else "---" for i in range(len(t.columns))) + "|")
        for row in t.rows:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        if t.notes:
            lines.append("")
            lines += [f"{n}  " for n in t.notes]
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


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
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def to_json(doc: Any) -> str:
    """Strict JSON: a NaN or infinity would be a bug upstream, not something to print (allow_nan=False)."""
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def to_yaml(doc: Any) -> str:
    import yaml

    return str(yaml.safe_dump(doc, sort_keys=False, width=120))
