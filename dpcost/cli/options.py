"""Flags shared by commands, defined once: the plan's options come from `dpcost.options`, one flag per field.

`@plan_options()` adds every field of `Options`' sections to a command's signature (typer reads the signature)
and hands the command one validated `Options` as its `options` argument; a validation error names the flag the
user typed. sqlite-utils applies its output options with a decorator the same way.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import typing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from dpcost.errors import InputError, shown_value
from dpcost.frozen import frozen

__all__ = [
    "FormatOpt",
    "FromOpt",
    "MaxExposedCommOpt",
    "MaxMemoryOpt",
    "MaxStepTimeOpt",
    "MinEfficiencyOpt",
    "MinTokensPerSOpt",
    "ModelOpt",
    "PlanInput",
    "TopologyOpt",
    "build_options",
    "field_flag",
    "flag_named",
    "number",
    "options_of",
    "plan_input",
    "plan_options",
    "said_in_the_file",
    "typed_options",
    "whole",
]

F = TypeVar("F", bound=Callable[..., Any])

ModelOpt = Annotated[
    str, typer.Option("--model", "-m", help="Catalog name (see `dpcost models`), a YAML spec or a HF config.json.")
]
TopologyOpt = Annotated[
    str, typer.Option("--topology", "-t", help="Catalog name (see `dpcost topologies`) or a YAML spec.")
]
FormatOpt = Annotated[str, typer.Option("--format", "-f", help="Output format.")]

# The limits of a plan (checks.Limits) as flags: `check` holds plans to them, `plan` leaves out the plans that miss.
MaxMemoryOpt = Annotated[
    str | None, typer.Option("--max-memory", metavar="SIZE", help="Memory per GPU at most this, e.g. 70GB.")
]
MaxStepTimeOpt = Annotated[
    str | None, typer.Option("--max-step-time", metavar="TIME", help="Step time at most this, e.g. 7s.")
]
MinEfficiencyOpt = Annotated[
    str | None, typer.Option("--min-efficiency", metavar="X", help="Scaling efficiency at least this: 0.95 or 95%.")
]
MaxExposedCommOpt = Annotated[
    str | None,
    typer.Option("--max-exposed-comm", metavar="TIME", help="Exposed communication per step at most this."),
]
MinTokensPerSOpt = Annotated[
    str | None, typer.Option("--min-tokens-per-s", metavar="N", help="Throughput at least this, e.g. 300K.")
]


def whole(flag: str) -> Callable[[str], int]:
    """A typer parser for an integer flag in dpcost's grammar (`512`, `8k`, `4Ki`); an error names the flag."""

    def parse(text: str) -> int:
        from dpcost.units import UnitError, parse_whole

        try:
            return parse_whole(text)
        except UnitError as exc:
            raise InputError(flag, str(exc)) from None

    return parse


def number(flag: str, allowed: str) -> Callable[[str], float]:
    """A typer parser for a plain number flag (`2`, `1.5`, `1e3`); an error names the flag and what it allows."""

    def parse(text: str) -> float:
        from dpcost.units import UnitError, parse_number

        try:
            return parse_number(text)
        except UnitError:
            raise InputError(flag, f"must be {allowed}, got {shown_value(text)}") from None

    return parse


def _fields(skip: Iterable[str] = ()) -> list[tuple[str, str, Any]]:
    """(section, field, FieldInfo) for every plan option, in section order."""
    from dpcost.options import SECTIONS

    return [
        (section, name, info)
        for section, model in SECTIONS.items()
        for name, info in model.model_fields.items()
        if name not in skip
    ]


def field_flag(name: str) -> str:
    """The flag of a field named in an engine error (`accumulation` -> `--accum`), or the name as a flag."""
    from dpcost.options import field_flag as flag_of_field

    return flag_of_field(name)


def _extra(info: Any) -> dict[str, Any]:
    return info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}


def _metavar(info: Any) -> str:
    """What the flag takes: its choices (with auto where None means it), or the kind of value."""
    from dpcost.options import choices

    values = [str(v) for v in choices(info.annotation)]
    if values:
        return "|".join([*values, "auto"] if _extra(info).get("auto") else values)
    return str(_extra(info).get("metavar") or ("N" if "int" in str(info.annotation) else "X"))


def _parameter(section: str, name: str, info: Any) -> inspect.Parameter:
    """One typer option for a field: bools as --x/--no-x, everything else as text that pydantic validates."""
    extra = _extra(info)
    flag, short = extra["flag"], extra.get("short")
    default = info.default
    if info.annotation is bool:
        names = [f"{flag}/--no-{flag[2:]}"]
        annotation: Any = Annotated[bool, typer.Option(*names, help=info.description)]
        return inspect.Parameter(
            f"{section}__{name}", inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
        )
    shown = "auto" if default is None and extra.get("auto") else default
    if isinstance(shown, tuple):
        shown = ",".join(str(v) for v in shown)  # a list as a person writes it
    if extra.get("metavar") == "TIME" and isinstance(shown, float):
        shown = f"{shown:g}s"  # as a person writes it: a time flag takes its unit
    names = [flag, short] if short else [flag]
    annotation = Annotated[
        str | None,
        typer.Option(*names, help=info.description, show_default=shown is not None, metavar=_metavar(info)),
    ]
    return inspect.Parameter(
        f"{section}__{name}",
        inspect.Parameter.KEYWORD_ONLY,
        default=None if shown is None else str(shown),
        annotation=annotation,
    )


def build_options(dp: int, values: dict[str, Any]) -> Any:
    """A validated Options from the flags' values; an error names the flag and what is allowed."""
    from pydantic import ValidationError

    from dpcost.options import SECTIONS, WRITTEN, Options, explain

    sections: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
    for key, value in values.items():
        section, field = key.split("__", 1)
        if value is not None:
            sections[section][field] = value
    try:
        return Options.model_validate({"dp": dp, **sections}, context=WRITTEN)
    except ValidationError as exc:
        raise InputError(*explain(exc)) from None


def plan_options(skip: Iterable[str] = ()) -> Callable[[F], F]:
    """Add every plan option (but `skip`) to a command and pass them to it as `options_values`."""
    skipped = tuple(skip)

    def decorate(func: F) -> F:
        sig = inspect.signature(func)
        hints = typing.get_type_hints(func, include_extras=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]
        own = [p for p in own if p.name != "options_values"]
        added = [_parameter(section, name, info) for section, name, info in _fields(skipped)]
        keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]

        @functools.wraps(func)
        def wrapper(**kwargs: Any) -> Any:
            values = {p.name: kwargs.pop(p.name) for p in added}
            return func(**kwargs, options_values=values)

        parameters = keyword + added
        wrapper.__signature__ = sig.replace(parameters=parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
        return typing.cast(F, wrapper)

    return decorate


# ------------------------------------------------------------------------------------------------ --from FILE

FromOpt = Annotated[
    Path | None,
    typer.Option(
        "--from",
        metavar="FILE",
        help="Read the plan from a training config: a DeepSpeed JSON, a torchtitan TOML or Python config "
        "(FILE.py:FUNCTION), a Megatron-LM launch script or an Accelerate YAML (docs/from.md). Flags given here "
        "override the file's settings.",
    ),
]


def typed(ctx: typer.Context, name: str) -> bool:
    """The user gave this parameter on the command line (not its default)."""
    return getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"


def typed_options(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
    """The plan options the user typed on the command line (not their defaults), by field name."""
    typed_values = {}
    for key, value in values.items():
        if value is not None and typed(ctx, key):
            typed_values[key.split("__", 1)[1]] = value
    return typed_values


@frozen
class PlanInput:
    """What a command costs: the model (and the --model that names it; None when the --from file's own arguments
    define it), the DP size (None when neither a flag nor the file gives it), the options' values by field name,
    and the --from file's report."""

    spec: Any
    dp: int | None
    values: dict[str, Any]
    from_config: Any = None
    model_arg: str | None = None


def plan_input(
    ctx: typer.Context,
    source: Path | None,
    model: str | None,
    dp: int | None,
    values: dict[str, Any],
    dp_text: str | None = None,
    config: Any = None,
) -> PlanInput:
    """The plan from the flags, or from a --from training config with the flags typed (`ctx`) over it; `config`:
    the file already read (a sweep reads it once for all its DP sizes)."""
    from dpcost.catalog import load_model

    flat = {key.split("__", 1)[1]: value for key, value in values.items() if value is not None}
    if source is None:
        if model is None:
            raise InputError("--model", "required: a catalog name, a YAML spec or a config.json (or --from FILE)")
        return PlanInput(load_model(model), dp, flat, model_arg=model)
    from dpcost.engine.report import ConfigSettingRow, TrainingConfigReport
    from dpcost.training_configs import apply, model_required, read_training_config

    config = config if config is not None else read_training_config(str(source))
    given = typed_options(ctx, values)
    applied = apply(config, given, dp, model, dp_text)
    if applied.model_spec is not None:
        spec = applied.model_spec
    elif applied.model is not None:
        spec = load_model(applied.model, where=f"{source}: model" if model is None else "--model")
    else:
        raise InputError("--model", model_required(config, str(source)))
    report = TrainingConfigReport(
        file=str(source),
        kind=config.kind,
        settings=[ConfigSettingRow(key=s.key, value=s.value, became=s.became, note=s.note) for s in applied.settings],
    )
    defaults = {name: value for name, value in flat.items() if name not in given}
    return PlanInput(spec, applied.dp, {**defaults, **applied.values}, report, applied.model)


def options_of(plan: PlanInput, dp: int, flag: str = "--dp") -> Any:
    """A validated Options for the plan at this DP size; an error names the flag, or the file and key it came from."""
    from pydantic import ValidationError

    from dpcost.options import WRITTEN, Options, explain

    try:
        return Options.model_validate({"dp": dp, **plan.values}, context=WRITTEN)
    except ValidationError as exc:
        where, message = explain(exc)
        raise _in_the_file(plan, InputError(flag if where == "--dp" else where, message)) from None


def _in_the_file(plan: PlanInput, exc: InputError) -> InputError:
    """An error about a value the plan's --from file gave, said as the file and the key it came from; a flag the
    user typed over the file (its row then became nothing) keeps its own name."""
    if plan.from_config is None:
        return exc
    flag = flag_named(exc.where)
    key = next((s.key for s in plan.from_config.settings if s.became.split(" ")[0] == flag), None)
    return exc if key is None else InputError(plan.from_config.file, f"{key}: {exc.message}")


def flag_named(where: str) -> str:
    """Where an error is: engine errors name option fields (`accumulation`), said as the flag the user typed
    (`--accum`); a flag, a file or a key stays as it is."""
    return field_flag(where) if re.fullmatch(r"[a-z][a-z0-9_]*", where) else where


@contextlib.contextmanager
def said_in_the_file(plan: PlanInput) -> Iterator[None]:
    """The engine's refusals of the plan (which name option fields) named by the --from file's key where the value
    came from the file (_in_the_file)."""
    try:
        yield
    except InputError as exc:
        raise _in_the_file(plan, exc) from None
