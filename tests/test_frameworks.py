"""Frameworks as they run: each preset's schedule (calls, what they carry, per micro-batch), its memory
accounting, and the losses at scale (engine/frameworks.py, engine/step.py)."""

from __future__ import annotations

import math

import pytest
from conftest import step_plan
from pydantic import ValidationError

from dpcost.catalog import load_model, load_topology
from dpcost.engine.estimate import estimate, memory_by_stage
from dpcost.engine.frameworks import FRAMEWORKS
from dpcost.engine.memory import RECIPES, model_states
from dpcost.engine.params import count_params
from dpcost.engine.report import EstimateReport
from dpcost.engine.step import (
    JITTER,
    SLOWEST_GPU,
    Call,
    expected_max_deviate,
    slowest_rank_wait,
    step_time,
)
from dpcost.errors import InputError
from dpcost.options import Options

MIB = 2**20
H100 = load_topology("dgx-h100")
LLAMA8 = load_model("llama-8b")


def run(**kw: object) -> EstimateReport:
    return estimate(LLAMA8, H100, Options(**kw))  # type: ignore[arg-type]


def rows(r: EstimateReport) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(op, purpose) -> (bytes of one occurrence, occurrences, calls per step)."""
    return {(c.op, c.purpose): (c.bytes, c.occurrences, c.calls) for c in r.communication.collectives}


# ------------------------------------------------------------------------------------------------ schedules


def test_ddp_all_reduces_fp32_gradients_in_25_mib_buckets_after_a_1_mib_one() -> None:
    """Buckets take whole tensors and close once they reach the cap (1 MiB first, then 25 MiB): Llama 3.1 8B's
    output head (2.1 GB) is the first bucket; in each block, as its gradients become ready, the norms with w2, then
    w3, w1 and wo each reach 25 MiB alone, wv (16 MiB) closes with wk, and wq alone: 6 buckets a block; the
    embedding last. 1 + 32 x 6 + 1 calls."""
    r = run(dp=64, framework="ddp")
    p = count_params(LLAMA8).total
    assert (r.setup.zero_stage, r.setup.recipe, r.setup.grad_dtype) == (0, "ddp", "fp32")
    (size, occurrences, calls) = rows(r)[("all_reduce", "gradients")]
    assert size == int(4 * p) and occurrences == 1
    assert calls == 1 + 32 * 6 + 1
    with pytest.raises(InputError, match="runs ZeRO stages 0 \\(DDP\\), not 3"):
        run(dp=64, framework="ddp", zero=3)


@pytest.mark.parametrize("accum", [1, 4])
def test_fsdp_full_shard_gathers_twice_and_reduce_scatters_per_unit_every_micro_batch(accum: int) -> None:
    r = run(dp=64, framework="fsdp", zero=3, accumulation=accum)
    p, units = count_params(LLAMA8).total, LLAMA8.architecture.layers + 2  # type: ignore[union-attr]
    got = rows(r)
    assert got[("all_gather", "parameters (forward)")] == (int(2 * p), accum, units * accum)  # bf16 gathers
    assert got[("all_gather", "parameters (backward)")] == (int(2 * p), accum, units * accum)
    assert got[("reduce_scatter", "gradients")] == (int(4 * p), accum, units * accum)  # fp32 reduction


def test_fsdp_shard_grad_op_gathers_once_per_micro_batch() -> None:
    r = run(dp=64, framework="fsdp", zero=2, accumulation=4)
    units = LLAMA8.architecture.layers + 2  # type: ignore[union-attr]
    got = rows(r)
    assert got[("all_gather", "parameters (forward)")][1:] == (4, 4 * units)
    assert ("all_gather", "parameters (backward)") not in got
    assert got[("reduce_scatter", "gradients")][1:] == (4, 4 * units)
    with pytest.raises(InputError, match=r"NO_SHARD.*SHARD_GRAD_OP.*FULL_SHARD"):
        run(dp=64, framework="fsdp", zero=1)


def test_deepspeed_buckets_5e8_elements_and_does_not_overlap_stages_1_and_2() -> None:
    r = run(dp=64, framework="deepspeed", zero=2)
    p = count_params(LLAMA8).total
    assert r.setup.bucket_bytes == int(5e8 * 2)  # bf16 gradients
    # a bucket is flushed before a tensor would overflow 1 GB: at least the flattened count, a few more for the cuts
    assert math.ceil(2 * p / 1e9) <= rows(r)[("all_reduce", "gradients")][2] <= math.ceil(2 * p / 1e9) + 2
    t = r.time
    assert t is not None
    ar = next(c.seconds for c in r.communication.collectives if c.op == "all_reduce")
    # overlap_comm=False: the reduction runs on the compute stream, all of it exposed
    assert dict((b.term, b.seconds) for b in t.breakdown)["exposed all_reduce"] == pytest.approx(ar)
    assert not any(b.seconds for b in t.breakdown if b.term.startswith("compute slowed"))


def test_deepspeed_stage_3_reductions_go_in_its_buckets() -> None:
    """Stage 3 reduce-scatters in reduce_bucket_size buckets, cut at block boundaries, not once per block."""
    p = count_params(LLAMA8).total
    r3 = run(dp=64, framework="deepspeed", zero=3)
    calls = rows(r3)[("reduce_scatter", "gradients")][2]
    assert math.ceil(2 * p / 1e9) - 1 <= calls <= math.ceil(2 * p / 1e9) + 1
    assert rows(run(dp=64, framework="fsdp", zero=3))[("reduce_scatter", "gradients")][2] == 34  # per unit


def test_no_overlap_puts_the_per_unit_reductions_on_the_compute_stream() -> None:
    """--overlap-comm false also holds for FSDP and ZeRO-3: every reduce-scatter is exposed."""
    r = run(dp=64, framework="fsdp", zero=3, overlap_comm=False)
    t = r.time
    assert t is not None
    rs = next(c.seconds for c in r.communication.collectives if c.op == "reduce_scatter")
    assert dict((b.term, b.seconds) for b in t.breakdown)["exposed reduce_scatter"] == pytest.approx(rs)
    overlapped = run(dp=64, framework="fsdp", zero=3).time
    assert overlapped is not None and overlapped.step_seconds < t.step_seconds


def test_megatron_buckets_grow_with_dp_and_gathers_overlap_the_next_forward() -> None:
    for dp, elements in ((8, 4e7), (64, 6.4e7)):
        r = run(dp=dp, framework="megatron", zero=1)
        assert r.setup.bucket_bytes == int(elements * 4)  # fp32 main grads
    r = run(dp=64, framework="megatron", zero=1)
    assert ("all_gather", "updated parameters") in rows(r)
    t = r.time
    assert t is not None
    ag = next(c.seconds for c in r.communication.collectives if c.op == "all_gather")
    exposed = dict((b.term, b.seconds) for b in t.breakdown).get("exposed all_gather", 0.0)
    assert exposed < ag / 2  # gathered block by block during the forward


def test_megatron_bucket_count_cuts_the_gradient_into_n_buckets() -> None:
    """--bucket-count N is Megatron's --ddp-num-buckets: each bucket the GPU's parameters // N (training.py
    resolve_ddp_bucket_size at d98e8a64dd), Llama 3 8B's 8,030,261,248 over 8, in fp32 gradients; one bucket
    without --overlap-grad-reduce, whatever N (bucket_size None). Megatron-Core refuses it beside a bucket size
    (distributed_data_parallel_config.py), and no other framework counts its buckets."""
    r = run(dp=8, framework="megatron", zero=1, bucket_count=8)
    assert r.model.params_total == 8_030_261_248
    assert r.setup.bucket_bytes == 8_030_261_248 // 8 * 4
    r = run(dp=8, framework="megatron", zero=1, bucket_count=8, overlap_comm=False)
    assert r.setup.bucket_bytes == 8_030_261_248 * 4
    for given, told in (({"framework": "megatron", "bucket_bytes": "1GB"}, "beside a bucket size"),
                        ({"framework": "deepspeed"}, "give --framework megatron"),
                        ({}, "give --framework megatron")):  # fmt: skip
        with pytest.raises(InputError, match=told):
            run(dp=8, bucket_count=8, **given)


def test_a_preset_setting_can_be_overridden() -> None:
    r = run(dp=64, framework="ddp", bucket_bytes="100MiB", first_bucket_bytes=0, grad_dtype="bf16")
    assert (r.setup.bucket_bytes, r.setup.grad_dtype) == (100 * MIB, "bf16")
    assert r.setup.framework == "ddp"
    with pytest.raises(ValidationError):
        Options(dp=8, framework="horovod")


@pytest.mark.parametrize("framework", [None, "ddp", "deepspeed", "fsdp"])
def test_auto_picks_the_stage_whose_reported_step_is_shortest(framework: str | None) -> None:
    """Issue 10: the choice is made on the step the report shows, with the framework's own buckets; a 3B model
    at DP 64 fits everywhere, and the chosen stage's step is the shortest of every stage the framework runs."""
    mpt3b = load_model("tests/reference/training-runs/mpt/mpt-3b.yaml")
    chosen = estimate(mpt3b, H100, Options(dp=64, framework=framework, recompute="none"))  # type: ignore[arg-type]
    stages = FRAMEWORKS[framework].stages if framework else {0: "", 1: "", 2: "", 3: ""}
    steps = {
        st: estimate(mpt3b, H100, Options(dp=64, framework=framework, zero=st, recompute="none"))  # type: ignore[arg-type]
        for st in stages
    }
    assert chosen.setup.zero_stage_chosen
    assert chosen.time is not None
    best = min(steps, key=lambda st: (steps[st].time.step_seconds, st))  # type: ignore[union-attr]
    assert chosen.setup.zero_stage == best
    assert chosen.time.step_seconds == steps[best].time.step_seconds  # type: ignore[union-attr]


# ------------------------------------------------------------------------------------------------ memory


def test_fsdp_model_states_are_16_bytes_per_parameter_sharded() -> None:
    fsdp = RECIPES["fsdp"]
    for d in (8, 64, 512):
        assert model_states(1e9, d, 0, fsdp).total == pytest.approx(16e9)  # NO_SHARD
        assert model_states(1e9, d, 2, fsdp).total == pytest.approx(16e9 / d)  # SHARD_GRAD_OP shards it all
        assert model_states(1e9, d, 3, fsdp).total == pytest.approx(16e9 / d)
    m = memory_by_stage(LLAMA8, H100, Options(dp=64, framework="fsdp", recompute="full"))
    p = count_params(LLAMA8).total
    # SHARD_GRAD_OP holds the whole model gathered in bf16 through the backward; FULL_SHARD two units
    assert m.stages[2].buffers_bytes > 2 * p > m.stages[3].buffers_bytes


def test_megatron_18_and_20_bytes() -> None:
    from dpcost.engine.prepare import recipe_for

    for d in (1, 8, 64):
        fp32 = recipe_for("megatron", "fp32")
        bf16 = recipe_for("megatron", "bf16")
        assert model_states(1e9, d, 0, fp32).total == pytest.approx(18e9)
        assert model_states(1e9, d, 1, fp32).total == pytest.approx((6 + 12 / d) * 1e9)
        assert model_states(1e9, d, 0, bf16).total == pytest.approx(20e9)
        assert model_states(1e9, d, 1, bf16).total == pytest.approx((4 + 16 / d) * 1e9)
    assert RECIPES["megatron"].grad_dtype == "fp32"


def test_ddp_counts_its_bucket_copy() -> None:
    # fused: without foreach's intermediates, which peak at the optimizer step beside the copy (test_memory.py)
    m = memory_by_stage(LLAMA8, H100, Options(dp=8, framework="ddp", recompute="full", optimizer_impl="fused"))
    p = count_params(LLAMA8).total
    assert m.stages[0].model_states_bytes == pytest.approx(16 * p, rel=1e-9)
    cublas = 2 * 32 * 2**20  # PyTorch's two cuBLAS workspaces on Hopper (engine/workspaces.py)
    assert m.stages[0].buffers_bytes - cublas == pytest.approx(4 * p, rel=1e-6)  # gradient_as_bucket_view=False


# ------------------------------------------------------------------------------------------------ losses at scale


def test_the_breakdown_sums_to_the_step() -> None:
    for kw in (
        {"dp": 512},
        {"dp": 512, "framework": "fsdp"},
        {"dp": 64, "framework": "deepspeed", "zero": 1, "accumulation": 4},
        {"dp": 1024, "framework": "megatron"},
        {"dp": 8, "framework": "ddp", "skew": 0.1},
    ):
        t = run(**kw).time
        assert t is not None
        assert sum(b.seconds for b in t.breakdown) == pytest.approx(t.step_seconds, rel=1e-12), kw
        terms = [b.term for b in t.breakdown]
        assert terms[0] == "compute" and terms[-2:] == [JITTER, SLOWEST_GPU]
        assert t.step_seconds == pytest.approx(t.compute_seconds + t.exposed_comm_seconds + t.losses_seconds)


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
@pytest.mark.parametrize("per_unit", [False, True])
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize(("accum", "keep"), [(1, False), (4, False), (4, True)])
def test_the_timeline_and_the_waits_make_the_step(stage: int, per_unit: bool, overlap: bool, accum: int, keep: bool):
    """The step, computed apart from its breakdown: every phase's duration (slowdown included) times its repeats,
    plus each wait's expected lateness of the slowest rank; and the breakdown's terms add up to the same."""
    call = lambda op, size: Call(2e-5 + size / 300e9, "ring/simple", 0.2)  # noqa: E731
    plan = step_plan(
        stage=stage,
        per_unit=per_unit,
        overlap_grad_reduce=overlap,
        accumulation=accum,
        keep_full_grads=keep,
        sync_jitter=1e-3,
    )
    st = step_time(plan, call)
    timeline = sum(ph.duration * ph.repeats for ph in st.phases)
    terms = dict((t.term, t.seconds) for t in st.breakdown)
    jitter = terms["waiting for the slowest rank (synchronisation jitter)"]
    assert jitter == pytest.approx(slowest_rank_wait(st.phases, 1e-3, 512), rel=1e-12)
    assert 1e-3 * math.sqrt(accum * 3.0) * expected_max_deviate(512) <= jitter * (1 + 1e-12)  # at least the step's
    assert st.step == pytest.approx(timeline + jitter, rel=1e-12)
    assert terms["compute"] == pytest.approx(accum * 3.0)
    assert terms["compute"] + st.exposed + terms["compute slowed by overlapping collectives"] == pytest.approx(timeline)


def test_expected_maximum_of_normal_deviates() -> None:
    """Blom (1958): E[max of n] ~ Phi^-1((n - 0.375) / (n + 0.25)), within 0.03 of the exact values 0.5642 (2),
    1.5388 (10) and 3.2414 (1000) tabulated by Harter (1961)."""
    assert expected_max_deviate(1) == 0
    for n, exact in ((2, 0.5642), (10, 1.5388), (1000, 3.2414)):
        assert expected_max_deviate(n) == pytest.approx(exact, abs=0.03), n


def test_jitter_in_a_compute_bound_step_is_paid_once_and_grows_with_log_n() -> None:
    """Each gather (5 ms) hides behind its unit's 100-200 ms with room to spare, so no wait costs: the ranks drift
    through the step's 3 s of compute and meet at the optimizer, sqrt(3 s) x jitter x E[max of N] late."""
    call = lambda op, size: Call(size / 400e9, "ring/simple")  # noqa: E731
    quiet = step_time(step_plan(), call)
    for ranks in (8, 512):
        noisy = step_time(step_plan(sync_jitter=1e-3, ranks=ranks), call)
        assert noisy.step - quiet.step == pytest.approx(math.sqrt(3.0) * 1e-3 * expected_max_deviate(ranks))


def test_jitter_in_a_communication_bound_step_is_paid_at_every_wait() -> None:
    """Each gather (0.5 s) outlasts its unit's compute: no slack, so every wait re-aligns the ranks and costs the
    drift since the last: 10 forward waits after 0.1 s each, 11 backward waits (10 gathers and the last reduction)
    sharing 2 s."""
    call = lambda op, size: Call(size / 4e9, "ring/simple")  # noqa: E731
    quiet = step_time(step_plan(), call)
    noisy = step_time(step_plan(sync_jitter=1e-3), call)
    expected = 1e-3 * expected_max_deviate(512) * (10 * math.sqrt(0.1) + 11 * math.sqrt(2.0 / 11))
    assert noisy.step - quiet.step == pytest.approx(expected)


def test_overlapped_compute_slows_while_collectives_run() -> None:
    """Compute-bound phases last longer by the overlapped compute times the share of SMs the calls' kernels hold."""
    call = lambda op, size: Call(size / 400e9, "ring/simple")  # noqa: E731
    base = step_time(step_plan(), call)
    slowed = step_time(step_plan(), lambda op, size: Call(size / 400e9, "ring/simple", 0.2))
    overlap = sum(min(ph.compute, ph.comm) * ph.repeats for ph in base.phases if ph.overlapped and ph.comm)
    assert all(ph.compute > ph.comm for ph in base.phases if ph.overlapped and ph.comm)  # compute-bound phases
    assert slowed.step - base.step == pytest.approx(0.2 * overlap)
    term = dict((t.term, t.seconds) for t in slowed.breakdown)["compute slowed by overlapping collectives"]
    assert term == pytest.approx(0.2 * overlap)


def test_a_communication_bound_phase_hides_the_slowed_compute() -> None:
    """Issue 17: the slowdown was charged where the slowed compute stays hidden behind a longer communication
    stream. A phase whose collectives take twice its compute lasts as long as they do, slowed or not."""
    call = lambda op, size: Call(size / 4e9, "ring/simple")  # noqa: E731  (slow enough that comm binds)
    base = step_time(step_plan(), call)
    assert any(ph.comm >= 1.25 * ph.compute for ph in base.phases if ph.overlapped and ph.comm)
    slowed = step_time(step_plan(), lambda op, size: Call(size / 4e9, "ring/simple", 0.2))
    assert slowed.step == pytest.approx(base.step)
    terms = dict((t.term, t.seconds) for t in slowed.breakdown)
    assert terms["compute slowed by overlapping collectives"] > 0  # the compute is slowed, under the collectives
    assert sum(terms.values()) == pytest.approx(slowed.step)


def test_losses_grow_with_gpus_not_with_bytes() -> None:
    small = [run(dp=n, framework="fsdp", zero=3).time for n in (64, 512)]
    assert all(t is not None for t in small)
    lost = [t.losses_seconds / t.step_seconds for t in small if t is not None]
    assert lost[1] > lost[0]


# ------------------------------------------------------------------------------------------------ FP8


def test_fp8_compute_runs_at_the_fp8_peak_and_reports_mfu_against_it() -> None:
    # every FLOP at one efficiency of the compute dtype's peak (op by op, the casts and 16-bit ops stay)
    bf16 = run(dp=8, framework="fsdp", zero=3, recompute="none", compute_model="flops")
    fp8 = run(dp=8, framework="fsdp", zero=3, recompute="none", compute_dtype="fp8", compute_model="flops")
    assert bf16.time is not None and fp8.time is not None
    assert fp8.time.compute_seconds == pytest.approx(bf16.time.compute_seconds * 989 / 1979)
    with pytest.raises(InputError, match="no FP8 tensor cores"):
        estimate(LLAMA8, load_topology("dgx-a100"), Options(dp=8, compute_dtype="fp8"))


def test_fp8_all_gather_moves_one_byte_per_linear_parameter() -> None:
    """torchtitan's float8 all-gather converts the blocks' linear layers; the output layer is excluded
    (components/float8.py: fqn != "output") and the embedding is not a Linear: those two stay bf16."""
    r = run(dp=64, framework="fsdp", zero=3, gather_dtype="fp8")
    c = count_params(LLAMA8)
    blocks = sum(b.params for b in c.blocks)
    assert rows(r)[("all_gather", "parameters (forward)")][0] == int(blocks + 2 * (c.total - blocks))


# ------------------------------------------------------------------------------------------------ audit findings
# Issue 17: each framework's collectives as its source runs them. Each test failed before its fix.


def test_deepspeed_zero_1_2_all_reduce_each_gradient_bucket() -> None:
    """deepspeed/runtime/zero/stage_1_and_2.py@v0.16.0: with reduce_scatter=True and
    use_multi_rank_bucket_allreduce=True (the defaults) each ipg bucket goes through allreduce_bucket, which calls
    dist.all_reduce: twice a reduce-scatter's bytes on the wire."""
    for stage in (1, 2):
        r = run(dp=64, framework="deepspeed", zero=stage)
        got = rows(r)
        assert ("reduce_scatter", "gradients") not in got
        p = count_params(LLAMA8).total
        assert got[("all_reduce", "gradients")][0] == int(2 * p)
        ar = next(c for c in r.communication.collectives if c.op == "all_reduce")
        assert ar.bytes_sent_per_rank == int(2 * 63 / 64 * 2 * p)
        assert r.communication.primitives == "AllReduce + AllGather"


def test_deepspeed_gathers_updated_parameters_once_per_parameter_group() -> None:
    """deepspeed/runtime/utils.py@v0.16.0 all_gather_into_tensor_dp_groups: one all_gather_into_tensor per
    parameter group over its flat partition (one group here), not allgather_bucket_size buckets."""
    for stage in (1, 2):
        assert rows(run(dp=64, framework="deepspeed", zero=stage))[("all_gather", "updated parameters")][2] == 1


def test_deepspeed_holds_one_reduce_bucket_unless_it_overlaps() -> None:
    """stage_1_and_2.py: the ipg bucket is double-buffered only with overlap_comm (its default False at 1-2)."""
    one = memory_by_stage(LLAMA8, H100, Options(dp=64, framework="deepspeed", recompute="full"))
    two = memory_by_stage(LLAMA8, H100, Options(dp=64, framework="deepspeed", recompute="full", overlap_comm=True))
    bucket = 5e8 * 2
    assert two.stages[2].buffers_bytes - one.stages[2].buffers_bytes == pytest.approx(bucket, abs=1)


def test_fsdp_shard_grad_op_under_no_sync_gathers_once_per_step() -> None:
    """torch/distributed/fsdp/_runtime_utils.py@v2.5.0 _should_free_in_backward: under no_sync SHARD_GRAD_OP keeps
    the parameters unsharded, so the next micro-batches' forwards gather nothing."""
    r = run(dp=64, framework="fsdp", zero=2, accumulation=4, keep_full_grads=True)
    units = LLAMA8.architecture.layers + 2  # type: ignore[union-attr]
    got = rows(r)
    assert got[("all_gather", "parameters (forward)")][1:] == (1, units)
    assert got[("reduce_scatter", "gradients")][1:] == (1, units)


def test_fsdp_has_no_gradient_buckets_and_says_a_bucket_size_does_not_apply() -> None:
    """FSDP reduce-scatters per wrapped unit; a --bucket-size is not silently reported as if it applied."""
    assert run(dp=64, framework="fsdp", zero=3).setup.bucket_bytes == 0
    r = run(dp=64, framework="fsdp", zero=3, bucket_bytes="100MiB")
    assert r.setup.bucket_bytes == 0
    assert any(w.code == "ignored-flags" and "--bucket-size" in w.message for w in r.warnings)


def test_ddp_puts_a_tensor_larger_than_the_cap_in_a_bucket_of_its_own() -> None:
    """torch/csrc/distributed/c10d/reducer.cpp@v2.5.0 compute_bucket_assignment_by_size: tensors are added whole
    and a bucket closes once it reaches its cap; the first cap is 1 MiB. Llama 3.1 8B's output head, 128256 x 4096
    fp32 gradients (2.1 GB), is ready first: it is the first bucket on its own, not 1 MiB of it."""
    r = run(dp=64, framework="ddp")
    calls = rows(r)[("all_reduce", "gradients")][2]
    p = count_params(LLAMA8).total
    assert calls < 1 + math.ceil((4 * p - 1 * MIB) / (25 * MIB))  # fewer calls than flattened 25 MiB cuts
    from dpcost.engine.prepare import units
    from dpcost.engine.step import bucket_edges

    pieces = units(count_params(LLAMA8), LLAMA8, 4096)
    edges = bucket_edges(pieces[::-1], 4.0, 25 * MIB, 1 * MIB, "after")
    assert edges[0] == 128256 * 4096 * 4  # the output head alone


# ------------------------------------------------------------------------------------------------ NCCL's environment


def test_nvls_off_leaves_nccl_ring_and_tree() -> None:
    """NCCL_NVLS_ENABLE=0, or a system without the fabric manager or IMEX channels: no NVLS, no NVLSTree. The same
    holds for a topology that says `nvls: false`."""
    from dpcost.engine.availability import environment
    from dpcost.engine.collectives import collective

    gb200 = load_topology("gb200-nvl72")
    on = estimate(LLAMA8, gb200, Options(dp=72, framework="fsdp", zero=0))  # one NVL72 domain: NVLS all-reduces
    off = estimate(LLAMA8, gb200, Options(dp=72, framework="fsdp", zero=0, nvls=False))
    assert {c.algorithm for c in on.communication.collectives} & {"nvls"}
    assert not {c.algorithm for c in off.communication.collectives} & {"nvls", "nvls_tree"}
    declared = estimate(LLAMA8, gb200.model_copy(update={"nvls": False}), Options(dp=72, framework="fsdp", zero=0))
    assert declared.time == off.time
    weighed = {c.algorithm for c in collective(gb200, "all_reduce", 144, 2**30).candidates}
    assert "nvls_tree" in weighed
    assert "nvls_tree" not in {
        c.algorithm for c in collective(environment(gb200, False), "all_reduce", 144, 2**30).candidates
    }
    assert environment(gb200, nvls=True) is gb200


def test_a_forced_protocol_runs_every_call() -> None:
    """NCCL_PROTO=Simple: every call of the step runs Simple."""
    r = run(dp=64, framework="ddp", protocol="simple")
    assert {
        name.split("/")[1] for c in r.communication.collectives for name in (b.algorithm for b in c.calls_by_algorithm)
    } == {"simple"}


def test_the_overlap_slowdown_is_the_sms_nccls_channels_take_of_each_gpu() -> None:
    """Issue 17: the slowdown comes from each call's own channels over the GPU's SMs. FSDP at DP 64 over 8 nodes
    with 8 NICs each runs its gathers and reductions on 16 channels (NVIDIA/nccl#1453 prints `Channel 00/16` on 3
    H100 nodes; docs/sources/nccl-channels.md): 16 of an H100's 132 SMs, of an A100's 108, of a B200's 148, each an
    SM the compute beside them loses, so it runs on S - 16 and takes S / (S - 16) as long. On one node an H100 has
    24 (p5.48xlarge's log: `24 coll channels`), and a B200 32 (NVIDIA/nccl#1646)."""
    for topology, dp, channels, sms in (
        ("dgx-h100", 64, 16, 132),
        ("dgx-a100", 64, 16, 108),
        ("dgx-b200", 64, 16, 148),
        ("dgx-h100", 8, 24, 132),
        ("dgx-b200", 8, 32, 148),
    ):
        o = Options(dp=dp, framework="fsdp", zero=3, algorithm="ring")
        r = estimate(LLAMA8, load_topology(topology), o)
        assert r.setup.overlap_slowdown == pytest.approx(channels / (sms - channels)), (topology, dp)
    assert run(dp=64, overlap_slowdown="25%").setup.overlap_slowdown == 0.25
