"""`dpcost schema`: the JSON Schema of each output and of the YAML specs."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from dpcost.cli.core import app


class Kind(StrEnum):
    estimate = "estimate"
    memory = "memory"
    collective = "collective"
    sweep = "sweep"
    model = "model"
    topology = "topology"


def schema_of(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12, as pydantic writes it) of one output or spec."""
    from pydantic import TypeAdapter

    from dpcost.engine.report import CollectiveRow, EstimateReport, MemoryReport, SweepRow
    from dpcost.specs import ModelSpec, TopologySpec

    models: dict[str, Any] = {
        "estimate": EstimateReport,
        "memory": MemoryReport,
        "collective": list[CollectiveRow],
        "sweep": list[SweepRow],
        "model": ModelSpec,
        "topology": TopologySpec,
    }
    doc: dict[str, Any] = TypeAdapter(models[kind]).json_schema(mode="serialization")
    what = "YAML spec" if kind in ("model", "topology") else "--format json output"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"dpcost {kind} {what}", **doc}


@app.command()
def schema(kind: Annotated[Kind, typer.Argument(help="Which output or spec.")]) -> None:
    """Print the JSON Schema of an output (estimate, memory, collective, sweep) or a spec (model, topology)."""
    import json

    sys.stdout.write(json.dumps(schema_of(kind.value), indent=2) + "\n")
