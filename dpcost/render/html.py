"""One self-contained html page: the report's tables with their notes, inline SVG charts, and the assumptions.

No script, no external style sheet, font or image: the file opens the same offline, in a browser or a CI
artifact viewer. The tables are the same `Table`s the terminal and markdown print.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from dpcost.render.table import Table, flagged

__all__ = ["page"]

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; font-size: .9em; }
th, td { padding: .25em .7em; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
th { border-bottom: 2px solid #888; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td { white-space: nowrap; } td.prose { white-space: normal; min-width: 20em; }
td.no { color: #b00; font-weight: bold; } p.note { color: #555; font-size: .85em; margin: .2em 0; }
figure { margin: 1.5em 0; } figcaption { font-weight: bold; margin-bottom: .5em; }
svg { max-width: 100%; height: auto; }
section.verdict { border-left: 4px solid #4e79a7; padding-left: 1em; } section.verdict h2 { margin-top: 1em; }
footer { margin-top: 3em; color: #777; font-size: .8em; }
"""


def _table(t: Table) -> str:
    num = ' class="num"'
    head = "".join(f"<th{num if i in t.right else ''}>{escape(c)}</th>" for i, c in enumerate(t.columns))
    rows = []
    for row in t.rows:
        cells = []
        for i, cell in enumerate(row):
            cls = "num" if i in t.right else "prose" if t.wraps and i == len(row) - 1 else ""
            if flagged(cell):
                cls = (cls + " no").strip()
            attr = f' class="{cls}"' if cls else ""
            cells.append(f"<td{attr}>{escape(cell)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in t.notes)
    if t.verdict:  # the answer: key and value, no header row
        body = "".join(rows)
        return f'<section class="verdict"><h2>{escape(t.title)}</h2><table><tbody>{body}</tbody></table></section>'
    return (
        f"<section><h2>{escape(t.title)}</h2><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{notes}</section>"
    )


def page(
    title: str, tables: Sequence[Table], assumptions: Sequence[str] = (), charts: Sequence[tuple[str, str]] = ()
) -> str:
    """The page: title, the verdict, charts (caption, inline SVG), the other tables, assumptions."""
    from dpcost import __version__

    figures = "".join(f"<figure><figcaption>{escape(c)}</figcaption>{svg}</figure>" for c, svg in charts)
    listed = "".join(f"<li>{escape(a)}</li>" for a in assumptions)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        *(_table(t) for t in tables if t.verdict),
        figures,
        *(_table(t) for t in tables if not t.verdict),
        f"<section><h2>Assumptions</h2><ul>{listed}</ul></section>" if assumptions else "",
        f"<footer>dpcost {escape(__version__)}: closed-form estimates, not measurements.</footer>",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
