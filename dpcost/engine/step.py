"""The training step as DDP/FSDP run it: micro-batches, gradient buckets, ZeRO-3 gathers, and what stays exposed.

Three answers side by side:
- serial: compute + every collective, nothing overlapped;
- ideal: each collective hidden behind the compute it can overlap with, T_eff = max(T_compute, T_comm) per
  window (the seed's T_eff = max(T_backward, T_allreduce); docs/sources/dp-zero-overlap.zh.md);
- bucketed: the schedule a framework really runs. Gradients become ready through the backward pass in reverse
  layer order and fill buckets of `bucket_bytes` (PyTorch DDP's bucket_cap_mb, 25 MiB); buckets go out one
  after another on one communication stream, so the ones ready last cannot hide. ZeRO-3/FSDP gathers each
  block's parameters before its forward and backward (the next one prefetched while the current computes) and
  reduce-scatters its gradients right after its backward (Zhao et al. 2023, "PyTorch FSDP", section 3.3).

Per stage (ZeRO paper, section 7; tests/reference/zero-paper-table1.csv): stage 0 all-reduces gradients;
stages 1-2 reduce-scatter gradients and all-gather the updated parameters once per step (after the optimizer
step as DeepSpeed does, or during the next forward as Megatron's --overlap-param-gather does); stage 3
all-gathers parameters in forward and again in backward and reduce-scatters gradients: 1.5x the volume. With
gradient accumulation over a micro-batches, stages 0-1 communicate once per step (DDP no_sync), after the last
backward; stages 2-3 reduce-scatter every micro-batch unless full gradients are kept (`keep_full_grads`, which
costs a full unsharded gradient of memory).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "Call",
    "Drain",
    "Phase",
    "StepPlan",
    "StepTime",
    "Traffic",
    "Unit",
    "drain",
    "gather_reduce",
    "step_time",
]


@dataclass(frozen=True)
class Call:
    """One NCCL call on the DP group: its time, and the algorithm/protocol it ran with."""

    seconds: float
    algorithm: str


CallTime = Callable[[str, float], Call]  # (op, message bytes) -> one call


@dataclass(frozen=True)
class Unit:
    """A piece of the model in forward order: its parameters and its share of a pass's compute."""

    params: float
    compute_share: float


@dataclass(frozen=True)
class StepPlan:
    stage: int
    accumulation: int
    forward: float  # seconds per micro-batch, stragglers included
    backward: float  # seconds per micro-batch, recomputation and stragglers included
    units: tuple[Unit, ...]
    grad_bytes: float
    weight_bytes: float
    bucket_bytes: float
    keep_full_grads: bool = False
    overlap_param_gather: bool = False  # stages 1-2: gather updated parameters during the next forward


@dataclass(frozen=True)
class Traffic:
    """One kind of collective in a step."""

    op: str
    purpose: str
    message_bytes: float  # bytes of one occurrence (e.g. the whole gradient)
    occurrences: int  # per step
    calls: int  # NCCL calls per step (buckets or blocks)
    seconds: float  # per step, the sum of its calls
    algorithms: tuple[tuple[str, int], ...] = ()  # (algorithm/protocol, calls per step), most calls first


@dataclass(frozen=True)
class Phase:
    """A stretch of compute and the communication that may overlap with it."""

    name: str
    compute: float
    comm: float
    duration: float  # as the bucketed schedule runs it
    repeats: int

    @property
    def ideal(self) -> float:
        return max(self.compute, self.comm)


@dataclass(frozen=True)
class StepTime:
    compute: float
    comm: float
    phases: tuple[Phase, ...]
    traffic: tuple[Traffic, ...]

    @property
    def step(self) -> float:
        """Bucketed: what the framework's schedule achieves."""
        return sum(p.duration * p.repeats for p in self.phases)

    @property
    def ideal(self) -> float:
        return sum(p.ideal * p.repeats for p in self.phases)

    @property
    def serial(self) -> float:
        return self.compute + self.comm

    @property
    def exposed(self) -> float:
        return max(0.0, self.step - self.compute)  # never below zero from rounding


@dataclass(frozen=True)
class Drain:
    """A backward pass with bucketed gradient reduction: how long it took, and what the buckets cost."""

    duration: float
    comm: float  # the buckets' calls, summed
    calls: tuple[Call, ...]


def drain(compute: Sequence[float], unit_bytes: Sequence[float], bucket: float, call: Callable[[float], Call]) -> Drain:
    """A backward pass whose gradients leave in buckets on one stream.

    Unit j produces unit_bytes[j] linearly over compute[j] seconds; bucket k is ready when the stream reaches
    min((k+1) x bucket, total) bytes and starts when both it is ready and the previous bucket is done. Buckets
    are cut from the flattened gradient (as FSDP and DeepSpeed flatten it; DDP also never splits a tensor)."""
    total = float(sum(unit_bytes))
    elapsed = sum(compute)
    if total <= 0:
        return Drain(elapsed, 0.0, ())
    n_buckets = math.ceil(total / bucket)
    t = done = produced = comm = 0.0
    calls: list[Call] = []
    for c, b in zip(compute, unit_bytes, strict=True):
        while len(calls) < n_buckets and min((len(calls) + 1) * bucket, total) <= produced + b * (1 + 1e-12):
            k = len(calls)
            edge = min((k + 1) * bucket, total)
            ready = t + (c * (edge - produced) / b if b > 0 else c)
            calls.append(call(edge - k * bucket))
            done = max(done, ready) + calls[-1].seconds
            comm += calls[-1].seconds
        produced += b
        t += c
    return Drain(max(elapsed, done), comm, tuple(calls))


def _algorithms(calls: Iterable[Call], times: int = 1) -> tuple[tuple[str, int], ...]:
    """Which algorithm/protocol the calls ran with, and how many calls each, most first."""
    return tuple((alg, n * times) for alg, n in Counter(c.algorithm for c in calls).most_common())


def gather_reduce(compute: Sequence[float], gathers: Sequence[float], reduces: Sequence[float]) -> float:
    """Duration of a pass over units that each need a gather before and a reduce after (FSDP's schedule).

    The gather of unit j+1 is issued when unit j starts computing (prefetch depth one); the reduce of unit j
    when it finishes. One communication stream serves them in the order they are issued."""
    free = 0.0  # when the communication stream is next idle
    end = 0.0  # when the previous unit's compute ended
    ready = gathers[0] if gathers else 0.0
    free = ready
    for j, c in enumerate(compute):
        start = max(end, ready)
        if j + 1 < len(compute):
            free = max(free, start) + gathers[j + 1]
            ready = free
        end = start + c
        if reduces[j] > 0:
            free = max(free, end) + reduces[j]
    return max(end, free)


def _compute_split(total: float, units: Sequence[Unit]) -> list[float]:
    return [total * u.compute_share for u in units]


def step_time(plan: StepPlan, call: CallTime) -> StepTime:
    """Serial, ideal and bucketed step times for one ZeRO stage (see the module docstring)."""
    if plan.accumulation < 1:
        raise ValueError("accumulation must be >= 1")
    units = plan.units
    a, stage = plan.accumulation, plan.stage
    grad_total = sum(u.params for u in units) * plan.grad_bytes
    weight_total = sum(u.params for u in units) * plan.weight_bytes
    fwd, bwd = plan.forward, plan.backward
    fwd_units, bwd_units = _compute_split(fwd, units), _compute_split(bwd, units)[::-1]
    phases: list[Phase] = []
    traffic: list[Traffic] = []

    def bucketed(op: str, purpose: str, occurrences: int) -> Phase:
        sizes = [u.params * plan.grad_bytes for u in units][::-1]
        d = drain(bwd_units, sizes, plan.bucket_bytes, lambda s: call(op, s))
        n = len(d.calls) * occurrences
        traffic.append(
            Traffic(op, purpose, grad_total, occurrences, n, d.comm * occurrences, _algorithms(d.calls, occurrences))
        )
        return Phase(f"backward + {op}", bwd, d.comm, d.duration, occurrences)

    if stage in (0, 1):
        if a > 1:
            phases.append(Phase("forward + backward (no_sync)", fwd + bwd, 0.0, fwd + bwd, a - 1))
        if stage == 1:
            phases.append(_gathered_forward(plan, fwd_units, call, traffic))
        else:
            phases.append(Phase("forward", fwd, 0.0, fwd, 1))
        phases.append(bucketed("all_reduce" if stage == 0 else "reduce_scatter", "gradients", 1))
    elif stage == 2:
        phases.append(_gathered_forward(plan, fwd_units, call, traffic))
        if a > 1:
            phases.append(Phase("forward", fwd, 0.0, fwd, a - 1))
        if plan.keep_full_grads and a > 1:
            phases.append(Phase("backward (full gradients kept)", bwd, 0.0, bwd, a - 1))
            phases.append(bucketed("reduce_scatter", "gradients", 1))
        else:
            phases.append(bucketed("reduce_scatter", "gradients", a))
    else:
        gather_calls = [call("all_gather", u.params * plan.weight_bytes) for u in units]
        reduce_calls = [call("reduce_scatter", u.params * plan.grad_bytes) for u in units]
        gathers = [c.seconds for c in gather_calls]
        reduces = [c.seconds for c in reduce_calls]
        ag = sum(gathers)
        rs = sum(reduces)
        fwd_duration = gather_reduce(fwd_units, gathers, [0.0] * len(units))
        phases.append(Phase("forward + all_gather", fwd, ag, fwd_duration, a))
        bwd_gathers = gathers[::-1]
        with_rs = gather_reduce(bwd_units, bwd_gathers, reduces[::-1])
        rs_times = 1 if plan.keep_full_grads else a
        if rs_times < a:
            without = gather_reduce(bwd_units, bwd_gathers, [0.0] * len(units))
            phases.append(Phase("backward + all_gather", bwd, ag, without, a - rs_times))
        phases.append(Phase("backward + all_gather + reduce_scatter", bwd, ag + rs, with_rs, rs_times))
        n = len(units)
        ag_algs, rs_algs = _algorithms(gather_calls, a), _algorithms(reduce_calls, rs_times)
        traffic.append(Traffic("all_gather", "parameters (forward)", weight_total, a, n * a, ag * a, ag_algs))
        traffic.append(Traffic("all_gather", "parameters (backward)", weight_total, a, n * a, ag * a, ag_algs))
        traffic.append(
            Traffic("reduce_scatter", "gradients", grad_total, rs_times, n * rs_times, rs * rs_times, rs_algs)
        )
    compute = a * (fwd + bwd)
    comm = sum(t.seconds for t in traffic)
    return StepTime(compute=compute, comm=comm, phases=tuple(phases), traffic=tuple(traffic))


def _gathered_forward(plan: StepPlan, fwd_units: list[float], call: CallTime, traffic: list[Traffic]) -> Phase:
    """Stages 1-2: the updated parameter shards are all-gathered once per step. DeepSpeed (and so the ZeRO
    paper's own implementation) gathers them at the end of the optimizer step, before the next forward can
    start: nothing hides them. Megatron's distributed optimizer (--overlap-param-gather) gathers them block by
    block during the next forward instead. The ideal overlaps them with that forward either way."""
    calls = [call("all_gather", u.params * plan.weight_bytes) for u in plan.units]
    gathers = [c.seconds for c in calls]
    weight_total = sum(u.params for u in plan.units) * plan.weight_bytes
    ag = sum(gathers)
    traffic.append(Traffic("all_gather", "updated parameters", weight_total, 1, len(gathers), ag, _algorithms(calls)))
    if plan.overlap_param_gather:
        duration = gather_reduce(fwd_units, gathers, [0.0] * len(gathers))
        return Phase("forward + all_gather (overlapped)", plan.forward, ag, duration, 1)
    return Phase("optimizer all_gather, then forward", plan.forward, ag, ag + plan.forward, 1)
