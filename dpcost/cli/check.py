"""`dpcost check`: limits on plans, for CI. Exit 0 when every check holds, 1 when one fails, 2 on bad input."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from dpcost.cli.core import BriefOpt, Format, FormatOpt, OutputOpt, app, distinct, emit, writable, write
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
    said_in_the_file,
    whole,
)
from dpcost.errors import InputError

if TYPE_CHECKING:
    from dpcost.checks import Limits, ScenarioResult


@app.command()
@plan_options()
def check(
    ctx: typer.Context,
    plan: Annotated[
        Path | None,
        typer.Argument(help="A plan file of named scenarios and their limits (see examples/; `dpcost schema plan`)."),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="One plan instead of a file: catalog name, YAML or config.json.")
    ] = None,
    dp: Annotated[
        int | None,
        typer.Option("--dp", "-d", metavar="N", parser=whole("--dp"), help="Data-parallel size of that plan."),
    ] = None,
    from_file: FromOpt = None,
    topology: TopologyOpt = "dgx-h100",
    require_fit: Annotated[
        bool, typer.Option("--require-fit", help="The plan fits in GPU memory (the check when no limit is given).")
    ] = False,
    max_memory: MaxMemoryOpt = None,
    max_step_time: MaxStepTimeOpt = None,
    min_efficiency: MinEfficiencyOpt = None,
    max_exposed_comm: MaxExposedCommOpt = None,
    min_tokens_per_s: MinTokensPerSOpt = None,
    max_behind_best: Annotated[
        str | None,
        typer.Option(
            "--max-behind-best",
            metavar="X",
            help="Step at most this much slower than the best plan `dpcost plan` finds on the same GPUs: 10%.",
        ),
    ] = None,
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit",
            metavar="FILE",
            help="Also write JUnit XML: a test case per scenario and check.",
            callback=writable("--junit"),
        ),
    ] = None,
    fmt: FormatOpt = Format.table,
    output: OutputOpt = None,
    brief: BriefOpt = False,
    options_values: dict[str, Any] | None = None,
) -> None:
    """Check plans against limits: exit 0 when all hold, 1 when any fails (a table names it), 2 on bad input.

    Either one plan (--model, --dp and any estimate flag) or a plan file of named scenarios. Limit flags apply
    to every scenario of a file, over its own. Under GitHub Actions (GITHUB_ACTIONS=true) each failed check is
    also an `::error` annotation.
    """
    from dpcost.checks import report_of
    from dpcost.render.checks import check_table, check_verdict, github_annotations, junit_xml

    given = {
        "require_fit": require_fit or None,
        "max_memory": max_memory,
        "max_step_time": max_step_time,
        "min_efficiency": min_efficiency,
        "max_exposed_comm": max_exposed_comm,
        "min_tokens_per_s": min_tokens_per_s,
        "max_behind_best": max_behind_best,
    }
    distinct(output=output, junit=junit)
    to_stdout = output is None or str(output) == "-"
    if junit is not None and str(junit) == "-" and to_stdout:
        raise InputError("--junit", "'-' is stdout, where the report goes: write the report with --output FILE")
    flags = _limits({k: v for k, v in given.items() if v is not None})
    values = options_values or {}
    read = None  # the --from file's report, for one plan
    if plan is not None:
        for name in ("model", "dp", "topology", "from_file"):
            if _typed(ctx, name):
                flag = "--from" if name == "from_file" else f"--{name}"
                raise InputError(
                    flag,
                    f"{plan.name} names each scenario's {flag[2:]}: give a plan file or --model, --dp and "
                    "--topology (or --from), not both",
                )
        for key in values:
            if _typed(ctx, key):
                from dpcost.cli.options import field_flag

                flag = field_flag(key.split("__", 1)[1])
                raise InputError(flag, f"a plan file sets each scenario's options: put {flag[2:]} in {plan.name}")
        results = _run_plan(plan, flags)
        suite, where = plan.name, str(plan)
    else:
        if from_file is None and (model is None or dp is None):
            raise InputError(
                "--model" if model is None else "--dp", "required: one plan (--model, --dp, or --from) or a PLAN file"
            )
        one = plan_input(ctx, from_file, model, dp, values)
        if one.dp is None:
            raise InputError("--dp", f"required: {from_file} does not fix the data-parallel size")
        results = [_run_one(one, topology, flags)]
        read = one.from_config
        suite, where = results[0].name, None
    report = report_of(results)
    tables = [check_verdict(report)] if brief else [check_verdict(report), check_table(report)]
    if read is not None and not brief:
        from dpcost.render.training_config import config_table

        tables.append(config_table(read))
    emit(
        tables,
        fmt.value,
        lambda: _document(report, brief),
        output=output,
        title=f"dpcost check: {suite}",
    )
    if junit is not None:
        write(junit_xml(report, f"dpcost check {suite}"), junit, flag="--junit")
    if os.environ.get("GITHUB_ACTIONS") == "true" and not report.passed:
        # stdout is where the runner reads commands; keep a JSON, YAML, CSV or html document there clean
        stream = sys.stdout if fmt in (Format.table, Format.markdown) or not to_stdout else sys.stderr
        stream.write(github_annotations(report, where))
    if not report.passed:
        raise typer.Exit(1)


def _document(report: Any, brief: bool) -> dict[str, Any]:
    """The JSON/YAML/CSV document: the whole report, or with --brief whether it passed and each verdict."""
    doc = dict(report.model_dump(mode="json"))
    for scenario in doc["scenarios"]:
        if scenario["layout"] is None:  # absent without a layout, as in estimate's report
            del scenario["layout"]
    if brief:
        summaries = {s["name"]: s["summary"] for s in doc["scenarios"]}
        return {key: doc[key] for key in ("schema_version", "passed", "failed")} | {"summaries": summaries}
    return doc


def _typed(ctx: typer.Context, name: str) -> bool:
    """The user gave this parameter on the command line (not its default)."""
    source = ctx.get_parameter_source(name)
    return getattr(source, "name", "") == "COMMANDLINE"


def _limits(values: dict[str, Any]) -> Limits:
    """Limits from flags (or a file's mapping); an error names the flag."""
    from pydantic import ValidationError

    from dpcost.checks import CHECKS, Limits
    from dpcost.options import WRITTEN, error_message

    try:
        return Limits.model_validate(values, context=WRITTEN)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        info = Limits.model_fields.get(name)
        raise InputError(CHECKS[name][0] if name in CHECKS else name, error_message(err, info)) from None


def _merge(own: Limits, flags: Limits) -> Limits:
    """A scenario's limits with the flags' over them."""
    return own.model_copy(update=flags.model_dump(exclude_unset=True))


def _run_one(one: PlanInput, topology: str, flags: Limits) -> ScenarioResult:
    from dpcost.catalog import load_topology
    from dpcost.checks import CHECKS, evaluate
    from dpcost.engine.estimate import estimate

    assert one.dp is not None
    dp, spec = one.dp, one.spec
    options = options_of(one, dp)
    topo = load_topology(topology)
    with said_in_the_file(one):
        report = estimate(spec, topo, options)
    try:
        return evaluate(_one_name(report), report, flags, _best_step(spec, topo, options, report, flags))
    except ValueError as exc:
        check, _, why = str(exc).partition(": ")
        raise InputError(CHECKS[check][0] if check in CHECKS else "limits", why) from None


def _one_name(report: Any) -> str:
    """The flags' one scenario by its plan: "llama-70b at DP 512", or its layout, "llama-405b TP8 CP1 PP16 DP128"."""
    lay = report.layout
    if lay is None:
        return f"{report.model.name} at DP {report.setup.dp}"
    from dpcost.render.plan import layout_text

    return f"{report.model.name} {layout_text(lay.tp, lay.cp, lay.pp, lay.dp, lay.ep, lay.virtual_stages)}"


def _run_plan(plan: Path, flags: Limits) -> list[ScenarioResult]:
    from dpcost.catalog import load_model, load_plan, load_topology
    from dpcost.checks import evaluate
    from dpcost.engine.estimate import estimate

    doc = load_plan(str(plan))
    results = []
    for s in doc.scenarios:
        where = f"{plan}: scenario {s.name!r}"
        if s.from_ is not None:
            spec, options = _from_scenario(plan, s, where)
        else:
            try:
                options = s.plan_options()
            except ValueError as exc:
                raise InputError(where, str(exc)) from None
            spec = load_model(_beside(plan, str(s.model)), where=f"{where}: model")
        topo = load_topology(_beside(plan, s.topology), where=f"{where}: topology")
        try:
            report = estimate(spec, topo, options)
            limits = _merge(s.limits, flags)
            results.append(evaluate(s.name, report, limits, _best_step(spec, topo, options, report, limits)))
        except InputError as exc:  # an option the engine refuses for this model or topology
            from dpcost.cli.options import field_flag

            name = field_flag(exc.where) if exc.where.isidentifier() else exc.where
            raise InputError(where, f"{name}: {exc.message}" if name else exc.message) from None
        except ValueError as exc:
            raise InputError(where, str(exc)) from None
    return results


def _from_scenario(plan: Path, s: Any, where: str) -> tuple[Any, Any]:
    """A scenario with `from`: its training config (found beside the plan) with the scenario's own model, dp and
    options over it, as --from lays typed flags over a file."""
    from dpcost.catalog import load_model
    from dpcost.training_configs import apply, model_required, read_training_config

    config = read_training_config(_config_beside(plan, str(s.from_)), where=f"{where}: from")
    applied = apply(config, dict(s.options), s.dp, s.model)
    if applied.dp is None:
        raise InputError(where, f"dp: required: {s.from_} does not fix the data-parallel size")
    if applied.model_spec is not None:
        spec = applied.model_spec
    elif applied.model is not None:
        spec = load_model(_beside(plan, applied.model), where=f"{where}: model")
    else:
        raise InputError(where, f"model: {model_required(config, str(s.from_))}")
    one = PlanInput(spec, applied.dp, applied.values, None)
    try:
        return spec, options_of(one, applied.dp)
    except InputError as exc:
        raise InputError(where, f"{exc.where}: {exc.message}") from None


def _best_step(spec: Any, topo: Any, options: Any, report: Any, limits: Limits) -> float | None:
    """The step of the best plan `dpcost plan` finds for the scenario's GPUs, global batch and sequence length,
    under the scenario's other options and compute model, when max_behind_best asks for it (else None; None too
    when no plan fits). The scenario is a plan on those GPUs too: where it fits and beats every plan searched (with
    options the search does not vary, such as --zeropp or --compression), it is the best, 0% behind."""
    if limits.max_behind_best is None or report.time is None:
        return None
    from dpcost.engine.search import search

    s = report.setup
    gpus = report.layout.gpus if report.layout is not None else s.dp
    batch = options.batch.model_copy(update={"global_batch": s.global_batch, "seq_len": s.seq_len})
    compute = options.compute.model_copy(update={"compute_model": s.compute_model})
    base = options.model_copy(update={"batch": batch, "compute": compute})
    found = search(spec, topo, gpus, base, top=1)
    searched = found.best[0].report.summary.step_seconds if found.best else None
    own = report.time.step_seconds if report.fits else None
    steps = [step for step in (searched, own) if step is not None]
    return min(steps) if steps else None


def _config_beside(plan: Path, given: str) -> str:
    """A training config a plan names, beside the plan (_beside), with the function a Python config names."""
    from dpcost.training_configs.torchtitan_python import split_function

    file, function = split_function(given)
    return _beside(plan, file) + (f":{function}" if function else "")


def _beside(plan: Path, name: str) -> str:
    """A file a plan names is found beside the plan (a relative path is the plan's folder's); a catalog name
    stays a name."""
    from dpcost.catalog import names_a_file

    if Path(name).is_absolute():
        return name
    beside = plan.parent / name
    return str(beside) if names_a_file(name) or beside.is_file() else name
