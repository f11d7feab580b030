"""The variants of data parallelism side by side (engine/variants.py, the report's `variants`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpcost.render.table import Table, gb, pct
from dpcost.units import fmt_bytes, fmt_seconds

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dpcost.engine.report import VariantRow

__all__ = ["variant_row", "variants_table"]

CONVERGENCE = (
    "What dpcost cannot know: each variant's effect on convergence (loss per step, steps to a target). Judge it "
    "from the published findings the README cites, on your own model."
)


def variant_row(rows: Sequence[VariantRow]) -> list[str]:
    """The verdict's line for a variant asked for by its flag: its step and memory against the plain plan's (the
    rows' first), the rest of the report being the plain plan."""
    plain, v = rows[0], rows[-1]
    ratio = plain.step_seconds / v.step_seconds if v.step_seconds else 0.0
    than = f"{ratio:.2f}x faster than" if ratio >= 1 else f"{1 / ratio:.2f}x slower than" if ratio else "against"
    return [
        "variant",
        f"{v.name}: {fmt_seconds(v.step_seconds)} per step ({than} {plain.name}'s "
        f"{fmt_seconds(plain.step_seconds)}), {gb(v.memory_bytes)} per GPU, scaling efficiency "
        f"{pct(v.scaling_efficiency)}; the tables below cost the plain plan",
    ]


def variants_table(rows: Sequence[VariantRow], hbm_bytes: int) -> Table:
    """Each variant: the bytes it sends over the slowest tier it crosses, its step, memory and efficiency."""
    base = rows[0]
    out = []
    for v in rows:
        ratio = base.top_tier_bytes / v.top_tier_bytes if v.top_tier_bytes else float("inf")
        less = "-" if v is base else ("none over it" if not v.top_tier_bytes else f"{ratio:,.1f}x less" if ratio >= 1
                                       else f"{1 / ratio:,.1f}x more")  # fmt: skip
        out.append([
            v.name, f"{fmt_bytes(v.top_tier_bytes)} over {v.top_tier}", less, fmt_seconds(v.exposed_comm_seconds),
            fmt_seconds(v.step_seconds), gb(v.memory_bytes), "yes" if v.memory_bytes <= hbm_bytes else "NO",
            f"+{gb(v.added_memory_bytes)}" if v.added_memory_bytes else "-", pct(v.scaling_efficiency),
            v.flags or "(as given)", v.note,
        ])  # fmt: skip
    notes = [CONVERGENCE, f"Memory against {gb(hbm_bytes)} of HBM per GPU; bytes are per GPU per step."]
    return Table(
        "Data parallelism that communicates less: each variant against the plain plan",
        [
            "variant",
            "bytes/step (slowest tier)",
            "vs plain",
            "exposed",
            "step",
            "memory/GPU",
            "fits",
            "added",
            "efficiency",
            "flags",
            "note",
        ],
        out,
        right={3, 4, 5, 7, 8},
        notes=notes,
        data=[v.model_dump() for v in rows],
        drop=["note", "flags"],
    )
