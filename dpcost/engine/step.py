"""The training step as frameworks run it: micro-batches, gradient buckets or per-unit collectives, parameter
gathers, what stays exposed, and what real runs lose as GPUs are added.

Three answers side by side:
- serial: compute + every collective, nothing overlapped;
- ideal: each collective hidden behind the compute it can overlap with, T_eff = max(T_compute, T_comm) per
  window (the seed's T_eff = max(T_backward, T_allreduce); docs/sources/dp-zero-overlap.zh.md);
- step: the schedule the framework really runs (frameworks.py). Gradients become ready through the backward
  pass in reverse layer order and leave in buckets (DDP's 25 MiB after a 1 MiB first one, DeepSpeed's 5e8
  elements, Megatron's max(40M, 1M x DP)) on one communication stream, so the ones ready last cannot hide; or,
  in FSDP, per wrapped unit right after its backward. Sharded parameters are gathered per unit before its
  forward (and, under FULL_SHARD, again before its backward), the next one prefetched while the current computes
  (Zhao et al. 2023, "PyTorch FSDP", section 3.3). A framework that does not overlap its gradient reduction
  (DeepSpeed stages 1-2 by default) runs it on the compute stream: nothing hides.

The collectives each ZeRO stage and framework issues, and when, are a schedule written as data (dp_schedule.py);
this module prices it.

What real runs lose beyond the schedule (each term in the step's breakdown, each with its own flag):
- per-call latency and ramp at high rank counts: in every call's time (collectives.py);
- compute slowed while collectives run: NCCL's kernels occupy one SM per channel, so the compute that overlaps a
  call runs on the SMs left, slower by Call.slowdown (channels / (SMs - channels): nccl_channels.py), for as long
  as they overlap; a phase bound by its communication hides that slowed compute, which then only shortens the time
  it waits;
- synchronisation jitter: a collective completes when its slowest rank arrives. Each rank's compute drifts like
  a random walk (independent noise per kernel adds in variance), `sync_jitter` x sqrt(T) one standard deviation
  after T seconds of compute since the ranks last met; the slowest of N is Blom's Phi^-1((N - 0.375) / (N + 0.25))
  deviations late. A wait (before a gathered unit, at the end of a gradient reduction, before a stretch of calls
  that does not overlap) costs only the lateness beyond its prefetch slack, the compute left over after the
  prefetched call, and re-aligns the ranks only when it costs; the step's end always does. So a compute-bound
  phase pays about once per step, sqrt(T_step), and a communication-bound one at every call, each sqrt(T_unit).
- the slowest GPU's sustained rate: busy GPUs do not sustain one rate (a node's shared power and cooling, and
  each chip's own voltage-frequency curve), and every collective waits for the slowest. Of N busy GPUs it loses
  about node_drop + gpu_spread x Blom's largest of N deviates of its alone-measured rate (engine/rates.py, measured
  on one node of 8 and extended to N as normal deviates), and its compute on the critical path runs 1 / (1 - loss)
  as long (rates.slowest_gpu_loss).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from functools import lru_cache
from statistics import NormalDist

from dpcost.engine.dp_schedule import (
    AFTER_UNIT,
    BACKWARD,
    BEFORE_PASS,
    BEFORE_UNIT,
    BUCKETS,
    FORWARD,
    FORWARD_BACKWARD,
    NO_COMPUTE,
    OPTIMIZER,
    Collective,
    Stretch,
    dp_schedule,
)
from dpcost.engine.memo import cached_property
from dpcost.engine.synchronous_fetch import gathered_tensors, reduced_tensors
from dpcost.frozen import frozen

__all__ = [
    "BUBBLE",
    "COMPUTE",
    "EXPOSED",
    "JITTER",
    "LOSSES",
    "SLOWDOWN",
    "SLOWEST_GPU",
    "Call",
    "Drain",
    "Phase",
    "StepPlan",
    "StepTime",
    "Term",
    "Traffic",
    "Unit",
    "bucket_edges",
    "drain",
    "expected_max_deviate",
    "gather_reduce_runs",
    "schedule_of",
    "slowdown_of",
    "step_time",
]


@frozen
class Call:
    """One NCCL call on the DP group: its time, the algorithm/protocol it ran with, and how much slower compute runs
    beside it (on the SMs its kernel leaves: nccl_channels.compute_slowdown, or --overlap-slowdown)."""

    seconds: float
    algorithm: str
    slowdown: float = 0.0
    # the calls it is made of, in issue order, where it is several on one stream: under hybrid sharding a gradient
    # reduce-scatter in the shard group, then its shard's all-reduce across the replicas (plan.call_time)
    parts: tuple[Call, ...] = ()
    op: str = ""  # a part's own collective (empty: the op the call was asked for)


CallTime = Callable[[str, float], Call]  # (op, message bytes) -> one call


@frozen
class Unit:
    """A piece of the model in forward order: its parameters and its share of a pass's compute."""

    params: float
    compute_share: float
    tensors: tuple[float, ...] = ()  # its weight tensors' sizes, forward order (empty: not known, cut anywhere)
    vectors: int = 0  # how many small tensors its last one stands for (params.block_vectors; 0: it is one)
    # Its weights are linear layers that a float8 recipe converts, and so gathers in fp8; the embedding and the
    # output head are not (torchtitan/components/float8.py: the output layer is excluded, embeddings are not Linear).
    linear: bool = True


@frozen
class StepPlan:
    stage: int
    accumulation: int
    forward: float  # seconds per micro-batch, stragglers included
    backward: float  # seconds per micro-batch, recomputation and stragglers included
    units: tuple[Unit, ...]
    grad_bytes: float  # per parameter, as the gradient reduction moves it
    weight_bytes: float  # per parameter, as the gathers move it
    bucket_bytes: float
    keep_full_grads: bool = False
    overlap_param_gather: bool = False  # stages 1-2: gather updated parameters during the next forward
    first_bucket_bytes: float = 0.0  # DDP caps its first bucket so that communication starts early
    per_unit: bool = False  # FSDP: reduce (and, at stages 0 and 2, gather) per unit instead of in buckets
    gather_calls: int = 0  # stages 1-2: the updated parameters gathered in this many calls (0: per unit)
    bucket_op: str = "reduce_scatter"  # stages 1-2: the collective each gradient bucket runs
    # How buckets take whole tensors: "after" closes a bucket once it reaches its cap (DDP, Megatron), "before"
    # flushes it before a tensor would overflow it (DeepSpeed); "" cuts the flattened gradient anywhere.
    bucket_rule: str = ""
    unconverted_weight_bytes: float = 0.0  # what a non-linear unit is gathered in under fp8 gathers (0: weight_bytes)
    stage3_reduce_bucket_bytes: float = 0.0  # stage 3: gradients leave in buckets this size (0: one call per unit)
    overlap_grad_reduce: bool = True  # False: the gradient reduction runs on the compute stream (DeepSpeed 1-2)
    ranks: int = 1
    sync_jitter: float = 0.0  # a rank's drift: one standard deviation after one second of compute (s / sqrt(s))
    optimizer: float = 0.0  # seconds of the optimizer step, once per step, on the compute stream
    slowest_gpu: float = 0.0  # the share of its rate the slowest GPU loses (rates.slowest_gpu_loss)
    # stage 3 a call a parameter, unit by unit, each list call's host loop (list_host_seconds a rank) waited for
    # (synchronous_fetch.py); `regathers`: the backward's recomputation fetches each unit again
    synchronous_fetch: bool = False
    list_host_seconds: float = 0.0
    regathers: bool = False


@frozen
class Traffic:
    """One kind of collective in a step."""

    op: str
    purpose: str
    message_bytes: float  # bytes of one occurrence (e.g. the whole gradient)
    occurrences: int  # per step
    calls: int  # NCCL calls per step (buckets or blocks)
    seconds: float  # per step, the sum of its calls
    priced: tuple[tuple[Call, int], ...] = ()  # one occurrence's calls, as (call, how many in a row)

    @cached_property
    def algorithms(self) -> tuple[tuple[str, int], ...]:
        """(algorithm/protocol, calls per step), most calls first: read by the report only."""
        return _counted_algorithms(self.priced, self.occurrences)

    def part(self, index: int) -> tuple[float, tuple[tuple[str, int], ...]]:
        """One part of each of its calls (Call.parts: under hybrid sharding 0 the reduce-scatter, 1 the replica
        all-reduce): its seconds per step, and its algorithms as `algorithms` counts them."""
        parts = [(c.parts[index], n) for c, n in self.priced]
        return sum(c.seconds * n for c, n in parts) * self.occurrences, _counted_algorithms(parts, self.occurrences)


@frozen
class Phase:
    """A stretch of compute and the communication that may overlap with it."""

    name: str
    compute: float
    comm: float
    duration: float  # as the framework's schedule runs it
    repeats: int
    comm_by_op: tuple[tuple[str, float], ...] = ()  # the comm seconds of each op within this phase
    overlapped: bool = True  # the phase's collectives run alongside its compute
    waits: int = 0  # times the compute waits on a collective (each waits for the slowest rank), per repeat
    slack: float = 0.0  # seconds a rank may run late at each wait before anyone waits (prefetch slack)
    slowdown: float = 0.0  # of the compute beside its calls: theirs, weighted by their seconds
    host: float = 0.0  # seconds the device waits for the host, neither compute nor a call (synchronous_fetch.py)

    @property
    def ideal(self) -> float:
        return max(self.compute + self.host, self.comm)

    def lasting(self, duration: float) -> Phase:
        """The phase with another duration (dataclasses.replace, without its per-call field lookup: a plan's step
        rebuilds each phase once)."""
        return Phase(self.name, self.compute, self.comm, duration, self.repeats, self.comm_by_op, self.overlapped,
                     self.waits, self.slack, self.slowdown, self.host)  # fmt: skip


COMPUTE = "compute"
EXPOSED = "exposed "  # + the collective
SLOWDOWN = "compute slowed by overlapping collectives"
JITTER = "waiting for the slowest rank (synchronisation jitter)"
SLOWEST_GPU = "waiting for the slowest GPU's sustained rate"
BUBBLE = "pipeline bubble"  # a layout's: its pipeline's idle slots (layout_step.bubble_seconds)
HOST_WAIT = "waiting for the host to launch the MoE layers"  # a layout's: host.py
HOST_LISTS = "waiting for the host to build each list collective (a view and a copy a rank)"  # synchronous_fetch.py


LOSSES = (SLOWDOWN, JITTER, SLOWEST_GPU)  # the terms that are losses at scale, beyond the schedule


@frozen
class Term:
    """One part of the step's time: compute, a collective's exposed time, or a loss at scale."""

    term: str
    seconds: float


@frozen
class StepTime:
    compute: float
    comm: float
    phases: tuple[Phase, ...]
    traffic: tuple[Traffic, ...]
    breakdown: tuple[Term, ...] = field(default=())
    overlapped: float = 0.0  # seconds of compute that ran beside a call
    schedule: tuple[Stretch, ...] = ()  # what was priced (dp_schedule)

    @property
    def overlap_slowdown(self) -> float:
        """How much slower the compute beside the calls ran, on average: the slowdown term over that compute."""
        slowed = sum(t.seconds for t in self.breakdown if t.term == SLOWDOWN)
        return slowed / self.overlapped if self.overlapped > 0 else 0.0

    @property
    def step(self) -> float:
        """What the framework's schedule achieves, the losses at scale included: the breakdown's sum."""
        return sum(t.seconds for t in self.breakdown)

    @property
    def ideal(self) -> float:
        return sum(p.ideal * p.repeats for p in self.phases)

    @property
    def serial(self) -> float:
        """Compute, every call and the host's waits (HOST_LISTS) one after the other."""
        return self.compute + self.comm + self.host

    @property
    def host(self) -> float:
        """Seconds the device waits for the host (synchronous_fetch.py)."""
        return sum(t.seconds for t in self.breakdown if t.term == HOST_LISTS)

    @property
    def exposed(self) -> float:
        """Communication the compute waits for, the losses at scale apart."""
        return sum(t.seconds for t in self.breakdown if t.term.startswith(EXPOSED))

    @property
    def losses(self) -> float:
        """What the step loses beyond its schedule: overlap slowdown, synchronisation jitter and the slowest GPU.
        Summed from those terms, not taken as step - compute - exposed, whose cancellation leaves -1e-14 s where
        nothing is lost."""
        return sum(t.seconds for t in self.breakdown if t.term in LOSSES)


@frozen
class Drain:
    """A backward pass with bucketed gradient reduction: how long it took, and what the buckets cost."""

    duration: float
    comm: float  # the buckets' calls, summed
    runs: tuple[tuple[Call, int], ...]  # the calls in order: each priced call and the buckets in a row it served

    @property
    def count(self) -> int:
        """How many calls (buckets) the pass issued."""
        return sum(n for _, n in self.runs)


@lru_cache(maxsize=1024)  # asked once per timed step, for the same few group sizes
def expected_max_deviate(n: int) -> float:
    """The expected largest of n standard normal deviates (Blom 1958: Phi^-1((n - 0.375) / (n + 0.25)))."""
    return NormalDist().inv_cdf((n - 0.375) / (n + 0.25)) if n > 1 else 0.0


def bucket_edges(
    units: Sequence[Unit], grad_bytes: float, bucket: float, first_bucket: float = 0.0, rule: str = ""
) -> list[float]:
    """Where the buckets end, in bytes of the gradient in the order it becomes ready (`units` in backward order,
    each unit's tensors last to first). With a `rule`, buckets take whole tensors (module docstring of StepPlan's
    bucket_rule; DDP: torch/csrc/distributed/c10d/reducer.cpp@v2.5.0 compute_bucket_assignment_by_size; Megatron:
    param_and_grad_buffer.py; DeepSpeed: stage_1_and_2.py reduce_independent_p_g_buckets_and_remove_grads);
    without one, or for a unit whose tensors are not known, the flattened gradient is cut anywhere."""
    total = sum(u.params for u in units) * grad_bytes
    edges: list[float] = []
    if total <= 0:
        return edges

    def cap() -> float:
        return first_bucket if first_bucket > 0 and not edges else bucket

    start = held = 0.0  # where the open bucket starts, and the bytes in it
    for u in units:
        for t in u.tensors[::-1] if rule and u.tensors else (u.params,):
            size = t * grad_bytes
            if not (rule and u.tensors):  # cut anywhere: fill the open bucket, then whole buckets
                limit = cap()  # after any edge, the bucket
                while held + size >= limit - 1e-9 * limit:
                    take = limit - held
                    start = start + held + take
                    edges.append(start)
                    held, size, limit = 0.0, size - take, bucket
                held += size
                continue
            if rule == "before" and held > 0 and held + size > cap():
                edges.append(start + held)
                start, held = edges[-1], 0.0
            held += size
            if rule == "after" and held >= cap():
                edges.append(start + held)
                start, held = edges[-1], 0.0
    if held > 1e-9 * total or not edges:
        edges.append(total)
    edges[-1] = total
    return edges


_LAYOUTS_KEPT = 256
_layouts: dict[tuple[int, float, float, float, str], tuple[tuple[Unit, ...], list[float], list[int]]] = {}
_runs: dict[int, tuple[tuple[Unit, ...], tuple[tuple[Unit, int], ...]]] = {}


def _bucket_layout(
    units: tuple[Unit, ...], grad_bytes: float, bucket: float, first_bucket: float, rule: str
) -> tuple[list[float], list[int]]:
    """bucket_edges over the backward order of `units`, and equal_runs of them, computed once per unit list and
    bucket setting: every plan of a sweep or a search on one model drains the same thousands of buckets."""
    key = (id(units), grad_bytes, bucket, first_bucket, rule)
    found = _layouts.get(key)
    if found is None:
        if len(_layouts) >= _LAYOUTS_KEPT:
            _layouts.clear()
        edges = bucket_edges(units[::-1], grad_bytes, bucket, first_bucket, rule)
        # the entry holds `units`, so no other tuple can take its id while it is kept
        found = _layouts[key] = (units, edges, equal_runs(edges))
    return found[1], found[2]


def drain(
    compute: Sequence[float],
    unit_bytes: Sequence[float],
    bucket: float,
    call: Callable[[float], Call],
    first_bucket: float = 0.0,
    edges: Sequence[float] | None = None,
    run_ends: Sequence[int] | None = None,
) -> Drain:
    """A backward pass whose gradients leave in buckets on one stream.

    Unit j produces unit_bytes[j] linearly over compute[j] seconds; the buckets cover the gradient in order,
    ending at `edges` (bucket_edges: whole tensors, as the frameworks fill them) or, without them, cut from the
    flattened gradient (the first one `first_bucket` bytes when given, the rest `bucket`); bucket k goes out when
    both its last byte is ready and the previous bucket is done."""
    total = float(sum(unit_bytes))
    elapsed = sum(compute)
    if total <= 0:
        return Drain(elapsed, 0.0, ())
    if edges is None:
        first = min(first_bucket, total) if first_bucket > 0 else min(bucket, total)
        edges = [first]
        while edges[-1] < total * (1 - 1e-12):
            edges.append(min(edges[-1] + bucket, total))
    ends = equal_runs(edges) if run_ends is None else run_ends
    t = done = produced = comm = 0.0
    runs: list[tuple[Call, int]] = []
    k = 0  # the next bucket
    for c, b in zip(compute, unit_bytes, strict=True):
        last = bisect_right(edges, produced + b * (1 + 1e-12), lo=k)  # the buckets this unit completes
        while k < last:
            size = edges[k] - (edges[k - 1] if k else 0.0)
            run = min(ends[k], last)  # a run of buckets of one size, ready evenly through the unit
            n, priced = run - k, call(size)
            ready = t + (c * (edges[k] - produced) / b if b > 0 else c)
            step = c * size / b if b > 0 else 0.0  # between their ready times
            # bucket i leaves at max(done, ready_i) + s: after n, the latest of the stream's own pace and of
            # each bucket's ready time plus the calls after it, which is largest at the first or the last
            s = priced.seconds
            done = max(done + n * s, ready + n * s, ready + (n - 1) * step + s)
            comm += n * s
            runs.append((priced, n))
            k = run
        produced += b
        t += c
    return Drain(max(elapsed, done), comm, tuple(runs))


def equal_runs(edges: Sequence[float]) -> list[int]:
    """For each bucket k, where the run of equal buckets it belongs to ends (exclusive): sizes within 1e-12 of the
    run's first, as sums of floats leave them. drain() prices such a run at once."""
    ends = [0] * len(edges)
    start, size = 0, edges[0] if edges else 0.0
    for j in range(1, len(edges) + 1):
        if j < len(edges) and abs(edges[j] - edges[j - 1] - size) <= 1e-12 * size:
            continue
        ends[start:j] = [j] * (j - start)
        if j < len(edges):
            start, size = j, edges[j] - edges[j - 1]
    return ends


def _counted_algorithms(runs: Iterable[tuple[Call, int]], times: int = 1) -> tuple[tuple[str, int], ...]:
    """Which algorithm/protocol the calls ran with, and how many calls each, most first (calls given as (call, how
    many in a row))."""
    counts: Counter[str] = Counter()
    for c, n in runs:
        counts[c.algorithm] += n
    return tuple((alg, n * times) for alg, n in counts.most_common())


def seconds_by_op(op: str, calls: Iterable[tuple[Call, int]]) -> tuple[tuple[str, float], ...]:
    """The seconds of calls issued as `op` (given as (call, how many)), by the collective each ran: a call made of
    parts (Call.parts) counts each part under its own op, so that the breakdown names what was exposed."""
    seconds: dict[str, float] = {}
    for c, n in calls:
        for part in c.parts or (c,):
            ran = part.op or op
            seconds[ran] = seconds.get(ran, 0.0) + part.seconds * n
    return tuple(seconds.items()) or ((op, 0.0),)


def slowdown_of(calls: Iterable[tuple[Call, int]]) -> float:
    """How much slower a stretch of calls makes the compute beside them: their slowdowns weighted by their seconds
    (calls given as (call, how many))."""
    seconds = sum(c.seconds * n for c, n in calls)
    return sum(c.seconds * n * c.slowdown for c, n in calls) / seconds if seconds > 0 else 0.0


def gather_reduce_runs(runs: Sequence[tuple[float, float, float, int]]) -> float:
    """Duration of a pass over units that each need a gather before and a reduce after (FSDP's schedule), given as
    runs of equal units, (compute, gather, reduce, how many in a row), in pass order.

    The gather of unit j+1 is issued when unit j starts computing (prefetch depth one); the reduce of unit j
    when it finishes. One communication stream serves them in the order they are issued.

    Within a run the schedule settles into a period: once one unit moves every event time (the compute's end, the
    parameters' arrival, the stream's idle time) by the same d, every later equal unit does too, since shifting all
    of a unit's inputs by d shifts its outputs by d (the recurrence is built of max and +). The rest of the run is
    then d apiece, bar its last unit, which prefetches the next run's gather."""
    # comparisons instead of max(): a plan search runs this loop for every plan (issue 20)
    end = 0.0  # when the previous unit's compute ended
    ready = free = runs[0][1] if runs else 0.0  # when the unit's parameters arrive; when the stream is idle
    last = len(runs) - 1
    for i, (c, g, r, n) in enumerate(runs):
        after = runs[i + 1][1] if i < last else None  # the gather the run's last unit prefetches
        k = 0
        while k < n:
            nxt = g if k < n - 1 else after
            before = (end, ready, free)
            start = ready if ready > end else end
            if nxt is not None:
                free = (start if start > free else free) + nxt
                ready = free
            end = start + c
            if r > 0:
                free = (end if end > free else free) + r
            k += 1
            left = n - 1 - k  # equal units still to come before the run's last
            if left > 0:
                d = end - before[0]
                if abs(ready - before[1] - d) <= 1e-12 * d and abs(free - before[2] - d) <= 1e-12 * d:
                    end, ready, free = end + d * left, ready + d * left, free + d * left
                    k += left
    return end if end > free else free


def unit_runs(units: tuple[Unit, ...]) -> tuple[tuple[Unit, int], ...]:
    """The units as runs of equal ones, (unit, how many in a row), in forward order: a model's identical blocks,
    which the per-unit passes price once a run. Computed once per unit list, as _bucket_layout is."""
    found = _runs.get(id(units))
    if found is None:
        if len(_runs) >= _LAYOUTS_KEPT:
            _runs.clear()
        runs: list[tuple[Unit, int]] = []
        for u in units:
            if runs and (runs[-1][0] is u or runs[-1][0] == u):
                runs[-1] = (u, runs[-1][1] + 1)
            else:
                runs.append((u, 1))
        # the entry holds `units`, so no other tuple can take its id while it is kept
        found = _runs[id(units)] = (units, tuple(runs))
    return found[1]


def _expanded(runs: Iterable[tuple[float, int]]) -> list[float]:
    return [v for v, n in runs for _ in range(n)]


class _Schedule:
    """Prices a dp_schedule stretch by stretch into phases and traffic. The per-unit passes go run by run
    (unit_runs)."""

    def __init__(self, plan: StepPlan, call: CallTime) -> None:
        self.plan, self.call = plan, call
        self.runs = unit_runs(plan.units)
        self.fwd_runs = [(plan.forward * u.compute_share, n) for u, n in self.runs]
        self.bwd_runs = [(plan.backward * u.compute_share, n) for u, n in reversed(self.runs)]
        self.grad_total = sum(u.params * n for u, n in self.runs) * plan.grad_bytes
        self.weight_total = sum(u.params * n * self.gathered_bytes(u) for u, n in self.runs)
        self.units = sum(n for _, n in self.runs)
        self.phases: list[Phase] = []
        # per (op, purpose), in the order first issued: one occurrence's (message, calls, seconds, priced runs), and
        # the occurrences per step
        self.issued: dict[tuple[str, str], tuple[float, int, float, Sequence[tuple[Call, int]]]] = {}
        self.occurrences: Counter[tuple[str, str]] = Counter()
        self._gathers: list[tuple[Call, int]] | None = None

    def run(self, stretch: Stretch) -> None:
        """Price one stretch of the schedule: its phases, and its calls' traffic."""
        p, calls = self.plan, stretch.calls
        if not calls:
            if stretch.compute == OPTIMIZER:
                if p.optimizer > 0:
                    self.compute_only(stretch.name, p.optimizer, stretch.repeats)
            else:
                seconds = {FORWARD: p.forward, BACKWARD: p.backward, FORWARD_BACKWARD: p.forward + p.backward}
                self.compute_only(stretch.name, seconds[stretch.compute], stretch.repeats)
            return
        for c in calls:
            self.occurrences[c.op, c.purpose] += stretch.repeats
        whens = {c.when for c in calls}
        if p.synchronous_fetch and whens & {BEFORE_UNIT, AFTER_UNIT}:
            self.per_parameter(stretch)
        elif BUCKETS in whens:
            self.bucketed(stretch, calls[0])
        elif BEFORE_PASS in whens:
            self.gathered_before_pass(stretch, calls[0])
        elif AFTER_UNIT in whens:
            self.per_unit_reductions(stretch)
        else:  # every unit's parameters gathered before its compute
            gathers = self.gathers(calls[0])
            runs = self.fwd_runs if stretch.compute == FORWARD else self.bwd_runs
            in_order = gathers if stretch.compute == FORWARD else gathers[::-1]
            self.gathered(stretch.name, runs, in_order, stretch.repeats)

    def traffic(self) -> tuple[Traffic, ...]:
        """Each kind of collective's calls and seconds per step: one occurrence's times its occurrences."""
        out = []
        for (op, purpose), (message, count, seconds, runs) in self.issued.items():
            n = self.occurrences[op, purpose]
            out.append(Traffic(op, purpose, message, n, count * n, seconds * n, tuple(runs)))
        return tuple(out)

    def _issue(
        self, c: Collective, message: float, runs: Sequence[tuple[Call, int]], seconds: float | None = None
    ) -> None:
        """Record the first occurrence of `c`'s calls: their bytes, count and seconds (summed over `runs` unless
        given)."""
        if (c.op, c.purpose) not in self.issued:
            if seconds is None:
                seconds = sum(call.seconds * n for call, n in runs)
            self.issued[c.op, c.purpose] = (message, sum(n for _, n in runs), seconds, runs)

    def compute_only(self, name: str, seconds: float, repeats: int) -> None:
        if repeats > 0:
            self.phases.append(Phase(name, seconds, 0.0, seconds, repeats))

    def gathered_bytes(self, u: Unit) -> float:
        """Bytes per parameter the unit's gather moves: fp8 gathers convert only linear layers."""
        p = self.plan
        return p.weight_bytes if u.linear or not p.unconverted_weight_bytes else p.unconverted_weight_bytes

    def gathers(self, c: Collective) -> list[tuple[Call, int]]:
        """Each run's gather, forward order, as (call, units in the run), priced once per step; the traffic of
        `c` that they make."""
        if self._gathers is None:
            call, bytes_of = self.call, self.gathered_bytes
            self._gathers = [(call("all_gather", u.params * bytes_of(u)), n) for u, n in self.runs]
        self._issue(c, self.weight_total, self._gathers)
        return self._gathers

    def bucketed(self, stretch: Stretch, c: Collective) -> None:
        """Gradients reduced in buckets through the backward pass (or after it, when not overlapped)."""
        p, op = self.plan, c.op
        sizes = [u.params * p.grad_bytes for u in p.units][::-1]
        edges, ends = _bucket_layout(p.units, p.grad_bytes, p.bucket_bytes, p.first_bucket_bytes, p.bucket_rule)
        call = self.call
        compute = _expanded(self.bwd_runs)
        d = drain(compute, sizes, p.bucket_bytes, lambda s: call(op, s), p.first_bucket_bytes, edges, ends)
        self._issue(c, self.grad_total, d.runs, d.comm)
        overlapped = stretch.overlapped
        duration = d.duration if overlapped else p.backward + d.comm
        waits = 1  # overlapped: the optimizer waits for the last bucket; else the stretch of calls after the pass
        self.phases.append(
            Phase(
                stretch.name,
                p.backward,
                d.comm,
                duration,
                stretch.repeats,
                seconds_by_op(op, d.runs),
                overlapped,
                waits,
                slowdown=slowdown_of(d.runs),
            )
        )

    def per_unit_reductions(self, stretch: Stretch) -> None:
        """Each unit's gradients reduced after its backward (FSDP; ZeRO-3), its parameters gathered first when the
        stretch gathers (FULL_SHARD, ZeRO-3: the forward's gathers). ZeRO-3 with a reduce bucket (DeepSpeed) groups
        consecutive units' gradients into one call once the bucket is full. A stretch without compute runs the
        reductions on the compute stream, after the pass: one stretch of calls."""
        p = self.plan
        reduce = next(c for c in stretch.calls if c.when == AFTER_UNIT)
        gather = next((c for c in stretch.calls if c.when == BEFORE_UNIT), None)
        op, occurrences = reduce.op, stretch.repeats
        compute = self.bwd_runs
        sizes = [(u.params * p.grad_bytes, n) for u, n in reversed(self.runs)]
        gathers = self.gathers(gather) if gather else None
        back = gathers[::-1] if gathers else None
        if p.stage == 3 and p.stage3_reduce_bucket_bytes > 0:  # buckets cut runs: unit by unit
            bucketed = _bucketed_at_units(_expanded(sizes), p.stage3_reduce_bucket_bytes)
            sizes, compute = [(b, 1) for b in bucketed], [(c, 1) for c in _expanded(compute)]
            back = [(c, 1) for c, n in back for _ in range(n)] if back else None
        issued = [(self.call(op, b) if b > 0 else None, n) for b, n in sizes]  # (its call, units), backward order
        calls = [(c, n) for c, n in issued if c is not None]
        rs_total = sum(c.seconds * n for c, n in calls)
        self._issue(reduce, self.grad_total, calls, rs_total)
        by_reduction = seconds_by_op(op, calls)
        if stretch.compute == NO_COMPUTE:
            serial = by_reduction
            self.phases.append(Phase(stretch.name, 0.0, rs_total, rs_total, occurrences, serial, False, 1))
            return
        ag = [(c.seconds, n) for c, n in back] if back else [(0.0, n) for _, n in compute]
        reduces = [call.seconds if call else 0.0 for call, _ in issued]
        duration = gather_reduce_runs([(c, g, r, n) for (c, n), (g, _), r in zip(compute, ag, reduces, strict=True)])
        ag_total = sum(g * n for g, n in ag)
        by_op = by_reduction + ((("all_gather", ag_total),) if back else ())
        units = self.units
        waits = (units if gathers else 0) + 1  # each unit's gather, and the last reduction
        slack = max(0.0, p.backward - ag_total) / units if gathers else 0.0
        slowdown = slowdown_of([*calls, *(gathers or ())])
        self.phases.append(
            Phase(stretch.name, p.backward, rs_total + ag_total, duration, occurrences, by_op, True, waits, slack,
                  slowdown)
        )  # fmt: skip

    def per_parameter(self, stretch: Stretch) -> None:
        """A stage-3 pass as DeepSpeed ran it before v0.6.0 (synchronous_fetch.py), unit by unit and nothing beside
        anything: the unit's parameters gathered a call a tensor, each after the host has built its list
        (list_host_seconds a rank), again before the backward recomputes the unit's forward (`regathers`); then its
        compute; then its gradients reduce-scattered a call a tensor, whose lists the host builds while the unit's
        backward runs. Reductions in a stretch of their own run after the pass."""
        p = self.plan
        host = p.list_host_seconds * p.ranks
        gather = next((c for c in stretch.calls if c.when == BEFORE_UNIT), None)
        reduce = next((c for c in stretch.calls if c.when == AFTER_UNIT), None)
        backward = stretch.compute != FORWARD
        again = p.regathers and backward  # a block's recomputed forward fetches it again (not the embedding, head)
        gathers: list[tuple[Call, int]] = []  # one fetch's, forward order, as the traffic lists them
        reductions: list[tuple[Call, int]] = []  # backward order
        regathered: list[tuple[Call, int]] = []  # the recomputation's fetch
        compute = waited = gathered = 0.0  # seconds; the host's seconds the device waits for; bytes the fetches move
        syncs = 0  # the fetches a pass, each a wait for every rank
        for (u, n), (seconds, _) in zip(self.runs[::-1] if backward else self.runs, self.bwd_runs if backward else
                                         self.fwd_runs, strict=True):  # fmt: skip
            seconds = 0.0 if stretch.compute == NO_COMPUTE else seconds
            tensors = u.tensors or (u.params,)
            fetched = gathered_tensors(tensors, u.vectors) if gather else ()
            reduced = reduced_tensors(tensors, u.vectors) if reduce else ()
            mine_g = [(self.call("all_gather", t * self.gathered_bytes(u)), k) for t, k in fetched]
            mine_r = [(self.call(reduce.op, t * p.grad_bytes), k) for t, k in reduced] if reduce else []
            lists_g = host * sum(k for _, k in fetched)
            lists_r = host * sum(k for _, k in reduced)
            fetches = 2 if again and u.linear else 1  # Unit.linear: a decoder block, which a checkpoint wraps
            waited += (fetches * lists_g + max(0.0, lists_r - seconds)) * n
            compute += seconds * n
            syncs += fetches * n if fetched else 0
            regathered += [(call, k * n) for call, k in mine_g] if fetches > 1 else []
            gathers += [(call, k * n) for call, k in mine_g]
            gathered += fetches * sum(t * k for t, k in fetched) * n * self.gathered_bytes(u)
            reductions += [(call, k * n) for call, k in mine_r]
        if backward:
            gathers.reverse()
        by_op: list[tuple[str, float]] = []
        if gather:
            fetched_runs = [*gathers, *regathered]
            self._issue(gather, gathered, fetched_runs)
            by_op.append(("all_gather", sum(call.seconds * n for call, n in fetched_runs)))
        if reduce:
            rs = sum(call.seconds * n for call, n in reductions)
            self._issue(reduce, self.grad_total, reductions, rs)
            by_op.append((reduce.op, rs))
        comm = sum(seconds for _, seconds in by_op)
        waits = syncs + (1 if reduce else 0)  # each fetch, and the last reduction
        self.phases.append(Phase(stretch.name, compute, comm, compute + comm + waited, stretch.repeats, tuple(by_op),
                                 False, waits, host=waited))  # fmt: skip

    def gathered(
        self, name: str, compute: list[tuple[float, int]], calls: Sequence[tuple[Call, int]], repeats: int
    ) -> None:
        """A pass whose units each wait for their gathered parameters, the next unit's prefetched (runs of equal
        units: compute and calls run by run)."""
        pairs = zip(compute, calls, strict=True)
        duration = gather_reduce_runs([(c, call.seconds, 0.0, n) for (c, n), (call, _) in pairs])
        ag = sum(c.seconds * n for c, n in calls)
        units = self.units  # one gather a unit
        by_op = (("all_gather", ag),)
        total = sum(c * n for c, n in compute)
        slack = max(0.0, total - ag) / units if units else 0.0
        self.phases.append(Phase(name, total, ag, duration, repeats, by_op, True, units, slack, slowdown_of(calls)))

    def gathered_before_pass(self, stretch: Stretch, c: Collective) -> None:
        """The updated parameter shards all-gathered at the end of the optimizer step, before the next forward can
        start: DeepSpeed (and so the ZeRO paper's own implementation) gathers them in one all_gather_into_tensor per
        parameter group (deepspeed/runtime/utils.py all_gather_into_tensor_dp_groups); nothing hides them. The ideal
        overlaps them with that forward."""
        p = self.plan
        if p.gather_calls > 0:
            calls = [(self.call("all_gather", self.weight_total / p.gather_calls), p.gather_calls)]
            ag = sum(g.seconds * n for g, n in calls)
            self._issue(c, self.weight_total, calls, ag)
        else:
            calls = self.gathers(c)
            ag = sum(g.seconds * n for g, n in calls)
        by_op = (("all_gather", ag),)
        self.phases.append(Phase(stretch.name, p.forward, ag, ag + p.forward, stretch.repeats, by_op, False, 1))


def _bucketed_at_units(sizes: Sequence[float], bucket: float) -> list[float]:
    """Per unit, the bytes of the call issued after it: units' gradients fill a bucket, which is reduced when
    the next unit would overflow it (DeepSpeed's reduce bucket, cut at unit boundaries; a unit larger than the
    bucket goes alone), the last one flushed at the end."""
    out, held = [0.0] * len(sizes), 0.0
    for j, b in enumerate(sizes):
        if held > 0 and held + b > bucket:
            out[j - 1], held = held, 0.0
        held += b
    if sizes:
        out[-1] += held
    return out


def _breakdown(plan: StepPlan, phases: Sequence[Phase]) -> tuple[tuple[Phase, ...], list[Term], float]:
    """The step as a sum: compute, each collective's exposed time, and the losses at scale; and the seconds of
    compute that ran beside a call."""
    slowed = []
    exposed: dict[str, float] = {}
    slowdown = overlapped = slowest = host = 0.0
    stretch = plan.slowest_gpu / (1.0 - plan.slowest_gpu)  # the slowest GPU's compute runs 1 / (1 - loss) as long
    for ph in phases:
        # The compute that runs alongside a collective is slowed by the SMs the collective's kernels hold. Where
        # compute sets the phase's pace it is the critical path, and the phase lasts that much longer; where
        # communication does (comm >= compute), the slowed compute still runs under it and only the part that no
        # longer fits extends the phase.
        beside = min(ph.compute, ph.comm) if ph.overlapped and ph.comm > 0 else 0.0
        lost = ph.slowdown * beside
        overlapped += beside * ph.repeats
        busy = ph.compute + ph.host  # what the device does, or waits for the host to let it do, off the calls
        bound_by_comm = ph.overlapped and ph.comm >= busy  # one after the other, every part of the phase counts
        ph = ph.lasting(max(ph.duration, busy + lost) if bound_by_comm else ph.duration + lost)
        slowed.append(ph)
        slowdown += lost * ph.repeats
        host += ph.host * ph.repeats
        # the slowest GPU's longer compute: all of it on the critical path where compute paces the phase, what no
        # longer fits under the calls where they do
        longer = ph.compute * stretch
        slowest += (max(0.0, busy + lost + longer - ph.duration) if bound_by_comm else longer) * ph.repeats
        wait = max(0.0, ph.duration - lost - busy) * ph.repeats
        for op, seconds in ph.comm_by_op:
            if ph.comm > 0:
                exposed[op] = exposed.get(op, 0.0) + wait * seconds / ph.comm
    compute = sum(ph.compute * ph.repeats for ph in phases)
    terms = [Term(COMPUTE, compute)]
    terms += [Term(f"{EXPOSED}{op}", s) for op, s in exposed.items()]
    if host > 0:
        terms.append(Term(HOST_LISTS, host))
    terms.append(Term(SLOWDOWN, slowdown))
    terms.append(Term(JITTER, slowest_rank_wait(phases, plan.sync_jitter, plan.ranks)))
    terms.append(Term(SLOWEST_GPU, slowest))
    return tuple(slowed), terms, overlapped


def slowest_rank_wait(phases: Sequence[Phase], jitter: float, ranks: int) -> float:
    """Seconds the step waits for the slowest of `ranks` ranks. A rank's compute drifts like a random walk, one
    standard deviation `jitter` x sqrt(compute seconds) since the ranks last met; the slowest of N is
    expected_max_deviate(N) deviations late. A wait costs only what exceeds its prefetch slack, and re-aligns the
    ranks only when it costs something; the end of the step (the optimizer needs every gradient) always does."""
    deviates = expected_max_deviate(ranks)
    if deviates == 0 or jitter == 0:
        return 0.0
    wait, drift = 0.0, 0.0  # drift: variance since the ranks last met, in units of jitter^2 (seconds of compute)
    for ph in phases:
        if ph.waits == 0:
            drift += ph.compute * ph.repeats
            continue
        lost, drift = _waits_beyond_slack(
            drift, ph.compute / ph.waits, ph.waits * ph.repeats, ph.slack / (jitter * deviates)
        )
        wait += lost * jitter * deviates
    return wait + math.sqrt(max(0.0, drift)) * jitter * deviates


def _waits_beyond_slack(drift: float, segment: float, waits: int, slack: float) -> tuple[float, float]:
    """`waits` waits, `segment` seconds of compute before each, starting `drift` seconds since the ranks met;
    slack in the same units as sqrt(seconds). Returns the summed sqrt(drift) - slack of the waits that cost, and
    the drift left. A wait costs once the drift passes slack^2, which it has passed by at most one segment: each
    costly wait is charged at slack^2 + segment (exact without slack), and they come one per slack^2 + segment of
    drift, counted continuously so that the step time moves smoothly with every input. A drift already past
    slack^2 when the waits begin (micro-batches accumulated without a call) is met once, by the first wait: it
    costs sqrt(drift + segment) where a drift of slack^2 would have cost sqrt(slack^2 + segment), and the waits
    go on as from slack^2 (exact without slack: the first pays sqrt(drift + segment), the rest sqrt(segment))."""
    if segment > 0 and drift > slack**2:
        cost, left = _waits_beyond_slack(slack**2, segment, waits, slack)
        return cost + math.sqrt(drift + segment) - math.sqrt(slack**2 + segment), left
    total = drift + waits * segment
    if total <= slack**2:
        return 0.0, total
    if segment <= 0:  # calls back to back: the first meets the drift, the rest find the ranks together
        return math.sqrt(drift) - slack, slack**2  # the drift left as a costly wait leaves it above
    period = slack**2 + segment
    costly = (total - slack**2) / period
    return costly * (math.sqrt(period) - slack), max(0.0, total - costly * period)


def schedule_of(plan: StepPlan) -> tuple[Stretch, ...]:
    """The plan's schedule (dp_schedule.py), from its framework's switches."""
    return dp_schedule(
        plan.stage,
        plan.accumulation,
        per_unit=plan.per_unit,
        keep_full_grads=plan.keep_full_grads,
        overlap_param_gather=plan.overlap_param_gather,
        overlap_grad_reduce=plan.overlap_grad_reduce,
        bucket_op=plan.bucket_op,
    )


def step_time(plan: StepPlan, call: CallTime) -> StepTime:
    """Serial, ideal and scheduled step times of the plan's schedule (see the module docstring)."""
    if plan.accumulation < 1:
        raise ValueError("accumulation must be >= 1")
    schedule = schedule_of(plan)
    s = _Schedule(plan, call)
    for stretch in schedule:
        s.run(stretch)
    phases, terms, overlapped = _breakdown(plan, s.phases)
    compute = plan.accumulation * (plan.forward + plan.backward) + plan.optimizer
    traffic = s.traffic()
    comm = sum(t.seconds for t in traffic)
    return StepTime(compute, comm, phases, traffic, tuple(terms), overlapped, schedule)
