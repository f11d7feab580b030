"""--gather-dtype fp8 in a layout is Megatron-LM's --fp8-param-gather (megatron/training/arguments.py: "keep the
compute param in fp8 ... and perform the param all-gather in fp8"; Transformer Engine's fp8_model_init): the
decoder layers' TP-split and expert weights are all-gathered a byte each, and stored in one where FP8 matmuls take
any layout (Blackwell; Hopper keeps a transpose beside each: engine/low_precision_weights.py); the norms, routers,
embedding and head stay in bf16; the gradients are unchanged. Closed forms from Llama 3 70B's config.json."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from conftest import cli_report, run_cli

from dpcost.catalog import load_model, load_topology
from dpcost.engine.collectives import fastest
from dpcost.engine.frameworks import MEGATRON_FSDP_PREFETCH_FLOOR
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import layout_step, stage_loads

# Llama 3 70B: hidden 8192, FFN 28672, 8 KV heads of 128, 80 layers
HIDDEN, FFN, KV, LAYERS = 8192, 28672, 8 * 128, 80
LAYER = 2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV + 3 * HIDDEN * FFN  # Q, O, K, V and the gated MLP: TP-split
NORMS = 2 * HIDDEN  # two RMSNorms a layer, whole on every TP rank
TP = 8


def _estimate(*flags: str) -> dict[str, Any]:
    return cli_report("estimate", "-m", "llama-70b", "--dp", "64", "--tp", str(TP), "--compute-dtype", "fp8", *flags)


def _gathers(report: dict[str, Any]) -> dict[str, int]:
    return {c["purpose"]: c["bytes"] for c in report["communication"]["collectives"]}


@pytest.mark.parametrize(("topology", "stored"), [("dgx-b200", 1), ("dgx-h100", 2)])
def test_distributed_optimizer_stores_and_gathers_the_layers_linear_weights_in_fp8(topology: str, stored: int) -> None:
    """A byte a weight gathered on either GPU; stored in one on Blackwell, in two on Hopper (the byte and its
    transpose). The bf16 run's matmuls in FP8 keep TE's cached copy of the same bytes instead (weight_cache_bytes)."""
    bf16 = _estimate("--zero", "1", "--topology", topology)
    fp8 = _estimate("--zero", "1", "--gather-dtype", "fp8", "--topology", topology)
    fp8_weights = LAYERS * LAYER // TP  # one byte each instead of two
    stage = fp8["memory"]["stages"][1]
    assert bf16["memory"]["stages"][1]["params_bytes"] - stage["params_bytes"] == (2 - stored) * fp8_weights
    assert bf16["memory"]["stages"][1]["buffers_bytes"] - stage["buffers_bytes"] == stored * fp8_weights
    assert stage["grads_bytes"] == bf16["memory"]["stages"][1]["grads_bytes"]
    assert _gathers(bf16)["updated parameters"] - _gathers(fp8)["updated parameters"] == fp8_weights
    assert _gathers(fp8)["gradients"] == _gathers(bf16)["gradients"]
    assert fp8["time"]["step_seconds"] < bf16["time"]["step_seconds"]
    assert "--gather-dtype" not in json.dumps(fp8["warnings"])  # a layout reads it now


def test_nvfp4_weights_are_stored_row_and_column_wise_and_gathered_packed() -> None:
    """--gather-dtype nvfp4 is Megatron's --fp4-param-gather: Transformer Engine keeps each linear weight row-wise and
    column-wise, half a byte a value and an E4M3 scale per 16 each (2 x 0.5625 = 1.125 bytes, 0.875 fewer than
    bf16's two), and the distributed optimizer's parameter buffer, which it all-gathers, holds the packed row-wise
    values alone (param_and_grad_buffer.py nvfp4_packed_numel: half a byte, 1.5 fewer)."""

    def estimate(*flags: str) -> dict[str, Any]:
        plan = ["-m", "llama-70b", "--dp", "64", "--tp", str(TP), "--topology", "dgx-b200", "--zero", "1"]
        return cli_report("estimate", *plan, "--compute-dtype", "nvfp4", *flags)

    bf16, nvfp4 = estimate(), estimate("--gather-dtype", "nvfp4")
    linear = LAYERS * LAYER / TP
    stage = nvfp4["memory"]["stages"][1]
    assert bf16["memory"]["stages"][1]["params_bytes"] - stage["params_bytes"] == pytest.approx(0.875 * linear, abs=2)
    assert stage["grads_bytes"] == bf16["memory"]["stages"][1]["grads_bytes"]
    saved = _gathers(bf16)["updated parameters"] - _gathers(nvfp4)["updated parameters"]
    assert saved == pytest.approx(1.5 * linear, abs=2)
    assert _gathers(nvfp4)["gradients"] == _gathers(bf16)["gradients"]
    assert "NVFP4 linear weights" in nvfp4["memory"]["recipe"]
    # the optimizer step all-reduces an fp32 amax per 16 x 16 tile of every whole weight over DP before the cast
    # (TE's _cast_master_weights_to_nvfp4_2d), waited for
    amaxes = _gathers(nvfp4)["NVFP4 tile amaxes of the dense weights, optimizer step"]
    assert amaxes == pytest.approx(linear / 256 * 4, abs=2)
    terms = {t["term"]: t["seconds"] for t in nvfp4["time"]["breakdown"]}
    assert terms["exposed NVFP4 tile amaxes of the dense weights, optimizer step"] > 0


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--compute-dtype", "fp8"], "give --compute-dtype nvfp4 too"),
        (["--compute-dtype", "nvfp4", "--zero", "3"], "at ZeRO 0-1"),
        (["--compute-dtype", "nvfp4", "--tp", "1", "--framework", "fsdp"], "give --framework megatron"),
    ],
)
def test_nvfp4_gathers_are_refused_where_megatron_does_not_run_them(flags: list[str], says: str) -> None:
    """arguments.py refuses --fp4-param-gather without --fp4-format; its packed gathers are the distributed
    optimizer's, not Megatron-FSDP's or another framework's."""
    plan = ["estimate", "-m", "llama-70b", "--dp", "64", "--tp", "8", "--topology", "dgx-b200"]
    code, out, err = run_cli(*plan, "--gather-dtype", "nvfp4", *flags)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--gather-dtype" in err and says in err


def test_megatron_fsdp_gathers_each_layer_at_a_byte_per_linear_weight() -> None:
    """optim_grads_params gathers every layer forward and backward: its TP-split weights in fp8, its norms in bf16."""
    fp8 = _gathers(_estimate("--zero", "3", "--gather-dtype", "fp8"))
    per_layer = LAYER // TP + 2 * NORMS
    assert fp8["parameters (forward)"] == fp8["parameters (backward)"] == LAYERS * per_layer
    assert fp8["gradients"] == LAYERS * 2 * (LAYER // TP + NORMS)  # bf16 main gradients, as without fp8


def test_megatron_fsdp_buffers_hold_the_prefetched_layers_in_fp8() -> None:
    """At ZeRO 3 the computing layer and those prefetched behind it (1 + ceil(floor / layer) of them,
    suggested_communication_unit_size) are held gathered: a byte less for each of their fp8 weights, whose
    transposes Megatron-FSDP drops after use (fp8_discard_transpose_cache). The bf16 weights' run keeps TE's cached
    FP8 copy of every linear weight, byte and transpose on Hopper, which nothing in Megatron-FSDP releases."""
    bf16 = _estimate("--zero", "3")["memory"]["stages"][3]
    fp8 = _estimate("--zero", "3", "--gather-dtype", "fp8")["memory"]["stages"][3]
    layers_held = 1 + math.ceil(MEGATRON_FSDP_PREFETCH_FLOOR / (LAYER / TP + NORMS))
    assert layers_held == 6
    assert bf16["buffers_bytes"] - fp8["buffers_bytes"] == layers_held * LAYER // TP + 2 * LAYERS * LAYER // TP


@pytest.mark.parametrize("zero", [1, 3])
def test_the_experts_are_gathered_a_byte_each(zero: int) -> None:
    """Mixtral's routed experts (Transformer Engine's grouped linear layers), over expert-DP: with fp8 parameters the
    step's calls shrink by the dense gathers' saving and by an expert gather of half the bytes."""
    model, topology = load_model("mixtral-8x7b"), load_topology("dgx-h100")
    layout = Layout(tp=2, dp=16, ep=8)

    def step(fp8: bool) -> Any:
        return layout_step(
            model, topology, layout, micro_batch=1, global_batch=16, seq_len=4096, mfu=0.4, zero=zero,
            sequence_parallel=True, quantized_weights="fp8" if fp8 else None,
        )  # fmt: skip

    bf16, fp8 = step(False), step(True)
    dense = sum(t.seconds for t in bf16.dp_traffic if t.op == "all_gather") - sum(
        t.seconds for t in fp8.dp_traffic if t.op == "all_gather"
    )
    experts = max(s.expert_params for s in stage_loads(model, layout, 4096))
    gathers = 2 if zero == 3 else 1  # ZeRO 3 gathers them for the forward and again for the backward
    edp = bf16.groups["edp"]
    half = (
        fastest(topology, "all_gather", edp, 2 * experts).seconds
        - fastest(topology, "all_gather", edp, experts).seconds
    )
    assert bf16.comm - fp8.comm == pytest.approx(dense + gathers * half, rel=1e-9)
    assert half > 0
