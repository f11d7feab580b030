"""`dpcost estimate`: cost one plan."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dpcost.cli.core import BriefOpt, Format, FormatOpt, OutputOpt, app, emit
from dpcost.cli.options import (
    FromOpt,
    TopologyOpt,
    options_of,
    plan_input,
    plan_options,
    said_in_the_file,
    whole,
)
from dpcost.errors import InputError

DpOpt = Annotated[
    int | None,
    typer.Option("--dp", "-d", metavar="N", parser=whole("--dp"), help="Data-parallel size: GPUs, one replica each."),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model", "-m", help="Catalog name (see `dpcost models`), a YAML spec or a HF config.json.", show_default=False
    ),
]


@app.command()
@plan_options()
def estimate(
    ctx: typer.Context,
    model: ModelOpt = None,
    dp: DpOpt = None,
    from_file: FromOpt = None,
    topology: TopologyOpt = "dgx-h100",
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    brief: BriefOpt = False,
    check: Annotated[
        bool,
        typer.Option("--check", help="Exit 1 when the plan does not fit in GPU memory (`dpcost check` does more)."),
    ] = False,
    compare_variants: Annotated[
        bool,
        typer.Option(
            "--compare-variants",
            help="Also cost the plan's data parallelism as hybrid sharding, ZeRO++, fp8 gradients, PowerSGD, 1-bit "
            "and 0/1 Adam and DiLoCo, side by side (engine/variants.py).",
        ),
    ] = False,
    options_values: dict[str, Any] | None = None,
) -> None:
    """Cost one plan: communication, memory per GPU by ZeRO stage, and the step time."""
    from dpcost.catalog import load_topology
    from dpcost.engine.estimate import compare_variants as run_variants
    from dpcost.engine.estimate import estimate as run

    plan = plan_input(ctx, from_file, model, dp, options_values or {})
    if plan.dp is None:
        said = f": {from_file} does not fix the data-parallel size" if from_file is not None else ""
        raise InputError("--dp", f"required{said}")
    dp = plan.dp
    spec, topo = plan.spec, load_topology(topology)
    options = options_of(plan, dp)
    with said_in_the_file(plan):
        report = (run_variants if compare_variants else run)(spec, topo, options)
    if plan.from_config is not None:
        report = report.model_copy(update={"from_config": plan.from_config})
    tables: list[Any] = []
    if fmt in (Format.table, Format.markdown, Format.html):  # the tables' module only where they are drawn
        from dpcost.render.estimate import estimate_tables, verdict_table

        tables = [verdict_table(report)] if brief else estimate_tables(report)
        if report.from_config is not None and not brief:
            from dpcost.render.training_config import config_table

            tables.insert(1, config_table(report.from_config))
        if report.variants is not None:
            from dpcost.render.variants import variant_row, variants_table

            if not compare_variants:  # one variant asked for by its flag: the verdict says what it gives
                tables[0].rows.append(variant_row(report.variants))
            if not brief:
                tables.insert(1, variants_table(report.variants, report.summary.hbm_bytes))
    emit(
        tables,
        fmt.value,
        lambda: _document(report, brief),
        output=output,
        assumptions=lambda: _assumptions(options, report),
        charts=lambda: _charts(report),
        title=f"{report.model.title} at DP {dp} on {report.topology.name}: dpcost estimate",
    )
    if check and not report.fits:
        raise typer.Exit(1)


def _document(report: Any, brief: bool) -> dict[str, Any]:
    """The JSON/YAML/CSV document: the whole report, or with --brief its schema version and summary alone. The
    per-op model's `compute` section is left out, not written as null, when the report has none (--compute-model
    flops), so that the default output keeps its keys."""
    if brief:
        return {"schema_version": report.schema_version, "summary": report.summary.model_dump(mode="json")}
    absent: dict[str, object] = {
        name: True for name in ("compute", "layout", "from_config", "variants") if getattr(report, name) is None
    }
    if report.communication.shard_group is None:  # hybrid sharding's keys, absent without it
        absent["communication"] = {"shard_group": True, "bytes_per_tier": True, "groups": True}
    if report.layout is not None:  # absent without --mtp-layers, and for a model without MoE layers
        keys = {"mtp_layers": report.layout.mtp_layers, "moe_host_seconds": report.layout.moe_host_seconds}
        if any(value is None for value in keys.values()):
            absent["layout"] = {name: True for name, value in keys.items() if value is None}
    if report.setup.recompute_block is None:  # absent without --recompute-block
        absent["setup"] = {"recompute_block": True}
    return dict(report.model_dump(mode="json", exclude=absent or None))


def _assumptions(options: Any, report: Any) -> list[str]:
    from dpcost.render.assumptions import plan_assumptions

    return plan_assumptions(options, report)


def _charts(report: Any) -> list[tuple[str, str]]:
    """Imported only for html: the JSON path stays as fast as before."""
    from dpcost.render.charts import estimate_charts

    return estimate_charts(report)
