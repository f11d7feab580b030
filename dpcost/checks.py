"""Capacity checks for CI: limits on a costed plan, the plan file that names scenarios, and the results.

Pure: no file I/O (catalog.load_plan reads the file) and no printing (render/checks.py lays results out). A
check compares one field of the estimate's report (engine/report.py) with a limit:

| check | flag | the report's field |
|---|---|---|
| require_fit | --require-fit | `fits` (the costed stage fits in HBM; inference: a replica fits on a GPU) |
| max_memory | --max-memory | `memory.stages[setup.zero_stage].total_bytes` (reserved + context; or `per_gpu_bytes`) |
| max_step_time | --max-step-time | `time.step_seconds` |
| min_efficiency | --min-efficiency | `time.scaling_efficiency` |
| max_exposed_comm | --max-exposed-comm | `time.exposed_comm_seconds` |
| min_tokens_per_s | --min-tokens-per-s | `time.tokens_per_second` (inference: `inference.tokens_per_second`) |
| max_behind_best | --max-behind-best | `time.step_seconds` / the best step on its GPUs (`dpcost plan`'s or own) - 1 |

A plan that does not fit fails max_behind_best: it is behind every plan that does (0% where no plan fits).
With no limit at all, a scenario is checked for `require_fit`, as `estimate --check` does.
"""

# No `from __future__ import annotations` here: pydantic would evaluate each string annotation as it builds the
# class (engine/report.py imported in 28 ms without it, 45 ms with it: start-up, README's Speed).

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from dpcost import contract
from dpcost.engine.report import Summary
from dpcost.options import FRACTION, Whole, written_size, written_time
from dpcost.units import parse_count, parse_fraction

if TYPE_CHECKING:
    from dpcost.engine.report import EstimateReport, LayoutReport
    from dpcost.options import Options

__all__ = [
    "CHECKS",
    "CHECK_SCHEMA_VERSION",
    "CheckReport",
    "CheckResult",
    "Limits",
    "PlanFile",
    "Scenario",
    "ScenarioResult",
    "evaluate",
    "option_key",
    "report_of",
]

CHECK_SCHEMA_VERSION: Literal[1] = 1


def _optional(parse: Any) -> Any:
    return lambda v: None if v is None else parse(v)


def _text_or_number(description: str) -> WithJsonSchema:
    """In the plan file's schema: a number or a string with its unit (`70GB`, `650ms`, `95%`, `300K`)."""
    return WithJsonSchema(
        {"anyOf": [{"type": "number"}, {"type": "string"}, {"type": "null"}], "description": description}
    )


class Limits(BaseModel):
    """The limits a plan must hold: any of them; a scenario's `limits:` mapping, or the flags of the same names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    require_fit: bool = Field(False, description="the plan fits in GPU memory at the costed ZeRO stage")
    max_memory: Annotated[
        float | None, BeforeValidator(written_size), _text_or_number("memory per GPU at most this, e.g. 70GB")
    ] = Field(
        None,
        gt=0,
        description="memory per GPU at most this, e.g. 70GB: the device's, reserved + CUDA/NCCL context (nvidia-smi)",
    )
    max_step_time: Annotated[
        float | None,
        BeforeValidator(written_time),
        _text_or_number("the step (bucketed schedule) takes at most this, e.g. 7s or 650ms"),
    ] = Field(None, gt=0, description="the step (bucketed schedule) takes at most this, e.g. 7s or 650ms")
    min_efficiency: Annotated[
        float | None,
        BeforeValidator(_optional(parse_fraction)),
        _text_or_number("scaling efficiency at least this: 0.95 or 95%"),
    ] = Field(
        None,
        ge=0,
        le=1,
        description="scaling efficiency at least this: 0.95 or 95%",
        json_schema_extra={"metavar": FRACTION},
    )
    max_exposed_comm: Annotated[
        float | None,
        BeforeValidator(written_time),
        _text_or_number("communication left exposed per step at most this, e.g. 100ms"),
    ] = Field(None, ge=0, description="communication left exposed per step at most this, e.g. 100ms")
    min_tokens_per_s: Annotated[
        float | None,
        BeforeValidator(_optional(parse_count)),
        _text_or_number("throughput at least this many tokens/s, e.g. 300000 or 300K"),
    ] = Field(None, gt=0, description="throughput at least this many tokens/s, e.g. 300000 or 300K")

    max_behind_best: Annotated[
        float | None,
        BeforeValidator(_optional(parse_fraction)),
        _text_or_number("the step at most this much slower than the best plan dpcost plan finds: 0.1 or 10%"),
    ] = Field(
        None,
        ge=0,
        le=100,
        description="the step at most this much slower than the best plan `dpcost plan` finds on the same GPUs, "
        "model, global batch and sequence length: 0.1 or 10% (a plan that does not fit fails it)",
        json_schema_extra={"metavar": FRACTION},
    )

    def given(self) -> list[str]:
        """The checks these limits ask for, in CHECKS order; require_fit when none is set."""
        asked = [name for name in CHECKS if getattr(self, name) is not (False if name == "require_fit" else None)]
        return asked or ["require_fit"]


# check -> (flag, unit of its value, how it compares)
CheckUnit = Literal["bool", "bytes", "seconds", "fraction", "tokens/s"]
CHECKS: dict[str, tuple[str, CheckUnit, str]] = {
    "require_fit": ("--require-fit", "bool", "is"),
    "max_memory": ("--max-memory", "bytes", "<="),
    "max_step_time": ("--max-step-time", "seconds", "<="),
    "min_efficiency": ("--min-efficiency", "fraction", ">="),
    "max_exposed_comm": ("--max-exposed-comm", "seconds", "<="),
    "min_tokens_per_s": ("--min-tokens-per-s", "tokens/s", ">="),
    "max_behind_best": ("--max-behind-best", "fraction", "<="),
}


def option_key(key: str) -> str | None:
    """A plan option as a plan file may spell it: its field name (`micro_batch`, `accumulation`) or its flag
    without the dashes (`micro-batch`, `accum`); None if it is not one."""
    from dpcost.options import SECTIONS, flag

    for section, model in SECTIONS.items():
        for name in model.model_fields:
            if key == name or key == flag(section, name)[2:]:
                return name
    return None


def _option_properties(schema: dict[str, Any]) -> None:
    """The plan options in a scenario's JSON Schema, under both spellings."""
    from dpcost.options import SECTIONS, flag

    props = schema.setdefault("properties", {})
    for section, model in SECTIONS.items():
        section_schema = model.model_json_schema()["properties"]
        for name in model.model_fields:
            entry = {k: v for k, v in section_schema[name].items() if k not in ("title", "default")}
            entry.pop("$ref", None)
            if entry.get("type") != "boolean":  # a number may come with its unit ("25MiB"), a choice as "auto"
                entry = {
                    "anyOf": [{k: v for k, v in entry.items() if k != "description"}, {"type": "string"}],
                    "description": entry.get("description", ""),
                }
            props[name] = entry
            spelled = flag(section, name)[2:]
            if spelled != name:
                props[spelled] = {**entry, "description": f"the same as {name}"}


def _normalised(data: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """A scenario (or the defaults) with its plan options, beside the fields or under `options`, gathered under
    `options` by their field names; an unknown option, or one given twice, is refused."""
    given = data.get("options") or {}
    if not isinstance(given, dict):
        raise ValueError("options must be a mapping of estimate's flags to values")
    out = {k: v for k, v in data.items() if k in fields and k != "options"}
    options: dict[str, Any] = {}
    for key, value in [*given.items(), *((k, v) for k, v in data.items() if k not in fields)]:
        name = option_key(str(key))
        if name is None:
            raise ValueError(f"unknown plan option {key!r} (the options are estimate's flags)")
        if name in options:
            raise ValueError(f"option {name!r} is given twice (as {key!r} too)")
        options[name] = value
    out["options"] = options
    return out


class Scenario(BaseModel):
    """One plan to cost and check: a model on a topology at a DP size, with any plan option, and its limits."""

    model_config = ConfigDict(extra="forbid", frozen=True, json_schema_extra=_option_properties)

    name: str = Field(min_length=1, max_length=200, description="names the scenario in the table, JSON and JUnit")
    model: str | None = Field(
        None, min_length=1, description="catalog name, YAML spec or HF config.json (as --model); or from `from`"
    )
    topology: str = Field("dgx-h100", min_length=1, description="catalog name or YAML spec (as --topology)")
    dp: Whole | None = Field(None, ge=1, le=10_000_000, description="data-parallel size (as --dp); or from `from`")
    from_: str | None = Field(
        None,
        alias="from",
        min_length=1,
        description="a training config to read the plan from (as --from); the scenario's own fields override it",
    )
    limits: Limits = Field(default_factory=Limits, description="what the plan must hold")
    options: dict[str, Any] = Field(
        default_factory=dict, description="plan options (estimate's flags); they may also sit beside `model`"
    )

    @model_validator(mode="before")
    @classmethod
    def _gather_options(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return _normalised(data, SCENARIO_KEYS)

    @model_validator(mode="after")
    def _planned(self) -> "Scenario":
        """A plan needs a model and a DP size: the scenario's own, or its training config's (`from`)."""
        if self.from_ is None and (self.model is None or self.dp is None):
            raise ValueError(f"{'model' if self.model is None else 'dp'}: required (or `from`: a training config)")
        return self

    @field_validator("name")
    @classmethod
    def _printable(cls, value: str) -> str:
        if re.search(r"[\x00-\x1f\x7f]", value):
            raise ValueError("control characters are not allowed")
        return value

    def plan_options(self) -> "Options":
        """The scenario's options, validated as `estimate` validates its flags."""
        from dpcost.options import WRITTEN, Options, explain

        try:
            return Options.model_validate({"dp": self.dp, **self.options}, context=WRITTEN)
        except ValidationError as exc:
            where, message = explain(exc)
            raise ValueError(f"{where}: {message}") from None


SCENARIO_KEYS = tuple(info.alias or name for name, info in Scenario.model_fields.items())  # `from`, not `from_`


class PlanFile(BaseModel):
    """`dpcost check plan.yaml`: named scenarios, each costed and checked against its limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    defaults: dict[str, Any] = Field(
        default_factory=dict,
        description="fields every scenario takes unless it sets its own (topology, options, limits); limits merge",
    )
    scenarios: list[Scenario] = Field(min_length=1, max_length=1000, description="the plans to check")

    @model_validator(mode="before")
    @classmethod
    def _apply_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("defaults", {}), dict):
            return data
        defaults = data.get("defaults") or {}
        scenarios = data.get("scenarios")
        if not isinstance(scenarios, list):
            return data
        fields = SCENARIO_KEYS
        try:
            base = _normalised(defaults, fields)
        except ValueError as exc:
            raise ValueError(f"defaults: {exc}") from None
        merged = []
        for i, s in enumerate(scenarios):
            if not isinstance(s, dict):
                merged.append(s)
                continue
            try:
                own = _normalised(s, fields)
            except ValueError as exc:
                raise ValueError(f"scenarios.{i}: {exc}") from None
            for key in ("limits", "options"):  # mappings merge, a scenario's own entries over the defaults'
                if isinstance(base.get(key), dict) and isinstance(own.get(key), dict):
                    own[key] = {**base[key], **own[key]}
            merged.append({**base, **own})
        return {**data, "scenarios": merged}

    @field_validator("scenarios")
    @classmethod
    def _unique(cls, scenarios: list[Scenario]) -> list[Scenario]:
        seen: set[str] = set()
        for s in scenarios:
            if s.name in seen:
                raise ValueError(f"two scenarios are named {s.name!r}; names must be unique")
            seen.add(s.name)
        return scenarios


# ------------------------------------------------------------------------------------------------ results


class CheckResult(contract.Contract):
    """One limit against one plan."""

    check: str = contract.Field(
        description="require_fit, max_memory, max_step_time, min_efficiency, max_exposed_comm, ..."
    )
    flag: str = contract.Field(description="the flag that sets it")
    unit: CheckUnit = contract.Field(description="of limit and value")
    limit: float | bool = contract.Field(description="the limit (require_fit: true)")
    value: float | bool = contract.Field(description="the plan's value, from the estimate's report")
    passed: bool = contract.Field(description="the value holds the limit")


class ScenarioLayout(contract.Contract):
    """A scenario's layout (estimate's `layout`), as the check table and JUnit name it."""

    gpus: int = contract.Field(description="TP x CP x PP x DP")
    tp: int = contract.Field(description="tensor-parallel size")
    cp: int = contract.Field(description="context-parallel size")
    pp: int = contract.Field(description="pipeline stages")
    ep: int = contract.Field(description="expert-parallel size")
    virtual_stages: int = contract.Field(description="model chunks per pipeline rank")


class ScenarioResult(contract.Contract):
    """One scenario: the plan as costed, and each of its checks."""

    name: str = contract.Field(description="the scenario's name")
    model: str = contract.Field(description="the model's catalog name")
    topology: str = contract.Field(description="the topology's name")
    dp: int = contract.Field(description="data-parallel size")
    mode: str = contract.Field(description="train or inference")
    zero_stage: int = contract.Field(description="the ZeRO stage costed")
    passed: bool = contract.Field(description="every check passed")
    checks: list[CheckResult] = contract.Field(description="one per limit")
    summary: Summary = contract.Field(description="the plan's verdict, as estimate's summary")
    layout: ScenarioLayout | None = contract.Field(
        default=None, description="with tp, cp, pp or ep: the layout (dp is its data-parallel size); absent otherwise"
    )


class CheckReport(contract.Contract):
    """`dpcost check --format json`."""

    schema_version: Literal[1] = contract.Field(
        default=CHECK_SCHEMA_VERSION, description="1; bumped on any incompatible change"
    )
    passed: bool = contract.Field(description="every check of every scenario passed (exit 0; else exit 1)")
    failed: list[str] = contract.Field(description="the names of the scenarios with a failed check")
    scenarios: list[ScenarioResult] = contract.Field(description="in the plan's order")


def _value(report: "EstimateReport", check: str, best_step: float | None = None) -> float | bool:
    if check == "max_behind_best":
        if report.time is None:
            raise ValueError(f"{check}: a serving plan (--mode inference) has no training step to compare")
        return 0.0 if best_step is None else report.time.step_seconds / best_step - 1  # None: no plan fits at all
    if check == "require_fit":
        return report.fits
    if check == "max_memory":
        if report.inference is not None:
            return float(report.inference.per_gpu_bytes)
        return float(report.memory.stages[report.setup.zero_stage].total_bytes)
    if check == "min_tokens_per_s" and report.inference is not None:
        return report.inference.tokens_per_second
    t = report.time
    if t is None:
        raise ValueError(f"{check}: a serving plan (--mode inference) has no training step to check")
    return {
        "max_step_time": t.step_seconds,
        "min_efficiency": t.scaling_efficiency,
        "max_exposed_comm": t.exposed_comm_seconds,
        "min_tokens_per_s": t.tokens_per_second,
    }[check]


def evaluate(name: str, report: "EstimateReport", limits: Limits, best_step: float | None = None) -> ScenarioResult:
    """Each limit of `limits` against the report (max_behind_best against `best_step`, the best plan's, None where
    no plan fits; a plan that does not fit fails it); a ValueError names a limit that cannot apply to it."""
    results = []
    for check in limits.given():
        flag, unit, op = CHECKS[check]
        value = _value(report, check, best_step)
        limit: float | bool = True if check == "require_fit" else float(getattr(limits, check))
        if op == "is":
            passed = bool(value)
        elif check == "max_behind_best":  # only a plan that runs can be within reach of the best that does
            passed = report.fits and float(value) <= float(limit)
        elif op == "<=":
            passed = float(value) <= float(limit)
        else:
            passed = float(value) >= float(limit)
        results.append(CheckResult(check=check, flag=flag, unit=unit, limit=limit, value=value, passed=passed))
    return ScenarioResult(
        name=name,
        model=report.model.name,
        topology=report.topology.name,
        dp=report.setup.dp,
        mode=report.setup.mode,
        zero_stage=report.setup.zero_stage,
        passed=all(r.passed for r in results),
        checks=results,
        summary=report.summary,
        layout=None if report.layout is None else _layout_of(report.layout),
    )


def _layout_of(layout: "LayoutReport") -> ScenarioLayout:
    return ScenarioLayout(
        gpus=layout.gpus,
        tp=layout.tp,
        cp=layout.cp,
        pp=layout.pp,
        ep=layout.ep,
        virtual_stages=layout.virtual_stages,
    )


def report_of(results: list[ScenarioResult]) -> CheckReport:
    return CheckReport(
        passed=all(r.passed for r in results), failed=[r.name for r in results if not r.passed], scenarios=results
    )
