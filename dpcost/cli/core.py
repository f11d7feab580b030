"""The CLI's shared core: the app, errors to exit codes, output writing. Each command lives in its own module.

Exit codes: 0 done; 1 a check failed (--check, `dpcost check`); 2 bad input (unknown name, bad file, bad flag);
3 an internal error (a bug: please report it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from dpcost.errors import DpcostError, InputError

if TYPE_CHECKING:
    from dpcost.render.table import Table

__all__ = [
    "BriefOpt",
    "Format",
    "FormatOpt",
    "Group",
    "OutputOpt",
    "app",
    "emit",
    "load",
    "show_app",
    "writable",
    "write",
]

# typer >= 0.2x vendors click and older releases use click itself; BadParameter derives from UsageError in both.
UsageError: type[Exception] = typer.BadParameter.__mro__[1]
ClickException: type[Exception] = UsageError.__mro__[1]


MAX_SHOWN = 200  # characters of one word an error repeats whole: a path fits, a 3,000-character name is cut


def _cut(word: str) -> str:
    return word if len(word) <= MAX_SHOWN else f"{word[:60]}...{word[-20:]} ({len(word):,} characters)"


def _fail(message: str, code: int = 2) -> NoReturn:
    first = " ".join(_cut(w) for w in message.replace("Value error, ", "").split())
    sys.stderr.write(f"dpcost: error: {first}\n")
    sys.exit(code)


class Group(TyperGroup):
    """Every error is one line on stderr: no usage block, no rich panel, no traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        standalone = kwargs.pop("standalone_mode", True)
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except InputError as exc:
            from dpcost.cli.options import flag_named

            _fail(f"{flag_named(exc.where)}: {exc.message}" if exc.where else exc.message)
        except DpcostError as exc:
            _fail(str(exc))
        except UsageError as exc:
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
                sys.stdout.write(ctx.get_help() + "\n")  # a bare `dpcost` or `dpcost show`: the help, not an error
                sys.exit(0)
            _fail(exc.format_message())  # type: ignore[attr-defined]
        except ClickException as exc:  # click's own errors are all about the command line: bad input
            _fail(exc.format_message())  # type: ignore[attr-defined]
        except (typer.Abort, KeyboardInterrupt):
            _fail("aborted", 130)
        except OSError as exc:  # a closed pipe is the reader's choice; anything else is a file dpcost cannot use
            if isinstance(exc, BrokenPipeError):
                sys.exit(0)
            name = f"{exc.filename}: " if exc.filename else "the output: "
            _fail(f"{name}cannot read or write it ({exc.strerror or exc})")
        except Exception as exc:  # a bug: say so in one line, keep the traceback for DPCOST_DEBUG=1
            if os.environ.get("DPCOST_DEBUG"):
                raise
            _fail(f"internal error ({type(exc).__name__}: {exc}); rerun with DPCOST_DEBUG=1 and report it", 3)
        if standalone:
            sys.exit(rv if isinstance(rv, int) else 0)
        return rv


app = typer.Typer(
    cls=Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="The cost of data-parallel training and serving: collectives, memory per GPU and step time.",
)


def _version(value: bool) -> None:
    if value:
        from dpcost import __version__

        sys.stdout.write(f"dpcost {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print dpcost's version and exit.")
    ] = False,
) -> None:
    """The cost of data-parallel training and serving: collectives, memory per GPU and step time."""


show_app = typer.Typer(cls=Group, no_args_is_help=True, help="Show one catalog entry in full.")
app.add_typer(show_app, name="show")


class Format(StrEnum):
    """Every command takes every format: tables (terminal, markdown, html), rows (csv) or the document (json, yaml)."""

    table = "table"
    markdown = "markdown"
    html = "html"
    csv = "csv"
    json = "json"
    yaml = "yaml"


FormatOpt = Annotated[
    Format,
    typer.Option(
        "--format", "-f", help="Output format: terminal table, markdown or html page; csv rows; json or yaml."
    ),
]


def writable(flag: str) -> Callable[[Path | None], Path | None]:
    """A typer callback that checks an output path as the command line is read, before any costing: a
    minutes-long sweep or a fit must not end in "cannot write the file"."""

    def check(path: Path | None) -> Path | None:
        if path is None or str(path) == "-":
            return path
        folder = path.parent if str(path.parent) else Path(".")
        if path.is_dir():
            reason = "it is a folder; name a file"
        elif not folder.is_dir():
            reason = f"no such folder {folder}"
        elif not os.access(path if path.exists() else folder, os.W_OK):
            reason = "permission denied"
        else:
            return path
        raise InputError(flag, f"{path}: cannot write the file ({reason})")

    return check


def distinct(**paths: Path | None) -> None:
    """Refuse two output flags that name one file: the second write would replace the first."""
    seen: dict[str, str] = {}
    for name, path in paths.items():
        if path is None or str(path) == "-":
            continue
        key = os.path.realpath(path)
        flag = "--" + name.replace("_", "-")
        if key in seen:
            raise InputError(flag, f"{path} is also {seen[key]}'s file: name two files")
        seen[key] = flag


BriefOpt = Annotated[
    bool, typer.Option("--brief", help="Print only the verdict: the plan, fits or not, the step, the top warning.")
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Write the output to FILE instead of stdout.",
        callback=writable("--output"),
    ),
]


# ------------------------------------------------------------------------------------------------ output


def _width(to_file: bool = False) -> int | None:
    """The console's width: the terminal's, else $COLUMNS, else 240 (a pipe or a file: keep every column). A
    file written by --output is never fitted to the terminal it was asked for from."""
    if sys.stdout.isatty() and not to_file:
        return None
    columns = os.environ.get("COLUMNS", "")
    return (int(columns) if columns.isascii() and columns.isdigit() else 0) or 240


def _plain_text(tables: list[Table], output: Path | None, after: Callable[[int], str] | None) -> str | None:
    """The terminal format as rich would print it where it prints no colour (a pipe or a file, as in CI), drawn
    without importing rich (issue 20: rich's import and layout are most of what a table adds to a run's start-up);
    None where rich would style it (FORCE_COLOR, TTY_COMPATIBLE=1, a terminal) or could not write it as UTF-8."""
    width = _width(to_file=output is not None)
    if width is None or os.environ.get("TTY_COMPATIBLE") == "1" or os.environ.get("FORCE_COLOR"):
        return None
    if output is None and not (getattr(sys.stdout, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None
    from dpcost.render import formats

    text = formats.to_text(tables, width)
    chart = after(width) if after is not None else ""
    return None if text is None or "[" in chart else text + chart


def _console(file: Any = None) -> Any:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:  # rich's own handler exits 1
            self.quiet = True
            closed_pipe()

    return _Console(width=_width(to_file=file is not None), highlight=False, soft_wrap=False, file=file)


def closed_pipe() -> NoReturn:
    """A reader that closed the pipe (`dpcost ... | head`) chose to stop reading: exit 0, quietly. Not 1, which click's
    and rich's own handlers give and dpcost keeps for a failed check; stdout is pointed at /dev/null so that the
    interpreter's last flush finds nothing to write."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise SystemExit(0)


def write(text: str, output: Path | None, flag: str = "--output") -> None:
    """Text to stdout, or to the file named by `flag`; a file that cannot be written is bad input (exit 2)."""
    if output is None or str(output) == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:
            closed_pipe()
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(flag, f"{output}: cannot write the file ({reason})") from None
    sys.stderr.write(f"dpcost: wrote {output}\n")


def emit(
    tables: list[Table],
    fmt: str,
    doc: Any = None,
    csv_rows: list[dict[str, Any]] | None = None,
    *,
    output: Path | None = None,
    assumptions: Sequence[str] | Callable[[], Sequence[str]] = (),
    charts: Callable[[], list[tuple[str, str]]] | None = None,
    after: Callable[[int], str] | None = None,
    title: str = "",
) -> None:
    """Write a report: its tables (terminal, markdown, html), its data rows (CSV), or its document (JSON, YAML).

    `doc` may be a function that makes it, called only for JSON, YAML and CSV; a CSV without `csv_rows` or table
    data rows is the document flattened to `key,value` rows. `charts` makes the html page's inline SVG charts,
    `after` the text printed under the terminal tables (given the width), `assumptions` the inputs the numbers rest
    on (listed under the markdown and html tables).
    """
    from dpcost.render import formats

    if callable(doc) and fmt in ("json", "yaml", "csv"):
        doc = doc()
    rows = [r for t in tables for r in t.data]
    if callable(assumptions):
        assumptions = assumptions() if fmt in ("markdown", "html") else ()
    if fmt == "json":
        text = formats.to_json(doc if doc is not None else rows)
    elif fmt == "yaml":
        text = formats.to_yaml(doc if doc is not None else rows)
    elif fmt == "markdown":
        text = formats.to_markdown(tables, assumptions)
    elif fmt == "csv":
        text = formats.to_csv(csv_rows if csv_rows is not None else rows or formats.flatten(doc))
    elif fmt == "html":
        from dpcost.render.html import page

        text = page(title or (tables[0].title if tables else "dpcost"), tables, assumptions, charts() if charts else [])
    elif (plain := _plain_text(tables, output, after)) is not None:
        text = plain
    else:
        import io

        buf = io.StringIO() if output is not None else None
        console = _console(buf)
        from rich.text import Text

        for rt in formats.to_rich(tables, console.width):
            console.print(rt, soft_wrap=isinstance(rt, Text))  # a table as a list: a long URL keeps its line
        if after is not None:
            console.print(after(console.width), end="", soft_wrap=True)
        if buf is None:
            return
        text = buf.getvalue()
    write(text, output)


def load(model: str, topology: str) -> tuple[Any, Any]:
    """The model and topology named by --model and --topology (catalog names or files)."""
    from dpcost.catalog import load_model, load_topology

    return load_model(model), load_topology(topology)
