"""`dpcost schema`: the JSON Schema of each output and of the YAML specs, or its keys as a markdown table."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from dpcost.cli.core import OutputOpt, app, write


class Kind(StrEnum):
    estimate = "estimate"
    memory = "memory"
    collective = "collective"
    sweep = "sweep"
    check = "check"
    plan = "plan"
    plan_result = "plan-result"
    model = "model"
    topology = "topology"


class SchemaFormat(StrEnum):
    json = "json"
    markdown = "markdown"


def schema_of(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12, as pydantic writes it) of one output or spec."""
    from pydantic import TypeAdapter

    from dpcost.checks import CheckReport, PlanFile
    from dpcost.contract import schema_model
    from dpcost.engine.report import CollectiveRow, EstimateReport, MemoryReport, PlanResult, SweepRow
    from dpcost.specs import ModelSpec, TopologySpec

    models: dict[str, Any] = {
        "estimate": schema_model(EstimateReport),
        "memory": schema_model(MemoryReport),
        "collective": list[schema_model(CollectiveRow)],  # type: ignore[misc]
        "sweep": list[schema_model(SweepRow)],  # type: ignore[misc]
        "check": schema_model(CheckReport),
        "plan": PlanFile,
        "plan-result": schema_model(PlanResult),
        "model": ModelSpec,
        "topology": TopologySpec,
    }
    spec = kind in ("model", "topology", "plan")
    doc: dict[str, Any] = TypeAdapter(models[kind]).json_schema(mode="validation" if spec else "serialization")
    what = "plan file" if kind == "plan" else "YAML spec" if spec else "--format json output"
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **doc, "title": f"dpcost {kind} {what}"}


def _type(node: dict[str, Any]) -> str:
    if "$ref" in node:
        return "object"
    if "const" in node:
        return repr(node["const"])
    if "enum" in node:
        return " \\| ".join(str(v) for v in node["enum"])
    if "anyOf" in node:
        return " or ".join(_type(n) for n in node["anyOf"])
    kind = node.get("type", "any")
    if kind == "array":
        return f"list of {_type(node.get('items', {}))}"
    return str(kind)


def keys_table(kind: str) -> str:
    """Every key of a schema, dotted (`time.step_seconds`, `warnings[].code`), with its type and meaning."""
    schema = schema_of(kind)
    defs = schema.get("$defs", {})
    rows: list[str] = []

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            node = defs[node["$ref"].split("/")[-1]]
        return node

    def walk(node: dict[str, Any], prefix: str) -> None:
        node = resolve(node)
        if node.get("type") == "array" and "items" in node:
            walk(node["items"], prefix + "[]")
            return
        for option in node.get("anyOf", []):
            if resolve(option).get("properties"):
                walk(option, prefix)
                return
        for name, child in node.get("properties", {}).items():
            key = f"{prefix}.{name}" if prefix else name
            target = resolve(child)
            inner = next((resolve(o) for o in child.get("anyOf", []) if resolve(o).get("properties")), None)
            items = resolve(target.get("items", {})) if target.get("type") == "array" else {}
            nested = target.get("properties") or inner or items.get("properties")
            text = child.get("description") or target.get("description", "")
            meaning = " ".join(text.split()).replace("|", "\\|")
            rows.append(f"| `{key}` | {_type(child)} | {meaning} |")
            if nested:
                walk(inner or child, key)

    walk(schema, "")
    return "| key | type | meaning |\n|---|---|---|\n" + "\n".join(rows) + "\n"


@app.command()
def schema(
    kind: Annotated[Kind, typer.Argument(help="Which output or spec.")],
    fmt: Annotated[SchemaFormat, typer.Option("--format", "-f", help="The schema, or its keys as a table.")] = (
        SchemaFormat.json
    ),
    output: OutputOpt = None,
) -> None:
    """Print the JSON Schema of an output (estimate, memory, collective, sweep, check) or a file (model, topology,
    plan)."""
    import json

    if fmt == SchemaFormat.markdown:
        write(keys_table(kind.value), output)
        return
    write(json.dumps(schema_of(kind.value), indent=2) + "\n", output)
