"""`dpcost collective` in nccl-tests' vocabulary: size, time (us), algbw, busbw (GB/s), the chosen algorithm beside
the others, and a measured run beside the prediction."""

from __future__ import annotations

from collections.abc import Sequence

from dpcost.engine.collectives import CollectiveChoice
from dpcost.engine.report import CollectiveRow
from dpcost.render.table import Table, us
from dpcost.units import fmt_bytes

__all__ = ["collective_rows", "collective_table"]

SHORT = {"out-of-place": "oop", "in-place": "ip"}


def collective_rows(
    choices: Sequence[CollectiveChoice], measured: dict[tuple[str, int], dict[str, float]] | None = None
) -> list[CollectiveRow]:
    """One contract row per size: the prediction, every algorithm's time, and the measurement if given."""
    out = []
    for ch in choices:
        b = ch.best
        m = (measured or {}).get((b.op, int(b.size_bytes)), {})
        out.append(
            CollectiveRow(
                op=b.op,
                size_bytes=int(b.size_bytes),
                time_us=b.seconds * 1e6,
                algbw_GBps=b.algbw / 1e9,
                busbw_GBps=b.busbw / 1e9,
                algorithm=b.algorithm,
                protocol=b.protocol,
                alternatives_us={c.algorithm: c.seconds * 1e6 for c in ch.candidates},
                measured_us=dict(m),
                error={col: b.seconds * 1e6 / t - 1 for col, t in m.items()},
            )
        )
    return out


def collective_table(rows: Sequence[CollectiveRow]) -> Table:
    """The rows as a table; its data rows (CSV) flatten the per-algorithm and per-column values."""
    algorithms = list(dict.fromkeys(a for r in rows for a in r.alternatives_us))
    several_ops = len({r.op for r in rows}) > 1
    columns = ["op"] * several_ops + ["size", "time", "algbw", "busbw", "algorithm", *algorithms]
    measure_cols = sorted({col for r in rows for col in r.measured_us}, reverse=True)
    for col in measure_cols:
        columns += [f"measured {SHORT.get(col, col)}", f"error {SHORT.get(col, col)}"]
    first = int(several_ops)
    right = {first, first + 1, first + 2, first + 3} | set(range(first + 5, len(columns)))
    t = Table("Collective time (times in us, bandwidths in GB/s)", columns, right=right)
    t.drop = [*reversed(algorithms), "algbw", "algorithm"]
    for r in rows:
        row = [r.op] * several_ops + [
            fmt_bytes(r.size_bytes, binary=True),
            us(r.time_us),
            f"{r.algbw_GBps:.2f}",
            f"{r.busbw_GBps:.2f}",
            f"{r.algorithm}/{r.protocol}",
        ]
        row += [us(r.alternatives_us[a]) if a in r.alternatives_us else "-" for a in algorithms]
        data = r.model_dump(exclude={"alternatives_us", "measured_us", "error"})
        data.update({f"{a}_us": r.alternatives_us[a] for a in algorithms if a in r.alternatives_us})
        for col in measure_cols:
            if col in r.measured_us:
                row += [us(r.measured_us[col]), f"{r.error[col]:+.1%}"]
                data[f"measured_{col}_us".replace("-", "_")] = r.measured_us[col]
                data[f"error_{col}".replace("-", "_")] = r.error[col]
            else:
                row += ["-", "-"]
        t.rows.append(row)
        t.data.append(data)
    return t
