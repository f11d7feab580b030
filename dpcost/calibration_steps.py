"""Fit the compute efficiency and the losses at scale to a cluster's own training steps: `dpcost calibrate --steps`.

A CSV of measured steps (step time or tokens/s at a few GPU counts, from the user's own runs of one plan) is
costed by `estimate` with the plan's options, and the options that describe the cluster rather than the plan are
fitted to it, by their option names: the compute efficiency (`Options.compute.mfu`), the synchronisation jitter
(`compute.sync_jitter`), the compute slowdown while a collective overlaps it (`compute.overlap_slowdown`), and, given
two GPU counts beyond two nodes, the topology's network loss per doubling of nodes (`scaling_loss`).

The error measure and the optimiser are calibration.py's: the log of predicted over measured step time, a soft-L1
loss (delta 5%), Levenberg-Marquardt over each term's position in its range, a term confounded with the others
(variance inflation above 30) dropped, the later one in TERMS first.

- The compute efficiency alone is fitted to the rows at the smallest GPU count, where the losses at scale are
  least: a cluster's small runs then predict its large ones.
- A loss term needs two GPU counts beyond the smallest; with one, it is kept at its default and named. Given
  them, it is fitted together with the compute efficiency to every row.
- With two or more GPU counts the largest is held out: the others are fitted, it is predicted, and a term stays
  only if its fit improves that prediction. If the fit would predict it worse than the defaults, the defaults are
  kept and the report says so: calibration never makes the held-out prediction worse. The terms kept are then
  fitted to every row; a loss term the held-out prediction could not test is kept at its default.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Collection, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from dpcost.calibration import MAX_INFLATION, PARAMETERS, Parameter, minimise, moved_points, with_values
from dpcost.engine.placement import place
from dpcost.errors import InputError
from dpcost.frozen import frozen

if TYPE_CHECKING:
    from dpcost.options import Options
    from dpcost.specs import ModelSpec, TopologySpec

__all__ = [
    "COLUMNS",
    "MEASURES",
    "Measured",
    "StepFit",
    "StepHeldOut",
    "StepRow",
    "StepRowFit",
    "TermFit",
    "calibrate_steps",
    "read_steps",
    "terms",
]

# The measured column -> its unit as shown. One of them per file.
MEASURES = {"step_seconds": "s", "tokens_per_s": "tokens/s", "tokens_per_s_per_gpu": "tokens/s per GPU"}
# Per-row columns that override the plan: column -> the Options field (section, name).
COLUMNS = {
    "micro_batch": ("batch", "micro_batch"),
    "accum": ("batch", "accumulation"),
    "global_batch": ("batch", "global_batch"),
    "seq_len": ("batch", "seq_len"),
}
COMPUTE_TERMS = ("mfu", "sync_jitter", "overlap_slowdown")  # Options.compute fields
LOSS_TERMS = ("sync_jitter", "overlap_slowdown", "scaling_loss")
MIN_MOVED = 2  # rows a loss term must move by more than 1% to be fitted


def _bounds(name: str) -> tuple[float, float]:
    """An Options.compute field's range, read from its declaration (so a change of its meaning moves it too)."""
    from dpcost.options import Compute

    lo, hi = 0.0, 1.0
    for m in Compute.model_fields[name].metadata:
        lo = float(getattr(m, "ge", getattr(m, "gt", lo)) or lo)
        hi = float(getattr(m, "le", getattr(m, "lt", hi)) or hi)
    return lo, hi


def terms() -> tuple[Parameter, ...]:
    """What `calibrate --steps` can fit, in order of preference (a confounded later one is dropped first)."""
    from dpcost.options import flag

    def compute(name: str, what: str, log: bool = False) -> Parameter:
        lo, hi = _bounds(name)
        return Parameter(name, f"{what} ({flag('compute', name)})", max(lo, 0.01) if log else lo, hi, log)

    scaling = next(p for p in PARAMETERS if p.name == "scaling_loss")
    return (
        compute("mfu", "compute efficiency: the share of dense peak the math sustains", log=True),
        compute("sync_jitter", "synchronisation jitter: each rank's drift, waited for at collectives"),
        compute("overlap_slowdown", "compute slowed while a collective overlaps it"),
        Parameter("scaling_loss", f"{scaling.what} (the topology's)", scaling.lo, scaling.hi, scaling.log),
    )


# ------------------------------------------------------------------------------------------------ the CSV


@frozen
class StepRow:
    """One measured row as read: its line, GPU count, measured value and the plan fields it overrides."""

    line: int
    gpus: int
    value: float
    overrides: dict[str, int] = field(default_factory=dict)  # COLUMNS key -> value


@frozen
class Steps:
    measure: str  # a MEASURES key
    rows: tuple[StepRow, ...]
    ignored: tuple[str, ...]  # columns the file has that calibrate does not read


def read_steps(text: str, where: str) -> Steps:
    """A measured-steps CSV: `gpus`, one of MEASURES, optional COLUMNS; '#' lines are comments. Bad input raises
    InputError naming the file, the line or column, and what is allowed."""
    from dpcost.units import UnitError, parse_number, parse_seconds, parse_whole

    numbered = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip() and not ln.lstrip().startswith("#")]
    if not numbered:
        raise InputError(where, f"no rows; the header is gpus and one of {', '.join(MEASURES)}")
    reader = csv.reader([ln for _, ln in numbered])
    header = [h.strip().lower() for h in next(reader)]
    if len(set(header)) != len(header):
        twice = next(h for h in header if header.count(h) > 1)
        raise InputError(where, f"column {twice!r} appears twice")
    if "gpus" not in header:
        raise InputError(
            where, f"no 'gpus' column (line {numbered[0][0]}); the header is gpus and one of {', '.join(MEASURES)}"
        )
    measures = [h for h in header if h in MEASURES]
    if len(measures) != 1:
        given = f"{', '.join(measures)} are all given" if measures else "none is given"
        raise InputError(where, f"give exactly one of the columns {', '.join(MEASURES)} ({given})")
    measure = measures[0]
    ignored = tuple(h for h in header if h not in MEASURES and h not in COLUMNS and h != "gpus")
    rows = []
    for (line, _), cells in zip(numbered[1:], reader, strict=False):
        if len(cells) != len(header):
            raise InputError(f"{where}: line {line}", f"{len(cells)} cells; the header has {len(header)}")
        row = {h: c.strip() for h, c in zip(header, cells, strict=True)}

        def whole(column: str, row: dict[str, str] = row, line: int = line) -> int:
            try:
                value = parse_whole(row[column])
            except UnitError as exc:
                raise InputError(f"{where}: line {line}", f"{column}: {exc}") from None
            if value < 1:
                raise InputError(f"{where}: line {line}", f"{column}: must be a positive integer, got {row[column]}")
            return value

        gpus = whole("gpus")
        cell = row[measure]
        try:
            value = parse_seconds(cell) if measure == "step_seconds" else parse_number(cell)
        except UnitError as exc:
            raise InputError(f"{where}: line {line}", f"{measure}: {exc}") from None
        if not (math.isfinite(value) and value > 0):
            raise InputError(f"{where}: line {line}", f"{measure}: must be a positive number, got {cell}")
        overrides = {c: whole(c) for c in COLUMNS if row.get(c)}
        rows.append(StepRow(line, gpus, value, overrides))
    if not rows:
        raise InputError(where, "a header and no rows: give a row per measured run")
    return Steps(measure, tuple(rows), ignored)


# ------------------------------------------------------------------------------------------------ the fit


@frozen
class Measured:
    """One measured row with the plan it ran (the flags, with the row's overrides), before any fit."""

    line: int
    gpus: int
    value: float  # in the unit of the fit's measure
    options: Options


@frozen
class TermFit:
    name: str
    what: str
    default: float
    fitted: float | None  # None: kept at the default
    why: str = ""  # why it was kept at the default


@frozen
class StepRowFit:
    line: int
    gpus: int
    nodes: int
    measured: float
    before: float  # predicted with the defaults, in the measure's unit
    after: float  # predicted with the fitted values
    held_out: float | None  # a held-out row: predicted from the fit of the smaller counts

    @property
    def error_before(self) -> float:
        return self.before / self.measured - 1

    @property
    def error_after(self) -> float:
        return self.after / self.measured - 1


@frozen
class StepHeldOut:
    """Rows at the largest GPU count, predicted from a fit of the others: the defaults' error and the fit's."""

    gpus: int
    rows: int
    default_error: float
    full_error: float  # every term the smaller counts determine fitted
    fitted_error: float  # the terms kept fitted (the defaults' error where none is kept)
    kept_defaults: bool  # no fitted term improved the prediction: nothing is fitted


@frozen
class StepFit:
    measure: str
    terms: tuple[TermFit, ...]
    values: dict[str, float]  # every term's value as costed after the fit
    defaults: dict[str, float]
    rows: tuple[StepRowFit, ...]
    held_out: StepHeldOut | None
    error_before: float  # geomean |predicted / measured - 1| over every row, defaults
    error_after: float  # and fitted

    @property
    def fitted(self) -> dict[str, float]:
        return {t.name: t.fitted for t in self.terms if t.fitted is not None}


def _geomean_error(logs: Sequence[float]) -> float:
    """Geometric-mean |predicted / measured - 1| from the points' log errors (calibration.py's _error)."""
    return math.exp(sum(abs(x) for x in logs) / len(logs)) - 1 if logs else 0.0


class _Costing:
    """The measured rows costed by `estimate` for a set of term values, remembered per set."""

    def __init__(
        self,
        model: ModelSpec,
        topology: TopologySpec,
        measure: str,
        rows: Sequence[Measured],
        per_call_slowdown: float | None = None,
    ) -> None:
        self.model, self.topology, self.measure, self.rows = model, topology, measure, rows
        # the overlap_slowdown that stands for each call's own (no --overlap-slowdown given): a term at this value is
        # left to the calls, not imposed on them
        self.per_call_slowdown = per_call_slowdown
        self._seen: dict[tuple[tuple[str, float], ...], list[float]] = {}

    def predict(self, values: dict[str, float]) -> list[float]:
        """Each row's prediction, in the measure's unit."""
        from dpcost.engine.estimate import estimate

        key = tuple(sorted(values.items()))
        if key in self._seen:
            return self._seen[key]
        topology = self.topology
        if "scaling_loss" in values and values["scaling_loss"] != topology.scaling_loss:
            topology = with_values(topology, {"scaling_loss": values["scaling_loss"]})
        out = []
        for r in self.rows:
            update = {k: values[k] for k in COMPUTE_TERMS if k in values}
            if update.get("overlap_slowdown") == self.per_call_slowdown:
                del update["overlap_slowdown"]
            compute = r.options.compute.model_copy(update=update)
            report = estimate(self.model, topology, r.options.model_copy(update={"compute": compute}))
            if report.time is None:
                raise InputError("--mode", "calibrate --steps fits training steps: --mode train")
            t = report.time
            out.append(
                t.step_seconds
                if self.measure == "step_seconds"
                else t.tokens_per_second / (r.gpus if self.measure == "tokens_per_s_per_gpu" else 1)
            )
        self._seen[key] = out
        return out

    def logs(self, values: dict[str, float], which: Sequence[int]) -> list[float]:
        """log(predicted / measured step time) of the rows `which` (a throughput's ratio inverted)."""
        predicted = self.predict(values)
        sign = 1.0 if self.measure == "step_seconds" else -1.0
        return [sign * math.log(predicted[i] / self.rows[i].value) for i in which]


def _counts(rows: Sequence[Measured], which: Sequence[int]) -> list[int]:
    return sorted({rows[i].gpus for i in which})


def _determinable(
    costing: _Costing, which: Sequence[int], start: dict[str, float], allowed: Collection[str]
) -> tuple[list[Parameter], dict[str, str]]:
    """The allowed terms the rows `which` can determine, and why each other allowed term cannot."""
    counts = _counts(costing.rows, which)
    why: dict[str, str] = {}
    if len(counts) < 3:
        why["sync_jitter"] = why["overlap_slowdown"] = "needs two GPU counts beyond the smallest"
    nodes = {place(costing.topology, g).nodes for g in counts}
    if sum(1 for n in nodes if n > 2) < 2:
        why["scaling_loss"] = "needs two GPU counts beyond two nodes"
    candidates = [p for p in terms() if p.name in allowed and p.name in start and p.name not in why]
    for p in candidates:
        if p.name in LOSS_TERMS and moved_points(lambda v: costing.logs(v, which), start, p) < MIN_MOVED:
            why[p.name] = "no measured row depends on it"
    return [p for p in candidates if p.name not in why], {k: v for k, v in why.items() if k in allowed}


STARTS = (1.0, 0.0, 0.5, 2.0, 4.0)  # the loss terms' defaults times these: where the search may start
TRIED = 2  # searches run, from the starts with the lowest loss


def _minimise_from_several(
    costing: _Costing, which: Sequence[int], smallest: Sequence[int], start: dict[str, float], free: list[Parameter]
) -> tuple[dict[str, float], list[float]]:
    """minimise() from the few starts that look best. The step time need not be smooth in the loss terms (a wait
    costs only beyond its prefetch slack), so one search can end in a local minimum: each start scales the loss
    terms' defaults by one of STARTS and sets the compute efficiency to reproduce the smallest GPU count (time goes
    as 1 / mfu), and the searches from the TRIED best keep the lowest loss."""
    from dpcost.calibration import soft_l1

    starts = []
    for factor in STARTS:
        s = dict(start)
        for p in free:
            if p.name != "mfu":
                s[p.name] = min(p.hi, max(p.lo, start[p.name] * factor))
        if any(p.name == "mfu" for p in free):
            late = costing.logs(s, smallest)
            s["mfu"] = min(1.0, max(0.01, s["mfu"] * math.exp(sum(late) / len(late))))
        starts.append((soft_l1(costing.logs(s, which)), s))
    best: tuple[float, dict[str, float], list[float]] | None = None
    for _, s in sorted(starts, key=lambda x: x[0])[:TRIED]:
        values, inflation = minimise(lambda v: costing.logs(v, which), s, free)
        loss = soft_l1(costing.logs(values, which))
        if best is None or loss < best[0]:
            best = (loss, values, inflation)
    assert best is not None
    return best[1], best[2]


def _fit_terms(
    costing: _Costing, which: Sequence[int], start: dict[str, float], allowed: Collection[str]
) -> tuple[dict[str, float], list[Parameter], dict[str, str]]:
    """The values the rows `which` determine among the `allowed` terms, the terms fitted, and why each other
    allowed term stayed at its start value."""
    free, why = _determinable(costing, which, start, allowed)
    smallest = [i for i in which if costing.rows[i].gpus == min(costing.rows[j].gpus for j in which)]
    while free:
        if [p.name for p in free] == ["mfu"]:
            # The compute efficiency alone: from the smallest GPU count, where the losses at scale are least.
            values, _ = minimise(lambda v: costing.logs(v, smallest), start, free)
            return values, free, why
        values, inflation = _minimise_from_several(costing, which, smallest, start, free)
        confounded = [p for p, vif in zip(free, inflation, strict=True) if not vif < MAX_INFLATION]
        if not confounded:
            return values, free, why
        drop = confounded[-1]  # terms() is in order of preference: keep the earlier ones
        why[drop.name] = (
            "these rows cannot tell it apart from " + ", ".join(p.name for p in confounded[:-1])
            if len(confounded) > 1
            else "these rows cannot tell it apart from the other terms"
        )
        free = [p for p in free if p is not drop]
    return dict(start), [], why


def _hold_out(
    costing: _Costing, start: dict[str, float], allowed: Collection[str]
) -> tuple[StepHeldOut | None, set[str], dict[str, str], dict[str, float]]:
    """With two or more GPU counts: fit all but the largest, predict it, and drop (the least preferred first) every
    term whose fit does not improve that prediction; keep the defaults if the fit would predict it worse than they
    do. Returns the held-out result, the terms it kept, why it dropped the others, and the fit's values."""
    rows = costing.rows
    every = range(len(rows))
    counts = _counts(rows, every)
    if len(counts) < 2:
        return None, set(allowed), {}, start
    largest = counts[-1]
    train = [i for i in every if rows[i].gpus < largest]
    test = [i for i in every if rows[i].gpus == largest]
    default_error = _geomean_error(costing.logs(start, test))
    values, free, untested = _fit_terms(costing, train, start, allowed)
    best = full = _geomean_error(costing.logs(values, test))
    dropped: set[str] = set()
    fitted = {p.name for p in free}
    for p in reversed(free):
        if p.name not in fitted:
            continue  # already out: a fit without another term could not tell it apart
        trial = dropped | {p.name}
        trial_values, trial_free, trial_why = _fit_terms(costing, train, start, set(allowed) - trial)
        if (error := _geomean_error(costing.logs(trial_values, test))) <= best:  # kept only if it improves it
            dropped, best, values, fitted = trial, error, trial_values, {q.name for q in trial_free}
            untested |= trial_why
    tested = {p.name for p in free}
    why = {name: "the held-out count predicts no better with it fitted" for name in dropped}
    why |= {
        name: f"the held-out count could not test it (smaller counts: {reason})"
        for name, reason in untested.items()
        if name not in dropped
    }
    kept = fitted
    worse = best > default_error
    if worse:
        why |= {
            name: f"fitted, the held-out count would be predicted worse ({best:.1%} against {default_error:.1%} "
            "with the defaults): defaults kept"
            for name in tested
        }
        kept, values = set(), start
    if not kept:
        best, values = default_error, start
    held = StepHeldOut(largest, len(test), default_error, full, best, not kept)
    return held, kept, why, values


def calibrate_steps(
    model: ModelSpec,
    topology: TopologySpec,
    measure: str,
    rows: Sequence[Measured],
    held: Collection[str] = (),
) -> StepFit:
    """The terms the measured steps determine (see the module docstring). `held` terms (given by their flags)
    are not fitted. Each row's `options` carries the plan it ran; its compute terms are the defaults."""
    from dpcost.engine.estimate import estimate
    from dpcost.engine.prepare import compute_model_for

    if not rows:
        raise ValueError("no measured steps to calibrate on")
    from dpcost.engine.rates import matmul_efficiency
    from dpcost.options import DEFAULT_MFU

    compute = rows[0].options.compute
    own = (
        DEFAULT_MFU
        if compute_model_for(model, compute) == "flops"
        else matmul_efficiency(topology.gpu, compute.compute_dtype, None)
    )
    per_call: float | None = None
    slowdown = compute.overlap_slowdown
    if slowdown is None:  # each call's own; a fit starts from the smallest run's average
        smallest = min(rows, key=lambda r: r.gpus)
        slowdown = per_call = estimate(model, topology, smallest.options).setup.overlap_slowdown
    start = {
        "mfu": compute.mfu if compute.mfu is not None else own,
        "sync_jitter": compute.sync_jitter,
        "overlap_slowdown": slowdown,
        "scaling_loss": topology.scaling_loss,
    }
    costing = _Costing(model, topology, measure, rows, per_call)
    allowed = {p.name for p in terms()} - set(held)
    held_out, kept, held_why, train_values = _hold_out(costing, start, allowed)
    every = list(range(len(rows)))
    determinable, why = _determinable(costing, every, start, allowed)
    for p in determinable:
        if p.name not in kept:
            why[p.name] = held_why.get(p.name, "the held-out count could not test it")
    values, free, final_why = _fit_terms(costing, every, start, kept)
    for name, reason in final_why.items():
        why.setdefault(name, reason)
    for name in held:
        why[name] = "held at the value its flag gives"
    fitted = {p.name: values[p.name] for p in free}
    before, after = costing.predict(start), costing.predict(values)
    out_of_sample = costing.predict(train_values) if held_out is not None else before
    results = tuple(
        StepRowFit(
            r.line,
            r.gpus,
            place(topology, r.gpus).nodes,
            r.value,
            before[i],
            after[i],
            out_of_sample[i] if held_out is not None and r.gpus == held_out.gpus else None,
        )
        for i, r in enumerate(rows)
    )
    fits = tuple(
        TermFit(p.name, p.what, start[p.name], fitted.get(p.name), "" if p.name in fitted else why.get(p.name, ""))
        for p in terms()
    )
    return StepFit(
        measure,
        fits,
        {**start, **fitted},
        start,
        results,
        held_out,
        _geomean_error(costing.logs(start, every)),
        _geomean_error(costing.logs(values, every)),
    )


def plan_values(fit: StepFit) -> dict[str, Any]:
    """The fitted compute terms as a plan file spells them (flag names without dashes, times with a unit)."""
    out: dict[str, Any] = {}
    for name in COMPUTE_TERMS:
        if name in fit.fitted:
            value = fit.fitted[name]
            out[name.replace("_", "-")] = f"{value * 1e3:.4g}ms" if name == "sync_jitter" else round(value, 4)
    return out
