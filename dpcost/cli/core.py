"""The CLI's shared core: the app, errors to exit codes, output writing. Each command lives in its own module.

Exit codes: 0 done; 1 a check failed (--check, `dpcost check`); 2 bad input (unknown name, bad file, bad flag);
3 an internal error (a bug: please report it).
"""

from __future__ import annotations

import os
import re
import sys
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from typer.core import TyperGroup

from dpcost.errors import DpcostError, InputError

if TYPE_CHECKING:
    from dpcost.render.table import Table

__all__ = ["Format", "Group", "TableFormat", "app", "emit", "load", "show_app"]

# typer >= 0.2x vendors click and older releases use click itself; BadParameter derives from UsageError in both.
UsageError: type[Exception] = typer.BadParameter.__mro__[1]
ClickException: type[Exception] = UsageError.__mro__[1]


def _flag(where: str) -> str:
    """Engine errors name option fields (`accumulation`); say them as the flag the user typed (`--accum`)."""
    if not re.fullmatch(r"[a-z_]+", where):
        return where
    from dpcost.cli.options import field_flag

    return field_flag(where)


def _fail(message: str, code: int = 2) -> NoReturn:
    first = " ".join(message.replace("Value error, ", "").split())
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
            _fail(f"{_flag(exc.where)}: {exc.message}" if exc.where else exc.message)
        except DpcostError as exc:
            _fail(str(exc))
        except UsageError as exc:
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
                sys.stdout.write(ctx.get_help() + "\n")  # a bare `dpcost` or `dpcost show`: the help, not an error
                sys.exit(0)
            _fail(exc.format_message())  # type: ignore[attr-defined]
        except ClickException as exc:
            _fail(exc.format_message(), getattr(exc, "exit_code", 2))  # type: ignore[attr-defined]
        except (typer.Abort, KeyboardInterrupt):
            _fail("aborted", 130)
        except OSError as exc:  # writing the output: a closed pipe is the reader's choice, a full disk is not
            if isinstance(exc, BrokenPipeError):
                sys.exit(0)
            _fail(f"cannot write the output ({exc.strerror or exc})", 1)
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
show_app = typer.Typer(cls=Group, no_args_is_help=True, help="Show one catalog entry in full.")
app.add_typer(show_app, name="show")


class Format(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


class TableFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


# ------------------------------------------------------------------------------------------------ output


def _console() -> Any:
    from rich.console import Console

    columns = os.environ.get("COLUMNS", "")
    width = None if sys.stdout.isatty() else (int(columns) if columns.isascii() and columns.isdigit() else 0) or 240
    return Console(width=width, highlight=False, soft_wrap=False)


def emit(tables: list[Table], fmt: str, doc: Any = None, csv_rows: list[dict[str, Any]] | None = None) -> None:
    """Write a report: its tables (rich, markdown), its data rows (CSV), or its document (JSON, YAML); `doc` may
    be a function that makes it, called only for JSON and YAML."""
    from dpcost.render import formats

    if callable(doc) and fmt in ("json", "yaml"):
        doc = doc()
    if fmt == "json":
        sys.stdout.write(formats.to_json(doc if doc is not None else [r for t in tables for r in t.data]))
    elif fmt == "yaml":
        sys.stdout.write(formats.to_yaml(doc if doc is not None else [r for t in tables for r in t.data]))
    elif fmt == "markdown":
        sys.stdout.write(formats.to_markdown(tables))
    elif fmt == "csv":
        sys.stdout.write(formats.to_csv(csv_rows if csv_rows is not None else [r for t in tables for r in t.data]))
    else:
        console = _console()
        for rt in formats.to_rich(tables):
            console.print(rt)


def load(model: str, topology: str) -> tuple[Any, Any]:
    """The model and topology named by --model and --topology (catalog names or files)."""
    from dpcost.catalog import load_model, load_topology

    return load_model(model), load_topology(topology)
