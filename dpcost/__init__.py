"""dpcost: the cost of data-parallel training and serving, from closed-form models.

The Python API is the engine without the CLI:

    from dpcost import estimate, load_model, load_topology, Options
    report = estimate(load_model("llama-70b"), load_topology("dgx-h100"), Options(dp=512))

`plan_cost` (and `cost_many` for a batch) gives the same plan's step, memory and fit as plain numbers (PlanCost),
without building the report: what a search ranks by.

Names are imported on first use, so `import dpcost` (and the CLI's start-up) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = [
    "EstimateReport",
    "Options",
    "PlanCost",
    "collective",
    "cost_many",
    "estimate",
    "estimate_many",
    "load_model",
    "load_topology",
    "plan_cost",
]

_LAZY = {
    "estimate": "dpcost.engine.estimate",
    "estimate_many": "dpcost.engine.estimate",
    "plan_cost": "dpcost.engine.cost",
    "cost_many": "dpcost.engine.cost",
    "PlanCost": "dpcost.engine.cost",
    "Options": "dpcost.options",
    "EstimateReport": "dpcost.engine.report",
    "collective": "dpcost.engine.collectives",
    "load_model": "dpcost.catalog",
    "load_topology": "dpcost.catalog",
}

if TYPE_CHECKING:
    from dpcost.catalog import load_model, load_topology
    from dpcost.engine.collectives import collective
    from dpcost.engine.cost import PlanCost, cost_many, plan_cost
    from dpcost.engine.estimate import estimate, estimate_many
    from dpcost.engine.report import EstimateReport
    from dpcost.options import Options


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'dpcost' has no attribute {name!r}")
