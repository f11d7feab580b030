"""`dpcost memory`: memory per GPU at every ZeRO stage, and DeepSpeed's own estimators."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dpcost.cli.core import Format, FormatOpt, OutputOpt, app, emit
from dpcost.cli.options import TopologyOpt, build_options, plan_options, whole
from dpcost.errors import InputError


@app.command()
@plan_options(skip=("zero", "mode", "serving_batch", "mfu", "skew", "algorithm", "accumulation", "global_batch"))
def memory(
    dp: Annotated[int, typer.Option("--dp", "-d", metavar="N", parser=whole("--dp"), help="Data-parallel size.")],
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Catalog name, YAML spec or HF config.json.")
    ] = None,
    params: Annotated[
        str | None, typer.Option("--params", help="Parameter count instead of a model, e.g. 7.5B.")
    ] = None,
    largest_layer_params: Annotated[
        str | None, typer.Option("--largest-layer-params", help="Largest layer (DeepSpeed) / gathered block (FSDP).")
    ] = None,
    topology: TopologyOpt = "dgx-h100",
    gpus_per_node: Annotated[
        int | None,
        typer.Option(
            "--gpus-per-node",
            metavar="N",
            parser=whole("--gpus-per-node"),
            help="For DeepSpeed's per-CPU figures [default: the topology's].",
        ),
    ] = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    options_values: dict[str, Any] | None = None,
) -> None:
    """Memory per GPU for ZeRO stages 0-3 (like the ZeRO paper's Table 1), with what fits."""
    from dpcost.catalog import load_model, load_topology
    from dpcost.engine.estimate import memory_by_stage
    from dpcost.engine.memory import DeepSpeedEstimate, deepspeed_estimates
    from dpcost.engine.params import count_params
    from dpcost.engine.report import DeepSpeedRow, MemoryReport
    from dpcost.render.memory import memory_tables
    from dpcost.render.table import gb
    from dpcost.specs import ModelSpec
    from dpcost.units import UnitError, parse_count

    if (model is None) == (params is None):
        raise InputError("model", "give --model NAME or --params N (one of them)")
    counts_given: dict[str, float] = {}
    for flag, text in (("params", params), ("largest_layer_params", largest_layer_params)):
        if text is not None:
            try:
                counts_given[flag] = parse_count(text)
            except UnitError as exc:
                raise InputError(flag, str(exc)) from None
            if counts_given[flag] < 1:
                raise InputError(flag, f"must be at least one parameter, got {text!r}")
    largest = counts_given.get("largest_layer_params")
    if model is None:
        spec = ModelSpec(
            name="custom", title=f"{params} parameters", params=counts_given["params"], largest_layer_params=largest
        )
    else:
        spec = load_model(model)
        if largest:
            spec = spec.model_copy(update={"largest_layer_params": largest})
    from dpcost.engine.prepare import recipe_of

    options = build_options(dp, options_values or {})
    recipe = recipe_of(options)
    if gpus_per_node is not None and (gpus_per_node < 1 or recipe != "deepspeed"):
        raise InputError(
            "gpus_per_node", "a positive number of GPUs per node, for --recipe deepspeed's per-CPU figures"
        )
    topo = load_topology(topology)
    memory = memory_by_stage(spec, topo, options)
    counts = count_params(spec)
    deepspeed: tuple[DeepSpeedEstimate, ...] = ()
    if recipe == "deepspeed":
        per_node = gpus_per_node or min(dp, topo.domain_size)
        if dp % per_node:
            raise InputError("gpus_per_node", f"--dp {dp} is not a whole number of {per_node}-GPU nodes")
        deepspeed = deepspeed_estimates(
            counts.total, spec.largest_layer_params or counts.largest_module, per_node, dp // per_node
        )
    tables = memory_tables(memory, deepspeed)
    tables[0].title = f"{spec.title}: memory per GPU at DP {dp} on {topo.gpu.name} ({memory.recipe})"
    report = MemoryReport(
        model=spec.name,
        params=int(counts.total),
        dp=dp,
        hbm_bytes=memory.hbm_bytes,
        recipe=recipe,
        recompute=memory.recompute,
        note=memory.note,
        stages=memory.stages,
        deepspeed=[DeepSpeedRow(**row) for row in (tables[1].data if deepspeed else [])],
    )

    def charts() -> list[tuple[str, str]]:
        from dpcost.render.charts import memory_svg

        return [(f"Memory per GPU by ZeRO stage (HBM {gb(memory.hbm_bytes)})", memory_svg(memory, None))]

    def assumptions() -> list[str]:
        from dpcost.render.assumptions import plan_assumptions

        return [f"model: {spec.title}, {counts.total:,.0f} parameters", *plan_assumptions(options)]

    emit(
        tables,
        fmt.value,
        report.model_dump(mode="json"),
        csv_rows=tables[0].data,
        output=output,
        assumptions=assumptions,
        charts=charts,
    )
