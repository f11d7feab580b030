"""The `dpcost` command: parse flags -> catalog -> engine -> render; errors become one line and an exit code.

core.py holds the app, the error handling and output; options.py the flags shared by commands, defined once;
every other module is one command.
"""

from __future__ import annotations

import os

import typer

from dpcost.cli import calibrate, catalog, check, collective, estimate, memory, plan, schema, sweep  # noqa: F401
from dpcost.cli.core import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    # pydantic looks for plugins through every installed distribution's entry points (~15 ms per start);
    # the command uses none.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    typer.main.get_command(app)(prog_name="dpcost")
