"""`dpcost plan`: the best plans for a model on a cluster (engine/search.py searches, render/plan.py lays out)."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dpcost.cli.core import BriefOpt, Format, FormatOpt, OutputOpt, app, emit, load
from dpcost.cli.options import (
    MaxExposedCommOpt,
    MaxMemoryOpt,
    MaxStepTimeOpt,
    MinEfficiencyOpt,
    MinTokensPerSOpt,
    ModelOpt,
    TopologyOpt,
    build_options,
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
    "shard_group",
    "framework",
    "micro_batch",
    "accumulation",
    "bucket_bytes",
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


@app.command()
@plan_options(skip=SEARCHED)
def plan(
    model: ModelOpt,
    gpus: Annotated[int, typer.Option("--gpus", "-g", metavar="N", parser=whole("--gpus"), help="GPUs in the job.")],
    topology: TopologyOpt = "dgx-h100",
    top: Annotated[int, typer.Option("--top", metavar="N", parser=whole("--top"), help="How many plans to show.")] = 5,
    max_memory: MaxMemoryOpt = None,
    max_step_time: MaxStepTimeOpt = None,
    min_efficiency: MinEfficiencyOpt = None,
    max_exposed_comm: MaxExposedCommOpt = None,
    min_tokens_per_s: MinTokensPerSOpt = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    brief: BriefOpt = False,
    options_values: dict[str, Any] | None = None,
) -> None:
    """The fastest plans that fit: every TP x CP x PP x EP x DP layout, framework, ZeRO stage, hybrid sharding
    group, micro-batch, recomputation and bucket size (docs/plan.md), pruned by memory, ranked by step time at the
    global batch [default --global-batch: one sequence per GPU]."""
    from dpcost.checks import evaluate
    from dpcost.cli.check import _limits
    from dpcost.engine.search import plan_result, search
    from dpcost.render.plan import plan_table, plan_verdict

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
    spec, topo = load(model, topology)
    values = dict(options_values or {})
    if values.get("batch__global_batch") is None:
        values["batch__global_batch"] = str(gpus)
    base = build_options(1, values)

    def holds(report: EstimateReport) -> bool:
        return evaluate("plan", report, limits).passed

    found = search(spec, topo, gpus, base, top=top, memory_limit=limits.max_memory, accept=holds,
                   progress=_progress())  # fmt: skip
    result = plan_result(spec, topo, found, model, topology)
    verdict = plan_verdict(result)
    emit(
        [verdict] if brief else [verdict, plan_table(result)],
        fmt.value,
        doc=lambda: result.model_dump(mode="json"),
        output=output,
        title=f"{result.model.title} on {gpus:,} GPUs: dpcost plan",
    )


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
