"""`dpcost plan` as tables: the best plan first (its verdict and the command that costs it), then the ranking."""

from __future__ import annotations

from dpcost.engine.report import PlanResult, PlanRow
from dpcost.render.table import Table, gb, pct
from dpcost.units import fmt_seconds

__all__ = ["layout_text", "plan_table", "plan_verdict"]


def layout_text(tp: int, cp: int, pp: int, dp: int, ep: int = 1, virtual_stages: int = 1, shard_group: int = 0) -> str:
    """TP x CP x PP x DP, with EP, V and the hybrid-sharding group where they apply: "TP8 CP1 PP16 DP128"."""
    text = f"TP{tp} CP{cp} PP{pp} DP{dp}"
    if ep > 1:
        text += f" EP{ep}"
    if virtual_stages > 1:
        text += f" V{virtual_stages}"
    if shard_group:
        text += f" shard {shard_group}"
    return text


def _row_layout(row: PlanRow) -> str:
    return layout_text(row.tp, row.cp, row.pp, row.dp, row.ep, row.virtual_stages, row.shard_group or 0)


def plan_verdict(result: PlanResult) -> Table:
    """The answer first: the best plan, what it costs, what binds it, why it beats the next, how to cost it alone."""
    t = Table(f"Verdict: {result.verdict}", ["", "value"], verdict=True)
    s = result.searched
    searched = (
        f"{s.candidates:,} plans: {s.over_memory:,} set aside by memory, {s.slower:,} by a bound on their step, "
        f"{s.invalid:,} refused by a layout's rules; {s.priced:,} estimates run"
    )
    batch = f"{result.global_batch:,} sequences of {result.seq_len:,} tokens per step on {result.gpus:,} GPUs"
    if not result.plans:
        t.rows += [["batch", batch], ["searched", searched]]
        return t
    best = result.plans[0]
    t.rows += [
        ["layout", f"{_row_layout(best)}, {best.order}"],
        ["plan", f"{best.framework}, ZeRO-{best.zero_stage}, recompute {best.recompute}, "
                 f"micro-batch {best.micro_batch} x accum {best.accumulation}"],
        ["memory", f"{gb(best.memory_bytes)} per GPU, {gb(best.headroom_bytes)} free"],
        ["speed", f"{best.tokens_per_second:,.0f} tokens/s, MFU {pct(best.mfu)}"],
        ["bound", f"{best.bound}: {best.bound_reason}"],
    ]  # fmt: skip
    if best.ahead_of_next:
        t.rows.append(["ahead", best.ahead_of_next])
    t.rows += [["batch", batch], ["searched", searched], ["cost it", best.command]]
    return t


def plan_table(result: PlanResult) -> Table:
    """One row per plan, fastest first."""
    t = Table(
        f"{result.model.title} on {result.gpus:,} {result.topology.gpu} ({result.topology.name}): the best plans",
        ["#", "layout", "plan", "micro-batch", "step", "tokens/s", "MFU", "memory/GPU", "bound", "ahead of the next"],
        right={0, 4, 5, 6, 7},
        drop=["ahead of the next", "micro-batch", "tokens/s", "bound", "plan"],
        breakable=["layout", "plan"],
    )
    for row in result.plans:
        t.rows.append(
            [
                str(row.rank),
                _row_layout(row),
                f"{row.framework} ZeRO-{row.zero_stage}, {row.recompute}",
                f"{row.micro_batch} x {row.accumulation}",
                fmt_seconds(row.step_seconds),
                f"{row.tokens_per_second:,.0f}",
                pct(row.mfu),
                gb(row.memory_bytes),
                row.bound,
                row.ahead_of_next,
            ]
        )
        t.data.append(row.model_dump(mode="json"))
    return t
