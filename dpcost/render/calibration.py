"""`dpcost calibrate` as tables: the fitted parameters, and each run's error by size band before and after; with
--steps, the fitted terms and each measured row predicted with the defaults and fitted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpcost.calibration import PARAMETERS, Fit
from dpcost.render.table import Table, pct
from dpcost.units import fmt_seconds

if TYPE_CHECKING:
    from dpcost.calibration_steps import StepFit

__all__ = ["calibration_tables", "step_calibration_tables"]


def _fitted_value(name: str, value: float) -> str:
    if name in ("call_overhead", "launch_per_gpu"):
        return fmt_seconds(value)
    if name == "latency_scale":
        return f"x{value:.3g}"
    return f"{value:.3f}"


def calibration_tables(fit: Fit) -> list[Table]:
    """What `dpcost calibrate` fitted, and each run's error by size band before and after."""
    params = Table("Fitted parameters", ["parameter", "base", "fitted", "what it is"], right={1, 2}, prose=True)
    for p in PARAMETERS:
        if p.name in fit.fitted:
            base, value = fit.base[p.name], fit.fitted[p.name]
            params.rows.append([p.name, _fitted_value(p.name, base), _fitted_value(p.name, value), p.what])
            params.data.append({"parameter": p.name, "base": base, "fitted": value, "determined": True})
        elif p.name in fit.undetermined:
            params.rows.append([p.name, "-", "kept", fit.undetermined[p.name]])
            params.data.append({"parameter": p.name, "base": None, "fitted": None, "determined": False})
    params.notes.append(f"base: the {fit.topology.name} topology's values (--base, or guessed from the GPU name)")
    params.notes.append(f"{fit.points} measured points; loss: soft-L1 of log(predicted / measured), delta 5%")
    if "launch_per_gpu" in fit.fitted:
        params.notes.append(
            "launch_per_gpu is nccl-tests' own (one thread launching on several GPUs, -g): it shapes these runs' "
            "small calls and is not written into the topology"
        )
    if (h := fit.held_out) is not None:
        params.notes.append(
            f"held out: the {h.runs} run(s) at {h.nodes} nodes, predicted from a fit of the others: "
            f"{pct(h.base_error)} with the base topology, {pct(h.fitted_error)} fitted (geomean over their points"
            + "".join(f"; {band} {pct(before)} -> {pct(after)}" for band, before, after in h.bands)
            + "); a term stays only if it improves that prediction and leaves no size band of it worse"
            + ("; every fit predicted a band worse, so the base topology's values are kept" if h.kept_base else "")
        )
    runs = Table(
        "Error by run and size band: geomean |predicted - measured| / measured",
        ["run", "ranks", "nodes", "algorithm", "band", "points", "before", "after"],
        right={1, 2, 5, 6, 7},
        drop=["algorithm", "nodes", "points", "ranks"],
    )
    for r in fit.runs:
        before = {b.band: b for b in r.before}
        for b in r.after:
            runs.rows.append(
                [
                    r.name,
                    str(r.ranks),
                    str(r.nodes),
                    r.algorithm or "default",
                    b.band,
                    str(b.points),
                    pct(before[b.band].geomean),
                    pct(b.geomean),
                ]
            )
            runs.data.append(
                {
                    "run": r.name,
                    "ranks": r.ranks,
                    "nodes": r.nodes,
                    "algorithm": r.algorithm,
                    "band": b.band,
                    "points": b.points,
                    "error_before": before[b.band].geomean,
                    "error_after": b.geomean,
                }
            )
    return [params, runs]


def _term_value(name: str, value: float) -> str:
    if name == "mfu":
        return f"{value:.1%}"
    if name == "sync_jitter":
        return fmt_seconds(value)
    return f"{value:.3f}"


def _measured(measure: str, value: float) -> str:
    return fmt_seconds(value) if measure == "step_seconds" else f"{value:,.0f}"


def step_calibration_tables(fit: StepFit) -> list[Table]:
    """What `dpcost calibrate --steps` fitted, and each measured row predicted with the defaults and fitted."""
    from dpcost.calibration_steps import MEASURES

    terms = Table("Fitted to the measured steps", ["term", "default", "fitted", "what it is"], right={1, 2}, prose=True)
    for t in fit.terms:
        fitted = t.fitted is not None
        terms.rows.append(
            [
                t.name,
                _term_value(t.name, t.default),
                _term_value(t.name, t.fitted) if t.fitted is not None else "kept",
                t.what if fitted else t.why,
            ]
        )
        terms.data.append(
            {"term": t.name, "default": t.default, "fitted": t.fitted, "determined": fitted, "why": t.why or None}
        )
    counts = sorted({r.gpus for r in fit.rows})
    terms.notes.append(
        f"{len(fit.rows)} measured rows at {', '.join(str(c) for c in counts)} GPUs; loss: soft-L1 of "
        "log(predicted / measured step time), delta 5%"
    )
    terms.notes.append(
        f"every row, geomean |predicted - measured| / measured: {pct(fit.error_before)} with the defaults, "
        f"{pct(fit.error_after)} fitted"
    )
    if (h := fit.held_out) is not None:
        head = (
            f"held out: the {h.rows} row(s) at {h.gpus} GPUs, predicted from a fit of the smaller counts: "
            f"{pct(h.default_error)} with the defaults, "
        )
        terms.notes.append(
            head + f"{pct(h.full_error)} with every term they determine fitted: no fitted term improves it, so the "
            "defaults are kept (calibration never makes it worse)"
            if h.kept_defaults
            else head + f"{pct(h.fitted_error)} calibrated; a term stays only if it improves that prediction"
        )
    else:
        terms.notes.append("one GPU count: nothing to hold out; the losses at scale need more GPU counts")
    unit = MEASURES[fit.measure]
    rows = Table(
        f"Measured rows ({unit}): predicted with the defaults, fitted, and held out",
        [
            "line",
            "GPUs",
            "nodes",
            "measured",
            "defaults",
            "error",
            "fitted",
            "fitted error",
            "held out",
            "held-out error",
        ],
        right=set(range(10)),
        drop=["nodes", "line", "fitted", "held out", "defaults"],
    )
    for r in fit.rows:
        held = r.held_out
        rows.rows.append(
            [
                str(r.line),
                str(r.gpus),
                str(r.nodes),
                _measured(fit.measure, r.measured),
                _measured(fit.measure, r.before),
                f"{r.error_before:+.1%}",
                _measured(fit.measure, r.after),
                f"{r.error_after:+.1%}",
                _measured(fit.measure, held) if held is not None else "-",
                f"{held / r.measured - 1:+.1%}" if held is not None else "-",
            ]
        )
        rows.data.append(
            {
                "line": r.line,
                "gpus": r.gpus,
                "nodes": r.nodes,
                "measured": r.measured,
                "predicted_defaults": r.before,
                "error_defaults": r.error_before,
                "predicted_fitted": r.after,
                "error_fitted": r.error_after,
                "predicted_held_out": held,
                "error_held_out": held / r.measured - 1 if held is not None else None,
            }
        )
    rows.notes.append(
        "error: predicted / measured - 1; held out: the largest GPU count predicted from a fit of the smaller ones"
    )
    return [terms, rows]
