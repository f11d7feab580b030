"""`dpcost schema`: every output validates against its published JSON Schema, as a consumer would check it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from dpcost.catalog import catalog_dir
from dpcost.cli import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
OUTPUTS = {
    "estimate": [
        ["estimate", "--model", "llama-70b", "--dp", "512"],
        ["estimate", "--model", "deepseek-v3", "--dp", "512", "--topology", "gb200-nvl72"],
        ["estimate", "--model", "llama-8b", "--dp", "64", "--mode", "inference", "--batch", "16"],
        ["estimate", "--model", "gpt3-175b", "--dp", "128", "--zero", "1", "--offload", "optimizer", "--skew", "0.05"],
        ["estimate", "--model", "mixtral-8x7b", "--dp", "64", "--compute-model", "ops", "--recompute", "full"],
    ],
    "memory": [["memory", "--params", "7.5B", "--dp", "64", "--recipe", "deepspeed", "--largest-layer-params", "1B"]],
    "collective": [["collective", "--ranks", "16", "--sizes", "8,1M,1G"]],
    "sweep": [["sweep", "--model", "llama-8b", "--dp", "8,64"]],
    "plan-result": [
        ["plan", "--model", "llama-8b", "--gpus", "16", "--global-batch", "64", "--seq-len", "4096", "--top", "3"],
        ["plan", "--model", "llama-70b", "--gpus", "8", "--global-batch", "8", "--max-memory", "1GB"],
    ],
    "check": [
        ["check", "--model", "llama-70b", "--dp", "512", "--max-memory", "70GB", "--min-efficiency", "80%"],
        ["check", "--model", "llama-8b", "--dp", "64", "--mode", "inference", "--min-tokens-per-s", "1K"],
        ["check", str(EXAMPLES / "capacity-plan.yaml")],
    ],
}


def schema(kind: str) -> dict[str, object]:
    result = CliRunner().invoke(app, ["schema", kind])
    assert result.exit_code == 0, result.output
    doc: dict[str, object] = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc


@pytest.mark.parametrize("kind", sorted(OUTPUTS))
def test_outputs_validate_against_their_schema(kind: str) -> None:
    validator = jsonschema.Draft202012Validator(schema(kind))
    for args in OUTPUTS[kind]:
        result = CliRunner().invoke(app, [*args, "--format", "json"])
        assert result.exit_code == 0, result.output
        validator.validate(json.loads(result.stdout))


def test_a_wrong_output_fails_the_schema() -> None:
    validator = jsonschema.Draft202012Validator(schema("estimate"))
    doc = json.loads(
        CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "8", "--format", "json"]).stdout
    )
    doc["warnings"] = ["a bare string, as schema_version 1 had"]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(doc)


def test_every_example_plan_validates_against_the_plan_schema() -> None:
    validator = jsonschema.Draft202012Validator(schema("plan"))
    plans = sorted(EXAMPLES.glob("*plan*.yaml"))
    assert plans
    for f in plans:
        validator.validate(yaml.safe_load(f.read_text()))


@pytest.mark.parametrize("kind", ["model", "topology"])
def test_every_catalog_spec_validates_against_its_schema(kind: str) -> None:
    validator = jsonschema.Draft202012Validator(schema(kind))
    folder = catalog_dir("models" if kind == "model" else "topologies")
    specs = [f for f in folder.iterdir() if f.name.endswith(".yaml")]
    assert specs
    for f in specs:
        doc = yaml.safe_load(f.read_text())
        validator.validate(json.loads(json.dumps(doc)))
