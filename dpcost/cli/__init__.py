"""The `dpcost` command: parse flags -> catalog -> engine -> render; errors become one line and an exit code.

core.py holds the app, the error handling and output; options.py the flags shared by commands, defined once;
every other module is one command. The console script imports only the module of the command it runs (start-up
is most of a CI loop's time); `dpcost.cli.app` has them all.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Iterable
from typing import Any

# pydantic looks for plugins through every installed distribution's entry points (~15 ms per start) as soon as it
# builds a model class; dpcost uses none. Set before anything imports pydantic.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
_PLUGIN_LOADER = "pydantic.plugin._loader"


def _skip_plugin_loader() -> None:
    """With plugins off, pydantic's loader answers `get_plugins() -> ()`, but its module imports importlib.metadata
    at its top to get there (pydantic 2.10-2.14: ~20 ms a start). Stand in for it with that answer; any other name
    asked of it loads the real module (PEP 562), so a pydantic that asks for more still gets it."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") != "__all__" or _PLUGIN_LOADER in sys.modules:
        return
    stand_in = types.ModuleType(_PLUGIN_LOADER)

    def real(name: str) -> Any:
        if name.startswith("__"):  # the import system asks for __path__ and the like: a stand-in has none
            raise AttributeError(name)
        del sys.modules[_PLUGIN_LOADER]
        return getattr(importlib.import_module(_PLUGIN_LOADER), name)

    stand_in.get_plugins = tuple  # type: ignore[attr-defined]
    stand_in.__getattr__ = real  # type: ignore[method-assign]
    sys.modules[_PLUGIN_LOADER] = stand_in


__all__ = ["app", "main"]

MODULES = (
    "calibrate",
    "catalog",
    "check",
    "collective",
    "estimate",
    "memory",
    "plan",
    "schema",
    "sweep",
)  # --help's order
COMMANDS = {name: name for name in MODULES if name != "catalog"} | {
    "models": "catalog",
    "topologies": "catalog",
    "show": "catalog",
}


def _app(modules: Iterable[str]) -> Any:
    """The app with the commands of `modules` registered."""
    for module in modules:
        importlib.import_module(f"dpcost.cli.{module}")
    from dpcost.cli.core import app

    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return _app(MODULES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Console-script entry point: the command named first, or every command (--help, a typo)."""
    import gc

    gc.disable()  # importing typer and pydantic and building the app make thousands of objects and no garbage
    import typer

    _skip_plugin_loader()
    named = next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)
    module = COMMANDS.get(named or "")
    command = typer.main.get_command(_app([module] if module else MODULES))
    # what was built so far lives as long as the process: moved out of the collector's sight, a collection during
    # the command walks only what the command makes
    gc.freeze()
    gc.enable()
    command(prog_name="dpcost")
