"""Fit a topology to a cluster's own nccl-tests runs: what `dpcost calibrate` does.

dpcost's collective model (engine/collectives.py) has a handful of numbers that describe one cluster rather than
NCCL: how much of its NVLink, NVLS and network line rate it reaches, its per-call overhead, how its step latencies
compare with NCCL's tables, and how much network bandwidth it loses as nodes are added. Given measured runs, this
module finds the values that make the model's predictions closest to them, in the same sense the accuracy report
scores them: the log of predicted over measured time, with a soft-L1 loss (Huber-like, delta 5%) so that a few
noisy rows cannot drag the fit. Each parameter is searched in turn (golden section over its range) until a sweep
no longer improves the loss. A parameter that no measured point depends on is left at the base topology's value
and named as undetermined: the network's loss with scale needs two node counts, one of them beyond two nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dpcost.accuracy import BandError, band_errors, predict
from dpcost.engine.placement import place
from dpcost.nccl_tests import Measurements
from dpcost.specs import Calibration, TopologySpec

__all__ = ["PARAMETERS", "Fit", "Parameter", "RunFit", "calibrate", "with_values"]

DELTA = 0.05  # soft-L1 scale: log errors below ~5% count quadratically, larger ones linearly
SWEEPS = 12
GOLDEN = (math.sqrt(5) - 1) / 2


@dataclass(frozen=True)
class Parameter:
    name: str
    what: str
    lo: float
    hi: float
    log: bool  # searched on a log scale (overheads and scales), else linearly (fractions)


PARAMETERS = (
    Parameter(
        "network_efficiency", "share of the NICs' line rate a ring reaches (first network tier)", 0.2, 1.0, False
    ),
    Parameter("nvlink_efficiency", "share of NVLink line rate a ring reaches inside a domain", 0.2, 1.0, False),
    Parameter("nvls_efficiency", "share of NVLink line rate NVLink SHARP reaches", 0.2, 1.0, False),
    Parameter("call_overhead", "per-call launch and completion time", 0.5e-6, 500e-6, True),
    Parameter("latency_scale", "NCCL's hop latencies times this (the ramp to full bandwidth)", 0.1, 20.0, True),
    Parameter("scaling_loss", "network bandwidth lost per doubling of nodes beyond two", 0.0, 0.3, False),
)


def _read(t: TopologySpec, name: str) -> float | None:
    """A parameter's value in a topology, None where the topology has no such part."""
    if name == "network_efficiency":
        return t.tiers[1].efficiency if len(t.tiers) > 1 else None
    if name == "nvlink_efficiency":
        return t.tiers[0].efficiency
    if name == "nvls_efficiency":
        r = t.tiers[0].in_network_reduction
        return r.efficiency if r is not None and r.kind == "nvls" else None
    return float(getattr(t, name))


def with_values(base: TopologySpec, values: dict[str, float]) -> TopologySpec:
    """The base topology with these parameter values. Every network tier keeps its ratio to the first one."""
    doc = base.model_dump()
    if "network_efficiency" in values and len(base.tiers) > 1:
        ratio = values["network_efficiency"] / base.tiers[1].efficiency
        for tier in doc["tiers"][1:]:
            tier["efficiency"] = min(1.0, max(0.01, tier["efficiency"] * ratio))
    if "nvlink_efficiency" in values:
        doc["tiers"][0]["efficiency"] = values["nvlink_efficiency"]
    if "nvls_efficiency" in values and doc["tiers"][0]["in_network_reduction"] is not None:
        doc["tiers"][0]["in_network_reduction"]["efficiency"] = values["nvls_efficiency"]
    for name in ("call_overhead", "latency_scale", "scaling_loss"):
        if name in values:
            doc[name] = values[name]
    return TopologySpec.model_validate(doc)


@dataclass(frozen=True)
class RunFit:
    """One measured run's error before and after the fit, by size band."""

    name: str
    ranks: int
    nodes: int
    algorithm: str | None
    before: tuple[BandError, ...]
    after: tuple[BandError, ...]


@dataclass(frozen=True)
class Fit:
    topology: TopologySpec
    fitted: dict[str, float]  # the values found, for the parameters the runs determine
    base: dict[str, float]  # the base topology's values of the same parameters
    undetermined: dict[str, str]  # parameter -> why it was kept at the base value
    runs: tuple[RunFit, ...]
    points: int


def _unit(p: Parameter, x: float) -> float:
    return (math.log(x) - math.log(p.lo)) / (math.log(p.hi) - math.log(p.lo)) if p.log else (x - p.lo) / (p.hi - p.lo)


def _value(p: Parameter, u: float) -> float:
    u = min(1.0, max(0.0, u))
    return math.exp(math.log(p.lo) + u * (math.log(p.hi) - math.log(p.lo))) if p.log else p.lo + u * (p.hi - p.lo)


def _loss(base: TopologySpec, runs: Sequence[Measurements]) -> Callable[[dict[str, float]], float]:
    def loss(values: dict[str, float]) -> float:
        topology = with_values(base, values)
        total = 0.0
        for m in runs:
            for pt in predict(m, topology):
                r = math.log(pt.predicted_us / pt.measured_us)
                total += DELTA**2 * (math.sqrt(1 + (r / DELTA) ** 2) - 1)
        return total

    return loss


def _along(
    loss: Callable[[dict[str, float]], float], values: dict[str, float], p: Parameter
) -> Callable[[float], float]:
    """The loss as a function of one parameter's position in its range, the others held."""
    return lambda u: loss(dict(values, **{p.name: _value(p, u)}))


def _golden(f: Callable[[float], float], lo: float, hi: float, iterations: int = 18) -> float:
    a, b = lo, hi
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(iterations):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = f(d)
    return (a + b) / 2


def _sensitive(base: TopologySpec, runs: Sequence[Measurements], values: dict[str, float], p: Parameter) -> int:
    """How many measured points move by more than 1% when the parameter moves by a tenth of its range."""
    here = [pt.predicted_us for m in runs for pt in predict(m, with_values(base, values))]
    u = _unit(p, values[p.name])
    moved = dict(values, **{p.name: _value(p, u + 0.1 if u < 0.9 else u - 0.1)})
    there = [pt.predicted_us for m in runs for pt in predict(m, with_values(base, moved))]
    return sum(1 for a, b in zip(here, there, strict=True) if abs(b / a - 1) > 0.01)


def calibrate(base: TopologySpec, runs: Sequence[Measurements]) -> Fit:
    """The base topology fitted to the runs (see the module docstring)."""
    if not runs:
        raise ValueError("no measurements to calibrate on")
    nodes = sorted({place(base, m.ranks).nodes for m in runs if m.ranks})
    start = {p.name: v for p in PARAMETERS if (v := _read(base, p.name)) is not None}
    undetermined: dict[str, str] = {}
    if len(nodes) < 2 or nodes[-1] <= 2:
        undetermined["scaling_loss"] = "needs runs at two node counts, one of them beyond two nodes"
    free = [p for p in PARAMETERS if p.name in start and p.name not in undetermined]
    free = [p for p in free if _sensitive(base, runs, start, p) >= 2]
    for p in PARAMETERS:
        if p.name in start and p not in free and p.name not in undetermined:
            undetermined[p.name] = "no measured point depends on it"
    loss = _loss(base, runs)
    values = dict(start)
    best = loss(values)
    for _ in range(SWEEPS):
        before = best
        for p in free:
            u = _golden(_along(loss, values, p), 0.0, 1.0)
            trial = dict(values, **{p.name: _value(p, u)})
            if (f := loss(trial)) < best:
                values, best = trial, f
        if before - best <= 1e-9 * max(1.0, before):
            break
    topology = with_values(base, values)
    fits = tuple(
        RunFit(
            m.name,
            m.ranks or 0,
            place(base, m.ranks).nodes if m.ranks else 0,
            m.algorithm,
            tuple(band_errors(predict(m, base))),
            tuple(band_errors(predict(m, topology))),
        )
        for m in runs
    )
    fitted = {p.name: values[p.name] for p in free}
    return Fit(topology, fitted, {k: start[k] for k in fitted}, undetermined, fits, sum(len(m.rows) for m in runs))


def record(fit: Fit, base: str, files: Sequence[str]) -> Calibration:
    """What the written topology keeps of the fit: its inputs, the values, and the error per size band."""
    errors: dict[str, float] = {}
    for band in ("1-64 MiB", ">=64 MiB"):
        geo = [b.geomean for r in fit.runs for b in r.after if b.band == band]
        if geo:
            errors[band] = math.exp(sum(math.log(max(g, 1e-4)) for g in geo) / len(geo))
    return Calibration(
        base=base,
        files=list(files),
        fitted=fit.fitted,
        undetermined=[f"{k}: {v}" for k, v in fit.undetermined.items()],
        error=errors,
        points=fit.points,
    )
