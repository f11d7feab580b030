"""The catalog commands: `dpcost models` (and `models import`), `dpcost topologies`, `dpcost show`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from dpcost.cli.core import Format, FormatOpt, Group, OutputOpt, app, emit, show_app

models_app = typer.Typer(
    cls=Group,
    invoke_without_command=True,
    help="List the built-in models with their derived and published parameter counts; `import` a config.json.",
)
app.add_typer(models_app, name="models")


@models_app.callback()
def models(ctx: typer.Context, fmt: FormatOpt = Format.table, output: OutputOpt = None) -> None:
    """List the built-in models with their derived and published parameter counts."""
    if ctx.invoked_subcommand is not None:
        return
    from dpcost.catalog import list_models
    from dpcost.render.catalog import models_table

    emit([models_table(list_models())], fmt.value, output=output, assumptions=_assumptions)


@models_app.command("import")
def models_import(
    config: Annotated[str, typer.Argument(help="A Hugging Face config.json.")],
    name: Annotated[str, typer.Option("--name", help="The catalog name, e.g. gemma-2-27b.")],
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Where to write the spec [default: NAME.yaml]; - for stdout.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a config.json as a model spec (YAML) to review and keep, with the counts dpcost derives."""
    from dpcost.catalog import import_hf_config
    from dpcost.engine.params import count_params
    from dpcost.units import fmt_count

    spec, where = import_hf_config(config, name, output, force)
    if output == "-":
        sys.stdout.write(where)
        return
    c = count_params(spec)
    sys.stdout.write(
        f"wrote {where}: {spec.title}, {fmt_count(c.total)} total, {fmt_count(c.active)} active "
        f"({fmt_count(c.active_excl_embedding)} without the input embedding)\n"
    )


@app.command()
def topologies(fmt: FormatOpt = Format.table, output: OutputOpt = None) -> None:
    """List the built-in topologies: GPU and tiers."""
    from dpcost.catalog import list_topologies
    from dpcost.render.catalog import topologies_table

    emit([topologies_table(list_topologies())], fmt.value, output=output, assumptions=_assumptions)


@show_app.command("model")
def show_model(
    name: Annotated[str, typer.Argument(help="Catalog name or file.")],
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """A model's architecture and where its parameters are."""
    from dpcost.catalog import load_model
    from dpcost.render.catalog import model_tables

    tables, doc = model_tables(load_model(name, where="NAME"))
    emit(tables, fmt.value, doc, output=output, assumptions=_assumptions)


@show_app.command("topology")
def show_topology(
    name: Annotated[str, typer.Argument(help="Catalog name or file.")],
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """A topology's GPU and tiers, with their effective bandwidths."""
    from dpcost.catalog import load_topology
    from dpcost.render.catalog import topology_tables

    topo = load_topology(name, where="NAME")
    emit(topology_tables(topo), fmt.value, topo.model_dump(mode="json"), output=output, assumptions=_assumptions)


def _assumptions() -> list[str]:
    from dpcost.render.assumptions import common

    return [
        "parameter counts: derived from each model's shapes (engine/params.py), beside the published ones",
        *common(),
    ]
