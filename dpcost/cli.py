"""The `dpcost` command: parse flags -> catalog -> engine -> render; errors become one line and an exit code.

Exit codes: 0 done; 1 a capacity check (--check) failed; 2 bad input (unknown name, bad file, bad flag);
3 an internal error (a bug: please report it).
"""

from __future__ import annotations

import math
import os
import re
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from dpcost.errors import DpcostError, InputError

if TYPE_CHECKING:
    from dpcost.engine.estimate import Options, Report
    from dpcost.render import Table

# typer >= 0.2x vendors click and older releases use click itself; BadParameter derives from UsageError in both.
UsageError: type[Exception] = typer.BadParameter.__mro__[1]
ClickException: type[Exception] = UsageError.__mro__[1]


def _flag(where: str) -> str:
    """Engine errors name option fields (`seq_len`); say them as the flag the user typed (`--seq-len`)."""
    return "--" + where.replace("_", "-") if re.fullmatch(r"[a-z_]+", where) else where


def _fail(message: str, code: int = 2) -> NoReturn:
    first = " ".join(message.replace("Value error, ", "").split())
    sys.stderr.write(f"dpcost: error: {first}\n")
    sys.exit(code)


class _Group(TyperGroup):
    """Every error is one line on stderr: no usage block, no rich panel, no traceback."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        standalone = kwargs.pop("standalone_mode", True)
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except InputError as exc:
            _fail(f"{_flag(exc.where)}: {exc.message}" if exc.where else exc.message)
        except DpcostError as exc:
            _fail(str(exc))
        except UsageError as exc:
            ctx = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
                sys.stdout.write(ctx.get_help() + "\n")  # a bare `dpcost` or `dpcost show`: the help, not an error
                sys.exit(0)
            _fail(exc.format_message())  # type: ignore[attr-defined]
        except ClickException as exc:
            _fail(exc.format_message(), getattr(exc, "exit_code", 2))  # type: ignore[attr-defined]
        except (typer.Abort, KeyboardInterrupt):
            _fail("aborted", 130)
        except OSError as exc:  # writing the output: a closed pipe is the reader's choice, a full disk is not
            if isinstance(exc, BrokenPipeError):
                sys.exit(0)
            _fail(f"cannot write the output ({exc.strerror or exc})", 1)
        except Exception as exc:  # a bug: say so in one line, keep the traceback for DPCOST_DEBUG=1
            if os.environ.get("DPCOST_DEBUG"):
                raise
            _fail(f"internal error ({type(exc).__name__}: {exc}); rerun with DPCOST_DEBUG=1 and report it", 3)
        if standalone:
            sys.exit(rv if isinstance(rv, int) else 0)
        return rv


app = typer.Typer(
    cls=_Group,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="The cost of data-parallel training and serving: collectives, memory per GPU and step time.",
)
show_app = typer.Typer(cls=_Group, no_args_is_help=True, help="Show one catalog entry in full.")
app.add_typer(show_app, name="show")


class Format(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


class TableFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    markdown = "markdown"


class Mode(StrEnum):
    train = "train"
    inference = "inference"


# ------------------------------------------------------------------------------------------------ output


def _console() -> Any:
    from rich.console import Console

    columns = os.environ.get("COLUMNS", "")
    width = None if sys.stdout.isatty() else (int(columns) if columns.isascii() and columns.isdigit() else 0) or 240
    return Console(width=width, highlight=False, soft_wrap=False)


def _emit_tables(tables: list[Table], fmt: str, doc: Any = None, csv_rows: list[dict[str, Any]] | None = None) -> None:
    from dpcost import render

    if fmt == "json":
        sys.stdout.write(render.to_json(doc if doc is not None else [r for t in tables for r in t.data]))
    elif fmt == "yaml":
        sys.stdout.write(render.to_yaml(doc))
    elif fmt == "markdown":
        sys.stdout.write(render.to_markdown(tables))
    elif fmt == "csv":
        sys.stdout.write(render.to_csv(csv_rows if csv_rows is not None else [r for t in tables for r in t.data]))
    else:
        console = _console()
        for rt in render.to_rich(tables):
            console.print(rt)


# ------------------------------------------------------------------------------------------------ options

ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="Catalog name (see `dpcost models`), a YAML spec or a HF config.json.")
]
TopologyOpt = Annotated[
    str, typer.Option("--topology", "-t", help="Catalog name (see `dpcost topologies`) or a YAML spec.")
]
ZeroOpt = Annotated[
    str, typer.Option("--zero", help="ZeRO stage 0-3, or auto: with --recompute auto, the fastest plan that fits.")
]
GradDtypeOpt = Annotated[
    str | None, typer.Option("--grad-dtype", help="fp32, bf16, fp16 or fp8 [default: the recipe's]")
]
MicroBatchOpt = Annotated[int, typer.Option("--micro-batch", "-b", help="Sequences per GPU per micro-batch.")]
SeqLenOpt = Annotated[
    int | None,
    typer.Option("--seq-len", "-s", help="Tokens per sequence [default: 4096, or the model's position limit]."),
]
AccumOpt = Annotated[int | None, typer.Option("--accum", "-a", help="Gradient accumulation steps [default: 1].")]
GlobalBatchOpt = Annotated[
    int | None, typer.Option("--global-batch", help="Hold the global batch (sequences) fixed: accumulation is derived.")
]
MfuOpt = Annotated[
    float,
    typer.Option(
        "--mfu", help="Fraction of dense BF16 peak the math sustains, on every FLOP executed (recomputation too)."
    ),
]
ModeOpt = Annotated[Mode, typer.Option("--mode", help="train, or inference (no gradient collectives).")]
RecomputeOpt = Annotated[str, typer.Option("--recompute", help="none, selective, full, or auto (see --zero).")]
FlashOpt = Annotated[
    bool, typer.Option("--flash-attention/--no-flash-attention", help="Flash attention stores no s^2 scores.")
]
RecipeOpt = Annotated[str, typer.Option("--recipe", help="Model-state recipe: zero-paper, deepspeed or megatron.")]
OptimizerOpt = Annotated[str, typer.Option("--optimizer", help="adamw, sgd, adam8bit or adafactor.")]
OffloadOpt = Annotated[str, typer.Option("--offload", help="none, optimizer, or params (params and optimizer) to CPU.")]
BucketOpt = Annotated[str, typer.Option("--bucket-size", help="Gradient bucket size (PyTorch DDP: 25MiB).")]
AlgorithmOpt = Annotated[
    str | None,
    typer.Option(
        "--algorithm",
        help="Force a collective algorithm: ring, tree, nvls, nvls_tree, collnet, pat, or the hierarchical what-if.",
    ),
]
SkewOpt = Annotated[float, typer.Option("--skew", help="The slowest rank's extra compute, e.g. 0.05 for 5%.")]
KeepGradsOpt = Annotated[
    bool, typer.Option("--keep-full-grads", help="Stages 2-3: accumulate unsharded gradients, reduce once per step.")
]
BatchOpt = Annotated[int, typer.Option("--batch", help="Inference: concurrent sequences per replica.")]


def _options(**kw: Any) -> Options:
    from dpcost.engine.estimate import Options
    from dpcost.units import UnitError, parse_bytes

    zero = kw.pop("zero")
    recompute = kw.pop("recompute")
    try:
        bucket = parse_bytes(kw.pop("bucket_size"))
    except UnitError as exc:
        raise InputError("bucket_size", str(exc)) from None
    if zero not in ("auto", "0", "1", "2", "3"):
        raise InputError("zero", f"ZeRO stage must be 0, 1, 2, 3 or auto, got {zero!r}")
    return Options(
        zero=None if zero == "auto" else int(zero),
        recompute=None if recompute == "auto" else recompute,
        bucket_bytes=bucket,
        mode=kw.pop("mode").value,
        **kw,
    )


def _load(model: str, topology: str) -> tuple[Any, Any]:
    from dpcost.catalog import load_model, load_topology

    return load_model(model), load_topology(topology)


# ------------------------------------------------------------------------------------------------ estimate


@app.command()
def estimate(
    model: ModelOpt,
    dp: Annotated[int, typer.Option("--dp", "-d", help="Data-parallel size: GPUs, one replica each.")],
    topology: TopologyOpt = "dgx-h100",
    zero: ZeroOpt = "auto",
    grad_dtype: GradDtypeOpt = None,
    micro_batch: MicroBatchOpt = 1,
    seq_len: SeqLenOpt = None,
    accum: AccumOpt = None,
    global_batch: GlobalBatchOpt = None,
    mfu: MfuOpt = 0.40,
    mode: ModeOpt = Mode.train,
    recompute: RecomputeOpt = "auto",
    flash_attention: FlashOpt = True,
    recipe: RecipeOpt = "zero-paper",
    optimizer: OptimizerOpt = "adamw",
    offload: OffloadOpt = "none",
    bucket_size: BucketOpt = "25MiB",
    algorithm: AlgorithmOpt = None,
    skew: SkewOpt = 0.0,
    keep_full_grads: KeepGradsOpt = False,
    batch: BatchOpt = 1,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="table, json, yaml or markdown.")] = Format.table,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 when the plan does not fit in GPU memory.")] = False,
) -> None:
    """Cost one plan: communication, memory per GPU by ZeRO stage, and the step time."""
    from dpcost import render
    from dpcost.engine.estimate import estimate as run

    spec, topo = _load(model, topology)
    report = run(
        spec,
        topo,
        _options(
            dp=dp,
            zero=zero,
            grad_dtype=grad_dtype,
            micro_batch=micro_batch,
            seq_len=seq_len,
            accumulation=accum,
            global_batch=global_batch,
            mfu=mfu,
            mode=mode,
            recompute=recompute,
            flash_attention=flash_attention,
            recipe=recipe,
            optimizer=optimizer,
            offload=offload,
            bucket_size=bucket_size,
            algorithm=algorithm,
            skew=skew,
            keep_full_grads=keep_full_grads,
            batch=batch,
        ),
    )
    _emit_tables(
        render.estimate_tables(report) if fmt in (Format.table, Format.markdown) else [],
        fmt.value,
        render.estimate_dict(report),
    )
    if check and not _fits(report):
        raise typer.Exit(1)


def _fits(report: Report) -> bool:
    if report.inference is not None:
        return report.inference.fits
    return report.memory.stages[report.setup.zero_stage].fits


# ------------------------------------------------------------------------------------------------ catalog


models_app = typer.Typer(
    cls=_Group,
    invoke_without_command=True,
    help="List the built-in models with their derived and published parameter counts; `import` a config.json.",
)
app.add_typer(models_app, name="models")


@models_app.callback()
def models(ctx: typer.Context, fmt: Annotated[TableFormat, typer.Option("--format", "-f")] = TableFormat.table) -> None:
    """List the built-in models with their derived and published parameter counts."""
    if ctx.invoked_subcommand is not None:
        return
    from dpcost import render
    from dpcost.catalog import list_models

    _emit_tables([render.models_table(list_models())], fmt.value)


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
def topologies(fmt: Annotated[TableFormat, typer.Option("--format", "-f")] = TableFormat.table) -> None:
    """List the built-in topologies: GPU and tiers."""
    from dpcost import render
    from dpcost.catalog import list_topologies

    _emit_tables([render.topologies_table(list_topologies())], fmt.value)


@show_app.command("model")
def show_model(
    name: Annotated[str, typer.Argument(help="Catalog name or file.")],
    fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.table,
) -> None:
    """A model's architecture and where its parameters are."""
    from dpcost import render
    from dpcost.catalog import load_model

    tables, doc = render.model_tables(load_model(name, where="NAME"))
    _emit_tables(tables, fmt.value, doc)


@show_app.command("topology")
def show_topology(
    name: Annotated[str, typer.Argument(help="Catalog name or file.")],
    fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.table,
) -> None:
    """A topology's GPU and tiers, with their effective bandwidths."""
    from dpcost import render
    from dpcost.catalog import load_topology

    topo = load_topology(name, where="NAME")
    _emit_tables(render.topology_tables(topo), fmt.value, topo.model_dump(mode="json"))


# ------------------------------------------------------------------------------------------------ collective


def _sizes(sizes: str | None, min_bytes: str, max_bytes: str, factor: float) -> list[int]:
    from dpcost.units import UnitError, parse_message_size

    try:
        if sizes is not None:
            out = [int(parse_message_size(s)) for s in sizes.split(",") if s.strip()]
            if not out or min(out) <= 0:
                raise InputError("sizes", f"give positive sizes of a byte or more, such as 64M,1G; got {sizes!r}")
            return out
    except UnitError as exc:
        raise InputError("sizes", str(exc)) from None
    bounds = []
    for flag, text in (("min_bytes", min_bytes), ("max_bytes", max_bytes)):
        try:
            bounds.append(int(parse_message_size(text)))
        except UnitError as exc:
            raise InputError(flag, str(exc)) from None
    lo, hi = bounds
    if lo <= 0 or hi < lo:
        raise InputError("min_bytes", f"need 1 <= --min-bytes <= --max-bytes, got {min_bytes!r} and {max_bytes!r}")
    if factor <= 1:
        raise InputError("factor", f"must be > 1, got {factor}")
    n = math.floor(math.log(hi / lo) / math.log(factor) + 1e-9) + 1
    if n > 10_000:
        raise InputError("factor", f"{n} sizes is too many; raise --factor or narrow the range")
    return [round(lo * factor**i) for i in range(n)]


@app.command()
def collective(
    op: Annotated[
        str | None, typer.Option("--op", help="all_reduce (default), reduce_scatter, all_gather, broadcast or reduce.")
    ] = None,
    topology: TopologyOpt = "dgx-h100",
    ranks: Annotated[
        int | None, typer.Option("--ranks", "-n", help="GPUs in the collective [default: 16, or the compared run's].")
    ] = None,
    min_bytes: Annotated[
        str, typer.Option("--min-bytes", "-b", help="nccl-tests style: 8, 64K, 16M, 1G (binary).")
    ] = "8",
    max_bytes: Annotated[str, typer.Option("--max-bytes", "-e")] = "16G",
    factor: Annotated[float, typer.Option("--factor", "-f", help="Size multiplier between rows.")] = 2.0,
    sizes: Annotated[str | None, typer.Option("--sizes", help="Explicit sizes, e.g. 64M,1G.")] = None,
    algorithm: AlgorithmOpt = None,
    compare: Annotated[
        Path | None, typer.Option("--compare", help="An nccl-tests log or CSV: adds measured time and error.")
    ] = None,
    fmt: Annotated[TableFormat, typer.Option("--format", help="table, json, csv or markdown.")] = TableFormat.table,
) -> None:
    """Predicted collective time in nccl-tests' vocabulary (size, time, algbw, busbw), optionally beside a real run."""
    from dpcost import render
    from dpcost.catalog import load_measurements, load_topology
    from dpcost.engine.collectives import ALGORITHMS, OPS
    from dpcost.engine.collectives import collective as run
    from dpcost.engine.estimate import check_dp

    topo = load_topology(topology)
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise InputError("algorithm", f"must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    measured: dict[tuple[str, int], dict[str, float]] = {}
    ops = [op or "all_reduce"]
    ranks_from, algorithm_from = "ranks", "algorithm"
    if compare is not None:
        if sizes is not None:
            raise InputError("sizes", "--compare takes its sizes from the measured file; give one or the other")
        m = load_measurements(str(compare))
        if ranks is None:
            ranks, ranks_from = m.ranks, f"--compare {compare.name} (its ranks)"
        if op is not None and op not in m.ops:
            raise InputError("op", f"{compare.name} measures {', '.join(m.ops)}, not {op}")
        ops = [op] if op else list(m.ops)
        if algorithm is None and m.algorithm is not None:
            algorithm, algorithm_from = m.algorithm, f"--compare {compare.name} (its NCCL_ALGO)"
        for row in m.rows:
            measured.setdefault((row.op, row.size_bytes), {})[row.column] = row.time_us
        if m.gpus_per_node and m.gpus_per_node > topo.domain_size:
            raise InputError(
                "compare",
                f"{compare.name} has {m.gpus_per_node} GPUs per node, {topo.name}'s NVLink domains {topo.domain_size}",
            )
    if any(o not in OPS for o in ops):
        raise InputError("op", f"must be one of {', '.join(OPS)}, got {op!r}")
    ranks = 16 if ranks is None else ranks
    check_dp(topo, ranks, where=ranks_from)
    choices = []
    for o in ops:
        wanted = (
            sorted(s for (mo, s) in measured if mo == o) if measured else _sizes(sizes, min_bytes, max_bytes, factor)
        )
        for size in wanted:
            try:
                choices.append(run(topo, o, ranks, size, algorithm))
            except ValueError as exc:
                raise InputError(algorithm_from, str(exc)) from None
    table = render.collective_rows(choices, measured or None)
    table.title = (
        f"{'/'.join(ops)} on {ranks} GPUs of {topo.name}"
        + (f" vs {compare.name}" if compare else "")
        + ": times in us, algbw and busbw in GB/s (nccl-tests' definitions)"
    )
    _emit_tables([table], fmt.value)


# ------------------------------------------------------------------------------------------------ calibrate

MIN_CALIBRATION_POINTS = 4


@app.command()
def calibrate(
    files: Annotated[
        list[Path],
        typer.Argument(help="nccl-tests output (all_reduce_perf, reduce_scatter_perf, all_gather_perf) or CSVs."),
    ],
    base: Annotated[
        str | None,
        typer.Option("--base", help="The topology to fit: catalog name or YAML [default: guessed from the GPU name]."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the fitted topology YAML here ('-': stdout).")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="The fitted topology's name [default: the output file's stem].")
    ] = None,
    fmt: Annotated[TableFormat, typer.Option("--format", help="table, json, csv or markdown.")] = TableFormat.table,
) -> None:
    """Fit a topology to a cluster's own nccl-tests runs; `--topology my-cluster.yaml` then uses it everywhere."""
    from dpcost import render
    from dpcost.accuracy import guess_topology
    from dpcost.calibration import calibrate as fit_topology
    from dpcost.calibration import record
    from dpcost.catalog import load_runs, load_topology, topology_yaml
    from dpcost.engine.estimate import check_dp

    runs = [run for f in files for run in load_runs(str(f), where=str(f))]
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
    for r in runs:
        if r.ranks is None:
            raise InputError(r.name, "the number of ranks is unknown (no '# Rank' lines, no ranks column)")
        check_dp(topo, r.ranks, where=f"{r.name} (its ranks)")
        if r.gpus_per_node and r.gpus_per_node > topo.domain_size:
            raise InputError(
                r.name,
                f"{r.gpus_per_node} GPUs per node; {topo.name}'s NVLink domain holds "
                f"{topo.domain_size}: name a matching --base",
            )
    try:
        fit = fit_topology(topo, runs)
    except ValueError as exc:
        raise InputError("FILES", str(exc)) from None
    slug = name or (output.stem if output is not None and str(output) != "-" else f"{topo.name}-calibrated")
    slug = re.sub(r"[^a-z0-9._-]+", "-", slug.lower()).strip("-._")[:64] or "calibrated"
    calibration = record(fit, topo.name, [str(f) for f in files])
    fitted = fit.topology.model_copy(
        update={
            "name": slug,
            "title": f"{topo.title}, calibrated on {len(files)} nccl-tests file(s)"[:500],
            "calibration": calibration,
        }
    )
    tables = render.calibration_tables(fit)
    if output is not None:
        header = (
            f"Written by `dpcost calibrate` from {', '.join(f.name for f in files)} on base topology {topo.name}.\n"
            "Use it with --topology FILE; the calibration block records what was fitted and how well."
        )
        text = topology_yaml(fitted, header)
        if str(output) == "-":
            sys.stdout.write(text)
            return
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError("output", f"{output}: cannot write ({exc.strerror or exc})") from None
        tables[0].notes.append(f"wrote {output} (name {slug}): use it with --topology {output}")
    else:
        tables[0].notes.append("pass --output my-cluster.yaml to write the fitted topology")
    _emit_tables(
        tables,
        fmt.value,
        doc={"fitted": tables[0].data, "runs": tables[1].data, "calibration": calibration.model_dump()},
    )


# ------------------------------------------------------------------------------------------------ memory


@app.command()
def memory(
    dp: Annotated[int, typer.Option("--dp", "-d", help="Data-parallel size.")],
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
    recipe: RecipeOpt = "zero-paper",
    optimizer: OptimizerOpt = "adamw",
    offload: OffloadOpt = "none",
    grad_dtype: GradDtypeOpt = None,
    micro_batch: MicroBatchOpt = 1,
    seq_len: SeqLenOpt = None,
    recompute: RecomputeOpt = "auto",
    flash_attention: FlashOpt = True,
    bucket_size: BucketOpt = "25MiB",
    gpus_per_node: Annotated[
        int | None, typer.Option("--gpus-per-node", help="For DeepSpeed's per-CPU figures [default: the topology's].")
    ] = None,
    fmt: Annotated[TableFormat, typer.Option("--format", help="table, json, csv or markdown.")] = TableFormat.table,
) -> None:
    """Memory per GPU for ZeRO stages 0-3 (like the ZeRO paper's Table 1), with what fits."""
    from dpcost import render
    from dpcost.catalog import load_model, load_topology
    from dpcost.engine.estimate import memory_by_stage
    from dpcost.engine.memory import DeepSpeedEstimate, deepspeed_estimates
    from dpcost.engine.params import count_params
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
    if gpus_per_node is not None and (gpus_per_node < 1 or recipe != "deepspeed"):
        raise InputError(
            "gpus_per_node", "a positive number of GPUs per node, for --recipe deepspeed's per-CPU figures"
        )
    topo = load_topology(topology)
    memory = memory_by_stage(
        spec,
        topo,
        _options(
            dp=dp,
            zero="auto",
            grad_dtype=grad_dtype,
            micro_batch=micro_batch,
            seq_len=seq_len,
            recompute=recompute,
            flash_attention=flash_attention,
            recipe=recipe,
            optimizer=optimizer,
            offload=offload,
            bucket_size=bucket_size,
            mode=Mode.train,
        ),
    )
    counts = count_params(spec)
    deepspeed: tuple[DeepSpeedEstimate, ...] = ()
    if recipe == "deepspeed":
        per_node = gpus_per_node or min(dp, topo.domain_size)
        if dp % per_node:
            raise InputError("gpus_per_node", f"--dp {dp} is not a whole number of {per_node}-GPU nodes")
        deepspeed = deepspeed_estimates(
            counts.total, spec.largest_layer_params or counts.largest_module, per_node, dp // per_node
        )
    tables = render.memory_tables(memory.stages, micro_batch, memory.recompute, deepspeed)
    tables[0].title = f"{spec.title}: memory per GPU at DP {dp} on {topo.gpu.name} ({memory.recipe})"
    if memory.activations_note:
        tables[0].notes.append(memory.activations_note)
    doc = {
        "model": spec.name,
        "params": int(counts.total),
        "dp": dp,
        "hbm_bytes": int(topo.gpu.hbm),
        "recipe": recipe,
        "stages": tables[0].data,
        "deepspeed": tables[1].data if deepspeed else [],
    }
    if fmt == TableFormat.json:
        _emit_tables(tables, "json", doc)
    else:
        _emit_tables(tables, fmt.value, csv_rows=tables[0].data)


# ------------------------------------------------------------------------------------------------ sweep


def _dp_list(text: str) -> list[int]:
    """'8,64,512' or '8..4096' (powers of two) or a mix: '8..64,96'."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"([0-9]{1,9})\.\.([0-9]{1,9})", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if lo < 1 or hi < lo:
                raise InputError("dp", f"range {part!r} must go up from a positive size, like 8..4096")
            v = lo
            while v <= hi:
                out.append(v)
                v *= 2
        elif re.fullmatch(r"[0-9]{1,9}", part) and int(part) > 0:
            out.append(int(part))
        else:
            raise InputError("dp", f"expected sizes like 8,64,512 or a range 8..4096, got {part!r}")
    return sorted(set(out))


@app.command()
def sweep(
    model: ModelOpt,
    dp: Annotated[str, typer.Option("--dp", "-d", help="Sizes: 8,64,512 or 8..4096 (powers of two).")],
    topology: TopologyOpt = "dgx-h100",
    zero: ZeroOpt = "auto",
    grad_dtype: GradDtypeOpt = None,
    micro_batch: MicroBatchOpt = 1,
    seq_len: SeqLenOpt = None,
    accum: AccumOpt = None,
    global_batch: GlobalBatchOpt = None,
    mfu: MfuOpt = 0.40,
    recompute: RecomputeOpt = "auto",
    flash_attention: FlashOpt = True,
    recipe: RecipeOpt = "zero-paper",
    optimizer: OptimizerOpt = "adamw",
    offload: OffloadOpt = "none",
    bucket_size: BucketOpt = "25MiB",
    algorithm: AlgorithmOpt = None,
    skew: SkewOpt = 0.0,
    keep_full_grads: KeepGradsOpt = False,
    fmt: Annotated[
        TableFormat, typer.Option("--format", "-f", help="table, json, csv or markdown.")
    ] = TableFormat.table,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="Write a chart of efficiency and step time: FILE.svg, or FILE.png (needs matplotlib)."
        ),
    ] = None,
    chart: Annotated[bool, typer.Option("--chart", help="Also print a terminal chart of scaling efficiency.")] = False,
) -> None:
    """One row per DP size: step time, compute, exposed communication, efficiency, throughput, memory."""
    from dpcost import render
    from dpcost.engine.estimate import estimate as run

    sizes = _dp_list(dp)
    if plot is not None:
        _check_plot_path(plot)
    spec, topo = _load(model, topology)
    reports = []
    progress = _progress(len(sizes))
    for size in sizes:
        reports.append(
            run(
                spec,
                topo,
                _options(
                    dp=size,
                    zero=zero,
                    grad_dtype=grad_dtype,
                    micro_batch=micro_batch,
                    seq_len=seq_len,
                    accumulation=accum,
                    global_batch=global_batch,
                    mfu=mfu,
                    mode=Mode.train,
                    recompute=recompute,
                    flash_attention=flash_attention,
                    recipe=recipe,
                    optimizer=optimizer,
                    offload=offload,
                    bucket_size=bucket_size,
                    algorithm=algorithm,
                    skew=skew,
                    keep_full_grads=keep_full_grads,
                ),
            )
        )
        progress(size)
    table = render.sweep_table(reports, fixed_global_batch=global_batch is not None)
    _emit_tables([table], fmt.value)
    if chart and fmt == TableFormat.table:
        sys.stdout.write(render.sweep_chart(reports))
    if plot is not None:
        _write_plot(reports, plot)
        sys.stderr.write(f"dpcost: wrote {plot}\n")


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


def _write_plot(reports: list[Report], path: Path) -> None:
    """SVG needs nothing; PNG goes through matplotlib (the optional `plot` extra)."""
    from dpcost import render

    if path.suffix.lower() == ".svg":
        text = render.sweep_svg(reports)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise InputError("plot", f"cannot write {path}: {exc.strerror or exc}") from None
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dps = [r.setup.dp for r in reports]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(dps, [100 * r.time.scaling_efficiency for r in reports if r.time], marker="o")
    ax1.set(xscale="log", xlabel="DP size (GPUs)", ylabel="scaling efficiency (%)", title=reports[0].setup.model_title)
    ax2.plot(dps, [r.time.step for r in reports if r.time], marker="o", label="bucketed")
    ax2.plot(dps, [r.time.overlapped for r in reports if r.time], linestyle="--", label="ideal overlap")
    ax2.plot(dps, [r.time.serial for r in reports if r.time], linestyle=":", label="serial")
    ax2.set(xscale="log", xlabel="DP size (GPUs)", ylabel="step time (s)", title=reports[0].setup.topology)
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


def main() -> None:
    """Console-script entry point."""
    # pydantic looks for plugins through every installed distribution's entry points (~15 ms per start);
    # the command uses none.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    typer.main.get_command(app)(prog_name="dpcost")
