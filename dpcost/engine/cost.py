"""A plan's cost as plain numbers: what a search ranks and prunes by (the cost core beside the report).

`estimate.plan_cost` returns it from the same parts `estimate` builds its report from (estimate.py for pure data
parallelism, layout_report.py for a layout), so a plan's cost and its report's summary read the same figures; a
search builds the report only for the plans it keeps.
"""

from __future__ import annotations

from dpcost.frozen import frozen

__all__ = ["PlanCost"]


@frozen
class PlanCost:
    """One plan: its step and throughput, and the memory per GPU of the ZeRO stage it is costed at (a report's
    `summary`: step_seconds, tokens_per_second, mfu, memory_bytes, fits; `setup`: zero_stage, recompute)."""

    step_seconds: float | None  # None: a serving plan, which has no training step
    tokens_per_second: float
    mfu: float | None
    memory_bytes: int
    fits: bool
    zero_stage: int
    recompute: str
