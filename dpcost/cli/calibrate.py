"""`dpcost calibrate`: fit a topology to a cluster's own nccl-tests runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from dpcost.cli.core import Format, FormatOpt, OutputOpt, app, distinct, emit, writable, write
from dpcost.errors import InputError

MIN_CALIBRATION_POINTS = 4


@app.command()
def calibrate(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="nccl-tests output (all_reduce_perf, reduce_scatter_perf, all_gather_perf) or CSVs; a log that "
            "does not name its collective takes a '# op: all_reduce' line."
        ),
    ],
    base: Annotated[
        str | None,
        typer.Option("--base", help="The topology to fit: catalog name or YAML [default: guessed from the GPU name]."),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option(
            "--save-topology",
            metavar="FILE",
            help="Write the fitted topology YAML here ('-': stdout).",
            callback=writable("--save-topology"),
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="The fitted topology's name [default: the saved file's stem].")
    ] = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
) -> None:
    """Fit a topology to a cluster's own nccl-tests runs; `--topology my-cluster.yaml` then uses it everywhere."""
    from dpcost.accuracy import guess_topology
    from dpcost.calibration import calibrate as fit_topology
    from dpcost.calibration import record
    from dpcost.catalog import load_runs, load_topology, topology_yaml
    from dpcost.engine.prepare import check_dp
    from dpcost.render.calibration import calibration_tables

    distinct(output=output, save_topology=save)
    located = [(f"{f}{run.name.removeprefix(f.name)}", run) for f in files for run in load_runs(str(f), where=str(f))]
    runs = [run for _, run in located]
    if sum(len(r.rows) for r in runs) < MIN_CALIBRATION_POINTS:
        where = str(files[0]) if len(files) == 1 else "FILES"
        raise InputError(
            where,
            f"{sum(len(r.rows) for r in runs)} measured rows; calibrate needs at least {MIN_CALIBRATION_POINTS} sizes",
        )
    if base is None:
        guesses = {g for r in runs if (g := guess_topology(r)) is not None}
        if len(guesses) != 1:
            raise InputError("base", "cannot tell the GPU from the files; name the topology to fit with --base")
        base = guesses.pop()
    topo = load_topology(base, where="--base")
    for where, r in located:
        if r.ranks is None:
            raise InputError(where, "the number of ranks is unknown (no '# Rank' lines, no ranks column)")
        check_dp(topo, r.ranks, where=f"{where} (its ranks)")
        if r.gpus_per_node and r.gpus_per_node > topo.domain_size:
            raise InputError(
                where,
                f"{r.gpus_per_node} GPUs per node; {topo.name}'s NVLink domain holds "
                f"{topo.domain_size}: name a matching --base",
            )
    try:
        fit = fit_topology(topo, runs)
    except ValueError as exc:
        raise InputError("FILES", str(exc)) from None
    slug = name or (save.stem if save is not None and str(save) != "-" else f"{topo.name}-calibrated")
    slug = re.sub(r"[^a-z0-9._-]+", "-", slug.lower()).strip("-._")[:64] or "calibrated"
    calibration = record(fit, topo.name, [str(f) for f in files])
    fitted = fit.topology.model_copy(
        update={
            "name": slug,
            "title": f"{topo.title}, calibrated on {len(files)} nccl-tests file(s)"[:500],
            "calibration": calibration,
        }
    )
    tables = calibration_tables(fit)
    if save is not None:
        header = (
            f"Written by `dpcost calibrate` from {', '.join(f.name for f in files)} on base topology {topo.name}.\n"
            "Use it with --topology FILE; the calibration block records what was fitted and how well."
        )
        write(topology_yaml(fitted, header), save, "--save-topology")
        if str(save) == "-":
            return
        tables[0].notes.append(f"wrote {save} (name {slug}): use it with --topology {save}")
    else:
        tables[0].notes.append("pass --save-topology my-cluster.yaml to write the fitted topology")
    emit(
        tables,
        fmt.value,
        doc={"fitted": tables[0].data, "runs": tables[1].data, "calibration": calibration.model_dump()},
        output=output,
    )
