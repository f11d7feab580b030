"""The outputs' classes (dpcost.contract) write what their pydantic mirrors would: each output below, validated by
its mirror and dumped again, reads back byte for byte (an int where JSON's schema says number would print `2`, not
`2.0`, and fail here), and the classes behave as the pydantic models they replaced."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from dpcost.checks import CheckReport
from dpcost.contract import Contract, Field, schema_model
from dpcost.engine.report import (
    CollectiveRow,
    EstimateReport,
    MemoryReport,
    PlanResult,
    Setup,
    StageRow,
    SweepRow,
    TierUse,
    Time,
)

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
from invocations import INVOCATIONS, run

ROOT = Path(__file__).resolve().parent.parent

KIND: dict[str, Any] = {
    "estimate": EstimateReport,
    "memory": MemoryReport,
    "collective": list[CollectiveRow],
    "sweep": list[SweepRow],
    "check": CheckReport,
    "plan": PlanResult,
}

# Beyond the golden files: the outputs' other sections (variants, a config read, hybrid sharding, check, plan).
MORE: dict[str, list[str]] = {
    "estimate-variants-hybrid": [
        "estimate", "--model", "llama-8b", "--dp", "64", "--shard-group", "8", "--compare-variants",
    ],
    "estimate-from-config": [
        "estimate", "--from", "examples/training-configs/torchtitan-llama3-8b.toml", "--dp", "64",
    ],
    "estimate-moe-layout-mtp": [
        "estimate", "--model", "deepseek-v3", "--pp", "16", "--ep", "64", "--dp", "128", "--topology", "hgx-h800",
        "--global-batch", "15360", "--seq-len", "4096", "--mtp-layers", "1",
    ],
    "check": ["check", "examples/capacity-plan.yaml"],
    "plan": ["plan", "--model", "llama-8b", "--gpus", "16", "--global-batch", "64", "--seq-len", "4096"],
}  # fmt: skip


def _mirror_round_trip(kind: Any, text: str) -> str:
    """`text` validated by the mirror of `kind` and written again as the CLI writes JSON, keys it left out absent."""
    if isinstance(kind, type):
        doc: Any = schema_model(kind).model_validate_json(text).model_dump(mode="json", exclude_unset=True)
    else:
        row = schema_model(kind.__args__[0])
        doc = [row.model_validate(r).model_dump(mode="json", exclude_unset=True) for r in json.loads(text)]
    return json.dumps(doc, indent=2, allow_nan=False) + "\n"


def _cases() -> list[tuple[str, list[str]]]:
    return [*INVOCATIONS.items(), *MORE.items()]


@pytest.mark.parametrize(("name", "args"), _cases(), ids=[n for n, _ in _cases()])
def test_output_reads_back_through_its_mirror(name: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    if name == "estimate-from-config" and not (ROOT / args[2]).exists():
        pytest.fail(f"{args[2]} is gone: name another shipped training config")
    text = run(args)
    assert _mirror_round_trip(KIND[args[0]], text) == text


def test_float_fields_hold_floats_as_pydantic_would() -> None:
    use = TierUse(tier="nvlink", bytes_per_gpu=7, seconds=2, nested=False)
    assert use.seconds == 2.0 and type(use.seconds) is float
    row = CollectiveRow(
        op="all_reduce", size_bytes=1, time_us=3, algbw_GBps=1, busbw_GBps=1, algorithm="ring", protocol="simple",
        alternatives_us={"ring": 3},
    )  # fmt: skip
    assert type(row.alternatives_us["ring"]) is float and row.measured_us == {}
    assert json.dumps(use.model_dump()) == json.dumps(schema_model(TierUse)(**use.model_dump()).model_dump())


def test_fields_are_keywords_in_any_order_and_frozen() -> None:
    with pytest.raises(TypeError):
        TierUse("nvlink", 7, 2.0, False)  # type: ignore[misc]
    use = TierUse(tier="nvlink", bytes_per_gpu=7, seconds=2.0, nested=False)
    with pytest.raises(AttributeError):
        use.tier = "ib"  # type: ignore[misc]
    assert use.model_copy(update={"tier": "ib"}) == TierUse(tier="ib", bytes_per_gpu=7, seconds=2.0, nested=False)


def test_exclude_and_exclude_none_act_as_pydantics() -> None:
    time = Time.model_validate(
        {
            **dict.fromkeys(
                (
                    "forward_seconds", "backward_seconds", "compute_seconds", "comm_seconds", "ideal_seconds",
                    "step_seconds", "serial_seconds", "exposed_comm_seconds", "losses_seconds", "tokens_per_second",
                    "mfu", "scaling_efficiency", "straggler_seconds",
                ),
                1.0,
            ),
            "bound": "compute",
            "breakdown": [{"term": "compute", "seconds": 1.0}],
        }
    )  # fmt: skip
    mirror = schema_model(Time).model_validate(time.model_dump())
    for exclude in ({"mfu", "bound"}, {"breakdown": True, "mfu": True}):
        assert time.model_dump(exclude=exclude) == mirror.model_dump(exclude=exclude)
    assert type(time.breakdown[0]).__name__ == "BreakdownTerm"  # built back as the class, not a dict


def test_model_validate_refuses_what_pydantic_refused() -> None:
    with pytest.raises(ValidationError, match="extra"):
        TierUse.model_validate({"tier": "ib", "bytes_per_gpu": 1, "seconds": 1.0, "nested": False, "x": 1})
    with pytest.raises(ValidationError):
        StageRow.model_validate({"stage": 0})


def test_the_mirror_carries_name_doc_defaults_and_descriptions() -> None:
    class Example(Contract):
        """An example."""

        size: int = Field(description="how big")
        note: str = Field("", description="a note")

    schema = schema_model(Example).model_json_schema()
    assert schema["title"] == "Example" and schema["description"] == "An example."
    assert schema["required"] == ["size"] and schema["additionalProperties"] is False
    assert schema["properties"]["note"] == {"default": "", "description": "a note", "title": "Note", "type": "string"}
    assert Setup.__name__ == schema_model(Setup).__name__
