"""`dpcost calibrate`: fit a topology to a cluster's own nccl-tests runs, or the compute efficiency and the losses
at scale to its own training steps (--steps)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dpcost.cli.core import Format, FormatOpt, OutputOpt, app, distinct, emit, writable, write
from dpcost.cli.options import plan_options
from dpcost.errors import InputError

if TYPE_CHECKING:
    from dpcost.calibration_steps import StepFit, Steps

MIN_CALIBRATION_POINTS = 4
DEFAULT_TOPOLOGY = "dgx-h100"  # as estimate's --topology


@app.command()
@plan_options()
def calibrate(
    ctx: typer.Context,
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            help="nccl-tests output (all_reduce_perf, reduce_scatter_perf, all_gather_perf; as printed, or -J JSON) or "
            "CSVs; a log that "
            "does not name its collective takes a '# op: all_reduce' line. None with --steps."
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option("--base", help="The topology to fit: catalog name or YAML [default: guessed from the GPU name]."),
    ] = None,
    steps: Annotated[
        Path | None,
        typer.Option(
            "--steps",
            metavar="CSV",
            help="Measured training steps instead of nccl-tests files: a CSV of gpus and one of step_seconds, "
            "tokens_per_s, tokens_per_s_per_gpu (optional per row: micro_batch, accum, global_batch, seq_len), "
            "costed with --model, --topology and estimate's flags; fits --mfu and the losses at scale.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="With --steps: the model the steps trained (as estimate's --model)."),
    ] = None,
    topology: Annotated[
        str | None,
        typer.Option(
            "--topology",
            "-t",
            help=f"With --steps: the topology they ran on (as estimate's) [default: {DEFAULT_TOPOLOGY}].",
        ),
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
    save_plan: Annotated[
        Path | None,
        typer.Option(
            "--save-plan",
            metavar="FILE",
            help="With --steps: write a plan file for `dpcost check` with the fitted values ('-': stdout).",
            callback=writable("--save-plan"),
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="The fitted topology's name [default: the saved file's stem].")
    ] = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    options_values: dict[str, Any] | None = None,
) -> None:
    """Fit a topology to a cluster's own nccl-tests runs; `--topology my-cluster.yaml` then uses it everywhere.

    With --steps, fit the compute efficiency (--mfu) and the losses at scale (--sync-jitter, --overlap-slowdown,
    the topology's scaling_loss) to the cluster's own measured training steps: its small runs then predict its
    large ones. With two or more GPU counts the largest is held out, and a fit that predicts it worse than the
    defaults is not kept.
    """
    from dpcost.cli.check import _typed

    values = options_values or {}
    distinct(output=output, save_topology=save, save_plan=save_plan)
    if steps is not None:
        if files:
            raise InputError("FILES", "give nccl-tests files or --steps, not both")
        if _typed(ctx, "base"):
            raise InputError("--base", "with --steps the topology is --topology (as estimate's)")
        if model is None:
            raise InputError("--model", "required with --steps: the model the measured steps trained")
        _calibrate_steps(ctx, steps, model, topology, values, save, save_plan, name, fmt, output)
        return
    if not files:
        raise InputError("FILES", "required: nccl-tests files to fit a topology to, or --steps CSV of training steps")
    for flag, given in (("--model", model), ("--topology", topology), ("--save-plan", save_plan)):
        if given is not None:
            hint = "; nccl-tests files take --base" if flag == "--topology" else ""
            raise InputError(flag, f"goes with --steps (measured training steps){hint}")
    for key in values:
        if _typed(ctx, key):
            from dpcost.cli.options import field_flag

            raise InputError(
                field_flag(key.split("__", 1)[1]), "a plan flag goes with --steps (measured training steps)"
            )
    _calibrate_collectives(files, base, save, name, fmt, output)


def _calibrate_collectives(
    files: list[Path], base: str | None, save: Path | None, name: str | None, fmt: Format, output: Path | None
) -> None:
    from dpcost.accuracy import guess_topology
    from dpcost.calibration import calibrate as fit_topology
    from dpcost.calibration import record
    from dpcost.catalog import load_runs, load_topology, topology_yaml
    from dpcost.engine.prepare import check_dp
    from dpcost.render.calibration import calibration_tables

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
            raise InputError(
                where, "the number of ranks is unknown (no '# Rank' lines, no ranks column): add a line '# ranks: N'"
            )
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
    slug = _slug(name, save, f"{topo.name}-calibrated")
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


def _slug(name: str | None, save: Path | None, default: str) -> str:
    slug = name or (save.stem if save is not None and str(save) != "-" else default)
    return re.sub(r"[^a-z0-9._-]+", "-", slug.lower()).strip("-._")[:64] or "calibrated"


def _read_steps(path: Path) -> Steps:
    from dpcost.calibration_steps import read_steps
    from dpcost.catalog import _check_path, _read_text

    source = _check_path(str(path), "--steps")
    return read_steps(_read_text(source, str(source)), str(path))


def _row_values(values: dict[str, Any], overrides: dict[str, int]) -> dict[str, Any]:
    """The plan's flag values with a row's columns over them; a row's global batch replaces an accumulation
    given by flag, and its accumulation a global batch."""
    from dpcost.calibration_steps import COLUMNS

    out = dict(values)
    for column, value in overrides.items():
        section, field = COLUMNS[column]
        out[f"{section}__{field}"] = str(value)
    if "global_batch" in overrides and "accum" not in overrides:
        out["batch__accumulation"] = None
    if "accum" in overrides and "global_batch" not in overrides:
        out["batch__global_batch"] = None
    return out


def _typed_flags(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
    """The plan flags given on the command line: field key -> value as typed."""
    from dpcost.cli.check import _typed

    return {key: value for key, value in values.items() if _typed(ctx, key)}


def _calibrate_steps(
    ctx: typer.Context,
    path: Path,
    model: str,
    topology: str | None,
    values: dict[str, Any],
    save: Path | None,
    save_plan: Path | None,
    name: str | None,
    fmt: Format,
    output: Path | None,
) -> None:
    from dpcost.calibration_steps import COMPUTE_TERMS, Measured, calibrate_steps
    from dpcost.catalog import load_model, load_topology, topology_yaml
    from dpcost.cli.options import build_options
    from dpcost.engine.estimate import estimate
    from dpcost.engine.prepare import check_dp
    from dpcost.render.calibration import step_calibration_tables

    if save is not None and save_plan is not None and str(save) == "-" and str(save_plan) == "-":
        raise InputError("--save-plan", "'-' is stdout, where --save-topology - goes: name a file for one of them")
    spec = load_model(model)
    topo = load_topology(topology or DEFAULT_TOPOLOGY)
    parsed = _read_steps(path)
    for r in parsed.rows:
        check_dp(topo, r.gpus, where=f"{path}: line {r.line}: gpus")
    build_options(min(r.gpus for r in parsed.rows), values)  # the flags alone: an error names the flag
    rows = []
    for r in parsed.rows:
        where = f"{path}: line {r.line}"
        try:
            options = build_options(r.gpus, _row_values(values, r.overrides))
            report = estimate(spec, topo, options)
        except InputError as exc:
            from dpcost.cli.options import field_flag

            flag = field_flag(exc.where) if exc.where.isidentifier() else exc.where
            raise InputError(where, f"{flag}: {exc.message}" if flag else exc.message) from None
        except ValueError as exc:
            raise InputError(where, str(exc)) from None
        if report.time is None:
            raise InputError("--mode", "calibrate --steps fits measured training steps: --mode train")
        rows.append(Measured(r.line, r.gpus, r.value, options))
    typed = _typed_flags(ctx, values)
    held = [term for term in COMPUTE_TERMS if f"compute__{term}" in typed]
    fit = calibrate_steps(spec, topo, parsed.measure, rows, held)
    tables = step_calibration_tables(fit)
    notes = tables[0].notes
    if parsed.ignored:
        notes.append(f"columns not read: {', '.join(parsed.ignored)}")
    used = topo.model_copy(update={"scaling_loss": fit.values["scaling_loss"]})
    topology_arg = topology or DEFAULT_TOPOLOGY
    if save is not None:
        from dpcost.specs import Calibration

        slug = _slug(name, save, f"{topo.name}-calibrated")
        errors = {"steps": fit.error_after}
        if fit.held_out is not None:
            errors["steps, held out"] = fit.held_out.fitted_error
        used = used.model_copy(
            update={
                "name": slug,
                "title": f"{topo.title}, calibrated on measured training steps"[:500],
                "calibration": Calibration(
                    base=topo.name,
                    files=[str(path)],
                    fitted={k: v for k, v in fit.fitted.items() if k == "scaling_loss"},
                    undetermined=[f"{t.name}: {t.why}" for t in fit.terms if t.name == "scaling_loss" and t.why],
                    error=errors,
                    points=len(rows),
                ),
            }
        )
        header = (
            f"Written by `dpcost calibrate --steps {path.name}` on base topology {topo.name}"
            f" (scaling_loss {'fitted' if 'scaling_loss' in fit.fitted else 'kept: ' + _why(fit, 'scaling_loss')}).\n"
            "Use it with --topology FILE; the compute terms are in the plan file (--save-plan) and the note's flags."
        )
        write(topology_yaml(used, header), save, "--save-topology")
        if str(save) != "-":
            topology_arg = str(save)
            notes.append(f"wrote {save} (name {slug}): use it with --topology {save}")
    command = _estimate_command(model, topology_arg, typed, parsed, fit)
    notes.append(f"to cost a plan with the fitted values: {command}")
    if save_plan is not None:
        text = _plan_yaml(model, topology_arg, typed, parsed, fit, path, save_plan, values)
        write(text, save_plan, "--save-plan")
        if str(save_plan) != "-":
            notes.append(
                f"wrote {save_plan}: `dpcost check {save_plan}` costs each measured run with the fitted values"
            )
    elif save is None:
        notes.append("pass --save-plan FILE to write a plan file for `dpcost check` with the fitted values")
    if (save is not None and str(save) == "-") or (save_plan is not None and str(save_plan) == "-"):
        return
    held_out = fit.held_out
    emit(
        tables,
        fmt.value,
        doc={
            "measure": fit.measure,
            "terms": tables[0].data,
            "rows": tables[1].data,
            "error_defaults": fit.error_before,
            "error_fitted": fit.error_after,
            "held_out": None
            if held_out is None
            else {
                "gpus": held_out.gpus,
                "rows": held_out.rows,
                "error_defaults": held_out.default_error,
                "error_calibrated": held_out.fitted_error,
                "error_every_term_fitted": held_out.full_error,
                "kept_defaults": held_out.kept_defaults,
            },
            "estimate": command,
            "columns_not_read": list(parsed.ignored),
        },
        output=output,
    )


def _why(fit: StepFit, name: str) -> str:
    return next((t.why for t in fit.terms if t.name == name), "")


def _spelled(key: str, value: Any) -> tuple[str, Any]:
    """A plan flag's field key and typed value as a plan file spells it: its flag without dashes, a number as one."""
    from dpcost.cli.options import field_flag

    flag = field_flag(key.split("__", 1)[1])[2:]
    if isinstance(value, str) and re.fullmatch(r"\d+", value):
        return flag, int(value)
    return flag, value


def _constant(parsed: Steps) -> dict[str, int]:
    """The per-row columns every row gives with one value (they read as flags)."""
    out = {}
    for column in ("micro_batch", "accum", "global_batch", "seq_len"):
        seen = {r.overrides.get(column) for r in parsed.rows}
        if len(seen) == 1 and (value := seen.pop()) is not None:
            out[column] = value
    return out


def _estimate_command(model: str, topology: str, typed: dict[str, Any], parsed: Steps, fit: StepFit) -> str:
    """`dpcost estimate` at the largest measured count with the plan's flags and the fitted values."""
    import shlex

    from dpcost.calibration_steps import COLUMNS, plan_values
    from dpcost.cli.options import field_flag

    words = ["dpcost", "estimate", "--model", model, "--topology", topology]
    constant = _constant(parsed)
    for key, value in typed.items():
        field = key.split("__", 1)[1]
        if any(COLUMNS[c][1] == field for c in constant):
            continue
        flag = field_flag(field)
        if isinstance(value, bool):
            words.append(flag if value else f"--no-{flag[2:]}")
        else:
            words += [flag, str(value)]
    for column, value in constant.items():
        words += [field_flag(COLUMNS[column][1]), str(value)]
    for flag, value in plan_values(fit).items():
        words += [f"--{flag}", str(value)]
    words += ["--dp", str(max(r.gpus for r in parsed.rows))]
    return shlex.join(words)


def _plan_yaml(
    model: str,
    topology: str,
    typed: dict[str, Any],
    parsed: Steps,
    fit: StepFit,
    path: Path,
    plan: Path,
    values: dict[str, Any],
) -> str:
    """A plan file for `dpcost check`: the plan's flags and the fitted values as defaults, a scenario per measured
    row (its batch as it ran), and a header saying what it was fitted on."""
    import os

    import yaml

    from dpcost.calibration_steps import COLUMNS, plan_values
    from dpcost.catalog import names_a_file

    def beside(value: str) -> str:
        """A file named relative to here, as the plan's folder sees it (check finds files beside the plan)."""
        if str(plan) == "-" or not names_a_file(value):
            return value
        absolute = Path(value).resolve()
        relative = os.path.relpath(absolute, plan.resolve().parent)
        return str(absolute) if relative.startswith("../..") else relative

    batch = {f"batch__{field}" for _, field in COLUMNS.values()}
    defaults: dict[str, Any] = {"model": beside(model), "topology": beside(topology)}
    defaults |= dict(_spelled(k, v) for k, v in typed.items() if k not in batch)
    defaults |= plan_values(fit)
    scenarios = []
    counts: dict[int, int] = {}
    for r in parsed.rows:
        counts[r.gpus] = counts.get(r.gpus, 0) + 1
    for r in parsed.rows:
        row = _row_values(values, r.overrides)
        scenario: dict[str, Any] = {
            "name": f"{r.gpus}-gpus" + (f"-line-{r.line}" if counts[r.gpus] > 1 else ""),
            "dp": r.gpus,
        }
        scenario |= dict(_spelled(k, row[k]) for k in sorted(batch) if row.get(k) is not None)
        scenarios.append(scenario)
    body = yaml.safe_dump({"defaults": defaults, "scenarios": scenarios}, sort_keys=False, width=120)
    return _plan_header(parsed, fit, path) + body


def _plan_header(parsed: Steps, fit: StepFit, path: Path) -> str:
    from dpcost.render.calibration import _term_value

    counts = sorted({r.gpus for r in parsed.rows})
    fitted = ", ".join(
        f"{k} {_term_value(k, v)} (default {_term_value(k, fit.defaults[k])})" for k, v in fit.fitted.items()
    )
    kept = ", ".join(t.name for t in fit.terms if t.fitted is None)
    lines = [
        f"Written by `dpcost calibrate --steps {path.name}`: fitted on {len(parsed.rows)} measured rows at "
        f"{', '.join(str(c) for c in counts)} GPUs ({parsed.measure}).",
        f"Fitted: {fitted or 'nothing (the defaults are kept)'}. At the defaults: {kept or 'none'}.",
        f"Error over every row: {fit.error_before:.1%} with the defaults, {fit.error_after:.1%} fitted.",
    ]
    if (h := fit.held_out) is not None:
        lines.append(
            f"Held out: {h.gpus} GPUs predicted from the smaller counts, {h.default_error:.1%} with the defaults, "
            f"{h.fitted_error:.1%} calibrated"
            + (" (the fit would be worse: defaults kept)." if h.kept_defaults else ".")
        )
    lines.append(
        "Each scenario is a measured run; add the GPU count you plan, with its limits, and run `dpcost check FILE`."
    )
    return "".join(f"# {line}\n" for line in lines)
