"""The data-parallel step's schedule as data (dpcost/engine/dp_schedule.py), held to its sources: the ZeRO paper's
collectives per stage (section 7), DDP's no_sync, FSDP's SHARD_GRAD_OP under no_sync, DeepSpeed's all-reduced
buckets, and Megatron-FSDP's reduction every micro-batch."""

from __future__ import annotations

import itertools

import pytest

from dpcost.engine.dp_schedule import (
    BACKWARD,
    FORWARD,
    FORWARD_BACKWARD,
    OPTIMIZER,
    Stretch,
    collective_ops,
    dp_schedule,
    frequency,
    primitives,
)

SWITCHES = list(itertools.product((0, 1, 2, 3), (1, 4), (False, True), (False, True), (False, True), (False, True)))


def _passes(schedule: tuple[Stretch, ...], compute: str) -> int:
    return sum(s.repeats for s in schedule if s.compute in (compute, FORWARD_BACKWARD))


def _times(schedule: tuple[Stretch, ...], op: str, purpose: str | None = None) -> int:
    """How many times per step the schedule issues `op` (for `purpose`)."""
    return sum(s.repeats for s in schedule for c in s.calls if c.op == op and (purpose is None or purpose in c.purpose))


@pytest.mark.parametrize(("stage", "a", "per_unit", "keep_full", "overlap_gather", "overlap_reduce"), SWITCHES)
def test_every_schedule_runs_each_micro_batch_once_and_one_optimizer_step(
    stage: int, a: int, per_unit: bool, keep_full: bool, overlap_gather: bool, overlap_reduce: bool
) -> None:
    """Whatever the framework: a forward and a backward per micro-batch, one optimizer step, and the gradients
    reduced at least once, no more than once per micro-batch."""
    s = dp_schedule(
        stage,
        a,
        per_unit=per_unit,
        keep_full_grads=keep_full,
        overlap_param_gather=overlap_gather,
        overlap_grad_reduce=overlap_reduce,
    )
    assert _passes(s, FORWARD) == a and _passes(s, BACKWARD) == a
    assert sum(x.repeats for x in s if x.compute == OPTIMIZER) == 1
    reductions = sum(x.repeats for x in s if any(c.purpose == "gradients" for c in x.calls))
    assert 1 <= reductions <= a
    if not overlap_reduce:  # the reductions run on the compute stream: nothing overlaps them
        assert all(not x.overlapped for x in s if any(c.purpose == "gradients" for c in x.calls))


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_the_zero_papers_collectives_per_stage(stage: int) -> None:
    """ZeRO paper section 7: stage 0 all-reduces, stages 1-3 reduce-scatter and all-gather."""
    expected = ("all_reduce",) if stage == 0 else ("reduce_scatter", "all_gather")
    assert collective_ops(dp_schedule(stage, 1)) == expected
    assert primitives(dp_schedule(stage, 1)) == ("AllReduce" if stage == 0 else "ReduceScatter + AllGather")


@pytest.mark.parametrize("stage", [1, 2])
def test_deepspeed_all_reduces_its_buckets_at_stages_1_and_2(stage: int) -> None:
    """DeepSpeed's stage_1_and_2.py reduces each bucket with an all-reduce, then gathers the updated shards."""
    assert primitives(dp_schedule(stage, 1, bucket_op="all_reduce")) == "AllReduce + AllGather"


@pytest.mark.parametrize("stage", [0, 1])
def test_stages_0_and_1_reduce_once_per_step_under_no_sync(stage: int) -> None:
    """DDP's no_sync: the gradients accumulate locally and are reduced after the last micro-batch only."""
    s = dp_schedule(stage, 8)
    assert _times(s, collective_ops(s)[0], "gradients") == 1
    assert frequency(s, 8) == "once per step, after the last of 8 micro-batches"


def test_stage_3_gathers_for_every_forward_and_backward() -> None:
    """ZeRO-3 gathers the parameters before each forward and again before each backward: 2 per micro-batch, with
    or without full gradients kept, whose reduction then runs once per step."""
    for keep_full, reductions in ((False, 4), (True, 1)):
        s = dp_schedule(3, 4, keep_full_grads=keep_full)
        assert _times(s, "all_gather", "forward") == 4 and _times(s, "all_gather", "backward") == 4
        assert _times(s, "reduce_scatter") == reductions
    assert frequency(dp_schedule(3, 4), 4) == "every micro-batch (4 per step)"
    assert frequency(dp_schedule(3, 4, keep_full_grads=True), 4) == (
        "gradients once per step, after the last of 4 micro-batches; parameters gathered every micro-batch (4 per step)"
    )


def test_shard_grad_op_under_no_sync_gathers_once_per_step() -> None:
    """FSDP SHARD_GRAD_OP keeps the parameters unsharded after the first forward's gather while no_sync keeps full
    gradients (torch/distributed/fsdp/_runtime_utils.py@v2.5.0 _should_free_in_backward): one gather and one
    reduction a step, where without no_sync both run every micro-batch."""
    kept = dp_schedule(2, 4, per_unit=True, keep_full_grads=True)
    assert _times(kept, "all_gather") == 1 and _times(kept, "reduce_scatter") == 1
    assert frequency(kept, 4) == "once per step, after the last of 4 micro-batches"
    every = dp_schedule(2, 4, per_unit=True)
    assert _times(every, "all_gather") == 4 and _times(every, "reduce_scatter") == 4


def test_stage_2_reduces_every_micro_batch_and_gathers_once() -> None:
    """ZeRO-2 keeps only its gradient shard, so it reduces after every micro-batch; the updated parameters are
    gathered once, after the optimizer step (DeepSpeed) or during the next forward (Megatron, Megatron-FSDP's
    optim_grads)."""
    for per_unit, overlap in ((False, False), (False, True), (True, True)):
        s = dp_schedule(2, 4, per_unit=per_unit, overlap_param_gather=overlap)
        assert _times(s, "reduce_scatter") == 4 and _times(s, "all_gather", "updated") == 1
        assert frequency(s, 4) == "gradients every micro-batch (4 per step); parameters gathered once per step"


def test_one_micro_batch_is_said_plainly() -> None:
    assert frequency(dp_schedule(3, 1), 1) == "every step (1 micro-batch)"
