"""`dpcost sweep`: one plan per DP size, as a table, a chart or a plot.

`estimate` and `sweep` stay two commands over one option set: an estimate is one plan with many tables, a sweep
one row per plan; letting `estimate --dp` take a list would make its output's shape depend on a value.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dpcost.cli.core import BriefOpt, Format, FormatOpt, OutputOpt, app, distinct, emit, writable
from dpcost.cli.options import FromOpt, TopologyOpt, options_of, plan_input, plan_options, said_in_the_file
from dpcost.errors import InputError

if TYPE_CHECKING:
    from dpcost.engine.report import EstimateReport


def dp_list(text: str) -> list[int]:
    """'8,64,512' or '8..4096' (powers of two) or a mix: '8..64,96'; each size in the integer grammar ('1Ki')."""
    from dpcost.units import UnitError, parse_whole

    def size(part: str) -> int:
        try:
            value = parse_whole(part)
        except UnitError:
            raise InputError("dp", f"expected sizes like 8,64,512 or a range 8..4096, got {part[:40]!r}") from None
        if not 0 < value <= 10_000_000:
            raise InputError("dp", f"{part[:40]!r}: a size from 1 to 10,000,000")
        return value

    out: list[int] = []
    for part in text.split(","):
        lo_text, dots, hi_text = part.strip().partition("..")
        if not dots:
            out.append(size(lo_text))
            continue
        lo, hi = size(lo_text), size(hi_text)
        if hi < lo:
            raise InputError("dp", f"range {part.strip()!r} must go up from a positive size, like 8..4096")
        v = lo
        while v <= hi:
            out.append(v)
            v *= 2
    return sorted(set(out))


@app.command()
@plan_options(skip=("mode", "serving_batch"))
def sweep(
    ctx: typer.Context,
    *,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Catalog name (see `dpcost models`), a YAML spec or a HF config.json."),
    ] = None,
    dp: Annotated[str, typer.Option("--dp", "-d", help="Sizes: 8,64,512 or 8..4096 (powers of two).")],
    from_file: FromOpt = None,
    topology: TopologyOpt = "dgx-h100",
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            callback=writable("--plot"),
            help="Write a chart of efficiency and step time: FILE.svg, or FILE.png (needs matplotlib).",
        ),
    ] = None,
    brief: BriefOpt = False,
    chart: Annotated[
        bool, typer.Option("--chart", help="Also print a terminal chart of scaling efficiency (table format).")
    ] = False,
    options_values: dict[str, Any] | None = None,
) -> None:
    """One row per DP size: step time, compute, exposed communication, efficiency, throughput, memory."""
    from dpcost.engine.estimate import estimate as run
    from dpcost.engine.verdict import fastest_that_fits
    from dpcost.render.sweep import sweep_chart, sweep_table, sweep_verdict

    sizes = dp_list(dp)
    if plot is not None:
        _check_plot_path(plot)
    distinct(output=output, plot=plot)
    from dpcost.catalog import load_topology

    topo = load_topology(topology)
    values = options_values or {}
    read = None
    if from_file is not None:  # read once; each DP size lays the flags over it
        from dpcost.training_configs import read_training_config

        read = read_training_config(str(from_file))
    plans = [plan_input(ctx, from_file, model, size, values, dp_text=dp, config=read) for size in sizes]
    options = options_of(plans[0], sizes[0])
    progress = _progress(len(sizes))
    reports = []
    for size, plan in zip(sizes, plans, strict=True):
        with said_in_the_file(plan):
            reports.append(run(plan.spec, topo, options_of(plan, size)))
        progress(size)
    table = sweep_table(reports, fixed_global_batch=options.batch.global_batch is not None)
    best = reports[fastest_that_fits([r.summary for r in reports])]
    verdict = sweep_verdict(reports, best)
    tables = [verdict] if brief else [verdict, table]
    if plans[0].from_config is not None and not brief:
        from dpcost.render.training_config import config_table

        tables.insert(1, config_table(plans[0].from_config))
    emit(
        tables,
        fmt.value,
        doc=(lambda: _brief(best)) if brief else table.data,
        output=output,
        assumptions=lambda: _assumptions(options, dp),
        charts=lambda: _charts(reports),
        after=(lambda width: sweep_chart(reports, width)) if chart and not brief else None,
        title=f"{reports[0].model.title} on {reports[0].topology.name}: dpcost sweep",
    )
    if plot is not None:
        _write_plot(reports, plot)
        sys.stderr.write(f"dpcost: wrote {plot}\n")


def _brief(best: EstimateReport) -> dict[str, Any]:
    """--brief in JSON, YAML or CSV: the best row's DP size and its estimate's summary."""
    return {"schema_version": best.schema_version, "dp": best.setup.dp, "summary": best.summary.model_dump(mode="json")}


def _check_plot_path(path: Path) -> None:
    """Before any work: a .svg or .png file in a folder that exists (PNG also needs matplotlib)."""
    if path.suffix.lower() not in (".svg", ".png"):
        raise InputError("plot", f"{path.name}: write a .svg or a .png file")
    if not path.parent.is_dir():
        raise InputError("plot", f"{path.parent}: no such folder")
    if path.suffix.lower() == ".png":
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise InputError(
                "plot", "PNG output needs matplotlib: pip install 'dpcost[plot]', or write FILE.svg"
            ) from None


def _write_plot(reports: list[EstimateReport], path: Path) -> None:
    """SVG needs nothing; PNG goes through matplotlib (the optional `plot` extra)."""
    from dpcost.render.sweep import sweep_svg

    if path.suffix.lower() == ".svg":
        try:
            path.write_text(sweep_svg(reports), encoding="utf-8")
        except OSError as exc:
            raise InputError("plot", f"cannot write {path}: {exc.strerror or exc}") from None
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dps = [r.setup.dp for r in reports]
    times = [r.time for r in reports if r.time is not None]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(dps, [100 * t.scaling_efficiency for t in times], marker="o")
    ax1.set(xscale="log", xlabel="DP size (GPUs)", ylabel="scaling efficiency (%)", title=reports[0].model.title)
    ax2.plot(dps, [t.step_seconds for t in times], marker="o", label="bucketed")
    ax2.plot(dps, [t.ideal_seconds for t in times], linestyle="--", label="ideal overlap")
    ax2.plot(dps, [t.serial_seconds for t in times], linestyle=":", label="serial")
    ax2.set(xscale="log", xlabel="DP size (GPUs)", ylabel="step time (s)", title=reports[0].topology.name)
    ax2.legend()
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as exc:
        raise InputError("plot", f"cannot write {path}: {exc.strerror or exc}") from None


def _progress(total: int) -> Any:
    """A progress line on stderr for long sweeps in a terminal; silent otherwise."""
    if total < 6 or not sys.stderr.isatty():
        return lambda _size: None
    done = [0]

    def tick(size: int) -> None:
        done[0] += 1
        sys.stderr.write(f"\rdpcost: DP {size} ({done[0]}/{total})" + ("\n" if done[0] == total else ""))
        sys.stderr.flush()

    return tick


def _assumptions(options: Any, dp: str) -> list[str]:
    from dpcost.render.assumptions import plan_assumptions

    return plan_assumptions(options, dp=dp)


def _charts(reports: list[EstimateReport]) -> list[tuple[str, str]]:
    from dpcost.render.charts import scaling_svg

    return [("Scaling efficiency against DP size", scaling_svg(reports))]
