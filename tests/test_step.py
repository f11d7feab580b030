"""The step timeline: buckets, accumulation, ZeRO stages, overlap (dpcost/engine/step.py)."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from dpcost.catalog import load_model, load_topology
from dpcost.engine.estimate import estimate
from dpcost.engine.step import (
    Call,
    StepPlan,
    Unit,
    _bucket_layout,
    bucket_edges,
    drain,
    equal_runs,
    gather_reduce_runs,
    step_time,
)
from dpcost.options import Options

UNIFORM = tuple(Unit(1e9, 1 / 10) for _ in range(10))  # 10 equal blocks, 10B parameters


def _plan(**kw: object) -> StepPlan:
    base = dict(
        stage=0,
        accumulation=1,
        forward=1.0,
        backward=2.0,
        units=UNIFORM,
        grad_bytes=2.0,
        weight_bytes=2.0,
        bucket_bytes=25 * 2**20,
    )
    base.update(kw)
    return StepPlan(**base)  # type: ignore[arg-type]


def bandwidth_only(rate: float):  # type: ignore[no-untyped-def]
    return lambda op, size: Call(size / rate, "ring/simple")


def test_one_bucket_exposes_all_communication() -> None:
    """One bucket the size of the gradient is ready only at the end of the backward pass: nothing hides."""
    call = lambda op, size: Call(1e-4 + size / 100e9, "ring/simple")  # noqa: E731
    t = step_time(_plan(bucket_bytes=1e12), call)
    assert t.exposed == pytest.approx(call("all_reduce", 20e9).seconds, rel=1e-12)
    assert t.step == pytest.approx(t.serial, rel=1e-12)


@pytest.mark.parametrize("rate", [5e9, 10e9, 40e9])  # comm 4 s, 2 s, 0.5 s against a 2 s backward
def test_tiny_buckets_without_latency_approach_the_ideal(rate: float) -> None:
    plan = _plan(bucket_bytes=1e6)
    t = step_time(plan, bandwidth_only(rate))
    t_comm = 20e9 / rate
    assert t.exposed == pytest.approx(max(plan.backward, t_comm) - plan.backward, abs=1e-3)


def test_ideal_is_the_seeds_max() -> None:
    """T_eff = max(T_bwd, T_allreduce) exactly (docs/sources/dp-zero-overlap.zh.md)."""
    for rate in (5e9, 50e9):
        plan = _plan()
        t = step_time(plan, bandwidth_only(rate))
        # exact up to summing 763 bucket times in floating point
        assert t.ideal == pytest.approx(plan.forward + max(plan.backward, t.comm), rel=1e-15)
        assert t.comm == pytest.approx(20e9 / rate, rel=1e-12)
        assert t.serial == pytest.approx(plan.forward + plan.backward + 20e9 / rate, rel=1e-12)


def test_bucketed_lies_between_ideal_and_serial() -> None:
    call = lambda op, size: Call(30e-6 + size / 50e9, "ring/simple")  # noqa: E731
    for bucket in (1e6, 25 * 2**20, 1e9, 1e12):
        t = step_time(_plan(bucket_bytes=bucket), call)
        assert t.ideal - 1e-12 <= t.step <= t.serial + 1e-12


def test_more_buckets_pay_more_latency() -> None:
    # latency-heavy: comm never the bottleneck
    call = lambda op, size: Call(1e-3 + size / 1e12, "ring/simple")  # noqa: E731
    small = step_time(_plan(bucket_bytes=1e6), call)
    big = step_time(_plan(bucket_bytes=1e8), call)
    assert small.comm > big.comm
    assert small.traffic[0].calls == 20_000 and big.traffic[0].calls == 200


def test_accumulation_divides_stage_0_comm_per_micro_batch() -> None:
    call = bandwidth_only(10e9)
    one = step_time(_plan(), call)
    for a in (2, 4, 8):
        t = step_time(_plan(accumulation=a), call)
        assert t.comm == pytest.approx(one.comm)  # once per step
        assert t.comm / a == pytest.approx(one.comm / a)
        assert t.compute == pytest.approx(a * one.compute)
        # only the last backward overlaps: ideal = (a-1)(F+B) + F + max(B, C)
        assert t.ideal == pytest.approx((a - 1) * 3.0 + 1.0 + max(2.0, 2.0))


def test_stages_2_and_3_reduce_every_micro_batch_unless_full_grads_kept() -> None:
    call = bandwidth_only(10e9)
    for stage in (2, 3):
        per_mb = next(
            t for t in step_time(_plan(stage=stage, accumulation=4), call).traffic if t.op == "reduce_scatter"
        )
        kept = next(
            t
            for t in step_time(_plan(stage=stage, accumulation=4, keep_full_grads=True), call).traffic
            if t.op == "reduce_scatter"
        )
        assert per_mb.occurrences == 4 and kept.occurrences == 1
        assert per_mb.seconds == pytest.approx(4 * kept.seconds)


def test_megatron_fsdp_optim_grads_reduces_every_micro_batch_and_gathers_once_per_step() -> None:
    """Megatron-FSDP's optim_grads keeps a full replica of the parameters, gathers the updated ones unit by unit
    during the next forward, and reduce-scatters each unit's gradients after its backward on every micro-batch, no_sync
    or not (megatron_fsdp.py grad_reduce_every_bprop); FSDP's SHARD_GRAD_OP gathers every micro-batch instead."""
    call = bandwidth_only(10e9)
    fsdp_optim_grads = step_time(_plan(stage=2, accumulation=4, per_unit=True, overlap_param_gather=True), call)
    by_op = {t.op: t for t in fsdp_optim_grads.traffic}
    assert by_op["reduce_scatter"].occurrences == 4 and by_op["reduce_scatter"].calls == 4 * len(UNIFORM)
    assert by_op["all_gather"].occurrences == 1 and by_op["all_gather"].calls == len(UNIFORM)
    shard_grad_op = step_time(_plan(stage=2, accumulation=4, per_unit=True), call)
    gathers = next(t for t in shard_grad_op.traffic if t.op == "all_gather")
    assert gathers.occurrences == 4


def test_stage_3_moves_one_and_a_half_times_stage_0() -> None:
    """ZeRO section 7: baseline 2 Psi per step, P_os+g+p 3 Psi; stages 1-2 the same 2 Psi as DDP."""
    model, topo = load_model("llama-70b"), load_topology("dgx-h100")
    sent = {
        stage: estimate(model, topo, Options(dp=512, zero=stage, grad_dtype="bf16")).communication.bytes_sent_per_rank
        for stage in range(4)
    }
    assert sent[3] == pytest.approx(1.5 * sent[0], rel=1e-12)
    assert sent[1] == pytest.approx(sent[0], rel=1e-12)
    assert sent[2] == pytest.approx(sent[0], rel=1e-12)
    assert sent[0] == pytest.approx(2 * 511 / 512 * 2 * 70.554e9, rel=1e-4)


def test_gather_reduce_prefetches_one_ahead() -> None:
    # gathers shorter than compute hide behind it but for the first; reduces after the last unit cannot hide
    assert gather_reduce_runs([(1.0, 0.5, 0.0, 3)]) == pytest.approx(3.5)
    assert gather_reduce_runs([(1.0, 0.5, 0.2, 1)] * 3) == pytest.approx(3.7)
    # gathers longer than compute set the pace
    assert gather_reduce_runs([(0.1, 1.0, 0.0, 1)] * 3) == pytest.approx(3.1)


def _gather_reduce_by_unit(compute: list[float], gathers: list[float], reduces: list[float]) -> float:
    """The schedule gather_reduce_runs documents, event by event: unit j starts once its parameters are in and unit j-1
    is done; the gather of unit j+1 is issued as unit j starts, its reduce as it ends, on one stream in that order."""
    stream = end = 0.0
    arrived = [0.0] * len(compute)
    if compute:
        stream = arrived[0] = gathers[0]
    for j, c in enumerate(compute):
        start = max(arrived[j], end)
        if j + 1 < len(compute):
            stream = max(stream, start) + gathers[j + 1]
            arrived[j + 1] = stream
        end = start + c
        if reduces[j] > 0:
            stream = max(stream, end) + reduces[j]
    return max(end, stream)


def test_gather_reduce_runs_closed_forms() -> None:
    # n equal units: compute-bound, the first gather then the units back to back; gather-bound, n gathers and the
    # last unit's compute; each reduce behind the next unit's compute but for the last
    n = 1000
    assert gather_reduce_runs([(1.0, 0.5, 0.0, n)]) == pytest.approx(0.5 + n * 1.0, rel=1e-12)
    assert gather_reduce_runs([(0.1, 1.0, 0.0, n)]) == pytest.approx(n * 1.0 + 0.1, rel=1e-12)
    assert gather_reduce_runs([(1.0, 0.5, 0.2, n)]) == pytest.approx(0.5 + n * 1.0 + 0.2, rel=1e-12)


def test_gather_reduce_runs_is_the_unit_by_unit_schedule() -> None:
    # runs of equal units, jumped over once the schedule settles, against the schedule event by event
    import random

    rng = random.Random(20)
    for _ in range(300):
        runs = [
            (rng.choice([0.0, rng.uniform(0.01, 2)]), rng.uniform(0, 2), rng.choice([0.0, rng.uniform(0, 1)]),
             rng.randint(1, 60))
            for _ in range(rng.randint(1, 5))
        ]  # fmt: skip
        units = [(c, g, r) for c, g, r, n in runs for _ in range(n)]
        expected = _gather_reduce_by_unit(*(list(x) for x in zip(*units, strict=True)))
        assert gather_reduce_runs(runs) == pytest.approx(expected, rel=1e-9)


def test_drain_closed_form_two_buckets() -> None:
    # 10 bytes over 1 s in 2 buckets of 5; each takes 0.4 s: ready at 0.5 and 1.0, done at 0.9 and 1.4
    d = drain([1.0], [10.0], 5.0, lambda s: Call(0.4 * s / 5, "ring/simple"))
    assert (d.duration, d.comm, d.count) == (pytest.approx(1.4), pytest.approx(0.8), 2)


def test_skew_delays_every_collective() -> None:
    model, topo = load_model("llama-8b"), load_topology("dgx-h100")
    # every FLOP at one efficiency: compute_seconds is the forward and backward the skew slows (op by op it also
    # holds the optimizer step, which no collective waits on)
    base = estimate(model, topo, Options(dp=64, compute_model="flops"))
    slow = estimate(model, topo, Options(dp=64, skew=0.1, compute_model="flops"))
    assert slow.time is not None and base.time is not None
    assert slow.time.straggler_seconds == pytest.approx(0.1 * base.time.compute_seconds)
    assert slow.time.step_seconds > base.time.step_seconds
    assert any(w.code == "stragglers" for w in slow.warnings)


def test_inference_moves_no_gradient_bytes() -> None:
    r = estimate(load_model("llama-8b"), load_topology("dgx-h100"), Options(dp=64, mode="inference", serving_batch=8))
    assert r.communication.bytes_sent_per_rank == 0
    assert r.communication.collectives == []
    assert r.inference is not None and r.inference.fits
    assert r.inference.tokens_per_second == pytest.approx(64 * r.inference.tokens_per_second_per_replica)
    assert r.inference.weights_bytes == pytest.approx(2 * 8.03e9, rel=1e-3)


def test_global_batch_held_fixed_derives_accumulation() -> None:
    model, topo = load_model("llama-8b"), load_topology("dgx-h100")
    for dp, accum in ((8, 64), (64, 8), (512, 1)):
        r = estimate(model, topo, Options(dp=dp, global_batch=512))
        assert (r.setup.accumulation, r.setup.global_batch) == (accum, 512)
    assert not any(
        w.code == "global-batch-growth" for w in estimate(model, topo, Options(dp=64, global_batch=512)).warnings
    )
    assert any("grows with DP" in w.message for w in estimate(model, topo, Options(dp=64)).warnings)


def test_efficiency_falls_as_dp_grows() -> None:
    model, topo = load_model("llama-70b"), load_topology("dgx-h100")
    eff = [estimate(model, topo, Options(dp=dp, zero=3)).time.scaling_efficiency for dp in (8, 64, 512, 4096)]  # type: ignore[union-attr]
    assert all(b < a for a, b in itertools.pairwise(eff)), eff


SMALL = {
    "name": "small-1b",
    "title": "Llama-like 1.2B",
    "architecture": {
        "hidden": 2048,
        "layers": 16,
        "heads": 32,
        "kv_heads": 8,
        "ffn": 8192,
        "vocab": 128256,
        "tied_embeddings": True,
    },
}


def test_auto_picks_the_fastest_plan_that_fits() -> None:
    """Sharding that spares full recomputation beats DDP with it; auto takes the fastest plan that fits."""
    from dpcost.specs import ModelSpec

    model, topo = ModelSpec.model_validate(SMALL), load_topology("dgx-h100")
    opts = dict(dp=8, micro_batch=2, seq_len=10240)  # DDP without recomputation just misses an H100's 79.11 GiB
    auto = estimate(model, topo, Options(**opts))  # type: ignore[arg-type]
    plans = {
        (z, rc): estimate(model, topo, Options(zero=z, recompute=rc, **opts))  # type: ignore[arg-type]
        for z in range(4)
        for rc in ("none", "selective", "op", "full")
    }
    fitting = {k: r.time.step_seconds for k, r in plans.items() if r.memory.stages[k[0]].fits and r.time}
    assert ("none" not in [rc for z, rc in fitting if z == 0]) and (0, "full") in fitting  # DDP needs recompute
    assert auto.time is not None
    assert auto.time.step_seconds == min(fitting.values())
    assert auto.setup.recompute == "none" and auto.time.step_seconds < fitting[(0, "full")]


def test_stage_1_2_parameter_gather_placement_by_recipe() -> None:
    """DeepSpeed all-gathers after the optimizer step (exposed); Megatron overlaps it with the next forward."""
    call = bandwidth_only(10e9)
    exposed = step_time(_plan(stage=1), call)
    overlapped = step_time(_plan(stage=1, overlap_param_gather=True), call)
    gather = 20e9 / 10e9
    assert exposed.step == pytest.approx(overlapped.step + gather - (overlapped.phases[0].duration - 1.0), rel=1e-9)
    assert exposed.ideal == overlapped.ideal  # the ideal overlaps it with the forward either way
    assert exposed.step > overlapped.step


def test_a_parameter_count_model_is_cut_into_its_largest_layers() -> None:
    from dpcost.specs import ModelSpec

    spec = ModelSpec(name="p70", title="70B", params=70e9, largest_layer_params=1e9)
    r = estimate(spec, load_topology("dgx-h100"), Options(dp=64, zero=3))
    assert r.time is not None
    assert r.communication.collectives[0].calls == 70
    assert r.time.step_seconds < r.time.serial_seconds  # gathers hide behind compute, block by block


def test_inference_that_cannot_hold_a_replica() -> None:
    r = estimate(load_model("deepseek-v3"), load_topology("dgx-h100"), Options(dp=8, mode="inference"))
    i = r.inference
    assert i is not None
    # 1.36 TB of weights and KV cache over 84.9 GB per H100 (79.11 GiB): 16 GPUs, more than DP 8 has
    assert i.gpus_per_replica == 16 and i.replicas == 0 and i.tokens_per_second == 0
    assert i.gpus_per_replica & (i.gpus_per_replica - 1) == 0
    assert any("cannot hold even one replica" in w.message for w in r.warnings)


def test_moe_decoding_reads_only_the_experts_its_tokens_touch() -> None:
    from dpcost.engine.params import count_params
    from dpcost.engine.serving import decode_weight_bytes

    spec = load_model("mixtral-8x7b")
    c = count_params(spec)
    dense = c.total - c.embedding  # the embedding table is read a row per token, not whole (untied head)
    one = decode_weight_bytes(c, spec.architecture, 1)
    assert one == pytest.approx(2 * (dense - dict(c.components)["routed experts"] * (1 - 2 / 8)))
    assert decode_weight_bytes(c, spec.architecture, 1024) == pytest.approx(2 * dense, rel=1e-6)


def test_global_batch_keeps_the_largest_micro_batch_that_divides() -> None:
    r = estimate(load_model("llama-8b"), load_topology("dgx-h100"), Options(dp=8, global_batch=96, micro_batch=5))
    assert (r.setup.micro_batch, r.setup.accumulation) == (4, 3)


def test_slowest_rank_wait_in_a_compute_bound_step_is_one_drift_over_the_whole_step() -> None:
    """Waits that find prefetch slack cost nothing and leave the ranks drifting: a step whose gathers hide with room
    to spare pays once, at the optimizer, jitter x sqrt(T_step) x E[max of N] (a random walk over the step)."""
    from dpcost.engine.step import Phase, expected_max_deviate, slowest_rank_wait

    j, n = 0.002, 512  # drift over the whole step (0.01 s at the slowest) stays under each wait's slack
    fwd = Phase("forward + all_gather", 1.0, 0.2, 1.0, 1, (), True, 32, slack=(1.0 - 0.2) / 32)
    bwd = Phase("backward + reduce_scatter", 2.0, 0.4, 2.0, 1, (), True, 33, slack=(2.0 - 0.4) / 33)
    assert slowest_rank_wait([fwd, bwd], j, n) == pytest.approx(j * math.sqrt(3.0) * expected_max_deviate(n))
    # cutting the same compute into four times as many units does not raise it
    finer = [replace(fwd, waits=128, slack=0.8 / 128), replace(bwd, waits=132, slack=1.6 / 132)]
    assert slowest_rank_wait(finer, j, n) <= slowest_rank_wait([fwd, bwd], j, n) * (1 + 1e-12)


def test_slowest_rank_wait_without_slack_is_paid_at_every_call() -> None:
    """A communication-bound pass (no slack) re-aligns the ranks at every wait: W x jitter x sqrt(T / W) x E[max]."""
    from dpcost.engine.step import Phase, expected_max_deviate, slowest_rank_wait

    j, n, w = 0.02, 64, 32
    bound = Phase("forward + all_gather", 1.0, 1.5, 1.5, 1, (), True, w, slack=0.0)
    got = slowest_rank_wait([bound], j, n)
    assert got == pytest.approx(w * j * math.sqrt(1.0 / w) * expected_max_deviate(n))
    assert slowest_rank_wait([bound], j, 1) == 0.0 and slowest_rank_wait([bound], 0.0, n) == 0.0


def test_slowest_rank_wait_charges_the_lateness_beyond_the_slack_once_it_exceeds_it() -> None:
    """Slack s per wait, segment t: the drift grows over the waits until it passes s^2 (in units of the slowest
    rank's deviation), which costs the excess, at most one segment past it, and re-aligns the ranks; the costly
    waits come one per s^2 + t of drift, counted continuously."""
    from dpcost.engine.step import Phase, expected_max_deviate, slowest_rank_wait

    j, n = 0.02, 256
    m = expected_max_deviate(n)
    t = 0.01
    slack = j * m * math.sqrt(2.5 * t)  # the drift passes it within the third wait
    ph = Phase("forward + all_gather", 6 * t, 0.0, 6 * t, 1, (), True, 6, slack=slack)
    period = 2.5 * t + t
    costly = (6 * t - 2.5 * t) / period  # 1.0: one wait's worth of drift beyond the slack
    expected = j * m * (costly * (math.sqrt(period) - math.sqrt(2.5 * t)) + math.sqrt(2.5 * t))  # + the end's
    assert slowest_rank_wait([ph], j, n) == pytest.approx(expected)
    # smooth: a little more jitter costs a little more
    assert slowest_rank_wait([ph], j * 1.001, n) == pytest.approx(slowest_rank_wait([ph], j, n), rel=0.01)


def _drain_bucket_by_bucket(
    compute: list[float], unit_bytes: list[float], edges: list[float], seconds: float
) -> tuple[float, float, int]:
    """The drain's definition, one bucket at a time: bucket k leaves at max(stream free, its last byte ready)."""
    t = done = produced = comm = 0.0
    k = 0
    for c, b in zip(compute, unit_bytes, strict=True):
        while k < len(edges) and edges[k] <= produced + b * (1 + 1e-12):
            ready = t + (c * (edges[k] - produced) / b if b > 0 else c)
            size = edges[k] - (edges[k - 1] if k else 0.0)
            done = max(done, ready) + seconds * size
            comm += seconds * size
            k += 1
        produced += b
        t += c
    return max(sum(compute), done), comm, k


@pytest.mark.parametrize("per_byte", [1e-12, 1e-10, 1e-9])  # compute-bound, balanced, communication-bound
def test_the_drain_in_runs_of_equal_buckets_is_the_drain_bucket_by_bucket(per_byte: float) -> None:
    """drain prices a run of equal buckets inside one unit in closed form: max(done + n s, r0 + n s,
    r0 + (n - 1) d + s); it must equal the definition taken bucket by bucket, whatever binds."""
    compute = [0.8, 1.3, 0.2, 2.0, 0.0, 1.1]
    unit_bytes = [7.5e9, 11.0e9, 0.5e9, 20.0e9, 0.0, 3.0e9]  # 84 buckets; the last unit ends on an edge
    total = sum(unit_bytes)
    edges = [5e8 * i for i in range(1, int(total // 5e8) + 1)] + [total]
    edges = [e for e in edges if e <= total]
    if edges[-1] != total:
        edges.append(total)
    d = drain(compute, unit_bytes, 5e8, lambda size: Call(per_byte * size, "ring"), edges=edges)
    duration, comm, calls = _drain_bucket_by_bucket(compute, unit_bytes, edges, per_byte)
    assert d.duration == pytest.approx(duration, rel=1e-9)
    assert d.comm == pytest.approx(comm, rel=1e-9)
    assert d.count == calls == len(edges)


def test_bucket_layouts_kept_per_setting_are_the_layouts_computed_afresh() -> None:
    """A sweep reuses one unit list under many bucket settings (Megatron's bucket grows with DP): the layout kept
    for each setting must be the one bucket_edges computes for it, and its runs must cover the buckets exactly."""
    units = tuple(Unit(params=p, compute_share=1 / 5, tensors=(p / 2, p / 2)) for p in (3e8, 1e9, 1e9, 1e9, 5e8))
    for bucket, first, rule in [(25 * 2**20, 2**20, "after"), (4e8, 0.0, ""), (25 * 2**20, 2**20, "after")]:
        edges, ends = _bucket_layout(units, 2.0, bucket, first, rule)
        assert edges == bucket_edges(units[::-1], 2.0, bucket, first, rule)
        assert ends == equal_runs(edges) and ends[-1] == len(edges)
        sizes = [b - a for a, b in itertools.pairwise([0.0, *edges])]
        for k, end in enumerate(ends):  # every bucket of a run has the size of the run's first
            assert all(abs(sizes[j] - sizes[k]) <= 1e-12 * sizes[k] * 2 for j in range(k, end))


def test_a_phase_lasting_another_duration_keeps_every_other_field() -> None:
    """Phase.lasting is dataclasses.replace(phase, duration=...), field for field (a field added to Phase and not
    to lasting would be dropped to its default)."""
    from dataclasses import fields, replace

    from dpcost.engine.step import Phase

    ph = Phase("backward", 1.0, 2.0, 3.0, 4, (("all_gather", 2.0),), False, 5, 0.25, 0.125, 0.5)
    assert ph.lasting(9.0) == replace(ph, duration=9.0)
    assert all(getattr(ph.lasting(9.0), f.name) == getattr(ph, f.name) for f in fields(Phase) if f.name != "duration")
    # the eleven fields above are all of Phase's: a new one must be added to `lasting` and here
    assert [f.name for f in fields(Phase)] == [
        "name", "compute", "comm", "duration", "repeats", "comm_by_op", "overlapped", "waits", "slack", "slowdown",
        "host",
    ]  # fmt: skip


def test_slowest_rank_wait_after_accumulated_micro_batches_is_one_drift_over_them() -> None:
    """Micro-batches accumulated without a call (no_sync) let the ranks drift apart; the first wait after them
    meets that whole drift once, jitter x sqrt(T) x E[max] for T the compute since the ranks last met, and
    re-aligns them. It was charged once per slack^2 + segment of that drift: 0.81 s where 0.07 s is due for a 1B
    model's 32 micro-batches on 8 GPUs (tests/reference/ultrascale-playbook)."""
    from dpcost.engine.step import Phase, expected_max_deviate, slowest_rank_wait

    j, n = 0.026, 8
    m = expected_max_deviate(n)
    no_sync = Phase("forward + backward (no_sync)", 0.075, 0.0, 0.075, 31, (), False, 0)
    last = Phase("backward + all_reduce", 0.05, 0.06, 0.065, 1, (), True, 1, slack=0.0)
    assert slowest_rank_wait([no_sync, last], j, n) == pytest.approx(j * m * math.sqrt(31 * 0.075 + 0.05))
    # the same compute in 8 micro-batches instead of 32 waits the same
    fewer = replace(no_sync, compute=0.075 * 31 / 7, repeats=7)
    assert slowest_rank_wait([fewer, last], j, n) == pytest.approx(slowest_rank_wait([no_sync, last], j, n))
    # many waits with little slack after the drift: the first meets all of it, sqrt(drift + t) where a drift of
    # s^2 would have paid sqrt(s^2 + t), and the waits go on as from s^2: one costly wait per s^2 + t of drift
    t, w = 0.025 / 18, 18
    gathers = Phase("forward + all_gather", 0.025, 0.02, 0.026, 1, (), True, w, slack=0.001)
    s = 0.001 / (j * m)  # the slack in units of the slowest rank's deviation
    period = s**2 + t
    costly = w * t / period
    left = s**2 + w * t - costly * period  # the drift the optimizer's end of step meets
    expected = math.sqrt(31 * 0.075 + t) - math.sqrt(period) + costly * (math.sqrt(period) - s) + math.sqrt(left)
    assert slowest_rank_wait([no_sync, gathers], j, n) == pytest.approx(j * m * expected)


def test_slowest_rank_wait_moves_smoothly_as_the_drift_passes_the_slack() -> None:
    """A little more compute before the waits costs a little more, on either side of the drift reaching slack^2
    (it had jumped down there: 0.0719 s of compute before four gathers cost 10.1 ms, 0.0719 s and a hair 4.9 ms)."""
    from dpcost.engine.step import Phase, expected_max_deviate, slowest_rank_wait

    j, n = 0.026, 8
    threshold = (0.01 / (j * expected_max_deviate(n))) ** 2  # the slack^2 of a 10 ms slack, in seconds of drift
    gathers = Phase("forward + all_gather", 0.004, 0.002, 0.004, 1, (), True, 4, slack=0.01)
    before, after = (Phase("no_sync", threshold + e, 0.0, threshold + e, 1, (), False, 0) for e in (-1e-7, 1e-7))
    below, above = slowest_rank_wait([before, gathers], j, n), slowest_rank_wait([after, gathers], j, n)
    assert below <= above == pytest.approx(below, rel=1e-4)
    # and as the compute between the waits shrinks to nothing (calls back to back)
    back_to_back = [Phase("no_sync", 0.5, 0.0, 0.5, 1, (), False, 0), replace(gathers, compute=0.0)]
    almost = [back_to_back[0], replace(gathers, compute=1e-9)]
    assert slowest_rank_wait(back_to_back, j, n) == pytest.approx(slowest_rank_wait(almost, j, n), rel=1e-4)
