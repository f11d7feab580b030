"""PyTorch FSDP2 under torch's pipelining (--framework fsdp --pp): the schedules' order, what each rank holds, the
step's deferred reduction, and what is refused (engine/fsdp_pipeline.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli as run

from dpcost import Options, estimate, load_model, load_topology
from dpcost.engine.fsdp_pipeline import checkpointed_blocks, rank_actions
from dpcost.engine.layout_report import layout_stage_memory

REFERENCE = Path(__file__).parent / "reference" / "torch-pipelining" / "interleaved-1f1b-actions.json"


def _written(actions: object) -> str:
    return " ".join(f"{'F' if forward else 'B'}{chunk}" for forward, chunk in actions)  # type: ignore[attr-defined]


CASES = json.loads(REFERENCE.read_text())["schedules"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "pp{pp}-v{chunks}-m{microbatches}-rank{rank}".format(**c))
def test_interleaved_order_is_torchs(case: dict[str, object]) -> None:
    """torch 2.14.1's ScheduleInterleaved1F1B, run on its CPU wheel (the reference file)."""
    pp, chunks, m, rank = (int(case[k]) for k in ("pp", "chunks", "microbatches", "rank"))  # type: ignore[call-overload]
    assert _written(rank_actions("interleaved", pp, chunks, m, rank)) == case["actions"]


def test_one_f_one_b_warms_up_with_pp_minus_stage_forwards() -> None:
    """Schedule1F1B._step_microbatches: warmup_chunks = min(n_microbatches, num_stages - stage_index) forwards, then
    a backward and a forward in turn until every forward ran, then the remaining backwards."""
    assert _written(rank_actions("1f1b", 4, 1, 6, 0)) == "F0 F0 F0 F0 B0 F0 B0 F0 B0 B0 B0 B0"
    assert _written(rank_actions("1f1b", 4, 1, 6, 3)) == "F0 B0 F0 B0 F0 B0 F0 B0 F0 B0 F0 B0"


def test_gpipe_runs_every_forward_first() -> None:
    """ScheduleGPipe: all forwards, then all backwards."""
    assert _written(rank_actions("gpipe", 4, 1, 3, 2)) == "F0 F0 F0 B0 B0 B0"


LAYOUT_405B = "Et*15|" + "t*16|" * 6 + "t*15L"  # torchtitan 9dec370's generate_split_points for 126 layers, PP 8


def _pp_report(**given: object) -> object:
    """Llama 3.1 405B as tt-h100-2412 Table 5 ran it, bf16 unless given otherwise."""
    fields: dict[str, object] = dict(
        dp=8, tp=8, pp=8, framework="fsdp", recompute="full", compile=True, micro_batch=4, global_batch=256,
        seq_len=8192, pipeline_layout=LAYOUT_405B,
    )  # fmt: skip
    fields.update(given)
    return estimate(load_model("llama-405b"), load_topology("grand-teton-h100-96gb"), Options(**fields))


def test_unsharded_weights_and_fp32_gradients_of_the_whole_stage_are_held() -> None:
    """torchtitan does not reshard after the forward under PP, torch's pipelining does not reshard after the
    backward nor reduce until the last one, and FSDP2 accumulates the unsharded gradient in fp32 (PR #125191): the
    most loaded rank (a 16-layer stage, 6.376B of its TP share) holds 2 bytes of bf16 weights and 4 of fp32 gradients
    for each of its parameters, beside its fp32 shard of weights (4 bytes over 8), at the backward's peak."""
    report = _pp_report()
    row = next(s for s in report.memory.stages if s.stage == 2)  # type: ignore[attr-defined]
    rank_params = 16 * 3_187_703_808 / 8  # a Llama 3.1 405B block's parameters (16 h^2 + ...), its TP share
    assert row.peak_phase == "backward"
    assert row.params_bytes == pytest.approx(rank_params * (2 + 4 / 8), rel=1e-3)
    assert row.grads_bytes == pytest.approx(rank_params * 4, rel=1e-3)
    assert row.optimizer_bytes == pytest.approx(rank_params * 8 / 8, rel=1e-3)  # Adam's two fp32 moments, sharded


def test_float8_all_gather_keeps_the_linear_weights_unsharded_in_one_byte() -> None:
    """torchao's float8 all-gather (--gather-dtype fp8, llama3_405b.toml at 9dec370): the unsharded linear weights
    are float8, one byte each."""
    bf16 = next(s for s in _pp_report().memory.stages if s.stage == 2)  # type: ignore[attr-defined]
    fp8 = next(
        s
        for s in _pp_report(compute_dtype="fp8", gather_dtype="fp8").memory.stages
        if s.stage == 2  # type: ignore[attr-defined]
    )
    rank_params = 16 * 3_187_703_808 / 8
    assert bf16.params_bytes - fp8.params_bytes == pytest.approx(rank_params, rel=2e-3)


def test_the_first_rank_holds_pp_micro_batches_in_flight() -> None:
    """Schedule1F1B: rank 0 runs PP forwards before its first backward, the last rank one; each holds a full
    recomputation's block inputs (its SP slice, b x s / TP x h x 2 bytes) of its layers per micro-batch in flight."""
    options = Options(dp=8, tp=8, pp=8, framework="fsdp", recompute="full", compile=True, micro_batch=4,
                      global_batch=512, seq_len=8192, pipeline_layout=LAYOUT_405B)  # 16 micro-batches  # fmt: skip
    stages = layout_stage_memory(load_model("llama-405b"), load_topology("grand-teton-h100-96gb"), options)
    block_input = 4 * 8192 * 16384 * 2 / 8
    # rank 0: 8 micro-batches' block inputs and its outputs' gradient buffers, and a block's recomputation
    assert 8 * 15 * block_input < stages[0].activations < 8 * 16 * block_input + 16 * block_input + 8e9
    # rank 6 (16 layers, 2 micro-batches in flight) holds fewer than rank 1 (16 layers, 7)
    assert stages[1].activations - stages[6].activations > 4 * 16 * block_input


def test_the_reduce_scatter_waits_for_the_last_backward() -> None:
    """perform_reduce_grad runs after the schedule's last backward: the stage's gradient is reduce-scattered once a
    step, every call exposed, and its parameters gathered once."""
    report = _pp_report()
    calls = {c.op: c for c in report.communication.collectives}  # type: ignore[attr-defined]
    assert (calls["reduce_scatter"].occurrences, calls["reduce_scatter"].calls) == (1, 16)
    assert (calls["all_gather"].occurrences, calls["all_gather"].calls) == (1, 16)
    exposed = {term.term: term.seconds for term in report.time.breakdown}  # type: ignore[attr-defined]
    assert exposed["exposed DP reduce_scatter"] == pytest.approx(calls["reduce_scatter"].seconds, rel=1e-6)
    assert exposed["exposed DP all_gather"] < calls["all_gather"].seconds / 4


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--virtual-stages", "2", "--pp-schedule", "1f1b"], "dpcost: error: --pp-schedule: torch's 1f1b schedule"),
        (["--zero", "3"], "dpcost: error: --zero: under PP torchtitan keeps the parameters unsharded"),
        (["--recompute", "full", "--recompute-block", "2"], "dpcost: error: --recompute-block: torchtitan checkpoints"),
        (["--virtual-stages", "2", "--global-batch", "18"], "dpcost: error: --global-batch: torch's interleaved"),
        (["--global-batch", "6"], "dpcost: error: --global-batch: torch's Schedule1F1B needs at least PP 4"),
    ],
)
def test_what_the_pipeline_does_not_cost_gets_one_line_and_exit_2(args: list[str], start: str) -> None:
    code, out, err = run("estimate", "--model", "llama-70b", "--dp", "2", "--tp", "2", "--pp", "4", "--framework",
                         "fsdp", *args)  # fmt: skip
    assert code == 2 and out == "" and err.startswith(start) and err.count("\n") == 1, (code, out, err)


def test_a_tied_embedding_is_refused_under_pp() -> None:
    """qwen3/model/model.py init_weights (torchtitan v0.2.2) asserts one stage holds the embedding and the head:
    GPT-3 ties them."""
    code, _, err = run("estimate", "--model", "gpt3-175b", "--dp", "2", "--pp", "2", "--framework", "fsdp")
    assert code == 2 and err.startswith("dpcost: error: --pp: ") and "ties its embedding" in err, err


def test_interleaved_stages_reduce_and_reshard_after_their_own_last_backward() -> None:
    """torch 2.14.1's runtime schedules add a REDUCE_GRAD after each stage's last backward (schedules.py
    _add_reduce_grad; stage.py perform_reduce_grad reshards, then reduce-scatters): under Interleaved1F1B a rank's
    second chunk's gradients are gone before its first chunk's backwards begin, so the peak holds one chunk's fp32
    gradients (8 of Llama 3.1 405B's blocks on a middle rank of torchtitan's 16-stage split), not both."""
    layout = "Et*7|" + "t*8|" * 14 + "t*7L"
    report = _pp_report(virtual_stages=2, pipeline_layout=layout)
    row = next(s for s in report.memory.stages if s.stage == 2)  # type: ignore[attr-defined]
    assert row.grads_bytes == pytest.approx(8 * 3_187_703_808 / 8 * 4, rel=1e-3)


def test_the_last_stage_keeps_each_micro_batchs_logits_to_its_backward() -> None:
    """The last stage's output, its bf16 logits (b x s x V / TP), stays in the stage's fwd_cache until that
    micro-batch's backward (stage.py forward_one_chunk, backward_one_chunk): under GPipe, every micro-batch's."""
    options = Options(dp=8, tp=8, pp=8, framework="fsdp", recompute="full", compile=True, micro_batch=4,
                      global_batch=512, seq_len=8192, pipeline_layout=LAYOUT_405B, pp_schedule="gpipe")  # fmt: skip
    stages = layout_stage_memory(load_model("llama-405b"), load_topology("grand-teton-h100-96gb"), options)
    logits = 4 * 8192 * 128_256 / 8 * 2
    assert stages[-1].activations > 16 * (logits + 15 * 4 * 8192 * 16384 * 2 / 8)


def test_selective_layer_ac_counts_each_ranks_blocks_from_one() -> None:
    """torchtitan's _apply_layer_sac (activation_checkpoint.py at v0.2.2) counts the blocks a process wraps in a
    module-wide counter, over its model parts in order, and checkpoints each whose count K divides: a rank of 15
    blocks checkpoints 7 of them at K = 2, one of 16 blocks 8; with two stages a rank of 3 blocks each, counted 1-3
    then 4-6, the first stage checkpoints block 2 and the second blocks 4 and 6."""
    assert checkpointed_blocks((15, 16, 16, 16, 16, 16, 16, 15), 8, 2) == (7, 8, 8, 8, 8, 8, 8, 7)
    assert checkpointed_blocks((3, 3, 3, 3), 2, 2) == (1, 1, 2, 2)
    assert checkpointed_blocks((4, 4), 2, 1) == (4, 4)


def test_every_second_block_keeps_more_than_every_block_and_less_than_none() -> None:
    """torchtitan's default selective layer AC (--recompute-layers 2) under PP: half of each rank's blocks keep their
    input alone, the other half everything."""
    kept = [
        layout_stage_memory(load_model("llama-8b"), load_topology("grand-teton-h100-96gb"), Options(
            dp=2, tp=2, pp=4, framework="fsdp", recompute=recompute, recompute_layers=every, micro_batch=1,
            global_batch=16, seq_len=8192,
        ))[1].activations
        for recompute, every in (("full", 1), ("full", 2), ("none", 1))
    ]  # fmt: skip
    assert kept[0] < kept[1] < kept[2]


def test_the_memory_command_names_fsdps_accounting_for_an_fsdp_layout() -> None:
    """`dpcost memory` with --framework fsdp and TP or PP: PyTorch FSDP's recipe and note, as `estimate`'s table has
    them, not Megatron-LM's theoretical_memory_usage."""
    for layout in (["--tp", "2"], ["--tp", "2", "--pp", "2"]):
        code, out, err = run("memory", "--model", "llama-8b", "--dp", "2", "--framework", "fsdp", *layout)
        assert code == 0 and "(PyTorch FSDP (sharded fp32 weights, fp32 reduce, Adam))" in out, err
        code, out, err = run("memory", "--model", "llama-8b", "--dp", "2", "--framework", "fsdp", *layout,
                             "--format", "json")  # fmt: skip
        note = json.loads(out)["note"]
        assert code == 0 and "as PyTorch FSDP holds" in note and "Megatron" not in note, note
