"""PyTorch FSDP with context parallelism as torchtitan runs it (--framework fsdp --cp N; engine/fsdp_layout.py):
FSDP2 shards over the flattened dp_shard x cp mesh (torchtitan parallel_dims.py), and the attention runs under
torch's context_parallel, the sequence split over CP with the allgather rotater (torch 2.14.1
distributed/tensor/experimental/_context_parallel/_attention.py). Expected values are written out by hand."""

from __future__ import annotations

import pytest
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.catalog import load_model
from dpcost.engine.activations import ring_attention_backward_bytes

# Llama 3.1 8B: 32 query heads and 8 KV heads of 128, 8,030,261,248 parameters
CP = ["estimate", "--model", "llama-8b", "--framework", "fsdp", "--micro-batch", "1", "--recompute", "full"]


def test_the_ring_s_backward_buffers_are_torch_s() -> None:
    """Per local token of Llama 3.1 8B at CP 8, at a load-balanced step's exchange: the fp32 query-gradient
    accumulator (4 x 4,096), four fp32 K and V gradients (the received one, _partial_update's, the cat and the
    rotater's output: 16 x 2,048), the step's K and V concatenated in bf16 (2 x 2,048) and every rank's K and V
    gathered in bf16 (2 x 8 x 2,048): 86,016 bytes; nothing without CP; at TP 2 each rank's half of the heads; with
    K and V copied out to the 32 query heads (repeat_kv), 8,192 wide where 2,048."""
    a = load_model("llama-8b").architecture
    assert a is not None
    assert ring_attention_backward_bytes(a, 8) == 4 * 4096 + 16 * 2048 + 2 * 2048 + 2 * 8 * 2048 == 86_016
    assert ring_attention_backward_bytes(a, 1) == 0
    assert ring_attention_backward_bytes(a, 8, tp=2) == 86_016 / 2
    assert ring_attention_backward_bytes(a, 8, repeated_kv=True) == 4 * 4096 + (18 + 16) * 8192


def test_fsdp_shards_over_dp_times_cp_and_each_rank_keeps_its_tokens() -> None:
    """DP 2 x CP 4 at 131,072 tokens: the fp32 weights a GPU holds are 1/8 of the model (FSDP over dp_shard x cp),
    as DP 8 at 32,768 tokens holds; and each rank's activations are those of its 32,768 tokens, so the two keep the
    same in the forward."""
    cp = report(*CP, "--dp", "2", "--cp", "4", "--seq-len", "131072")
    dp = report(*CP, "--dp", "8", "--seq-len", "32768")
    with_cp = next(r for r in cp["memory"]["stages"] if r["stage"] == 3)
    without = next(r for r in dp["memory"]["stages"] if r["stage"] == 3)
    assert with_cp["params_bytes"] == without["params_bytes"] == 8_030_261_248 * 4 / 8
    assert with_cp["activations_bytes"] == without["activations_bytes"]
    assert cp["setup"]["framework"] == "fsdp" and cp["layout"]["cp_impl"] == "torch"


@pytest.mark.parametrize(("flag", "kv_heads"), [("--no-repeat-kv", 8), ("--repeat-kv", 32)])
def test_cp_s_calls_are_torch_s_allgather_ring(flag: str, kv_heads: int) -> None:
    """At 262,144 tokens over CP 8 with full recomputation, every one of the 32 layers gathers the whole sequence's
    K and V (262,144 x 2 x heads x 128 x 2 bytes) in its forward and its recomputation (64 calls a micro-batch) and
    again in its backward (32), and passes its 32,768 tokens' K and V gradients in fp32 (32,768 x 2 x heads x 128 x
    4 bytes) to the next rank at each of its 8 steps (256); the heads are the 8 KV heads, or the 32 query heads
    where the model copies K and V out to them before SDPA (torchtitan's repeat_kv at 9dec370)."""
    doc = report(*CP, "--dp", "1", "--cp", "8", "--seq-len", "262144", flag)
    calls = {c["purpose"]: (c["op"], c["message_bytes"], c["calls_per_micro_batch"]) for c in doc["layout"]["calls"]}
    width = 2 * kv_heads * 128
    assert calls["K and V gathered"] == ("all_gather", 262_144 * width * 2, 64)
    assert calls["K and V gathered again, backward"] == ("all_gather", 262_144 * width * 2, 32)
    assert calls["K and V gradients round the ring in fp32, backward"] == ("send_recv", 32_768 * width * 4, 256)


def test_per_op_sac_keeps_the_ring_s_output_and_its_tokens_activations() -> None:
    """torchtitan's per-op SAC saves SDPA's output (_save_list: aten._scaled_dot_product_flash_attention, the op the
    ring attention runs as), so the recomputation runs no ring: the forward's K and V gathers are the 32 layers'
    alone, as without recomputation; and each rank keeps what DP keeps of its 8,192 tokens."""
    op = report(*CP, "--dp", "2", "--cp", "4", "--seq-len", "32768", "--recompute", "op")
    dp = report(*CP, "--dp", "8", "--seq-len", "8192", "--recompute", "op")
    calls = {c["purpose"]: c["calls_per_micro_batch"] for c in op["layout"]["calls"]}
    assert calls["K and V gathered"] == 32
    with_cp = next(r for r in op["memory"]["stages"] if r["stage"] == 3)
    without = next(r for r in dp["memory"]["stages"] if r["stage"] == 3)
    assert with_cp["activations_bytes"] == without["activations_bytes"]


def test_fsdp_layouts_run_the_framework_s_attention_kernel() -> None:
    """torchtitan's attention is PyTorch's SDPA (FlashAttention-2 on Hopper: frameworks.py), not Megatron's cuDNN:
    the step is --attention-kernel flash2's, and not cudnn's."""
    base = [*CP, "--dp", "2", "--cp", "4", "--seq-len", "131072"]
    default, flash2, cudnn = (
        report(*base, *flag)["time"]["step_seconds"]
        for flag in ([], ["--attention-kernel", "flash2"], ["--attention-kernel", "cudnn"])
    )
    assert default == flash2 and cudnn < flash2


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--model", "llama-8b", "--cp", "2", "--cp-impl", "a2a"], "dpcost: error: --cp-impl: torchtitan's context"),
        (["--model", "tests/reference/hf-configs/gemma-2-9b.json", "--cp", "2"], "dpcost: error: --cp: torch's"),
    ],
)
def test_what_fsdp_with_cp_does_not_cost_gets_one_line_and_exit_2(args: list[str], start: str) -> None:
    code, out, err = run("estimate", "--dp", "4", "--framework", "fsdp", "--seq-len", "8192", *args)
    assert code == 2 and out == "" and err.startswith(start), (code, out, err)


def test_torch_s_context_parallel_is_not_megatron_s() -> None:
    code, out, err = run("estimate", "--model", "llama-8b", "--dp", "4", "--cp", "2", "--cp-impl", "torch")
    assert code == 2 and out == "" and err.startswith("dpcost: error: --cp-impl: torch's context_parallel"), err
