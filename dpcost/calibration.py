"""Fit a topology to a cluster's own nccl-tests runs: what `dpcost calibrate` does.

dpcost's collective model (engine/collectives.py) has a handful of numbers that describe one cluster rather than
NCCL: how much of its NVLink, NVLS and network line rate it reaches (and NVLS's loss as a rack-scale domain's
ranks grow), its per-call overhead, how its step latencies compare with NCCL's tables, how much network bandwidth
it loses as nodes are added, and how much more once calls leave a leaf switch for the spine (a step the per-doubling
loss cannot take). Given measured runs, this
module finds the values that make the model's predictions closest to them, in the same sense the accuracy report
scores them: the log of predicted over measured time, each run's each size band counting alike (a run's many
sub-MiB rows would otherwise outvote its few large ones), with a soft-L1 loss (Huber-like, delta 5%) so that a few
noisy rows cannot drag the fit, minimised by Levenberg-Marquardt with the soft-L1 weights (iteratively
reweighted least squares) over each parameter's position in its range. A parameter that no measured point
depends on is left at the base topology's value and named as undetermined: the network's loss with scale needs
two node counts beyond two nodes (up to two, NCCL's trees move half the network bytes). With three or more node
counts, the largest is held out: the others are fitted, it is predicted, and a term stays only if its fit improves
that prediction and leaves no size band of it worse than the base topology predicts it (a latency term that buys the
small calls at the cost of the large ones has made a prediction worse); the terms kept are then fitted to every run,
and the held-out errors are reported, per band.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from dpcost.accuracy import (
    BANDS,
    ERROR_FLOOR,
    LAUNCH_PER_GPU,
    SMALL_BAND,
    BandError,
    Point,
    band_errors,
    launches_bound,
    predict,
)
from dpcost.engine.p2p import POINT_TO_POINT
from dpcost.engine.placement import place
from dpcost.frozen import frozen
from dpcost.nccl_tests import Measurements
from dpcost.specs import Calibration, NcclChannels, TopologySpec

__all__ = [
    "DELTA",
    "PARAMETERS",
    "Fit",
    "HeldOut",
    "Parameter",
    "RunFit",
    "band_weights",
    "calibrate",
    "fitted_rows",
    "minimise",
    "moved_points",
    "soft_l1",
    "with_values",
]

DELTA = 0.05  # soft-L1 scale: log errors below ~5% count quadratically, larger ones linearly
ITERATIONS = 40
MAX_INFLATION = 30.0  # a parameter whose column the others explain to R^2 > 0.967 is confounded with them
STEP = 1e-3  # of a parameter's range, for the numerical derivatives

Residuals = Callable[[dict[str, float]], list[float]]  # values -> log(predicted / measured) of every point


@frozen
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
    Parameter(
        "nvls_loss_per_doubling", "NVLS efficiency lost per doubling of a domain's ranks beyond 8", 0.0, 0.3, False
    ),
    # nccl-tests' host launches per GPU of a thread driving several (-g; accuracy.nccl_tests_seconds): fitted only
    # when a run does, kept out of the topology (a training job's process drives one GPU), and ahead of
    # call_overhead so that a -g 8 run's floor is not read as every call's overhead.
    Parameter(
        "launch_per_gpu", "host launch per GPU of an nccl-tests thread driving several (-g)", 0.5e-6, 50e-6, True
    ),
    Parameter("call_overhead", "per-call launch and completion time", 0.5e-6, 500e-6, True),
    Parameter("latency_scale", "NCCL's hop latencies times this (the ramp to full bandwidth)", 0.1, 20.0, True),
    Parameter("scaling_loss", "network bandwidth lost per doubling of nodes beyond two", 0.0, 0.3, False),
    Parameter("crossing_loss", "network bandwidth lost by calls that leave a leaf for the spine", 0.0, 0.3, False),
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
    if name == "nvls_loss_per_doubling":  # only a domain of more than 8 GPUs has ranks it applies to
        r = t.tiers[0].in_network_reduction
        return r.loss_per_doubling if r is not None and r.kind == "nvls" and t.domain_size > 8 else None
    if name == "crossing_loss":
        return t.tiers[2].crossing_loss if len(t.tiers) > 2 else None
    if name == "launch_per_gpu":
        return None  # the harness's, not the topology's: _start adds it for runs it can bound
    return float(getattr(t, name))


def _start(base: TopologySpec, runs: Sequence[Measurements]) -> dict[str, float]:
    """Every parameter's starting value: the base topology's, and nccl-tests' launch cost where a run pays it."""
    start = {p.name: v for p in PARAMETERS if (v := _read(base, p.name)) is not None}
    if any(launches_bound(m) for m in runs):
        start["launch_per_gpu"] = LAUNCH_PER_GPU
    return start


def _points(m: Measurements, topology: TopologySpec, values: dict[str, float]) -> list[Point]:
    return predict(m, topology, launch_per_gpu=values.get("launch_per_gpu", LAUNCH_PER_GPU))


def with_printed_channels(base: TopologySpec, runs: Sequence[Measurements]) -> TopologySpec:
    """The base topology with the channels the runs' NCCL_DEBUG=INFO lines print (nccl_tests.Measurements), each
    where the topology does not state its own: a run inside one node gives `one_node`, across nodes `across_nodes`,
    any run `nvls` (the fewest printed, as NCCL's ranks keep). NCCL's rules stand where no run printed them."""
    printed: dict[str, int] = {}

    def keep(key: str, count: int | None) -> None:
        if count:
            printed[key] = min(count, printed.get(key, count))

    for m in runs:
        if m.ranks:
            keep("one_node" if place(base, m.ranks).nodes <= 1 else "across_nodes", m.coll_channels)
        keep("nvls", m.nvls_channels)
    stated = base.channels.model_dump() if base.channels else {}
    update = {k: v for k, v in printed.items() if stated.get(k) is None}
    if not update:
        return base
    return base.model_copy(update={"channels": NcclChannels.model_validate({**stated, **update})})


def with_values(base: TopologySpec, values: dict[str, float]) -> TopologySpec:
    """The base topology with these parameter values. Every network tier keeps its ratio to the first one."""
    doc = base.model_dump()
    if "network_efficiency" in values and len(base.tiers) > 1:
        ratio = values["network_efficiency"] / base.tiers[1].efficiency
        for tier in doc["tiers"][1:]:
            tier["efficiency"] = min(1.0, max(0.01, tier["efficiency"] * ratio))
    if "nvlink_efficiency" in values:
        doc["tiers"][0]["efficiency"] = values["nvlink_efficiency"]
    for name, key in (("nvls_efficiency", "efficiency"), ("nvls_loss_per_doubling", "loss_per_doubling")):
        if name in values and doc["tiers"][0]["in_network_reduction"] is not None:
            doc["tiers"][0]["in_network_reduction"][key] = values[name]
    if "crossing_loss" in values and len(base.tiers) > 2:
        doc["tiers"][2]["crossing_loss"] = values["crossing_loss"]
    for name in ("call_overhead", "latency_scale", "scaling_loss"):
        if name in values:
            doc[name] = values[name]
    return TopologySpec.model_validate(doc)


@frozen
class RunFit:
    """One measured run's error before and after the fit, by size band."""

    name: str
    ranks: int
    nodes: int
    algorithm: str | None  # the one the run forced, or "NCCL_ALGO=..." where its setting left NCCL several
    before: tuple[BandError, ...]
    after: tuple[BandError, ...]


@frozen
class HeldOut:
    """Runs at the largest node count, predicted from a fit of the others: the base topology's error and the fit's."""

    nodes: int
    runs: int
    base_error: float
    fitted_error: float
    kept_base: bool = False  # every fit of the terms predicted it worse than the base: nothing is fitted
    bands: tuple[tuple[str, float, float], ...] = ()  # (size band, base error, fitted error), geomean per band


@frozen
class Fit:
    topology: TopologySpec
    fitted: dict[str, float]  # the values found, for the parameters the runs determine
    base: dict[str, float]  # the base topology's values of the same parameters
    undetermined: dict[str, str]  # parameter -> why it was kept at the base value
    runs: tuple[RunFit, ...]
    points: int
    held_out: HeldOut | None = None  # three or more node counts: the largest predicted from the others


def _unit(p: Parameter, x: float) -> float:
    return (math.log(x) - math.log(p.lo)) / (math.log(p.hi) - math.log(p.lo)) if p.log else (x - p.lo) / (p.hi - p.lo)


def _value(p: Parameter, u: float) -> float:
    u = min(1.0, max(0.0, u))
    return math.exp(math.log(p.lo) + u * (math.log(p.hi) - math.log(p.lo))) if p.log else p.lo + u * (p.hi - p.lo)


def _residuals(base: TopologySpec, runs: Sequence[Measurements], values: dict[str, float]) -> list[float]:
    """log(predicted / measured) for every measured point."""
    topology = with_values(base, values)
    return [math.log(pt.predicted_us / pt.measured_us) for m in runs for pt in _points(m, topology, values)]


def soft_l1(residuals: Sequence[float], weights: Sequence[float] | None = None) -> float:
    terms = (DELTA**2 * (math.sqrt(1 + (r / DELTA) ** 2) - 1) for r in residuals)
    return sum(terms) if weights is None else sum(w * t for w, t in zip(weights, terms, strict=True))


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting for the small normal equations."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if abs(m[col][col]) < 1e-300:
            continue
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        if abs(m[r][r]) >= 1e-300:
            x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def _jacobian(
    residuals: Residuals,
    values_at: Callable[[Sequence[float]], dict[str, float]],
    u: Sequence[float],
    r: Sequence[float],
) -> list[list[float]]:
    """d(log error of each point) / d(each parameter's position), by forward differences."""
    columns = []
    for j in range(len(u)):
        h = STEP if u[j] + STEP <= 1 else -STEP
        moved = list(u)
        moved[j] += h
        columns.append([(b - a) / h for a, b in zip(r, residuals(values_at(moved)), strict=True)])
    return columns


def _normal(weights: Sequence[float], columns: Sequence[Sequence[float]]) -> list[list[float]]:
    """J^T W J."""
    return [[sum(w * a * b for w, a, b in zip(weights, ci, cj, strict=True)) for cj in columns] for ci in columns]


def _inflation(jtj: Sequence[Sequence[float]]) -> list[float]:
    """Each parameter's variance inflation: 1 / (1 - R^2) of its column against the others' (uncentred)."""
    n = len(jtj)
    norm = [math.sqrt(jtj[i][i]) or 1.0 for i in range(n)]
    corr = [[jtj[i][j] / (norm[i] * norm[j]) for j in range(n)] for i in range(n)]
    return [_solve(corr, [1.0 if k == j else 0.0 for k in range(n)])[j] for j in range(n)]


def _irls(residuals: Sequence[float], point_weights: Sequence[float] | None) -> list[float]:
    """The soft-L1 loss's reweighting of each point, times the point's own weight."""
    soft = [1 / math.sqrt(1 + (x / DELTA) ** 2) for x in residuals]
    return soft if point_weights is None else [a * b for a, b in zip(soft, point_weights, strict=True)]


def minimise(
    residuals: Residuals,
    start: dict[str, float],
    free: Sequence[Parameter],
    point_weights: Sequence[float] | None = None,
) -> tuple[dict[str, float], list[float]]:
    """Levenberg-Marquardt on the free parameters' positions in their ranges, reweighted each step for the soft-L1
    loss (iteratively reweighted least squares), each point's term times its `point_weights` entry where given; a
    step is kept only when it lowers the loss. `residuals` gives log(predicted / measured) of every point for a set
    of values. Returns the values (`start` with the free ones
    fitted) and each free parameter's variance inflation at the optimum."""
    u = [_unit(p, start[p.name]) for p in free]

    def values_at(pos: Sequence[float]) -> dict[str, float]:
        return dict(start, **{p.name: _value(p, x) for p, x in zip(free, pos, strict=True)})

    r = residuals(values_at(u))
    loss, damping = soft_l1(r, point_weights), 1e-3
    for _ in range(ITERATIONS):
        weights = _irls(r, point_weights)
        columns = _jacobian(residuals, values_at, u, r)
        jtj = _normal(weights, columns)
        jtr = [sum(w * a * x for w, a, x in zip(weights, ci, r, strict=True)) for ci in columns]
        improved = False
        while damping < 1e6:
            lhs = [
                [v + (damping * jtj[i][i] + 1e-12 if i == j else 0.0) for j, v in enumerate(row)]
                for i, row in enumerate(jtj)
            ]
            step = _solve(lhs, [-x for x in jtr])
            trial = [min(1.0, max(0.0, x + d)) for x, d in zip(u, step, strict=True)]
            r_trial = residuals(values_at(trial))
            if (f := soft_l1(r_trial, point_weights)) < loss:
                converged = loss - f <= 1e-10 * max(loss, 1e-12)
                u, r, loss, damping, improved = trial, r_trial, f, max(damping / 10, 1e-9), True
                break
            damping *= 10
        if not improved or converged:
            break
    weights = _irls(r, point_weights)
    return values_at(u), _inflation(_normal(weights, _jacobian(residuals, values_at, u, r)))


def _fit(
    base: TopologySpec, runs: Sequence[Measurements], start: dict[str, float], free: list[Parameter]
) -> tuple[dict[str, float], list[float]]:
    """minimise() over the runs' points, each weighted so that every run's every size band counts alike
    (band_weights), the topology made from the values."""
    return minimise(lambda values: _residuals(base, runs, values), start, free, band_weights(runs))


def band_weights(runs: Sequence[Measurements]) -> list[float]:
    """Each point's weight: one over the number of points its run has in its size band, so that every run's every
    band counts alike in the fit, as the accuracy report scores them (normalised to a mean of one)."""
    bands = (SMALL_BAND, *BANDS)
    keys = [
        (i, next(b[0] for b in bands if b[1] <= row.size_bytes < b[2])) for i, m in enumerate(runs) for row in m.rows
    ]
    counts: dict[tuple[int, str], int] = {}
    for k in keys:
        counts[k] = counts.get(k, 0) + 1
    raw = [1 / counts[k] for k in keys]
    mean = sum(raw) / len(raw)
    return [w / mean for w in raw]


def moved_points(residuals: Residuals, values: dict[str, float], p: Parameter) -> int:
    """How many measured points move by more than 1% when the parameter moves by a tenth of its range."""
    here = residuals(values)
    u = _unit(p, values[p.name])
    moved = dict(values, **{p.name: _value(p, u + 0.1 if u < 0.9 else u - 0.1)})
    there = residuals(moved)
    return sum(1 for a, b in zip(here, there, strict=True) if abs(b - a) > math.log(1.01))


def _sensitive(base: TopologySpec, runs: Sequence[Measurements], values: dict[str, float], p: Parameter) -> int:
    return moved_points(lambda v: _residuals(base, runs, v), values, p)


def _fitted(
    base: TopologySpec, runs: Sequence[Measurements], dropped: frozenset[str] = frozenset()
) -> tuple[dict[str, float], list[Parameter], dict[str, str]]:
    """The values the runs determine, the parameters fitted, and why each other one was kept at the base value;
    `dropped` parameters are kept at the base value (the hold-out found they do not help)."""
    nodes = sorted({place(base, m.ranks).nodes for m in runs if m.ranks})
    start = _start(base, runs)
    undetermined = {name: "the held-out node count predicts no better with it fitted" for name in dropped}
    if sum(1 for n in nodes if n > 2) < 2:
        # NCCL's trees move S per node up to two nodes, 1.5S at three, 2S beyond (engine/collectives.py,
        # tree_domain_load): a loss per doubling read between two nodes and more would absorb the step from S, so
        # it needs two counts beyond two (three and four differ by 1.5S and 2S, which the model prices).
        undetermined["scaling_loss"] = "needs runs at two node counts beyond two nodes"
    free = [p for p in PARAMETERS if p.name in start and p.name not in undetermined]
    free = [p for p in free if _sensitive(base, runs, start, p) >= 2]
    for p in PARAMETERS:
        if p.name in start and p not in free and p.name not in undetermined:
            undetermined[p.name] = "no measured point depends on it"
    values = dict(start)
    while free:
        values, inflation = _fit(base, runs, start, free)
        confounded = [p for p, vif in zip(free, inflation, strict=True) if not vif < MAX_INFLATION]
        if not confounded:
            break
        drop = confounded[-1]  # PARAMETERS is in order of preference: keep the earlier ones
        undetermined[drop.name] = (
            "these runs cannot tell it apart from " + ", ".join(p.name for p in confounded[:-1])
            if len(confounded) > 1
            else "these runs cannot tell it apart from the other parameters"
        )
        free = [p for p in free if p is not drop]
        if not free:
            values = dict(start)
    return values, free, undetermined


def _errors(
    topology: TopologySpec, runs: Sequence[Measurements], values: dict[str, float]
) -> tuple[float, dict[str, float]]:
    """Geometric-mean |predicted / measured - 1| over every point of the runs, and over each size band's
    (accuracy.band_errors)."""
    points = [pt for m in runs for pt in _points(m, topology, values)]
    logs = [abs(math.log(pt.predicted_us / pt.measured_us)) for pt in points]
    whole = math.exp(sum(logs) / len(logs)) - 1 if logs else 0.0
    return whole, {b.band: b.geomean for b in band_errors(points)}


def _against_base(bands: dict[str, float], base: dict[str, float]) -> tuple[float, float]:
    """A prediction's size-band errors against the base topology's: how much worse it is in the bands where it is
    worse (the sum of log(error / base error) over them, 0 when none is), then the mean of that log ratio over
    every band, so that each band counts alike however many points it holds (errors floored as
    accuracy.band_errors floors them)."""
    logs = [math.log(max(bands[b], ERROR_FLOOR) / max(e, ERROR_FLOOR)) for b, e in base.items()]
    return sum(max(0.0, x) for x in logs), sum(logs) / len(logs) if logs else 0.0


def _hold_out(base: TopologySpec, runs: Sequence[Measurements]) -> tuple[frozenset[str], HeldOut | None]:
    """With three or more node counts: fit the smaller ones, predict the largest, and drop terms one at a time,
    each time the one whose drop makes that prediction best, band by band against the base topology
    (_against_base), until no drop makes it better (backward elimination; on a tie the least preferred goes). If
    what is left still predicts a band worse than the base, or no better on the whole, drop them all (calibration
    never makes the held-out count worse). The held-out count is the largest whose calls reach no switch tier the
    smaller ones miss: a tier's crossing loss shows only in the runs that cross it, so a count that alone crosses
    it cannot judge the terms (it is fitted with the rest after)."""
    reach: dict[int, int] = {}  # node count -> how many tiers its calls span
    for m in runs:
        if m.ranks:
            placed = place(base, m.ranks)
            reach[placed.nodes] = len(placed.levels)
    nodes = sorted(reach)
    judged = [n for i, n in enumerate(nodes) if i >= 2 and reach[n] <= max(reach[k] for k in nodes[:i])]
    if not judged:
        return frozenset(), None
    largest = judged[-1]
    train = [m for m in runs if not m.ranks or place(base, m.ranks).nodes < largest]
    test = [m for m in runs if m.ranks and place(base, m.ranks).nodes == largest]
    base_error, base_bands = _errors(base, test, _start(base, test))

    def scored(values: dict[str, float]) -> tuple[tuple[float, float], float, dict[str, float]]:
        error, bands = _errors(with_values(base, values), test, values)
        return _against_base(bands, base_bands), error, bands

    def predicted(without: frozenset[str]) -> tuple[tuple[float, float], float, dict[str, float]]:
        return scored(_fitted(base, train, without)[0])

    dropped: frozenset[str] = frozenset()
    every, free, _ = _fitted(base, train)
    best = scored(every)
    while left := [p for p in reversed(free) if p.name not in dropped]:
        score, p = min(((predicted(dropped | {p.name}), p) for p in left), key=lambda trial: trial[0][0])
        if score[0] >= best[0]:
            break
        dropped, best = dropped | {p.name}, score
    (worse, change), error, bands = best
    if worse > 0 or change > 0 or not {p.name for p in free} - dropped:
        kept = tuple((b, e, e) for b, e in base_bands.items())
        return dropped | {p.name for p in free}, HeldOut(largest, len(test), base_error, base_error, True, kept)
    return dropped, HeldOut(
        largest, len(test), base_error, error, bands=tuple((b, e, bands[b]) for b, e in base_bands.items())
    )


def fitted_rows(m: Measurements) -> Measurements:
    """The rows of a run the fit takes: every collective's, not an all-to-all's or a send/recv's. dpcost's
    point-to-point calls leave out NCCL's per-peer costs of a grouped send/recv and its proxy's (engine/p2p.py), and
    their one latency step would take them up as a hop-latency scale that every collective then pays; their rows are
    predicted with the fit, not fitted."""
    return replace(m, rows=tuple(r for r in m.rows if r.op not in POINT_TO_POINT))


def calibrate(base: TopologySpec, runs: Sequence[Measurements]) -> Fit:
    """The base topology fitted to the runs' collectives (fitted_rows; see the module docstring). With three or
    more node counts the terms are chosen on a held-out prediction of the largest (_hold_out), then fitted to every
    run; every run, all-to-alls and send/recvs included, is then predicted before and after."""
    if not runs:
        raise ValueError("no measurements to calibrate on")
    base = with_printed_channels(base, runs)
    measured = runs
    runs = [f for f in map(fitted_rows, runs) if f.rows]
    if not runs:
        raise ValueError(
            "all-to-all and send/recv rows only: calibrate fits the collectives (all_reduce, reduce_scatter, "
            "all_gather, broadcast, reduce), and predicts point-to-point calls with the fit; give it a collective's "
            "run too"
        )
    dropped, held_out = _hold_out(base, runs)
    values, free, undetermined = _fitted(base, runs, dropped)
    start = _start(base, runs)
    topology = with_values(base, values)
    fits = tuple(
        RunFit(
            m.name,
            m.ranks or 0,
            place(base, m.ranks).nodes if m.ranks else 0,
            m.algorithm or (f"NCCL_ALGO={m.nccl_algo}" if m.nccl_algo else None),
            tuple(band_errors(_points(m, base, start))),
            tuple(band_errors(_points(m, topology, values))),
        )
        for m in measured
    )
    fitted = {p.name: values[p.name] for p in free}
    return Fit(
        topology, fitted, {k: start[k] for k in fitted}, undetermined, fits, sum(len(m.rows) for m in runs), held_out
    )


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
