"""--from FILE: the training config a plan was read from, key by key (engine/report.py TrainingConfigReport)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpcost.render.table import Table

if TYPE_CHECKING:
    from dpcost.engine.report import TrainingConfigReport

__all__ = ["config_table"]


def config_table(config: TrainingConfigReport) -> Table:
    """Every key read: its value, the dpcost flag it became, and why a key was left out or overridden."""
    rows = [[s.key, s.value, s.became or "-", s.note] for s in config.settings]
    used = sum(1 for s in config.settings if s.became)
    return Table(
        f"Read from {config.file} ({config.kind}): {used} of {len(config.settings)} settings used",
        ["key", "value", "dpcost", "note"],
        rows,
        data=[s.model_dump() for s in config.settings],
        prose=True,
        breakable=["key", "value"],
    )
