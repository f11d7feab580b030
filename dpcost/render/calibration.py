"""`dpcost calibrate` as tables: the fitted parameters, and each run's error by size band before and after."""

from __future__ import annotations

from dpcost.calibration import PARAMETERS, Fit
from dpcost.render.table import Table, pct
from dpcost.units import fmt_seconds

__all__ = ["calibration_tables"]


def _fitted_value(name: str, value: float) -> str:
    if name == "call_overhead":
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
    params.notes.append(f"{fit.points} measured points; loss: soft-L1 of log(predicted / measured), delta 5%")
    if (h := fit.held_out) is not None:
        params.notes.append(
            f"held out: the {h.runs} run(s) at {h.nodes} nodes, predicted from a fit of the others: "
            f"{pct(h.base_error)} with the base topology, {pct(h.fitted_error)} fitted (geomean over their points); "
            "a term stays only if it improves that prediction"
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
