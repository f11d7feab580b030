"""PyTorch FSDP with tensor parallelism as torchtitan runs it (--framework fsdp --tp N; engine/fsdp_layout.py):
each GPU holds what FSDP holds of its tensor-parallel share, by torchtitan's plan (models/llama3/infra/parallelize.py
apply_tp: SequenceParallel norms, ColwiseParallel wq, wk, wv, w1, w3 and the output, RowwiseParallel wo, w2 and the
embedding) and torch's loss_parallel (distributed/tensor/parallel/loss.py). Expected values are written out by hand."""

from __future__ import annotations

import pytest
from conftest import cli_report as report
from conftest import run_cli as run

from dpcost.catalog import load_model
from dpcost.engine.activations import layer_tensors, tensor_parallel_share
from dpcost.engine.checkpointing import activation_memory
from dpcost.engine.layout import Layout
from dpcost.engine.layout_step import tp_calls
from dpcost.engine.loss import loss_memory
from dpcost.engine.ops import sequence_parallel_copies, tensor_parallel
from dpcost.engine.params import count_params, tensor_parallel_parameters

QWEN3_32B_TP8 = [
    "estimate", "--model", "qwen3-32b", "--dp", "4", "--tp", "8", "--framework", "fsdp", "--micro-batch", "16",
    "--seq-len", "4096", "--recompute", "full",
]  # fmt: skip


def test_a_tensor_parallel_rank_holds_1_over_tp_of_every_parameter_but_the_norms() -> None:
    """Qwen3-32B: 32,762,123,264 parameters, 660,480 of them the blocks' and the final norm (64 layers x 2 x 5,120 and
    5,120) and 16,384 the query and key norms over one head's 128 (64 x 2 x 128), which SequenceParallel keeps whole
    on every rank: at TP 8 a rank holds (32,762,123,264 - 676,864) / 8 + 676,864."""
    spec = load_model("qwen3-32b")
    counts = count_params(spec)
    whole = 660_480 + 64 * 2 * 128
    held = tensor_parallel_parameters(counts, spec.architecture, 8)
    assert held == (32_762_123_264 - whole) / 8 + whole == 4_095_857_664
    assert tensor_parallel_parameters(counts, spec.architecture, 1) == counts.total


def test_a_rank_keeps_the_gathered_norm_outputs_whole_and_a_tp_th_of_the_rest() -> None:
    """Llama 3 8B's layer compiled (hidden 4,096, 32 heads, 8 KV heads of 128, MLP 14,336), bytes a token: the norms'
    inputs (4,096 x 2 each), Q (4,096 x 2), K and V (1,024 x 2 each), the fp32 log-sum-exp (32 x 4), the context
    (4,096 x 2), the gate and up outputs (14,336 x 2 each): a TP 2 rank keeps half of each; the two norm outputs the
    projections read (4,096 x 2 each), all-gathered by PrepareModuleInput, whole. Full recomputation keeps each
    block's input, the rank's half of the sequence: 32 layers x 4,096 tokens x 4,096 x 2 bytes / 2."""
    a = load_model("llama-8b").architecture
    assert a is not None
    layer = tensor_parallel_share(layer_tensors(a, False, True, "compiled"), 2)
    halved = 2 * 8192 + 8192 + 2 * 2048 + 128 + 8192 + 2 * 28672
    assert layer.saved_bytes(1, 1) == halved / 2 + 2 * 8192
    assert activation_memory(a, 4096, 1, "full", kernels="compiled", tp=2).kept == 32 * 4096 * 4096 * 2 / 2


def test_loss_parallel_holds_the_rank_s_vocabulary_shard_and_torch_s_fp32_intermediates() -> None:
    """torch's loss_parallel on a TP 2 rank of Llama 3 8B (vocabulary 128,256: 64,128 a rank), bytes a token: kept,
    the fp32 log-softmax (4 x 64,128) beside the final norm's input (its half of the sequence, fused: 2 x 4,096 / 2)
    and the output projection's all-gathered input (2 x 4,096); the forward peaks at 14 bytes a logit (the bf16
    logits, their fp32 copy, shifted and exp(shifted) or the result: _log_softmax), the backward at 16 (the kept
    output, the zero-filled gradient, grad + exp and its product with the loss's gradient:
    _nll_loss_and_log_softmax_backward)."""
    a = load_model("llama-8b").architecture
    assert a is not None
    loss = loss_memory(a, 1, 1, "loss-parallel", "fused", tp=2)
    outside = 2 * 4096 / 2 + 2 * 4096
    assert loss.kept == outside + 4 * 64128
    assert loss.forward_peak == outside + 14 * 64128
    assert loss.backward_peak == outside + 16 * 64128


def test_fsdp_with_tp_costs_each_gpu_s_share_as_torchtitan_runs_it() -> None:
    """Qwen3-32B at TP 8 x DP 4 under FSDP, FULL_SHARD unless --zero says: the fp32 weights a GPU holds are its TP
    share sharded over DP, 4,095,857,664 x 4 / 4 bytes, its Adam states twice that; gradients reduce in fp32 (FSDP's
    reduce_dtype), the loss runs under loss_parallel, and the layout with sequence parallelism."""
    r = report(*QWEN3_32B_TP8)
    setup = r["setup"]
    assert (setup["framework"], setup["zero_stage"], setup["grad_dtype"]) == ("fsdp", 3, "fp32")
    assert not setup["zero_stage_chosen"]  # FULL_SHARD, FSDP's default
    assert setup["loss_impl"] == "loss-parallel"
    stage = r["memory"]["stages"][3]
    assert (stage["params_bytes"], stage["optimizer_bytes"]) == (4_095_857_664, 2 * 4_095_857_664)
    assert r["layout"]["sequence_parallel"]
    assert r["warnings"] == [] and "layer by layer (PyTorch FSDP)" in r["communication"]["frequency"]


def test_torch_s_async_tp_is_costed_as_waited_and_said_so() -> None:
    """Under FSDP --tp-comm-overlap is torch's async TP (torchtitan's enable_async_tensor_parallel), not Transformer
    Engine's userbuffers: its step is costed as without it, the report says the TP calls are not overlapped, and a
    warning names the flag."""
    base = [*QWEN3_32B_TP8]
    plain, overlapped = report(*base), report(*base, "--tp-comm-overlap")
    assert overlapped["time"]["step_seconds"] == plain["time"]["step_seconds"]
    assert overlapped["layout"]["tp_comm_overlap"] is False
    assert [w["code"] for w in overlapped["warnings"]] == ["ignored-flags"]
    assert "--tp-comm-overlap" in overlapped["warnings"][0]["message"]


def test_torch_s_tp_calls_mirror_the_forward_s_and_wait_for_the_input_gradient_s_reduction() -> None:
    """torch's DTensor TP (Redistribute.backward): per column- and row-parallel pair, forward a gather and a
    reduce-scatter (again under full recomputation), backward the mirror, a gather and a reduce-scatter; nothing is
    gathered again for the weight gradients (autograd kept the gathered input), and the input gradient's
    reduce-scatter, issued after the linear's backward has run both GEMMs, hides behind nothing (the plan's
    tp_backward_async, off under FSDP). Megatron's sequence parallelism gathers the input again behind the data
    gradient's GEMM. Qwen3-32B, 64 layers of 2 pairs, TP 8, 16 x 4,096 tokens of 5,120 in bf16."""
    spec = load_model("qwen3-32b")
    arch = spec.architecture
    assert arch is not None
    layout = Layout(tp=8, cp=1, pp=1, dp=4)
    torch_calls = tp_calls(arch, layout, 16, 4096, 2, True, True, False, 0.1, backward_async=False, torch_tp=True)
    assert [(c.purpose, c.op, c.per_micro_batch, c.overlapped) for c in torch_calls] == [
        ("sequence-parallel gathers, forward", "all_gather", 256, False),
        ("sequence-parallel reductions, forward", "reduce_scatter", 256, False),
        ("output gradients gathered, backward", "all_gather", 128, False),
        ("input gradients reduced, backward", "reduce_scatter", 128, False),
    ]
    assert {c.message_bytes for c in torch_calls} == {16 * 4096 * 5120 * 2}
    megatron = tp_calls(arch, layout, 16, 4096, 2, True, True, False, 0.1)
    assert "inputs gathered again for the weight gradients, backward" in [c.purpose for c in megatron]


def test_torch_s_sequence_parallel_calls_copy_the_whole_tensor_on_every_rank() -> None:
    """torch 2.14.1's functional collectives on [b, s, h] sharded along the sequence: reduce_scatter_single cats the
    input's chunks along dim 0 first (always), all_gather_single cats the gathered chunks back along the sequence
    (but for b = 1, a view): each copy reads and writes b x s x h bf16 values. Per pair, one gather and one
    reduce-scatter each way: Qwen3-32B's 2 pairs at b = 16, s = 4,096, h = 5,120 copy 4 x 2 x 2 x 5,120 x 65,536 bytes
    forward and as many backward; at b = 1 the gathers copy nothing. TP does not split it."""
    b16 = sequence_parallel_copies(5120, 16 * 4096, 16, 2)
    assert (b16.bytes, b16.backward_bytes, b16.kernels) == (5_368_709_120, 5_368_709_120, 4)
    b1 = sequence_parallel_copies(5120, 4096, 1, 2)
    assert (b1.bytes, b1.kernels) == (2 * 2 * 2 * 5120 * 4096, 2)
    assert tensor_parallel([b16], 8, True) == [b16]
    fp8 = sequence_parallel_copies(5120, 16 * 4096, 16, 2, gather_bytes=1)  # the gathers' copies in FP8
    assert fp8.bytes == 2 * (2 * 2 + 2 * 1) * 5120 * 65536


def test_per_op_sac_under_tp_caches_the_row_parallel_partial_sums_and_the_reduce_scatters() -> None:
    """torchtitan's per-op SAC (_op_sac_save_list at v0.2.2: aten.mm but every second, SDPA, and
    _c10d_functional.reduce_scatter_tensor) on a TP 2 rank of Llama 3 8B, eager, bytes a token of the sequence: the
    block's input slice (4,096 x 2 / 2), Q (4,096 x 2 / 2), V (1,024 x 2 / 2), the gate (14,336 x 2 / 2), the down
    projection's partial sums whole (4,096 x 2: RowwiseParallel reduce-scatters them after), the two reduce-scatters'
    outputs (4,096 x 2 / 2 each), the context (4,096 x 2 / 2) and the log-sum-exp (32 / 2 heads x 4). Compiled, the
    partitioner keeps only what the backward reads: half of what one GPU keeps, and the attention's reduce-scatter
    output, from which it recomputes the residual sum the MLP norm's backward reads (4,096 x 2 / 2)."""
    arch = load_model("llama-8b").architecture
    assert arch is not None
    eager = activation_memory(arch, 8192, 1, "op", True, "eager", tp=2)
    per_token = 4096 + 4096 + 1024 + 14336 + 8192 + 2 * 4096 + 4096 + 64
    assert eager.kept == arch.layers * per_token * 8192
    compiled = [activation_memory(arch, 8192, 1, "op", True, "compiled", tp=tp).kept for tp in (1, 2)]
    assert compiled[1] == pytest.approx(compiled[0] / 2 + arch.layers * 4096 * 8192)


def test_per_op_sac_under_tp_gathers_the_inputs_again_and_not_the_reduce_scatters() -> None:
    """Per-op SAC saves the reduce-scatters' outputs and not the gathers' (_op_sac_save_list), so each block's
    backward gathers its two column-parallel inputs again: Llama 3 8B's 32 blocks gather 2 x 32 x 2 times and
    reduce-scatter 2 x 32 times forward."""
    args = ["estimate", "--model", "llama-8b", "--framework", "fsdp", "--tp", "2", "--dp", "4", "--recompute", "op",
            "--micro-batch", "1", "--seq-len", "8192"]  # fmt: skip
    calls = {row["purpose"]: row["calls_per_micro_batch"] for row in report(*args)["layout"]["calls"]}
    assert calls["sequence-parallel gathers, forward"] == 128
    assert calls["sequence-parallel reductions, forward"] == 64


def test_rowwise_float8_gathers_in_bf16_and_runs_under_fsdp_alone() -> None:
    """torchtitan applies torchao's float8 TP (FP8 gathers) under tensorwise scaling alone (parallelize.py at v0.2.2:
    enable_float8_tensorwise_tp = float8 and not rowwise): --fp8-recipe rowwise gathers 2 bytes an element, as BF16
    does; rowwise is torchao's, so refused outside --framework fsdp, and with FSDP's float8 all-gather, which
    torchtitan's float8.py refuses beside a recipe name."""
    args = ["estimate", "--model", "llama-70b", "--dp", "2", "--tp", "8", "--micro-batch", "2", "--seq-len", "8192",
            "--compute-dtype", "fp8"]  # fmt: skip
    calls = report(*args, "--framework", "fsdp", "--fp8-recipe", "rowwise")["layout"]["calls"]
    gathers = {row["message_bytes"] for row in calls if row["op"] == "all_gather"}
    assert gathers == {2 * 8192 * 8192 * 2}
    code, out, err = run(*args, "--fp8-recipe", "rowwise")
    assert code == 2 and out == "" and err.startswith("dpcost: error: --fp8-recipe: rowwise is torchao's"), err
    code, out, err = run(*args, "--framework", "fsdp", "--fp8-recipe", "rowwise", "--gather-dtype", "fp8")
    assert code == 2 and out == "" and "drop --gather-dtype fp8" in err, err


def test_a_compiled_recomputation_stops_before_each_block_s_last_reduce_scatter() -> None:
    """Under torch.compile the partitioner recomputes only what the backward reads (torch.utils.checkpoint's
    early_stop alike), so a recomputed block's last reduce-scatter, read only by the residual add, does not run
    again: Llama 3 70B's 80 blocks of 2 pairs at full recomputation gather 2 x 80 x 2 times forward (recomputation
    included) and reduce-scatter 2 x 80 x 2 - 80 times compiled, 2 x 80 x 2 eager (torchtitan's early_stop off)."""
    args = ["estimate", "--model", "llama-70b", "--dp", "2", "--tp", "8", "--framework", "fsdp", "--micro-batch",
            "2", "--recompute", "full"]  # fmt: skip
    for flags, reductions in (([], 320), (["--compile"], 240)):
        calls = {row["purpose"]: row["calls_per_micro_batch"] for row in report(*args, *flags)["layout"]["calls"]}
        assert calls["sequence-parallel gathers, forward"] == 320
        assert calls["sequence-parallel reductions, forward"] == reductions


def test_float8_tp_gathers_in_fp8_and_reduces_in_bf16() -> None:
    """torchao's Float8ColwiseParallel, Float8RowwiseParallel and PrepareFloat8ModuleInput (float8_tensor_parallel.py)
    cast before the gathers, forward and backward, under tensorwise scaling, the recipe torchtitan's float8 is
    costed at: Llama 3 70B at TP 8, 16 x 8,192 tokens of 8,192 a call, gathers 1 byte an element and reduce-scatters
    2."""
    args = ["estimate", "--model", "llama-70b", "--dp", "2", "--tp", "8", "--framework", "fsdp", "--micro-batch",
            "16", "--seq-len", "8192", "--recompute", "full", "--compute-dtype", "fp8"]  # fmt: skip
    calls = {row["purpose"]: row["message_bytes"] for row in report(*args)["layout"]["calls"]}
    tensor = 16 * 8192 * 8192
    assert calls == {
        "sequence-parallel gathers, forward": tensor,
        "sequence-parallel reductions, forward": 2 * tensor,
        "output gradients gathered, backward": tensor,
        "input gradients reduced, backward": 2 * tensor,
    }


def test_fsdp_with_tp_reports_torch_s_calls_and_megatron_s_layout_its_own() -> None:
    """The report's TP calls under FSDP are torch's (no gather again, the input gradient's reduce-scatter waited for);
    the same plan as Megatron's layout keeps the gather again."""
    fsdp = report(*QWEN3_32B_TP8)
    calls = {row["purpose"]: row for row in fsdp["layout"]["calls"]}
    assert "inputs gathered again for the weight gradients, backward" not in calls
    assert calls["input gradients reduced, backward"]["overlapped"] is False
    megatron = report(*QWEN3_32B_TP8[:7], "--micro-batch", "16", "--seq-len", "4096", "--sequence-parallel")
    assert "inputs gathered again for the weight gradients, backward" in {
        row["purpose"] for row in megatron["layout"]["calls"]
    }


def test_every_kth_block_recomputed_is_l_over_k_blocks_of_the_backward() -> None:
    """torchtitan's selective layer AC (activation_checkpoint.py at v0.2.2: a block counted from 1 is checkpointed
    when its count is a multiple of selective_ac_option K) recomputes 80 // 3 = 26 of Llama 3 70B's 80 blocks: the
    backward is none's plus 26/80 of what recomputing all 80 adds."""
    base = ["estimate", "--model", "llama-70b", "--framework", "fsdp", "--tp", "8", "--dp", "8", "--micro-batch", "2"]
    backward = {
        policy: report(*base, *flags)["time"]["backward_seconds"]
        for policy, flags in {
            "none": ["--recompute", "none"],
            "full": ["--recompute", "full"],
            "every 3rd": ["--recompute", "full", "--recompute-layers", "3"],
        }.items()
    }
    added = backward["full"] - backward["none"]
    assert backward["every 3rd"] == pytest.approx(backward["none"] + 26 / 80 * added, rel=1e-9)


def test_hybrid_sharding_shards_within_the_group_and_all_reduces_each_shard_across_replicas() -> None:
    """torchtitan's HSDP with TP (FSDP2 on a dp_replicate x dp_shard mesh; foreach_reduce's all_reduce_group): Llama 3
    70B at TP 8 x DP 16 with --shard-group 4 holds its TP share's fp32 weights over 4 GPUs, not 16; each layer's
    gradients are reduce-scattered within the 4 and the fp32 shard all-reduced across the 16 / 4 replicas."""
    base = ["estimate", "--model", "llama-70b", "--framework", "fsdp", "--tp", "8", "--dp", "16", "--micro-batch", "2",
            "--seq-len", "8192", "--recompute", "full"]  # fmt: skip
    hybrid, flat = report(*base, "--shard-group", "4"), report(*base)
    share = tensor_parallel_parameters(count_params(load_model("llama-70b")), load_model("llama-70b").architecture, 8)
    held = {doc["memory"]["stages"][3]["params_bytes"] for doc in (hybrid, flat)}
    assert held == {share * 4 / 4, share * 4 / 16}
    assert hybrid["communication"]["shard_group"] == 4 and "shard_group" not in flat["communication"]
    rows = {row["purpose"]: row for row in hybrid["communication"]["collectives"]}
    scatter, across = rows["gradients"], rows["gradients, shards across replicas"]
    assert (scatter["op"], across["op"]) == ("reduce_scatter", "all_reduce")
    assert across["bytes"] == pytest.approx(scatter["bytes"] / 4)  # the shard of the 4
    assert across["bytes_sent_per_rank"] == pytest.approx(2 * 3 / 4 * across["bytes"])  # a ring over 4 replicas
    assert "embedding and output layer gradients across replicas" in rows


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--model", "llama-70b", "--tp", "2", "--ep", "2"], "dpcost: error: --ep: FSDP in a layout"),
        (["--model", "qwen3-30b-a3b", "--tp", "2"], "dpcost: error: --framework: FSDP with tensor or context"),
        (["--model", "llama-70b", "--tp", "2", "--zero", "1"], "dpcost: error: --zero: PyTorch FSDP runs ZeRO stages"),
        (
            ["--model", "llama-70b", "--tp", "2", "--recompute", "op", "--recompute-layers", "2"],
            "dpcost: error: --recompute-layers: torchtitan's per-op SAC runs on every block",
        ),
        (["--model", "llama-70b", "--cp", "4", "--shard-group", "2"], "dpcost: error: --shard-group: FSDP shards over"),
        (["--model", "llama-70b", "--cp", "2", "--shard-group", "32"], "dpcost: error: --shard-group: 32 must divide"),
        (["--model", "llama-70b", "--tp", "2", "--offload", "optimizer"], "dpcost: error: --offload: not costed with"),
        (["--model", "llama-70b", "--tp", "2", "--loss-impl", "vocab-parallel"], "dpcost: error: --loss-impl: not"),
    ],
)
def test_what_fsdp_with_tp_does_not_cost_gets_one_line_and_exit_2(args: list[str], start: str) -> None:
    code, out, err = run("estimate", "--dp", "8", "--framework", "fsdp", *args)
    assert code == 2 and out == "" and err.startswith(start), (code, out, err)
