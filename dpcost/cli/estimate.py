"""`dpcost estimate`: cost one plan."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dpcost.cli.core import Format, app, emit, load
from dpcost.cli.options import ModelOpt, TopologyOpt, build_options, plan_options

DpOpt = Annotated[int, typer.Option("--dp", "-d", help="Data-parallel size: GPUs, one replica each.")]


@app.command()
@plan_options()
def estimate(
    model: ModelOpt,
    dp: DpOpt,
    topology: TopologyOpt = "dgx-h100",
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.table,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 when the plan does not fit in GPU memory.")] = False,
    options_values: dict[str, Any] | None = None,
) -> None:
    """Cost one plan: communication, memory per GPU by ZeRO stage, and the step time."""
    from dpcost.engine.estimate import estimate as run
    from dpcost.render.estimate import estimate_tables

    spec, topo = load(model, topology)
    report = run(spec, topo, build_options(dp, options_values or {}))
    tables = estimate_tables(report) if fmt in (Format.table, Format.markdown) else []
    emit(tables, fmt.value, lambda: report.model_dump(mode="json"))
    if check and not report.fits:
        raise typer.Exit(1)
