"""`dpcost plan`: the best plans for a model on a cluster (engine/search.py searches, render/plan.py lays out)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dpcost.cli.core import BriefOpt, Format, FormatOpt, OutputOpt, app, emit
from dpcost.cli.options import (
    FromOpt,
    MaxExposedCommOpt,
    MaxMemoryOpt,
    MaxStepTimeOpt,
    MinEfficiencyOpt,
    MinTokensPerSOpt,
    PlanInput,
    TopologyOpt,
    options_of,
    plan_input,
    plan_options,
    whole,
)
from dpcost.errors import InputError

if TYPE_CHECKING:
    from dpcost.engine.report import EstimateReport

MAX_GPUS = 1 << 18  # 262,144: a search of Llama 3 70B takes about 5 s there, of a million GPUs 1.5 minutes

# What the search chooses, so not a flag of `plan` (engine/search.py says over which values).
SEARCHED = (
    "zero",
    "recompute",
    "recompute_layers",
    "recompute_block",
    "shard_group",
    "framework",
    "micro_batch",
    "accumulation",
    "bucket_bytes",
    "bucket_count",
    "tp",
    "cp",
    "pp",
    "ep",
    "etp",
    "order",
    "virtual_stages",
    "sequence_parallel",
    "mode",
    "serving_batch",
)


# The variants of data parallelism (engine/variants.py): `estimate` prices them beside one plan.
VARIANTS = ("zeropp", "compression", "powersgd_rank", "sync_every", "streaming")
# One layout's uneven pipeline split: the search splits each PP as stage_layer_counts does.
PIPELINE_SPLIT = ("first_stage_layers", "last_stage_layers", "pipeline_layout")


@app.command()
@plan_options(skip=SEARCHED + VARIANTS + PIPELINE_SPLIT)
def plan(
    ctx: typer.Context,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Catalog name (see `dpcost models`), a YAML spec or a HF config.json."),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option("--gpus", "-g", metavar="N", parser=whole("--gpus"), help="GPUs in the job [default: --from's]."),
    ] = None,
    from_file: FromOpt = None,
    topology: TopologyOpt = "dgx-h100",
    top: Annotated[int, typer.Option("--top", metavar="N", parser=whole("--top"), help="How many plans to show.")] = 5,
    max_memory: MaxMemoryOpt = None,
    max_step_time: MaxStepTimeOpt = None,
    min_efficiency: MinEfficiencyOpt = None,
    max_exposed_comm: MaxExposedCommOpt = None,
    min_tokens_per_s: MinTokensPerSOpt = None,
    compare_variants: Annotated[
        bool,
        typer.Option(
            "--compare-variants",
            help="Also price the best pure-DP plan's variants: hybrid sharding, ZeRO++, fp8 gradients, PowerSGD, "
            "1-bit and 0/1 Adam, DiLoCo (as estimate --compare-variants).",
        ),
    ] = False,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    brief: BriefOpt = False,
    options_values: dict[str, Any] | None = None,
) -> None:
    """The fastest plans that fit: every TP x CP x PP x EP x DP layout, framework, ZeRO stage, hybrid sharding
    group, micro-batch, recomputation and bucket size (docs/plan.md), pruned by memory, ranked by step time at the
    global batch [default --global-batch: one sequence per GPU]."""
    from dpcost.catalog import load_topology
    from dpcost.checks import evaluate
    from dpcost.cli.check import _limits
    from dpcost.engine.search import plan_result, search
    from dpcost.render.plan import plan_table, plan_verdict

    source = plan_input(ctx, from_file, model, None, options_values or {})
    gpus = gpus if gpus is not None else _file_gpus(source)
    if not 0 < gpus <= MAX_GPUS:
        raise InputError(
            "--gpus",
            f"plan searches 1 to {MAX_GPUS:,} GPUs (beyond, placing each layout's groups takes minutes; "
            f"dpcost estimate costs one layout at any size), got {gpus:,}",
        )
    if not 0 < top <= 1000:
        raise InputError("--top", f"how many plans to show, from 1 to 1000, got {top}")
    given = {
        "max_memory": max_memory,
        "max_step_time": max_step_time,
        "min_efficiency": min_efficiency,
        "max_exposed_comm": max_exposed_comm,
        "min_tokens_per_s": min_tokens_per_s,
    }
    limits = _limits({k: v for k, v in given.items() if v is not None})
    spec, topo = source.spec, load_topology(topology)
    values = {name: value for name, value in source.values.items() if name not in SEARCHED + VARIANTS + PIPELINE_SPLIT}
    if values.get("global_batch") is None:
        values["global_batch"] = _file_global_batch(source) or str(gpus)
    base = options_of(PlanInput(spec, 1, values, source.from_config), 1)

    def holds(report: EstimateReport) -> bool:
        return evaluate("plan", report, limits).passed

    found = search(spec, topo, gpus, base, top=top, memory_limit=limits.max_memory, accept=holds,
                   progress=_progress())  # fmt: skip
    # the model by its name or file; one the --from file's arguments define is costed from that file
    model_args = ["-m", source.model_arg] if source.model_arg is not None else ["--from", str(from_file)]
    result = plan_result(spec, topo, found, model_args, topology)
    verdict = plan_verdict(result)
    tables = [verdict] if brief else [verdict, plan_table(result)]
    if compare_variants:
        result = result.model_copy(update={"variants": _variants(spec, topo, found, base, gpus)})
        if not brief and result.variants:
            from dpcost.render.variants import variants_table

            tables.append(variants_table(result.variants, result.topology.hbm_bytes))
    if source.from_config is not None:
        from dpcost.render.training_config import config_table

        read = _searched(source.from_config)
        result = result.model_copy(update={"from_config": read})
        if not brief:
            tables.insert(1, config_table(read))
    emit(
        tables,
        fmt.value,
        doc=lambda: result.model_dump(
            mode="json", exclude={k for k in ("from_config", "variants") if getattr(result, k) is None} or None
        ),
        output=output,
        title=f"{result.model.title} on {gpus:,} GPUs: dpcost plan",
    )


def _variants(spec: Any, topo: Any, found: Any, base: Any, gpus: int) -> Any:
    """The variants of the best pure-DP plan the search kept, else of estimate's own pure-DP plan on the GPUs."""
    from dpcost.engine.estimate import compare_variants

    pure = next((f.options for f in found.best if f.options.parallel.trivial), None)
    if pure is None:  # estimate's own pure-DP plan, at the compute model the plans were ranked with
        model = found.best[0].options.compute.compute_model if found.best else None
        pure = base.with_dp(gpus).model_copy(
            update={"compute": base.compute.model_copy(update={"compute_model": model})}
        )
    return compare_variants(spec, topo, pure).variants


def _file_gpus(source: PlanInput) -> int:
    """The GPUs the --from file's plan runs on: DP x TP x CP x PP, when it fixes DP."""
    from dpcost.units import parse_whole

    if source.from_config is None or source.dp is None:
        said = f": {source.from_config.file} does not fix the data-parallel size" if source.from_config else ""
        raise InputError("--gpus", f"required{said}")
    gpus = source.dp
    for name in ("tp", "cp", "pp"):
        gpus *= parse_whole(source.values.get(name, 1))
    return gpus


def _file_global_batch(source: PlanInput) -> str | None:
    """The --from file's global batch: its own, or micro-batch x accumulation x DP where it fixes all three."""
    from dpcost.units import parse_whole

    values = source.values
    if source.from_config is None or source.dp is None or "accumulation" not in values:
        return None
    return str(parse_whole(values.get("micro_batch", 1)) * parse_whole(values["accumulation"]) * source.dp)


def _searched(config: Any) -> Any:
    """The --from report with the settings the search chooses said so."""
    from dpcost.options import field_flag

    searched = {field_flag(name) for name in SEARCHED}
    rows = [
        row.model_copy(update={"became": "", "note": "the search chooses it"})
        if row.became.split(" ")[0] in searched
        else row
        for row in config.settings
    ]
    return config.model_copy(update={"settings": rows})


def _progress() -> Any:
    """A progress bar on stderr once a search has run about a second, in a terminal; silent otherwise."""
    if not sys.stderr.isatty():
        return None
    start = time.perf_counter()
    bar: list[Any] = []

    def tick(done: int, total: int) -> None:
        if not bar:
            if time.perf_counter() - start < 1.0 or done >= total:
                return
            from rich.console import Console
            from rich.progress import Progress

            progress = Progress(console=Console(stderr=True), transient=True)
            progress.start()
            bar.append((progress, progress.add_task("dpcost plan: searching", total=total)))
        progress, task = bar[0]
        progress.update(task, completed=done)
        if done >= total:
            progress.stop()

    return tick
