"""Decoder layers kept in BF16 under an FP8 or NVFP4 recipe (--bf16-layers-at-start/-end): Megatron-Core's
--first-last-layers-bf16 builds the first and last layers, by global index, outside the FP8 context
(megatron/core/fp8_utils.py is_first_last_bf16_layer; docs/sources/low-precision-layers.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost import Options, load_model, load_topology
from dpcost.engine.estimate import estimate
from dpcost.engine.ops import sixteen_bit_layer

CONFIGS = Path(__file__).resolve().parents[1] / "examples" / "training-configs"


def test_the_layers_in_bf16_are_megatrons() -> None:
    """Megatron-Core's unit test of fp8_utils (test_is_first_last_bf16_layer): two at the
    start and one at the end of six layers are layers 0, 1 and 5."""
    assert [sixteen_bit_layer(i, 6, (2, 1)) for i in range(6)] == [True, True, False, False, False, True]
    assert not any(sixteen_bit_layer(i, 6, (0, 0)) for i in range(6))


@pytest.mark.parametrize("dtype", ["fp8", "nvfp4"])
@pytest.mark.parametrize("layout", [{}, {"tp": 8}], ids=["pure DP", "TP 8"])
def test_every_layer_in_bf16_costs_the_layers_as_a_bf16_plan(dtype: str, layout: dict[str, int]) -> None:
    """A layer outside the FP8 context runs as in a BF16 plan: its matmuls at the BF16 peak's sustained share, no
    casts. With every layer so, only the output head and the router differ, and they stay in 16 bits either way."""
    model, topology = load_model("llama-70b"), load_topology("dgx-b200")
    base = {"dp": 64, "global_batch": 512, **layout}
    bf16 = estimate(model, topology, Options(**base))  # type: ignore[arg-type]
    all_bf16 = estimate(model, topology, Options(**base, compute_dtype=dtype, bf16_layers_at_end=80))  # type: ignore[arg-type]
    low = estimate(model, topology, Options(**base, compute_dtype=dtype))  # type: ignore[arg-type]
    assert all_bf16.time.forward_seconds == pytest.approx(bf16.time.forward_seconds, rel=1e-12)
    assert all_bf16.time.backward_seconds == pytest.approx(bf16.time.backward_seconds, rel=1e-12)
    assert low.time.forward_seconds < 0.8 * bf16.time.forward_seconds


def test_the_layers_in_bf16_fall_on_the_stages_that_hold_them() -> None:
    """The index is global: with four pipeline stages of 20 layers, the last 20 in BF16 slow the last stage only,
    which then paces the pipeline; the first 20 slow the first."""
    model, topology = load_model("llama-70b"), load_topology("dgx-b200")
    base = {"dp": 8, "pp": 4, "global_batch": 256, "compute_dtype": "nvfp4"}
    plain = estimate(model, topology, Options(**base))  # type: ignore[arg-type]
    end = estimate(model, topology, Options(**base, bf16_layers_at_end=20))  # type: ignore[arg-type]
    start = estimate(model, topology, Options(**base, bf16_layers_at_start=20))  # type: ignore[arg-type]
    # the first stage holds the embedding, the last the head and loss: each paces with its 20 layers in BF16
    assert end.time.forward_seconds > 1.3 * plain.time.forward_seconds
    assert start.time.forward_seconds > 1.3 * plain.time.forward_seconds
    one = estimate(model, topology, Options(**base, bf16_layers_at_end=1))  # type: ignore[arg-type]
    assert plain.time.forward_seconds < one.time.forward_seconds < end.time.forward_seconds


def test_flags_that_change_nothing_say_so_and_too_many_layers_are_refused() -> None:
    plain = report("estimate", "--model", "llama-8b", "--dp", "8")
    same = report("estimate", "--model", "llama-8b", "--dp", "8", "--bf16-layers-at-end", "2")
    assert same["summary"] == plain["summary"]
    assert any(w["code"] == "ignored-flags" and "--bf16-layers-at-end" in w["message"] for w in same["warnings"])
    flops = report("estimate", "--model", "llama-8b", "--dp", "8", "--compute-dtype", "fp8", "--compute-model",
                   "flops", "--bf16-layers-at-start", "1")  # fmt: skip
    assert any("--compute-model flops" in w["message"] for w in flops["warnings"])
    code, _, err = run("estimate", "--model", "llama-8b", "--dp", "8", "--compute-dtype", "fp8",
                       "--bf16-layers-at-start", "20", "--bf16-layers-at-end", "13")  # fmt: skip
    assert code == 2
    assert err.strip().splitlines()[-1] == (
        "dpcost: error: --bf16-layers-at-end: 20 + 13 layers in BF16 is more than llama-8b's 32 decoder layers"
    )


def test_a_megatron_script_keeps_its_first_and_last_layers_in_bf16(tmp_path: Path) -> None:
    """arguments.py: --first-last-layers-bf16 with --num-layers-at-start/end-in-bf16, each 1 unless given; without
    the switch the counts do nothing. Under delayed scaling, Megatron's default recipe, transformer_config.py refuses
    it ("Delayed scaling does not support first / last layer in BF16"), and so does the reader."""
    script = (CONFIGS / "megatron-gpt-345m.sh").read_text()
    path = tmp_path / "run.sh"

    def write(flags: str) -> None:
        path.write_text(script.replace("    --num-layers 24 \\", f"    --num-layers 24 --fp8-format hybrid {flags} \\"))

    def settings(flags: str) -> dict[str, str]:
        write(f"--fp8-recipe tensorwise {flags}")
        doc = report("estimate", "--from", str(path), "--dp", "8")
        return {row["key"]: row["became"] for row in doc["from_config"]["settings"]}

    for recipe in ("", "--fp8-recipe delayed"):
        write(f"{recipe} --first-last-layers-bf16")
        code, out, err = run("estimate", "--from", str(path), "--dp", "8")
        assert code == 2 and out == "" and "--first-last-layers-bf16" in err and "delayed scaling" in err

    both = settings("--first-last-layers-bf16 --num-layers-at-end-in-bf16 3")
    assert both["--num-layers-at-start-in-bf16"] == "--bf16-layers-at-start 1"
    assert both["--num-layers-at-end-in-bf16"] == "--bf16-layers-at-end 3"
    alone = settings("--num-layers-at-end-in-bf16 3")
    assert alone["--num-layers-at-end-in-bf16"] == ""
