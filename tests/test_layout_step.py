"""The model-parallel dimensions of a step (issue 19): each volume in closed form, the bubble, and the step of a
whole layout (layout_estimate.py) built from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import cli_report, run_cli

from dpcost.catalog import load_model, load_topology
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import SideTraffic, call_slowdown, layout_step, stage_loads
from dpcost.engine.layout_step import (
    LayoutCall,
    bubble_seconds,
    cp_calls,
    ep_calls,
    exposed_per_micro_batch,
    layer_tp_pairs,
    layout_calls,
    moe_layers_per_stage,
    pp_calls,
    pp_overlapped,
    slowed_compute,
    stage_layer_counts,
    stage_tp_pairs,
    tp_calls,
)
from dpcost.engine.ops import Op, layer_ops, tensor_parallel
from dpcost.engine.pipeline_layout import ranks_of_stages
from dpcost.engine.placement import place
from dpcost.specs import ModelArchitecture, ModelSpec


@pytest.fixture(scope="module")
def llama405b() -> ModelSpec:
    return load_model("llama-405b")


def _arch(model: ModelSpec) -> ModelArchitecture:
    assert model.architecture is not None
    return model.architecture


def test_tp_all_reduces_four_outputs_per_layer(llama405b: ModelSpec) -> None:
    """Megatron (Narayanan et al. 2021 section 3.3): 2 all-reduces of b x s x h forward, 2 backward, per layer;
    405B at PP16 holds 8 layers on its fullest stage: 16 + 16 all-reduces of 1 x 8192 x 16384 x 2 bytes, the
    backward's behind the weight-gradient matmuls, a third of the matmuls (layers.py, async_op=True)."""
    a = _arch(llama405b)
    forward, backward = tp_calls(a, Layout(tp=8, pp=16, dp=128), 1, 8192, 2.0, False, False, False, 0.25)
    assert (forward.op, forward.group, forward.per_micro_batch, forward.message_bytes) == (
        "all_reduce", "tp", 16, 8192 * 16384 * 2,
    )  # fmt: skip
    assert (forward.overlapped, backward.per_micro_batch, backward.overlapped) == (False, 16, True)
    assert backward.hides_behind == pytest.approx((1 - 0.25) / 3)
    full = tp_calls(a, Layout(tp=8, pp=16, dp=128), 1, 8192, 2.0, False, True, False, 0.0)[0]
    assert full.per_micro_batch == 32  # full recomputation runs the forward's 16 again


def test_sequence_parallel_trades_each_all_reduce_for_a_gather_and_a_reduce_scatter(llama405b: ModelSpec) -> None:
    """Korthikanti et al. 2022 section 4.2.2: the same tensor, all-gathered and reduce-scattered; per layer 2 + 2
    forward, the mirror 2 + 2 backward, and the column-parallel inputs gathered again for the weight gradients
    (megatron/core/tensor_parallel/layers.py): 6 gathers and 4 reduce-scatters, 48 and 32 for 8 layers. Backward,
    per pair (TransformerEngine at d0067d0da): the row-parallel layer's output gradient gathered and waited for before
    its data-gradient GEMM (base.py grad_output_preprocess), the column-parallel input gathered again behind its
    data-gradient GEMM (linear.py: issued before it, waited after it), the input gradient reduce-scattered behind
    the weight-gradient GEMM (async_op=True); a third of the matmuls' work each."""
    tensor = 8192 * 16384 * 2
    calls = tp_calls(_arch(llama405b), Layout(tp=8, pp=16, dp=128), 1, 8192, 2.0, True, False, False, 0.25)
    assert [(c.op, c.per_micro_batch, c.message_bytes, c.overlapped) for c in calls] == [
        ("all_gather", 16, tensor, False),
        ("reduce_scatter", 16, tensor, False),
        ("all_gather", 16, tensor, False),
        ("all_gather", 16, tensor, True),
        ("reduce_scatter", 16, tensor, True),
    ]
    assert calls[3].hides_behind == calls[4].hides_behind == pytest.approx((1 - 0.25) / 3)
    delayed = tp_calls(_arch(llama405b), Layout(tp=8, pp=16, dp=128), 1, 8192, 2.0, True, False, False, 0.25, False)
    assert [c.overlapped for c in delayed] == [False, False, False, True, False]  # the reduction waits
    assert tp_calls(_arch(llama405b), Layout(dp=8), 1, 8192, 2.0, True, False, False, 0.0) == []


def test_an_moe_layer_pairs_its_attention_and_its_shared_experts_on_tp() -> None:
    """Megatron-Core's SharedExpertMLP is an MLP on the TP group (moe/shared_experts.py: tp_group=pg_collection.tp),
    with a dense MLP's column- then row-parallel pair; routed experts leave TP to the dispatcher. DeepSeek-V3 (3
    dense layers, then MoE layers with one shared expert) issues 2 pairs a layer, its MTP module 2 more; Mixtral
    (MoE, no shared expert) 1 a layer."""
    deepseek, mixtral = _arch(load_model("deepseek-v3")), _arch(load_model("mixtral-8x7b"))
    assert [layer_tp_pairs(deepseek, i) for i in (0, 2, 3, 60)] == [2, 2, 2, 2]
    assert stage_tp_pairs(deepseek, ranks_of_stages([61]), mtp_layers=1) == 61 * 2 + 2
    assert [layer_tp_pairs(mixtral, i) for i in (0, 31)] == [1, 1]
    calls = tp_calls(mixtral, Layout(tp=2, dp=4), 1, 4096, 2.0, True, False, False, 0.0)
    assert calls[0].per_micro_batch == 32  # one gather a layer forward: attention's, the routed experts' none


def test_cp_ring_passes_k_and_v_chunks_cp_minus_one_times(llama405b: ModelSpec) -> None:
    """Ring attention, CP 16 at 131,072 tokens (Llama 3's long-context layout, TP8): each layer passes its K and V
    chunk, 2 x 8192 tokens x 8 KV heads / TP8 x 128 x 2 bytes, 15 times forward, twice those bytes backward."""
    layout = Layout(tp=8, cp=16, pp=16, dp=8)
    fwd, bwd = cp_calls(_arch(llama405b), layout, 1, 131072, 2.0, "p2p", 0.25)
    chunk = 2 * 8192 * 1 * 128 * 2
    assert (fwd.op, fwd.message_bytes, fwd.per_micro_batch) == ("send_recv", chunk, 15 * 8)
    assert (bwd.message_bytes, bwd.per_micro_batch, bwd.hides_behind) == (2 * chunk, 15 * 8, 0.25)
    gather, scatter = cp_calls(_arch(llama405b), layout, 1, 131072, 2.0, "all_gather", 0.25)
    assert (gather.op, gather.message_bytes, scatter.op) == ("all_gather", 16 * chunk, "reduce_scatter")


def test_cp_a2a_moves_each_heads_tensor_by_all_to_all_none_hidden(llama405b: ModelSpec) -> None:
    """--cp-impl a2a (Transformer Engine's AttnFuncWithCPAndQKVOA2A): per layer, Q, K, V and the output all-to-all'd
    forward, their gradients backward, each the rank's whole tensor. Llama 3 405B at TP 4 x CP 4 and 32,768 tokens:
    8,192 tokens a rank, 128 / 4 = 32 query heads and 8 / 4 = 2 KV heads of 128 each, in bf16; 126 layers over PP 9,
    14 a stage; full recomputation runs the forward's again."""
    layout = Layout(tp=4, cp=4, pp=9, dp=2)
    calls = cp_calls(_arch(llama405b), layout, 1, 32768, 2.0, "a2a", 0.25, attention_recomputed=True)
    q, kv = 8192 * 32 * 128 * 2, 8192 * 2 * 128 * 2
    got = {c.purpose: (c.op, c.message_bytes, c.per_micro_batch, c.overlapped, c.group) for c in calls}
    assert got == {
        "Q and output all-to-alls, forward": ("all_to_all", q, 2 * 2 * 14, False, "cp"),
        "K and V all-to-alls, forward": ("all_to_all", kv, 2 * 2 * 14, False, "cp"),
        "output gradient and Q gradient all-to-alls, backward": ("all_to_all", q, 2 * 14, False, "cp"),
        "K gradient and V gradient all-to-alls, backward": ("all_to_all", kv, 2 * 14, False, "cp"),
    }


def test_cp_a2a_needs_the_heads_of_a_tp_rank_divisible_by_cp() -> None:
    """Transformer Engine asserts num_heads % cp_size == 0 for Q, K and V under a2a; Llama 3 70B at TP 8 keeps one
    KV head a rank. gpt-oss runs under a2a alone: its learned attention sinks have no backend under ring attention
    or the all-gather (get_attention_backend); Gemma 2's sliding-window layers run under a2a or the all-gather, not
    ring attention (attn_forward_func_with_cp asserts it)."""
    base = ["estimate", "-m", "llama-70b", "--dp", "2", "--cp", "4", "--global-batch", "8", "--seq-len", "32768"]
    code, out, err = run_cli(*base, "--tp", "8", "--cp-impl", "a2a")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--cp: 4 does not divide the 8 query and 1 KV heads of a TP rank" in err
    assert run_cli(*base, "--tp", "2", "--cp-impl", "a2a")[0] == 0
    sinks = ["estimate", "-m", "gpt-oss-20b", "--dp", "2", "--cp", "2", "--global-batch", "8", "--seq-len", "8192"]
    assert run_cli(*sinks, "--cp-impl", "a2a")[0] == 0
    for impl in ("p2p", "all_gather"):
        code, _, err = run_cli(*sinks, "--cp-impl", impl)
        assert code == 2 and "attention sinks" in err
    gemma = str(Path(__file__).parent / "reference" / "hf-configs" / "gemma-2-9b.json")
    windows = ["estimate", "-m", gemma, "--dp", "2", "--cp", "2", "--global-batch", "8", "--seq-len", "8192"]
    code, _, err = run_cli(*windows)
    assert code == 2 and "sliding-window layers run under context parallelism only with the a2a or all-gather" in err
    assert run_cli(*windows, "--cp-impl", "all_gather")[0] == 0


def test_selective_recomputation_of_core_attention_reruns_the_exchange_and_sinks_gather_their_gradients() -> None:
    """Megatron's selective recomputation with core_attn (its default module) reruns Transformer Engine's attention
    in the backward (attention.py checkpoint_core_attention), CP's calls with it; gpt-oss's learned sinks add one
    synchronous all-gather of their gradients per layer backward under a2a (flash_attn_a2a_communicate_softmax_offset):
    64 heads / TP 2 floats, 24 layers."""
    base = [
        "estimate",
        "-m",
        "gpt-oss-20b",
        "--dp",
        "2",
        "--tp",
        "2",
        "--cp",
        "2",
        "--cp-impl",
        "a2a",
        "--sequence-parallel",
    ]
    base += ["--global-batch", "8", "--seq-len", "8192"]

    def cp(*flags: str) -> dict[str, tuple[float, int]]:
        calls = cli_report(*base, *flags)["layout"]["calls"]
        return {c["purpose"]: (c["message_bytes"], c["calls_per_micro_batch"]) for c in calls if c["dimension"] == "cp"}

    none, selective = cp("--recompute", "none"), cp("--recompute", "selective")
    assert none["Q and output all-to-alls, forward"][1] == 2 * 24
    assert selective["Q and output all-to-alls, forward"][1] == 2 * 2 * 24
    assert selective["output gradient and Q gradient all-to-alls, backward"][1] == 2 * 24
    assert none["attention sinks' gradients gathered, backward"] == (32 * 4, 24)


def test_full_recomputation_runs_the_forward_exchange_again(llama405b: ModelSpec) -> None:
    """Full recomputation reruns each layer's forward in the backward (Megatron's CheckpointFunction), its
    attention's K/V exchange with it: the ring's forward passes and the all-gather double; the backward's do not."""
    layout = Layout(tp=8, cp=16, pp=16, dp=8)
    fwd, bwd = cp_calls(_arch(llama405b), layout, 1, 131072, 2.0, "p2p", 0.25, attention_recomputed=True)
    assert (fwd.per_micro_batch, bwd.per_micro_batch) == (2 * 15 * 8, 15 * 8)
    gather, scatter = cp_calls(_arch(llama405b), layout, 1, 131072, 2.0, "all_gather", 0.25, attention_recomputed=True)
    assert (gather.per_micro_batch, scatter.per_micro_batch) == (2 * 8, 8)


def test_pp_sends_the_boundary_activation_each_way_split_over_tp_only_with_sequence_parallelism(
    llama405b: ModelSpec,
) -> None:
    """schedules.py get_tensor_shapes: [s / CP, b, h], divided by TP only under sequence parallelism; with v model
    chunks per rank a micro-batch crosses v boundaries each way."""
    a, layout = _arch(llama405b), Layout(tp=8, pp=16, dp=128)
    (whole,) = pp_calls(a, layout, 1, 8192, 2.0)
    (split,) = pp_calls(a, layout, 1, 8192, 2.0, sequence_parallel=True)
    (chunks,) = pp_calls(a, layout, 1, 8192, 2.0, sequence_parallel=True, virtual_stages=4)
    assert (whole.op, whole.message_bytes, whole.per_micro_batch) == ("send_recv", 8192 * 16384 * 2, 2)
    assert split.message_bytes == 8192 * 16384 * 2 / 8 and chunks.per_micro_batch == 8


def test_megatron_lms_scatter_gather_sends_one_tp_chunk_and_gathers_it_over_tp(llama405b: ModelSpec) -> None:
    """megatron/p2p_communication.py _communicate at a8d172b3 (2021) and 285068c8 (2023-01): without sequence
    parallelism each TP rank sends split_tensor_into_1d_equal_chunks (1/TP of s x b x h) and the receiver
    all-gathers them over TP (gather_split_1d_tensor); under sequence parallelism the tensor is already split and
    nothing is gathered; at TP 1 there is nothing to split (Narayanan et al. 2021 section 4.1)."""
    a, layout = _arch(llama405b), Layout(tp=8, pp=16, dp=128)
    full = 8192 * 16384 * 2
    send, gather = pp_calls(a, layout, 1, 8192, 2.0, virtual_stages=2, scatter_gather=True)
    assert (send.op, send.message_bytes, send.group, send.per_micro_batch) == ("send_recv", full / 8, "pp", 4)
    assert (gather.op, gather.message_bytes, gather.group, gather.per_micro_batch) == ("all_gather", full, "tp", 4)
    assert not gather.overlapped
    (split,) = pp_calls(a, layout, 1, 8192, 2.0, sequence_parallel=True, scatter_gather=True)
    assert split.message_bytes == full / 8
    (whole,) = pp_calls(a, Layout(tp=1, pp=16, dp=1024), 1, 8192, 2.0, scatter_gather=True)
    assert whole.message_bytes == full
    # across nodes, each rank's NIC carries an eighth and NVLink gathers it: less time waited for than sending whole
    h100 = load_topology("dgx-h100")
    args = {"micro_batch": 1, "global_batch": 2048, "seq_len": 8192, "mfu": 0.4}
    split_step = layout_step(llama405b, h100, layout, pp_scatter_gather=True, **args)
    whole_step = layout_step(llama405b, h100, layout, **args)
    assert 0.0 < split_step.exposed["pp"] < whole_step.exposed["pp"] / 2


def test_the_interleaved_schedule_overlaps_pps_send_recv_and_1f1b_waits_for_it(llama405b: ModelSpec) -> None:
    """megatron/training/arguments.py: overlap_p2p_comm is on unless --no-overlap-p2p-communication, and forced off
    without a virtual pipeline; overlapped, the interleaved schedule posts each send/recv before the next chunk's
    compute and waits after it, so 2V calls of 1 ms hide behind a micro-batch of 1 s; 1F1B waits for each."""
    assert pp_overlapped(4) and not pp_overlapped(1) and not pp_overlapped(4, False)
    with pytest.raises(ValueError, match="interleaved"):
        pp_overlapped(1, True)
    a, layout = _arch(llama405b), Layout(tp=8, pp=16, dp=128)
    waits = exposed_per_micro_batch(pp_calls(a, layout, 1, 8192, 2.0, virtual_stages=4), lambda c: 1e-3, 1.0)
    hides = exposed_per_micro_batch(
        pp_calls(a, layout, 1, 8192, 2.0, virtual_stages=4, overlap=True), lambda c: 1e-3, 1.0
    )
    assert waits["pp"] == pytest.approx(8e-3) and hides["pp"] == 0.0
    h100 = load_topology("dgx-h100")
    args = {"micro_batch": 1, "global_batch": 2048, "seq_len": 8192, "mfu": 0.4, "sequence_parallel": True}
    interleaved = layout_step(llama405b, h100, layout, virtual_stages=4, **args)
    waited = layout_step(llama405b, h100, layout, virtual_stages=4, pp_overlap=False, **args)
    assert interleaved.exposed["pp"] == 0.0 < waited.exposed["pp"]


def test_ep_dispatches_and_combines_top_k_copies_of_every_token() -> None:
    """DeepSeek-V3 (PP16, EP64): 58 MoE layers after 3 dense ones, 61 over 16 stages as 3 + 14 x 4 + 2 (the end
    stages take the remainder, as Megatron's first/last-stage layer counts allow); each MoE layer all-to-alls its
    4096 tokens' 8 copies of 7168 values 4 times (dispatch and combine, forward and backward)."""
    a = _arch(load_model("deepseek-v3"))
    assert stage_layer_counts(61, 16) == [3] + [4] * 14 + [2]
    assert stage_layer_counts(126, 16) == [7] + [8] * 14 + [7]  # Llama 3 405B's own split
    assert stage_layer_counts(96, 8) == [12] * 8
    assert stage_layer_counts(10, 8) == [2, 2, 1, 1, 1, 1, 1, 1]  # the ends cannot take 6 off: as even as it goes
    assert moe_layers_per_stage(a, 16) == 4
    (call,) = ep_calls(a, Layout(pp=16, dp=128, ep=64), 1, 4096, 2.0, False)
    assert (call.op, call.group, call.per_micro_batch, call.message_bytes) == (
        "all_to_all",
        "ep",
        16,
        4096 * 8 * 7168 * 2,
    )


def test_overlapped_all_to_alls_of_the_first_forward_and_the_last_backward_are_exposed() -> None:
    """Megatron-Core's combined 1F1B without pipelining (combined_1f1b.py, core_r0.15.0) runs the first micro-batch's
    forward alone and the last one's backward alone, every other forward beside a backward: where the pairs hide
    their all-to-alls, a step still waits for one micro-batch's, whatever the number of micro-batches; with a
    pipeline, nothing is added here."""
    mixtral, b200 = load_model("mixtral-8x7b"), load_topology("dgx-b200")
    layout = Layout(dp=8, ep=8)

    def exposed_ep(batch: int, overlap: bool, pp_layout: Layout = layout) -> float:
        r = layout_step(
            mixtral, b200, pp_layout, micro_batch=1, global_batch=batch, seq_len=4096, mfu=0.4, ep_overlap=overlap
        )
        return r.exposed["ep"]

    one_micro_batch = exposed_ep(8, False)  # nothing overlapped: every call waited for, m = 1
    assert exposed_ep(16, False) == pytest.approx(2 * one_micro_batch)
    assert exposed_ep(8, True) == pytest.approx(one_micro_batch) == exposed_ep(64, True)
    piped = Layout(dp=4, pp=2, ep=4)
    assert exposed_ep(64, True, piped) == 0.0 < exposed_ep(64, False, piped)


def test_only_the_time_beyond_what_a_call_hides_behind_is_exposed(llama405b: ModelSpec) -> None:
    calls = layout_calls(
        _arch(llama405b), Layout(tp=8, pp=16, dp=128), 1, 8192, 2.0, tp_overlap=True, attention_share=0.2
    )
    exposed = exposed_per_micro_batch(calls, lambda c: 1e-3, 1.0)
    assert exposed["tp"] == pytest.approx(max(0.0, 32e-3 - 0.8))  # 32 calls of 1 ms behind 80% of 1 s: hidden
    assert exposed["pp"] == pytest.approx(2e-3)  # send/recv sit on the critical path


def test_bubble_is_p_minus_one_over_v_slots() -> None:
    """Narayanan et al. 2021 section 2.2: the bubble fraction is (p - 1) / (v m) of the ideal m (t_f + t_b)."""
    assert bubble_seconds(8, 64, 2.0) == pytest.approx(7 * 2.0)
    assert bubble_seconds(8, 64, 2.0, virtual_stages=4) == pytest.approx(7 / 4 * 2.0)
    m, p = 64, 8
    assert bubble_seconds(p, m, 1.0) / (m * 1.0) == pytest.approx((p - 1) / m)
    assert bubble_seconds(1, 64, 2.0) == 0.0


# ------------------------------------------------------------------------------------------------ a whole layout


def test_405b_dp_gradient_message_is_the_most_loaded_stages_shard_in_fp32(llama405b: ModelSpec) -> None:
    """Issue 19: Llama 3.1 405B at TP8 PP16 DP128. 126 layers over 16 stages as 7 + 14 x 8 + 7; the first stage
    also holds the 128,256 x 16,384 embedding, the last the output head. A middle stage's 8 layers over TP8 are the
    largest shard, and the DP reduction moves it in Megatron's fp32 gradients (frameworks.py megatron): x 4 bytes."""
    layout = Layout(tp=8, pp=16, dp=128)
    stages = stage_loads(llama405b, layout, 8192)
    assert [s.layers for s in stages] == [7] + [8] * 14 + [7]
    a = _arch(llama405b)
    layer = stages[1].dense_params / 8
    assert stages[0].dense_params == pytest.approx(7 * layer + a.vocab * a.hidden / 8)
    largest = max(s.dense_params for s in stages)
    assert largest == stages[1].dense_params
    r = layout_step(
        llama405b, load_topology("dgx-h100"), layout, micro_batch=1, global_batch=2048, seq_len=8192, mfu=0.4
    )
    gradients = next(t for t in r.dp_traffic if t.purpose == "gradients")
    assert gradients.op == "reduce_scatter" and gradients.message_bytes == pytest.approx(largest * 4)
    assert r.micro_batches == 16


def test_compute_beside_overlapped_calls_is_their_time_up_to_what_each_hides_behind() -> None:
    """docs/sources/overlap-and-jitter.md: a collective's kernels hold SMs while they run, so the compute they run
    beside is slowed by the share of SMs each takes. Of 10 ms of compute: 4 calls of 1 ms hiding behind half of it
    run beside 4 ms; 10 more hiding behind all of it would run beside 10 ms, but there are only 10 ms to run beside,
    shared in proportion (4/14 and 10/14 of it); a waited-for call runs beside none."""
    tp = LayoutCall("tp", "", "all_gather", 1.0, "tp", 4, True, 0.5)
    ep = LayoutCall("ep", "", "all_to_all", 1.0, "ep", 10, True, 1.0)
    pp = LayoutCall("pp", "", "send_recv", 1.0, "pp", 6, False, 0.0)
    ms = 1e-3
    share = {tp: 0.5, ep: 0.25, pp: 1.0}.__getitem__
    assert slowed_compute([tp, pp], lambda c: ms, share, 10 * ms) == pytest.approx((0.5 * 4 * ms, 4 * ms))
    assert slowed_compute([tp, ep, pp], lambda c: ms, share, 10 * ms) == pytest.approx(
        ((0.5 * 4 + 0.25 * 10) * ms * 10 / 14, 10 * ms)
    )
    assert slowed_compute([pp], lambda c: ms, share, 10 * ms) == (0.0, 0.0)


def test_overlapped_tp_calls_slow_the_compute_they_run_beside(llama405b: ModelSpec) -> None:
    """Llama 3.1 405B at TP8 x PP16 with TP overlapped (userbuffers): the step grows by the overlap slowdown's
    share of the compute the TP calls run beside, and by nothing when that share is 0 or nothing is overlapped
    (TP waited for both ways, as Megatron-LM before its asynchronous backward all-reduce; 1F1B's send/recv)."""
    h100 = load_topology("dgx-h100")
    args = {"micro_batch": 1, "global_batch": 2048, "seq_len": 8192, "mfu": 0.4, "sequence_parallel": True}
    layout = Layout(tp=8, pp=16, dp=128)
    free = layout_step(llama405b, h100, layout, tp_overlap=True, overlap_slowdown=0.0, **args)
    slowed = layout_step(llama405b, h100, layout, tp_overlap=True, overlap_slowdown=0.2, **args)
    waited = layout_step(
        llama405b, h100, layout, tp_overlap=False, tp_backward_async=False, overlap_slowdown=0.2,
        **{**args, "sequence_parallel": False},
    )  # fmt: skip
    assert free.slowed == 0.0 and waited.slowed == 0.0
    assert 0.0 < slowed.slowed <= 0.2 * slowed.micro_batches * (slowed.forward + slowed.backward)
    assert slowed.step > free.step


def test_userbuffers_calls_hold_te_s_own_sms_and_nccl_calls_its_channels(llama405b: ModelSpec) -> None:
    """docs/sources/te-userbuffers.md (TransformerEngine base.py:333-347 @v2.9): under --tp-comm-overlap the forward
    gathers run ring_exchange on 1 SM, the forward reductions pipeline and the backward reductions bulk on 16, the
    backward gathers the output gradient's ring_exchange (1) and the input's bulk (16). Without it NCCL runs them, on
    its channels: TP 8 in one H100 node, 24 (docs/sources/nccl-channels.md)."""
    a = _arch(llama405b)
    layout = Layout(tp=8, pp=16, dp=128)
    te = tp_calls(a, layout, 1, 8192, 2.0, True, False, True, 0.0)
    assert [c.kernel_sms for c in te] == [1, 16, 1, 16, 16]
    nccl = tp_calls(a, layout, 1, 8192, 2.0, True, False, False, 0.0)
    assert all(c.kernel_sms == 0 for c in nccl)
    h100 = load_topology("dgx-h100")
    groups = {"tp": place(h100, 8)}
    assert call_slowdown(h100, groups, te[1]) == pytest.approx(16 / (132 - 16))
    assert call_slowdown(h100, groups, nccl[4]) == pytest.approx(24 / (132 - 24))  # a 256 MiB reduce-scatter, Ring


def test_the_step_is_the_sum_of_its_parts(llama405b: ModelSpec) -> None:
    """m slots of forward + backward, each dimension's exposed time, the bubble and the jitter add up to the step;
    and MFU is the model FLOPs over the step x the peak."""
    h100 = load_topology("dgx-h100")
    r = layout_step(
        llama405b, h100, Layout(tp=8, pp=16, dp=128), micro_batch=1, global_batch=2048, seq_len=8192, mfu=0.4,
        sequence_parallel=True, virtual_stages=4,
    )  # fmt: skip
    parts = r.micro_batches * (r.forward + r.backward) + sum(r.exposed.values()) + r.bubble + r.jitter
    parts += sum(t.seconds for t in r.dp_terms) + r.slowed
    assert r.step == pytest.approx(parts, rel=1e-9)
    assert r.mfu == pytest.approx(r.model_flops / (r.step * 989e12))
    longer = layout_step(
        llama405b, h100, Layout(tp=8, pp=16, dp=128), micro_batch=1, global_batch=2048, seq_len=8192, mfu=0.4,
        sequence_parallel=True, virtual_stages=1,
    )  # fmt: skip
    for step, v in ((r, 4), (longer, 1)):  # (p - 1) / v slots of one micro-batch's compute and exposed calls
        slot = step.forward + step.backward + (sum(step.exposed.values()) + step.slowed) / step.micro_batches
        assert step.bubble == pytest.approx(15 / v * slot, rel=1e-9)


def test_one_tp_rank_runs_a_tp_share_of_the_matmuls_and_the_full_norms_without_sequence_parallelism(
    llama405b: ModelSpec,
) -> None:
    """Megatron's column- then row-parallel linear layers split every matmul over TP (Shoeybi et al. 2019, section 3);
    the norms and residual adds see every token's full hidden state unless sequence parallelism splits the tokens
    (Korthikanti et al. 2022, section 4.2.2)."""
    ops = layer_ops(_arch(llama405b), False, 8192, 8192, "fused")
    split = tensor_parallel(ops, 8, sequence_parallel=False)
    seq = tensor_parallel(ops, 8, sequence_parallel=True)
    for whole, tp, sp in zip(ops, split, seq, strict=True):
        if whole.kind in ("gemm", "attention"):
            assert (tp.flops, tp.backward_flops) == (whole.flops / 8, whole.backward_flops / 8)
        if whole.module in ("layernorm", "residual"):
            assert tp.bytes == whole.bytes and sp.bytes == whole.bytes / 8
    assert sum(o.flops for o in split) == pytest.approx(sum(o.flops for o in ops) / 8)


def test_a_layout_prices_compute_op_by_op_unless_flops_is_asked_for(llama405b: ModelSpec) -> None:
    """Issue 19: each stage's compute by the per-op model, each GEMM at its TP shard. With one --mfu (flops) the
    forward is the stage's FLOPs over the rate; op by op it is what ops.times gives the stage's TP-split ops."""
    h100 = load_topology("dgx-h100")
    args = {"micro_batch": 1, "global_batch": 2048, "seq_len": 8192, "sequence_parallel": True}
    flops = layout_step(llama405b, h100, Layout(tp=8, pp=16, dp=128), mfu=0.4, compute_model="flops", **args)
    ops = layout_step(llama405b, h100, Layout(tp=8, pp=16, dp=128), mfu=794.5 / 989, compute_model="ops", **args)
    paced = flops.stages[flops.paced_stage]
    assert flops.forward == pytest.approx(8192 * paced.forward_flops / (0.4 * 989e12))
    # the matmuls at 80% of the peak (2x the flops model's 40%); norms, activations and the causal attention kernel
    # at their own rates keep it from reaching 2x
    assert 1.5 < flops.forward / ops.forward < 2.0


def test_an_ep_rank_runs_its_local_experts_on_every_ranks_tokens() -> None:
    """Megatron-Core's moe_layer.py: num_local_experts = experts // EP. DeepSeek-V3 at EP64: 4 local experts, each
    taking 4096 x 8 x 64 / 256 = 8192 tokens; the same FLOPs as 256 experts of 128 tokens, a 64th of the weights."""
    a = _arch(load_model("deepseek-v3"))

    def routed(ep: int) -> list[Op]:
        return [
            o for o in layer_ops(a, True, 4096, 4096, "fused", ep=ep) if o.module == "moe" and o.name[:7] == "expert "
        ]

    whole, split = routed(1), routed(64)
    assert {o.repeats for o in whole} == {256} and {o.repeats for o in split} == {4}
    assert sum(o.flops * o.repeats for o in split) == pytest.approx(sum(o.flops * o.repeats for o in whole))
    weights = 3 * 7168 * 2048 * 2  # one expert's gate, up and down, bf16
    assert sum(o.bytes * o.repeats for o in whole) - sum(o.bytes * o.repeats for o in split) > 250 * weights


def test_expert_tp_gathers_the_dispatched_tokens() -> None:
    """token_dispatcher.py: with expert TP above 1 the dispatched tokens are all-gathered over expert TP before the
    experts and reduce-scattered after them, forward and backward: 2 + 2 per MoE layer, ETP x the dispatch size."""
    a = _arch(load_model("mixtral-8x7b"))
    calls = ep_calls(a, Layout(tp=2, dp=8, ep=4), 1, 4096, 2.0, sequence_parallel=True)
    dispatch = 4096 / 2 * 2 * 4096 * 2  # tokens / TP x top-2 x hidden x bf16
    assert [(c.op, c.group, c.per_micro_batch, c.message_bytes) for c in calls] == [
        ("all_to_all", "ep", 4 * 32, dispatch),
        ("all_gather", "etp", 2 * 32, 2 * dispatch),
        ("reduce_scatter", "etp", 2 * 32, 2 * dispatch),
    ]


def test_megatron_before_2023_waits_for_its_data_parallel_collectives(llama405b: ModelSpec) -> None:
    """Megatron-LM's train_step until --overlap-grad-reduce (2023-08) and --overlap-param-gather (2023-11): the
    gradients reduce-scattered after the last backward, the updated parameters gathered after the optimizer step
    (megatron/training.py at 285068c8: reduce_model_grads, step, gather_model_params). Waited for, every DP call
    adds its whole time to the step; overlapped, only what the compute cannot hide."""
    h100 = load_topology("dgx-h100")
    args = {"micro_batch": 1, "global_batch": 256, "seq_len": 8192, "mfu": 0.4, "sequence_parallel": True}
    layout = Layout(tp=8, pp=16, dp=32)
    waited = layout_step(llama405b, h100, layout, dp_overlap=False, **args)
    overlapped = layout_step(llama405b, h100, layout, **args)
    dp_calls = sum(t.seconds for t in waited.dp_traffic)
    exposed = sum(t.seconds for t in waited.dp_terms if t.term.startswith("exposed"))
    assert {t.op for t in waited.dp_traffic} == {"reduce_scatter", "all_gather"}
    assert exposed == pytest.approx(dp_calls, rel=1e-9)
    assert sum(t.seconds for t in overlapped.dp_terms if t.term.startswith("exposed")) < 0.5 * dp_calls
    assert waited.step > overlapped.step


def test_tp_backward_all_reduces_wait_before_megatrons_async_all_reduce(llama405b: ModelSpec) -> None:
    """Before Megatron-LM's asynchronous input-gradient all-reduce (16c90445, 2021-09), a layer's backward waited
    for its 2 TP all-reduces as its forward does: every TP call of the micro-batch is exposed whole."""
    a, layout = _arch(llama405b), Layout(tp=8, pp=16, dp=128)
    calls = tp_calls(a, layout, 1, 8192, 2.0, False, True, False, 0.2, backward_async=False)
    assert not any(c.overlapped for c in calls)
    waited = exposed_per_micro_batch(calls, lambda c: 1e-3, 1.0)
    assert waited["tp"] == pytest.approx(1e-3 * sum(c.per_micro_batch for c in calls))
    assert sum(c.per_micro_batch for c in calls) == 8 * 2 * 3  # forward, its recomputation, backward
    hidden = exposed_per_micro_batch(tp_calls(a, layout, 1, 8192, 2.0, False, True, False, 0.2), lambda c: 1e-3, 1.0)
    assert hidden["tp"] < waited["tp"]


def test_the_optimizer_steps_the_shard_the_distributed_optimizer_leaves(llama405b: ModelSpec) -> None:
    """Megatron's distributed optimizer steps 1 / (DP x CP) of the dense parameters (megatron/core/optimizer/
    distrib_optimizer.py), its DDP all of them: at DP 8 x CP 2 the step is 16 times shorter. It runs once per step
    on the compute stream, in the step and its compute; the flops model's --mfu holds it already (as pure DP)."""
    h100 = load_topology("dgx-h100")
    layout = Layout(tp=8, cp=2, pp=16, dp=8)

    def step(distributed: bool, compute_model: str = "ops") -> object:
        return layout_step(llama405b, h100, layout, micro_batch=1, global_batch=128, seq_len=8192, mfu=0.5,
                           zero=1 if distributed else 0, compute_model=compute_model)  # fmt: skip

    sharded, whole = step(True), step(False)
    assert whole.optimizer == pytest.approx(16 * sharded.optimizer, rel=1e-12)  # type: ignore[attr-defined]
    assert sharded.optimizer > 0 and step(True, "flops").optimizer == 0  # type: ignore[attr-defined]


def test_tied_embeddings_all_reduce_their_gradient_between_the_first_and_last_stage() -> None:
    """Megatron-Core's finalize_model_grads (_allreduce_word_embedding_grads, d98e8a64dd) all-reduces the shared word
    embedding's gradient over each pipeline's first and last rank (parallel_state.default_embedding_ranks) after the
    data-parallel reduction: GPT-3's 50,257 x 12,288 embedding over TP 8 in fp32 main gradients, 308,779,008
    bytes, on every PP layout of a tied model, unhidden. An untied model (Llama) and PP 1 run none."""
    from dpcost.engine.collectives import fastest
    from dpcost.engine.layout import group_of_rank_zero
    from dpcost.engine.placement import place_group

    topology = load_topology("dgx-h100")
    gpt3, llama = load_model("gpt3-175b"), load_model("llama-70b")
    assert gpt3.architecture is not None and gpt3.architecture.tied_embeddings
    layout = Layout(tp=8, pp=8, dp=8)

    def syncs(model: ModelSpec, shape: Layout) -> list[SideTraffic]:
        r = layout_step(model, topology, shape, global_batch=64, seq_len=2048, micro_batch=1, mfu=0.4)
        return [s for s in r.side_traffic if "word-embedding" in s.what]

    (sync,) = syncs(gpt3, layout)
    (call,) = sync.traffic
    assert call.op == "all_reduce" and call.message_bytes == 50257 * 12288 / 8 * 4
    pipeline = group_of_rank_zero(layout, "pp")
    ends = place_group(topology, [pipeline[0], pipeline[-1]])
    assert ends.ranks == 2 and ends.nodes == 2  # stage 0 and stage 7 of one pipeline: 448 ranks apart
    assert sync.exposed == sync.seconds == fastest(topology, "all_reduce", ends, call.message_bytes).seconds
    assert syncs(gpt3, Layout(tp=8, dp=64)) == [] and syncs(llama, layout) == []
